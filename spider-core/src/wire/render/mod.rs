//! The rendering tier (the `render` feature): a page built by script rendered in headless
//! Chromium, driven over the DevTools protocol (`chromiumoxide`), before it is read.
//!
//! The browser never touches the network. Every request it makes, the page's own document
//! among them, is paused over the protocol (`Fetch.requestPaused`) and answered with what
//! the crawl fetched: the document with the answer the crawl already has, every other
//! request through [`Subrequests`], which the engine sends through the crawl's own
//! exchange as the page's identity, on its route (gateway, sticky session, geo), after a
//! token of the crawl's rate ceiling. So the browser's traffic keeps the crawl's limits,
//! leaves from the identity's exit with its cookies and wire, and counts against the proxy
//! budget, and the cookies it sets come back to the identity's jar.
//!
//! `browsers.rs` the browsers (pages at once, recycling, a dead one replaced); `page.rs` one
//! page's render: in a browser context per identity, the pauses answered, the waits and the
//! actions, the rendered DOM and the cookies read back.

mod browsers;
mod job;
mod page;
mod profile;

pub use browsers::process_tree_rss;
pub(crate) use browsers::Browsers;
pub(crate) use job::{Job, RenderError, Subrequests, Waited};
