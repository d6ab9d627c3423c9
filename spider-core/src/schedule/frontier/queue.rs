//! What every frontier answers: the [`Frontier`] trait, and what an enqueue comes to
//! ([`Enqueued`]).

use tokio::time::Instant;

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
