//! What a frontier can do besides its queues: keep the crawl past the process
//! ([`Durable`]: robots.txt answers, requests given up, the crawl's counts, how much of the
//! output and failures files is committed), and hold a fleet's limits ([`SharedLimits`]).

use std::sync::Arc;

use bytes::Bytes;
use reqwest::Method;
use tokio::sync::Notify;
use tokio::time::Instant;
use url::Url;

use super::queue::Frontier;
use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::observe::counters::Counts;
use crate::observe::summary::CrawlStatus;
use crate::request::host::HostKey;
use crate::request::identity::IdentityChanges;
use crate::request::Ticket;
use crate::schedule::throttle::adaptive::Proposal;
use crate::sinks::failures::Failure;
use crate::sinks::store::Chunk;
use crate::sinks::warc::Archive;
use crate::sinks::Committed;

/// A frontier as the engine holds it: its queues, and what else it can do, each optional.
/// The in-memory frontier is only queues; the state file's is durable; a fleet's is durable
/// and holds the limits for every worker.
pub(crate) trait CrawlFrontier: Frontier {
    /// What it keeps past the process, when it does.
    fn durable(&mut self) -> Option<&mut dyn Durable> {
        None
    }

    /// The limits it holds for a whole fleet, when it is a fleet's.
    fn shared(&mut self) -> Option<&mut dyn SharedLimits> {
        None
    }
}

/// What a frontier that outlives the process keeps besides its queues, so that a crawl
/// can stop at any moment and go on. Its requests outlive the process too: one cut short
/// at shutdown stays queued for the next run instead of being given up as interrupted.
pub(crate) trait Durable {
    /// What `host`'s robots.txt said in an earlier run, if it is still fresh.
    fn robots(&mut self, host: &str) -> Result<Option<RobotsMemo>, Error>;

    /// Remember what `host`'s robots.txt said.
    fn remember_robots(&mut self, host: &str, memo: &RobotsMemo) -> Result<(), Error>;

    /// Remember a request given up.
    fn record_failure(
        &mut self,
        url: &Url,
        method: &Method,
        attempts: u32,
        failure: &Failure,
    ) -> Result<(), Error>;

    /// Whether checkpoints write the crawl's identities (cookie jars and agents): a state
    /// file does; a fleet's workers keep their own, and get only the hosts that refused
    /// the plain client.
    fn keeps_identities(&self) -> bool;

    /// Make every change since the last checkpoint durable at once, together with the
    /// lengths of the files written so far and the run's counts.
    fn checkpoint(&mut self, checkpoint: &Checkpoint<'_>) -> Result<(), Error>;
}

/// The limits a fleet's frontier holds for every worker: the rate ceiling and the hosts'
/// slots, pace and pauses. Requests arrive already admitted under them, so the
/// dispatcher's own rate gate stands aside.
pub(crate) trait SharedLimits {
    /// Notified when requests arrive from the fleet, so the dispatcher wakes for them.
    fn arrivals(&self) -> Arc<Notify>;

    /// The slot the request of `ticket` held rests until `until` (its politeness pause),
    /// so that other workers do not start one in its place before then. Told before the
    /// request is finished or deferred.
    fn rest_slot(&mut self, ticket: Ticket, until: Instant);

    /// Whether the lease of `ticket`'s request is surely still this worker's at `now`:
    /// a page done when another worker may have it is not written.
    fn holds(&self, ticket: Ticket, now: Instant) -> bool;

    /// Let go of `ticket`'s request, whose lease may be another worker's: its page is not
    /// written, and the fleet has it back if it was still this worker's.
    fn forsake(&mut self, ticket: Ticket);

    /// The host answered 429: hold it back until `until`, for every worker.
    fn hold_host(&mut self, host: &str, until: Instant);

    /// Adaptive mode set `host`'s slots and rate: they are every worker's.
    fn adapt_host(&mut self, host: &str, limit: usize, rps: f64, proposal: Proposal);

    /// Hosts whose fleet-wide adaptive limits (slots, rate) changed since the last call.
    fn fleet_host_limits(&mut self) -> Vec<(HostKey, usize, f64)>;

    /// Hosts another worker found refusing the crawl's own client (`impersonate =
    /// "auto"`), not told before.
    fn fleet_refusing_plain(&mut self) -> Vec<String>;

    /// An answer of `host`, blocked or not, for the fleet's block-rate gauge.
    fn answered(&mut self, host: &str, blocked: bool);

    /// The fleet's answers over the last [`WINDOW`](crate::observe::gauge::WINDOW): what
    /// the gauges show instead of this worker's own.
    fn fleet_answers(&self) -> Option<FleetAnswers>;

    /// The fleet's bytes through the proxy gateways, given this worker's own (`own`), once
    /// the fleet's count is heard: `proxy_budget` is the fleet's, not each worker's.
    fn fleet_proxy_bytes(&self, own: u64) -> Option<u64>;

    /// A stretch of the items file the fleet did not commit, its items written by another
    /// worker too, for the dispatcher to cut out of the file before its next checkpoint;
    /// once. Nothing is committed until it says whether it did ([`Self::stretch_cut`]).
    fn stretch_to_cut(&mut self) -> Option<Stretch>;

    /// The dispatcher cut `stretch` out of the items file (`made`), what was written after
    /// it moving up, or could not, and the fleet is to leave it out instead.
    fn stretch_cut(&mut self, stretch: Stretch, made: bool);
}

/// A stretch of the items file between two commits: where each starts, in bytes and in
/// items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stretch {
    pub(crate) from_bytes: u64,
    pub(crate) from_items: u64,
    pub(crate) to_bytes: u64,
    pub(crate) to_items: u64,
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

/// What a checkpoint commits with the frontier's changes, to a durable frontier (the
/// `state` and `fleet` features bring one each, and each reads its part of this).
#[derive(Debug)]
#[cfg_attr(not(all(feature = "state", feature = "fleet")), allow(dead_code))]
pub(crate) struct Checkpoint<'a> {
    /// Each items file's committed length and items, in `output`'s order.
    pub(crate) outputs: &'a [Committed],
    /// The failures file's committed length, when there is one.
    pub(crate) failures: Option<u64>,
    /// The WARC archive's last file and its committed length, when there is one.
    pub(crate) warc: Option<Archive>,
    /// This run's counts so far.
    pub(crate) counts: &'a Counts,
    /// Bytes through the proxy gateways so far in this run.
    pub(crate) proxy_bytes: u64,
    /// How the run ended, at its last checkpoint.
    pub(crate) ended: Option<RunEnd>,
    /// The identities made, changed or retired since the last checkpoint, if any.
    pub(crate) identities: Option<IdentityChanges>,
    /// With tables as output, the outbox's change (see `sinks::store`).
    pub(crate) outbox: Option<OutboxChange<'a>>,
    /// The keys of the items written since the last checkpoint (see `schedule::keys`).
    pub(crate) kept_keys: &'a [ItemKey],
}

/// What a checkpoint does to the outbox: keep the items of the pages it commits, and
/// forget the chunks every table holds.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(crate) struct OutboxChange<'a> {
    /// The items of the pages the checkpoint commits: a chunk per type when a table takes
    /// one type only, else one.
    pub(crate) chunks: &'a [Chunk],
    /// The last chunk number every table holds.
    pub(crate) delivered: u64,
}

/// How a run ended: with a summary, or stopped by an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunEnd {
    Finished(CrawlStatus),
    Failed,
}
