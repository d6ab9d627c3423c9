//! What a durable frontier remembers besides its queues, so that a crawl can stop at any
//! moment and go on: robots.txt answers, requests given up, the crawl's counts, and how
//! much of the output and failures files is committed.

use std::sync::Arc;

use bytes::Bytes;
use reqwest::Method;
use tokio::sync::Notify;
use tokio::time::Instant;
use url::Url;

use super::Frontier;
use crate::error::Error;
use crate::observe::stats::{Counts, CrawlStatus};
use crate::request::host::HostKey;
use crate::request::identity::IdentityChanges;
use crate::request::Ticket;
use crate::schedule::throttle::adaptive::Proposal;
use crate::sinks::failures::Failure;
use crate::sinks::Committed;

/// The engine's side of a frontier: the queues, and what the state file keeps with them.
/// The in-memory frontier remembers nothing beyond its run, so every method has a default
/// that does nothing.
pub(crate) trait Journal: Frontier {
    /// Whether requests outlive the process. A request cut short at shutdown then stays
    /// queued for the next run instead of being given up as interrupted.
    fn is_durable(&self) -> bool {
        false
    }

    /// Whether the rate ceiling and the hosts' slots, pace and pauses are held by the
    /// frontier for a whole fleet: then the dispatcher's own rate gate stands aside, and
    /// requests arrive already admitted under those limits.
    fn shares_limits(&self) -> bool {
        false
    }

    /// Notified when requests arrive from elsewhere (a fleet's other workers), so the
    /// dispatcher wakes for them.
    fn arrivals(&self) -> Option<Arc<Notify>> {
        None
    }

    /// The slot the request of `ticket` held rests until `until` (its politeness pause),
    /// so that a fleet's other workers do not start one in its place before then. Told
    /// before the request is finished or deferred.
    fn rest_slot(&mut self, _ticket: Ticket, _until: Instant) {}

    /// The host answered 429: hold it back until `until`, for a fleet's every worker.
    fn hold_host(&mut self, _host: &str, _until: Instant) {}

    /// Adaptive mode set `host`'s slots and rate: for a fleet, they are every worker's.
    fn adapt_host(&mut self, _host: &str, _limit: usize, _rps: f64, _proposal: Proposal) {}

    /// Hosts whose fleet-wide adaptive limits (slots, rate) changed since the last call.
    fn fleet_host_limits(&mut self) -> Vec<(HostKey, usize, f64)> {
        Vec::new()
    }

    /// An answer of `host`, blocked or not, for a fleet's block-rate gauge.
    fn answered(&mut self, _host: &str, _blocked: bool) {}

    /// The fleet's answers over the last [`WINDOW`](crate::observe::gauge::WINDOW), when the
    /// frontier is a fleet's: what the gauges show instead of this worker's own.
    fn fleet_answers(&self) -> Option<FleetAnswers> {
        None
    }

    /// The fleet's bytes through the proxy gateways, given this worker's own (`own`), when
    /// the frontier is a fleet's: `proxy_budget` is the fleet's, not each worker's.
    fn fleet_proxy_bytes(&self, _own: u64) -> Option<u64> {
        None
    }

    /// What `host`'s robots.txt said in an earlier run, if it is still fresh.
    fn robots(&mut self, _host: &str) -> Result<Option<RobotsMemo>, Error> {
        Ok(None)
    }

    /// Remember what `host`'s robots.txt said.
    fn remember_robots(&mut self, _host: &str, _memo: &RobotsMemo) -> Result<(), Error> {
        Ok(())
    }

    /// Remember a request given up.
    fn record_failure(
        &mut self,
        _url: &Url,
        _method: &Method,
        _attempts: u32,
        _failure: &Failure,
    ) -> Result<(), Error> {
        Ok(())
    }

    /// Whether checkpoints write the crawl's identities (cookie jars and agents).
    fn keeps_identities(&self) -> bool {
        false
    }

    /// Make every change since the last checkpoint durable at once, together with the
    /// lengths of the files written so far and the run's counts.
    fn checkpoint(&mut self, _checkpoint: &Checkpoint<'_>) -> Result<(), Error> {
        Ok(())
    }
}

/// Answers and blocks of a whole fleet in the gauges' window: in all, and per host.
#[derive(Debug, Clone, Default)]
pub(crate) struct FleetAnswers {
    pub(crate) answered: u64,
    pub(crate) blocked: u64,
    pub(crate) hosts: std::collections::HashMap<String, (u64, u64)>,
}

impl FleetAnswers {
    /// Blocked over answered; 0 with no answers.
    pub(crate) fn block_rate(answered: u64, blocked: u64) -> f64 {
        if answered == 0 {
            0.0
        } else {
            blocked as f64 / answered as f64
        }
    }
}

/// What a host's robots.txt said: an answer to parse (any status but 5xx and 429), or
/// why it could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RobotsMemo {
    Answer { status: u16, body: Bytes },
    Unavailable(String),
}

/// What a checkpoint commits with the frontier's changes.
#[derive(Debug)]
pub(crate) struct Checkpoint<'a> {
    /// The output file's committed length and items, when there is one.
    pub(crate) output: Option<Committed>,
    /// The failures file's committed length, when there is one.
    pub(crate) failures: Option<u64>,
    /// This run's counts so far.
    pub(crate) counts: &'a Counts,
    /// Bytes through the proxy gateways so far in this run.
    pub(crate) proxy_bytes: u64,
    /// How the run ended, at its last checkpoint.
    pub(crate) ended: Option<RunEnd>,
    /// The identities made, changed or retired since the last checkpoint, if any.
    pub(crate) identities: Option<IdentityChanges>,
}

/// How a run ended: with a summary, or stopped by an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunEnd {
    Finished(CrawlStatus),
    Failed,
}
