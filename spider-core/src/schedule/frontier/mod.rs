//! The frontier: every request the crawl knows of and has not finished with.
//!
//! The engine talks to it through the narrow [`Frontier`] trait (enqueue, next per host,
//! finish, defer for a retry, has-pending), so the in-memory frontier can be replaced by
//! the state file's (`state`) or a fleet's without touching the engine. What a frontier
//! can do besides its queues is each optional (`crawl_frontier.rs`): keep the crawl past the process
//! (`Durable`), and hold a fleet's limits (`SharedLimits`).

mod crawl_frontier;
mod memory;
mod queue;
mod rules;
mod scope;

#[cfg(feature = "fleet")]
pub(crate) use crawl_frontier::SharedLimits;
pub(crate) use crawl_frontier::{
    Checkpoint, CrawlFrontier, Durable, FleetAnswers, OutboxChange, RobotsMemo, RunEnd, Stretch,
};
pub use memory::MemoryFrontier;
#[cfg(any(feature = "fleet", feature = "state"))]
pub(crate) use memory::PassThrough;
pub use queue::{Enqueued, Frontier};
#[cfg(any(feature = "fleet", feature = "state"))]
pub(crate) use rules::Rules;
pub(crate) use scope::Scope;
