//! The state file: a crawl that survives Ctrl-C, a crash or `kill -9`, and a frontier
//! larger than memory.
//!
//! One SQLite file (`schema.sql` is its documented schema) holds the frontier (queued,
//! in-flight and deferred requests per host), the seen-set, robots.txt answers, requests
//! given up, each run's counts, and how much of the output and failures files is
//! committed. `inspect/state.rs` reads one without touching it, even while its crawl runs
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
//!
//! Why `synchronous = NORMAL` is enough after `kill -9`, a panic or an OOM kill: what the
//! process wrote is in the kernel's page cache and reaches the disk, and the write-ahead
//! log holds every committed transaction. A power loss loses the page cache, so
//! `state_sync = true` syncs the files before each commit that records their length and
//! commits with `synchronous = FULL`. The log is folded back into the file by a thread of
//! its own (`checkpointer.rs`): SQLite's automatic checkpoint, in the committing
//! connection, stalled the dispatcher.
//!
//! Faults besides a kill: the file's folder is locked while a file is deleted
//! (`--fresh`), created and locked, and a new file is built under a temporary name and
//! renamed (`open.rs`); whether a file is sound and this crawl's is decided on a
//! read-only connection, with `quick_check` and the checksums of `sums.rs`, so a refused
//! file is left as it was; once a commit fails, or SQLite is found to have rolled one
//! back, the frontier refuses every write (`frontier.rs`).

mod checkpointer;
mod frontier;
pub(crate) mod open;
mod row;
pub(crate) mod schema;
mod sums;

pub use frontier::StateFrontier;
pub(crate) use open::open;
pub(crate) use schema::add_columns;
