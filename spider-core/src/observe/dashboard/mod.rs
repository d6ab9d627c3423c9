//! The dashboard and the report: one page (`page.html`, its CSS and JavaScript inline, its
//! charts hand-drawn in SVG) that shows the crawl's [timeline](crate::observe::timeline).
//! Served live it carries the data of the moment it was asked for, so its first paint
//! shows the crawl, then polls `/api/timeline` each second for the last ten minutes
//! (`serve.rs` answers); written as the report (`report.rs`) it carries the whole crawl's
//! data inside itself, so it opens from a file with no network. What the crawl does not
//! use (adaptive mode's slots and rates, a proxy's spend) is said to be unused, not drawn
//! empty.
//!
//! The page's DOM is a contract the browser tests read: each chart is an
//! `<svg class="chart" data-series="NAME" data-points="N">`, the totals are
//! `<span id="pages-total" data-value="N">` (and `items-total`, `failures-total`,
//! `block-rate-peak` as a fraction, `as-of` the second shown), the hosts
//! `<table id="hosts">`; a chart's axes are `.tick.y` and `.tick.x` labels with their unit,
//! an unused one `<p class="unused" data-series="NAME">`.

mod board;
mod report;

pub(crate) use board::Board;
pub(crate) use report::write_report;
