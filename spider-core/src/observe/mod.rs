//! Observation: the crawl's counters and gauges, and where they are shown.

pub(crate) mod dashboard;
pub(crate) mod gauge;
pub(crate) mod metrics;
pub(crate) mod progress;
pub(crate) mod serve;
pub(crate) mod stats;
pub(crate) mod timeline;
