//! Observation: the crawl's counters and gauges, and where they are shown.

pub(crate) mod counters;
#[cfg(feature = "observe")]
pub(crate) mod dashboard;
pub(crate) mod gauge;
#[cfg(feature = "observe")]
pub(crate) mod metrics;
pub(crate) mod progress;
#[cfg(feature = "observe")]
pub(crate) mod serve;
pub(crate) mod summary;
#[cfg(any(feature = "state", feature = "fleet"))]
pub(crate) mod tables;
pub(crate) mod text;
pub(crate) mod timeline;
