//! The frontier: every request the crawl knows of and has not finished with.
//!
//! The engine talks to it through the narrow [`Frontier`] trait (enqueue, next per host,
//! finish, defer for a retry, has-pending), so the in-memory frontier can be replaced by
//! the state file's (`state`) or a fleet's without touching the engine. What a frontier
//! can do besides its queues is each optional (`home.rs`): keep the crawl past the process
//! (`Durable`), and hold a fleet's limits (`SharedLimits`).

mod crawl_frontier;
mod memory;
mod rules;
mod scope;

use tokio::time::Instant;

#[cfg(feature = "fleet")]
pub(crate) use crawl_frontier::SharedLimits;
pub(crate) use crawl_frontier::{
    Checkpoint, CrawlFrontier, Durable, FleetAnswers, OutboxChange, RobotsMemo, RunEnd,
};
pub use memory::MemoryFrontier;
#[cfg(any(feature = "fleet", feature = "state"))]
pub(crate) use memory::PassThrough;
pub(crate) use rules::Rules;
pub(crate) use scope::Scope;

use crate::error::Error;
use crate::request::host::HostKey;
use crate::request::{Request, Ticket};

/// What the frontier did with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued for this host.
    Accepted(HostKey),
    /// Its fingerprint was seen before (another spelling, or a redirect's target).
    Duplicate,
    /// Not http(s), or outside the allowed domains.
    OutOfScope,
    /// Deeper than `max_depth`.
    TooDeep,
    /// Sent to a fleet's shared frontier, which decides there whether it was seen; its
    /// host is readied when a worker leases it.
    Shared,
}

/// The scheduler of requests, in the shape of Scrapy's: enqueue, next, has-pending.
///
/// A durable frontier may fail to read or write its store; every method that touches it
/// returns the error, and the engine stops admitting on the first one.
pub trait Frontier: Send {
    /// Admit `request` unless it was seen, is out of scope or too deep.
    fn enqueue(&mut self, request: Request) -> Result<Enqueued, Error>;

    /// Remember `request` as seen without queueing it: robots.txt is known to turn it
    /// away, and the crawl drops it before it costs a place in the queue. What
    /// [`enqueue`](Self::enqueue) would say of it; `Accepted` is a request not seen before.
    fn see(&mut self, request: &Request) -> Result<Enqueued, Error>;

    /// The next request for `host`, highest priority first, first-in first-out within a
    /// priority; deferred requests only once released. A durable frontier keeps it, with
    /// the [`Ticket`] the request carries, until told it is finished or deferred: if the
    /// process dies first, the next run hands it out again.
    fn next(&mut self, host: &str) -> Result<Option<Request>, Error>;

    /// The request of `ticket` is finished: fetched, given up or dropped.
    fn finish(&mut self, ticket: Ticket) -> Result<(), Error>;

    /// Hold a request already admitted (a retry) until `due`, outside any queue, so it
    /// occupies no slot while it waits.
    fn defer(&mut self, request: Request, due: Instant) -> Result<(), Error>;

    /// The earliest instant a deferred request falls due.
    fn next_due(&self) -> Option<Instant>;

    /// Move the requests due by `now` back into their hosts' queues, and name those hosts.
    fn release_due(&mut self, now: Instant) -> Result<Vec<HostKey>, Error>;

    /// The hosts with requests queued now, such as those an earlier run left.
    fn hosts(&self) -> Result<Vec<HostKey>, Error>;

    /// Whether any request is queued or deferred: with nothing in flight, `false` means
    /// the crawl is done.
    fn has_pending(&self) -> bool;

    /// Requests queued or deferred.
    fn len(&self) -> usize;

    /// Whether nothing is queued or deferred.
    fn is_empty(&self) -> bool {
        !self.has_pending()
    }
}
