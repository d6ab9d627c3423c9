//! Observation: the crawl's counters and gauges, and where they are shown.

pub(crate) mod counters;
pub(crate) mod dashboard;
pub(crate) mod gauge;
pub(crate) mod metrics;
pub(crate) mod progress;
pub(crate) mod serve;
pub(crate) mod summary;
pub(crate) mod timeline;
