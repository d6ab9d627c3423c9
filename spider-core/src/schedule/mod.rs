//! Scheduling: which request goes next, and what the crawl remembers.

pub(crate) mod cache;
#[cfg(feature = "fleet")]
pub(crate) mod fleet;
pub(crate) mod frontier;
pub(crate) mod item_keys;
pub(crate) mod retry;
pub(crate) mod robots;
#[cfg(feature = "state")]
pub(crate) mod state;
pub(crate) mod throttle;
