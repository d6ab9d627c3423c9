//! Read-only reports of what a crawl keeps, for the commands that show them: a state
//! file (`state.rs`, `spiderling state`) and a fleet's Redis (`fleet.rs`, `spiderling
//! fleet`, and its `--merge`). They read what the scheduler wrote, through its own
//! readers, and write nothing; no crawl calls them.

#[cfg(feature = "fleet")]
mod fleet;
#[cfg(feature = "state")]
mod state;

#[cfg(feature = "fleet")]
pub use fleet::{FleetCrawl, FleetReport, FleetStatus, FleetWorker, WorkerState};
#[cfg(feature = "state")]
pub use state::{StateHost, StateOutput, StateReport, StateRun};
