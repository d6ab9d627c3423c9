//! The state file: a crawl that survives Ctrl-C, a crash or `kill -9`, and a frontier
//! larger than memory.
//!
//! One SQLite file (`schema.sql` is its documented schema) holds the frontier (queued,
//! in-flight and deferred requests per host), the seen-set, robots.txt answers, requests
//! given up, each run's counts, and how much of the output and failures files is
//! committed. [`StateReport::read`] reads one without touching it, even while its crawl runs
//! (`spiderling state FILE`).
//!
//! Exactly once, after any crash: the dispatcher alone appends to the output file, and
//! only the items of pages it has finished. At a checkpoint it flushes the files to the
//! operating system and then commits, in one transaction, every frontier change since the
//! last one (pages finished, links queued, retries deferred) with the files' lengths. A
//! resumed crawl cuts each file back to its committed length and queues again whatever
//! was in flight: the items beyond the cut belong to exactly the pages the frontier still
//! holds, which are fetched and written again. Finished requests are checkpointed in
//! groups (the engine's `commit`), each keeping its global slot until its group is
//! committed, so what a crash makes fetch twice is at most `concurrency` pages.

mod checkpointer;
mod frontier;
mod inspect;
mod open;
mod row;

pub use frontier::StateFrontier;
pub use inspect::{StateHost, StateOutput, StateReport, StateRun};
pub(crate) use open::open;

/// The version of the schema this build reads and writes; a file of another version is
/// refused.
pub const SCHEMA_VERSION: u32 = 1;

/// The schema, with its documentation.
const SCHEMA: &str = include_str!("schema.sql");
