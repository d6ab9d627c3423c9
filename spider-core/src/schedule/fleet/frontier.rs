//! The fleet's frontier as the dispatcher sees it: the [`Frontier`], [`Durable`] and [`SharedLimits`] calls
//! answered from memory at once, never waiting on Redis. What the dispatcher does goes
//! into the next round's changes; what the rounds lease arrives in a buffer, each request
//! with the instant the fleet's limits let it start.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::Method;
use tokio::sync::Notify;
use tokio::time::Instant;
use url::Url;

use super::messages::{self, Queues, Round};
use super::rate::START_JITTER;
use crate::error::Error;
use crate::observe::counters::Counts;
use crate::request::canonical::Fingerprint;
use crate::request::host::{host_key, HostKey};
use crate::request::Request;
use crate::request::Ticket;
use crate::schedule::frontier::{
    Checkpoint, CrawlFrontier, Durable, Enqueued, FleetAnswers, Frontier, PassThrough, RobotsMemo, Rules,
    SharedLimits, Stretch,
};
use crate::schedule::robots::RobotsRules;
use crate::schedule::throttle::adaptive::Proposal;
use crate::sinks::failures::Failure;
use crate::sinks::Committed;

/// How often the dispatcher looks again at the fleet's work it cannot lease yet (other
/// workers' leases, retries due later), or whether the crawl ended: a request arriving
/// wakes it sooner.
const FLEET_POLL: Duration = Duration::from_millis(100);

/// Hosts whose fleet block rate a worker follows, those it answered last: as many as the
/// gauges list.
const GAUGE_HOSTS: usize = 50;

/// What the frontier and its syncer share.
pub(super) struct Link {
    state: Mutex<Exchange>,
    /// Wakes the syncer: changes to send, or room for more requests.
    pub(super) to_syncer: Notify,
    /// Wakes the dispatcher: requests arrived, or the connection changed.
    pub(super) to_dispatcher: Arc<Notify>,
}

impl Link {
    pub(super) fn new(round: Round) -> Self {
        Link {
            state: Mutex::new(Exchange { outbox: round, ..Exchange::default() }),
            to_syncer: Notify::new(),
            to_dispatcher: Arc::new(Notify::new()),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Exchange> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The mailbox between the dispatcher's side and the syncer.
#[derive(Default)]
pub(super) struct Exchange {
    /// Changes for the next round (and the round's settings).
    pub(super) outbox: Round,
    /// Requests that can be taken beside those held.
    pub(super) want: usize,
    /// Leased requests and when each may start.
    pub(super) arrived: Vec<(HostKey, Instant, Request)>,
    /// Hosts whose robots.txt this worker fetches for the fleet.
    pub(super) claims: Vec<(HostKey, Instant)>,
    pub(super) answers: Vec<(HostKey, RobotsMemo)>,
    /// The fleet's queues as the last round that counted them saw them.
    pub(super) view: Option<Queues>,
    /// A round with changes is under way.
    pub(super) sending: bool,
    /// The last round reached Redis.
    pub(super) connected: bool,
    /// The crawl cannot go on (its data is gone from Redis).
    pub(super) fatal: Option<Error>,
    /// This worker's counts at its last checkpoint, for the heartbeat.
    pub(super) counts: Counts,
    /// The fleet's answers in the gauges' window, as of the last heartbeat.
    pub(super) gauge: Option<FleetAnswers>,
    /// Every worker's bytes through the proxy gateways, as of the last heartbeat.
    pub(super) fleet_proxy_bytes: Option<u64>,
    /// Adaptive mode's limits of the gauge's hosts for the fleet, as of the last heartbeat.
    pub(super) fleet_limits: HashMap<String, (usize, f64)>,
    /// The hosts this worker answered lately: their fleet block rates are asked for.
    pub(super) gauge_hosts: Vec<String>,
    /// The hosts that refused a worker's own client, as of the last heartbeat.
    pub(super) refusing: Vec<String>,
    /// The dispatcher has ended: give back, send the last round, stop.
    pub(super) closing: bool,
    /// A paced round goes at once when `want` reaches this: the lookahead is used.
    pub(super) refill_at: usize,
    /// Until when the leases this worker holds are surely its own (see the syncer's
    /// `hold_until`): a page finished later is not written, as another worker may have it.
    pub(super) held_until: Option<Instant>,
    /// A reply came after `held_until`: the fleet may have taken back all this worker
    /// held, so it drops it.
    pub(super) lapsed: bool,
    /// Until when the crawl is too young to end (see [`super::syncer::SETTLING`]).
    pub(super) young_until: Option<Instant>,
    /// Requests finished here whose ends no answered round has carried yet.
    pub(super) ending: HashSet<i64>,
    /// A void round's stretch of output Redis left uncommitted, to be cut out of the file
    /// (see `round.lua`): no round carries changes until the dispatcher says whether it
    /// did, as they would commit lengths of the file with the stretch still in it.
    pub(super) cut: Option<Cut>,
}

/// Where a place in the output at or past `stretch`'s end is once it is cut out:
/// `(bytes, items)`.
fn moved(stretch: &Stretch, bytes: u64, items: u64) -> (u64, u64) {
    if bytes >= stretch.to_bytes {
        let (cut_bytes, cut_items) =
            (stretch.to_bytes - stretch.from_bytes, stretch.to_items - stretch.from_items);
        (bytes - cut_bytes, items.saturating_sub(cut_items))
    } else {
        (bytes, items)
    }
}

/// A stretch of this worker's output (`file`, `HOST:PATH`) to cut out of it; `taken` once
/// the dispatcher is at it.
pub(super) struct Cut {
    pub(super) file: String,
    pub(super) stretch: Stretch,
    pub(super) taken: bool,
}

impl Exchange {
    /// Leave the stretch to cut in the file, and have Redis leave it out of what is
    /// committed instead: a gap, and the output committed at least to the stretch's end,
    /// as it would have been had the round not been void.
    pub(super) fn cut_as_gap(&mut self) {
        let Some(Cut { file, stretch, .. }) = self.cut.take() else { return };
        let Stretch { from_bytes, from_items, to_bytes, to_items } = stretch;
        self.outbox.gap = Some((file.clone(), from_bytes, to_bytes, to_items - from_items));
        if self.outbox.output.is_none() {
            self.outbox.output = Some((file, to_bytes, to_items, from_bytes, from_items));
        }
    }

    /// Whether the next round should not wait for its pace.
    pub(super) fn urgent(&self) -> bool {
        self.closing || self.want >= self.refill_at
    }
}

/// Whether requests are queued, waiting for a retry or in other workers' hands, as the
/// last round that counted them saw it (none yet: there may be).
fn has_work(view: Option<Queues>) -> bool {
    view.is_none_or(|q| q.unsettled || q.queued + q.deferred + q.leases.saturating_sub(q.mine) > 0)
}

/// A leased request whose start the fleet's limits put later.
struct Waiting {
    start: Instant,
    host: HostKey,
    request: Request,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.start == other.start
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.start.cmp(&other.start)
    }
}

/// The frontier of a worker of the fleet.
pub(crate) struct FleetFrontier {
    rules: Rules,
    link: Arc<Link>,
    /// Fingerprints this worker sent already: most links are duplicates, and they are
    /// turned away here without a trip to Redis.
    sent: HashSet<Fingerprint, BuildHasherDefault<PassThrough>>,
    /// Leased requests free to start, per host, each with the start its lease gave (none
    /// for one handed back unsent, whose start is spent).
    queues: HashMap<HostKey, VecDeque<(Request, Option<Instant>)>>,
    /// Whether the crawl has a rate ceiling, whose starts a lease reserves.
    rated: bool,
    buffered: usize,
    waiting: BinaryHeap<Reverse<Waiting>>,
    /// Requests handed to the dispatcher and not finished, with their host: given back
    /// if the crawl stops first, and named with the request's end, so that Redis need not
    /// read the request to free its host's slot.
    handed: HashMap<i64, HostKey>,
    /// When each handed-out request's slot is free again, once it finished.
    rest_until: HashMap<i64, Instant>,
    /// Requests handed out whose leases lapsed (given back already): their pages are not
    /// written when they come back.
    given_up: HashSet<i64>,
    answers: HashMap<HostKey, RobotsMemo>,
    /// Hosts whose robots.txt this worker fetches for the fleet, and from when.
    claims: Vec<(HostKey, Instant)>,
    /// How many requests this worker holds at most (leased, buffered or in flight).
    capacity: usize,
    robots_token: String,
    /// The counters already added to the fleet's totals.
    reported: Counts,
    /// This worker's proxy bytes already added to the fleet's.
    reported_proxy_bytes: u64,
    /// The fleet's adaptive limits per host as last taken by the dispatcher: only a change
    /// of them is news (a reply written before this worker's own change reached Redis
    /// still carries the old ones).
    seen_limits: HashMap<String, (usize, f64)>,
    /// The fleet's hosts refusing the plain client that this worker's identities know.
    seen_refusing: HashSet<String>,
    /// Changes since the last checkpoint. A request's end reaches Redis only after the
    /// output holding its items is flushed, so a worker killed in between leaves the
    /// request leased (fetched again elsewhere), never finished with its items lost.
    unsent: Round,
    /// A request was refused for want of a connection: its host needs readying again.
    cut_off: bool,
    /// A stretch of output the syncer found to cut, taken with the rest of its news in
    /// `release_due`, for the dispatcher to ask for next (`stretch_to_cut`).
    cut_found: Option<Stretch>,
    failed: bool,
    /// This worker's output file, `HOST:PATH`: its committed length goes with the ends of
    /// the requests whose items it holds.
    output: Option<String>,
    /// The output's length and items at the last checkpoint: where the next one's
    /// stretch of it starts.
    committed: Committed,
}

impl FleetFrontier {
    /// `committed` is what the fleet holds of `output` at the start, where the output
    /// was cut back to.
    pub(super) fn new(
        config: &spider_settings::Config,
        link: Arc<Link>,
        output: Option<String>,
        committed: Committed,
    ) -> Self {
        // Half again the worker's concurrency: a slot that frees starts its next request
        // from the buffer, not after a round trip to Redis. A request buffered holds a
        // slot of its host in the fleet, but never more than the worker's share of them.
        let lookahead = config.concurrency.div_ceil(2);
        link.lock().refill_at = lookahead.max(1);
        let frontier = FleetFrontier {
            rules: Rules::new(config),
            link,
            sent: HashSet::default(),
            queues: HashMap::new(),
            rated: config.rate.is_some_and(|rate| rate.requests().is_some()),
            buffered: 0,
            waiting: BinaryHeap::new(),
            handed: HashMap::new(),
            rest_until: HashMap::new(),
            given_up: HashSet::new(),
            answers: HashMap::new(),
            claims: Vec::new(),
            capacity: config.concurrency + lookahead,
            robots_token: config.robots_token().to_owned(),
            reported: Counts::default(),
            reported_proxy_bytes: 0,
            seen_limits: HashMap::new(),
            seen_refusing: HashSet::new(),
            unsent: Round::default(),
            cut_off: false,
            cut_found: None,
            failed: false,
            output,
            committed,
        };
        frontier.ask_for_more();
        frontier
    }

    /// Everything leased this worker holds, to give back: the requests not started
    /// (buffered, or waiting for their start), and those handed to the dispatcher.
    fn let_go(&mut self) -> (Vec<(i64,)>, Vec<(i64,)>) {
        let buffered = self.queues.drain().flat_map(|(_, queue)| queue).map(|(request, _)| request);
        let waiting = self.waiting.drain().map(|Reverse(w)| w.request);
        let not_started = buffered.chain(waiting).filter_map(|r| r.ticket).map(|Ticket(id)| (id,)).collect();
        self.buffered = 0;
        (not_started, self.handed.drain().map(|(id, _)| (id,)).collect())
    }

    /// Tell the syncer how many more requests this worker can take.
    fn ask_for_more(&self) {
        let mut exchange = self.link.lock();
        let held = self.buffered + self.waiting.len() + self.handed.len() + exchange.arrived.len();
        let want = self.capacity.saturating_sub(held);
        let more = want > exchange.want;
        exchange.want = want;
        drop(exchange);
        if more {
            self.link.to_syncer.notify_one();
        }
    }

    /// Keep a change for the next checkpoint: only then are the files it follows flushed.
    fn send(&mut self, change: impl FnOnce(&mut Round)) {
        change(&mut self.unsent);
    }

    /// The pause of the finished request's slot, in ms from now.
    fn rest_ms(&mut self, id: i64) -> u64 {
        let until = self.rest_until.remove(&id).unwrap_or_else(Instant::now);
        millis(until.saturating_duration_since(Instant::now()))
    }

    fn release(&mut self, host: HostKey, request: Request, start: Instant) {
        self.queues.entry(host).or_default().push_back((request, Some(start)));
        self.buffered += 1;
    }
}

/// How long before its lease may lapse a page is no longer written: the time for its end
/// to reach Redis at the next checkpoint.
const HOLD_MARGIN: Duration = Duration::from_secs(1);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Frontier for FleetFrontier {
    fn enqueue(&mut self, request: Request) -> Result<Enqueued, Error> {
        if let Some(refused) = self.rules.refuse(&request) {
            return Ok(refused);
        }
        let print = request.fingerprint();
        if !self.sent.insert(print) {
            return Ok(Enqueued::Duplicate);
        }
        let Some(host) = host_key(request.url()) else {
            return Ok(Enqueued::OutOfScope);
        };
        let (change, stored) = messages::enqueued(&request, &host);
        self.send(|round| {
            round.enqueue.push(change);
            round.requests.push(stored);
        });
        Ok(Enqueued::Shared)
    }

    /// Only this worker's memory of what it sent: the fleet's seen set is in Redis, and
    /// a request leased costs a token of the shared rate even if robots.txt then turns
    /// it away, so what is known to be disallowed is never sent.
    fn see(&mut self, request: &Request) -> Result<Enqueued, Error> {
        if let Some(refused) = self.rules.refuse(request) {
            return Ok(refused);
        }
        if !self.sent.insert(request.fingerprint()) {
            return Ok(Enqueued::Duplicate);
        }
        Ok(host_key(request.url()).map_or(Enqueued::OutOfScope, Enqueued::Accepted))
    }

    fn next(&mut self, host: &str) -> Result<Option<Request>, Error> {
        if !self.link.lock().connected {
            // Cut off from the fleet: nothing starts whose end could not be told. The
            // host is readied again when the connection is back.
            self.cut_off = true;
            return Ok(None);
        }
        let Some(queue) = self.queues.get_mut(host) else { return Ok(None) };
        let request = queue.pop_front().map(|(mut request, start)| {
            request.start_lapsed =
                self.rated && start.is_none_or(|start| start + START_JITTER < Instant::now());
            request
        });
        if queue.is_empty() {
            self.queues.remove(host);
        }
        if let Some(request) = &request {
            self.buffered -= 1;
            if let Some(Ticket(id)) = request.ticket {
                self.handed.insert(id, HostKey::from(host));
            }
        }
        Ok(request)
    }

    fn finish(&mut self, Ticket(id): Ticket) -> Result<(), Error> {
        let Some(host) = self.handed.remove(&id) else { return Ok(()) };
        let rest = self.rest_ms(id);
        self.send(|round| round.finish.push((id, rest, host.to_string())));
        self.link.lock().ending.insert(id);
        self.ask_for_more();
        Ok(())
    }

    fn defer(&mut self, request: Request, due: Instant) -> Result<(), Error> {
        let Some(Ticket(id)) = request.ticket else { return Ok(()) };
        let now = Instant::now();
        if due <= now {
            // Could not start after all, or sent again at once (a wall passed): it stays
            // leased, first in its host's queue, its start spent.
            self.handed.remove(&id);
            if let Some(host) = host_key(request.url()) {
                self.queues.entry(host).or_default().push_front((request, None));
                self.buffered += 1;
            }
            return Ok(());
        }
        self.handed.remove(&id);
        let rest = self.rest_ms(id);
        let change = (id, millis(due - now), messages::encode(&request), rest);
        self.send(|round| round.defer.push(change));
        self.ask_for_more();
        Ok(())
    }

    fn next_due(&self) -> Option<Instant> {
        let started = self.waiting.peek().map(|Reverse(w)| w.start);
        let claimed = self.claims.iter().map(|(_, start)| *start).min();
        // Always: whether the fleet has work is read from what the syncer last heard, which
        // may change between the dispatcher's look at `has_pending` and this one; a worker
        // that looked once and found neither would stop as stalled with work in Redis.
        let poll = Instant::now() + FLEET_POLL;
        started.into_iter().chain(claimed).chain(Some(poll)).min()
    }

    fn release_due(&mut self, now: Instant) -> Result<Vec<HostKey>, Error> {
        let mut hosts = Vec::new();
        let link = Arc::clone(&self.link);
        let mut exchange = link.lock();
        if let Some(error) = exchange.fatal.take() {
            self.failed = true;
            return Err(error);
        }
        if let Some(cut) = exchange.cut.as_mut().filter(|cut| !cut.taken) {
            cut.taken = true;
            self.cut_found = Some(cut.stretch);
        }
        let lapsed = std::mem::take(&mut exchange.lapsed);
        if lapsed {
            // The fleet may have taken back everything this worker held while it was not
            // heard from: nothing of it starts, and what is in flight is not written.
            let (mut back, in_flight) = self.let_go();
            self.given_up.extend(in_flight.iter().map(|(id,)| *id));
            back.extend(in_flight);
            tracing::warn!(
                target: "spiderling",
                requests = back.len(),
                "this worker was not heard from for as long as the fleet keeps its leases (paused, or cut \
                 off): what it held goes back, and its pages in flight are not written"
            );
            exchange.outbox.give_back.extend(back);
        }
        if self.cut_off && exchange.connected {
            self.cut_off = false;
            hosts.extend(self.queues.keys().cloned());
        }
        let arrived = std::mem::take(&mut exchange.arrived);
        self.claims.append(&mut exchange.claims);
        for (host, memo) in exchange.answers.drain(..) {
            self.answers.insert(host, memo);
        }
        drop(exchange);
        for (host, start, request) in arrived {
            self.waiting.push(Reverse(Waiting { start, host, request }));
        }
        if lapsed {
            self.ask_for_more();
        }
        // A host whose robots.txt this worker fetches for the fleet is readied at the
        // start its claim was given: its first request is that fetch.
        self.claims.retain(|(host, start)| {
            let due = *start <= now;
            if due {
                hosts.push(host.clone());
            }
            !due
        });
        while self.waiting.peek().is_some_and(|Reverse(w)| w.start <= now) {
            let Some(Reverse(Waiting { host, request, start })) = self.waiting.pop() else { break };
            hosts.push(host.clone());
            self.release(host, request, start);
        }
        hosts.sort_unstable();
        hosts.dedup();
        Ok(hosts)
    }

    fn hosts(&self) -> Result<Vec<HostKey>, Error> {
        Ok(Vec::new())
    }

    fn has_pending(&self) -> bool {
        !self.failed
            && (self.buffered > 0
                || !self.claims.is_empty()
                || !self.waiting.is_empty()
                || self.unsent.has_changes()
                || self.fleet_has_work())
    }

    fn len(&self) -> usize {
        let view = self.link.lock().view.unwrap_or_default();
        self.buffered
            + self.waiting.len()
            + usize::try_from(view.queued + view.deferred).unwrap_or(usize::MAX)
    }
}

impl FleetFrontier {
    /// Whether the fleet, or this worker's mailbox, may still bring work.
    fn fleet_has_work(&self) -> bool {
        let exchange = self.link.lock();
        exchange.fatal.is_some()
            || exchange.outbox.has_changes()
            || exchange.sending
            || !exchange.connected
            || !exchange.arrived.is_empty()
            || !exchange.claims.is_empty()
            || exchange.young_until.is_some_and(|until| Instant::now() < until)
            || has_work(exchange.view)
    }
}

impl CrawlFrontier for FleetFrontier {
    fn durable(&mut self) -> Option<&mut dyn Durable> {
        Some(self)
    }

    fn shared(&mut self) -> Option<&mut dyn SharedLimits> {
        Some(self)
    }
}

impl Durable for FleetFrontier {
    fn robots(&mut self, host: &str) -> Result<Option<RobotsMemo>, Error> {
        Ok(self.answers.get(host).cloned())
    }

    fn remember_robots(&mut self, host: &str, memo: &RobotsMemo) -> Result<(), Error> {
        // Under a Crawl-delay the host is one slot for the whole fleet.
        let slots = match memo {
            RobotsMemo::Answer { status, body } => {
                let rules = RobotsRules::from_answer(*status, body, &self.robots_token);
                usize::from(rules.crawl_delay().is_some())
            }
            RobotsMemo::Unavailable(_) => 0,
        };
        let change = (host.to_owned(), messages::encode_robots(memo), slots);
        self.send(|round| round.robots.push(change));
        Ok(())
    }

    fn record_failure(
        &mut self,
        url: &Url,
        method: &Method,
        attempts: u32,
        failure: &Failure,
    ) -> Result<(), Error> {
        let line = serde_json::json!({
            "url": url.as_str(),
            "method": method.as_str(),
            "attempts": attempts,
            "reason": failure.reason.as_str(),
            "status": failure.status,
            "error": failure.error,
        })
        .to_string();
        self.send(|round| round.failures.push(line));
        Ok(())
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint<'_>) -> Result<(), Error> {
        // Every counter of the table, the statuses, the failures, drops and misses, as far as
        // they grew since the last report: the fleet's totals are the sum of its workers'.
        let counts = checkpoint.counts;
        let mut added: Vec<(String, u64)> = Vec::new();
        let mut grew = |name: String, now: u64, before: u64| {
            if now > before {
                added.push((name, now - before));
            }
        };
        for ((name, now), (_, before)) in counts.named().into_iter().zip(self.reported.named()) {
            grew(name.to_owned(), now, before);
        }
        for (status, now) in &counts.statuses {
            grew(format!("status:{status}"), *now, self.reported.statuses.get(status).copied().unwrap_or(0));
        }
        for (reason, now) in &counts.failures_by_reason {
            let before = self.reported.failures_by_reason.get(reason).copied().unwrap_or(0);
            grew(format!("failure:{reason}"), *now, before);
        }
        for (reason, now) in &counts.drops_by_reason {
            let before = self.reported.drops_by_reason.get(reason).copied().unwrap_or(0);
            grew(format!("drop:{reason}"), *now, before);
        }
        for (rule, now) in &counts.no_item_by_rule {
            let before = self.reported.no_item_by_rule.get(rule).copied().unwrap_or(0);
            grew(format!("no_item:{rule}"), *now, before);
        }
        self.reported = counts.clone();
        if checkpoint.proxy_bytes > self.reported_proxy_bytes {
            added.push(("proxy_bytes".to_owned(), checkpoint.proxy_bytes - self.reported_proxy_bytes));
            self.reported_proxy_bytes = checkpoint.proxy_bytes;
        }
        let ending = checkpoint.ended.is_some();
        for (name, n) in added {
            *self.unsent.stats.entry(name).or_default() += n;
        }
        if let Some(changes) = &checkpoint.identities {
            self.unsent.refusing.extend(changes.refusing.iter().cloned());
        }
        if let (Some(file), Some(committed)) = (&self.output, checkpoint.outputs.first()) {
            let from = std::mem::replace(&mut self.committed, *committed);
            self.unsent.output =
                Some((file.clone(), committed.bytes, committed.items, from.bytes, from.items));
        }
        let unsent = self.unsent.take_changes(true);
        let link = Arc::clone(&self.link);
        let mut exchange = link.lock();
        for (host, _, _) in &unsent.answers {
            if !exchange.gauge_hosts.contains(host) {
                exchange.gauge_hosts.insert(0, host.clone());
                exchange.gauge_hosts.truncate(GAUGE_HOSTS);
            }
        }
        exchange.outbox.append(unsent);
        exchange.counts = counts.clone();
        if ending {
            // Whatever was leased and not finished goes back to the fleet: requests
            // buffered, waiting for their start, or cut short by the stop.
            let (mut back, in_flight) = self.let_go();
            back.extend(in_flight);
            exchange.outbox.give_back.extend(back);
            exchange.closing = true;
        }
        drop(exchange);
        self.link.to_syncer.notify_one();
        Ok(())
    }

    fn keeps_identities(&self) -> bool {
        false
    }
}

impl SharedLimits for FleetFrontier {
    fn arrivals(&self) -> Arc<Notify> {
        self.link.to_dispatcher.clone()
    }

    fn rest_slot(&mut self, ticket: Ticket, until: Instant) {
        self.rest_until.insert(ticket.0, until);
    }

    fn holds(&self, Ticket(id): Ticket, now: Instant) -> bool {
        if self.given_up.contains(&id) {
            return false;
        }
        // A lapse the syncer found and this side has not taken in yet covers every
        // request handed out: their leases are renewed no more than the rest.
        let exchange = self.link.lock();
        !exchange.lapsed && exchange.held_until.is_none_or(|until| now + HOLD_MARGIN < until)
    }

    fn forsake(&mut self, Ticket(id): Ticket) {
        self.rest_until.remove(&id);
        if self.given_up.remove(&id) {
            return;
        }
        if self.handed.remove(&id).is_some() {
            self.link.lock().outbox.give_back.push((id,));
            self.ask_for_more();
        }
    }

    fn answered(&mut self, host: &str, blocked: bool) {
        let answers = &mut self.unsent.answers;
        match answers.iter_mut().find(|(known, _, _)| known == host) {
            Some((_, answered, blocks)) => {
                *answered += 1;
                *blocks += u64::from(blocked);
            }
            None => answers.push((host.to_owned(), 1, u64::from(blocked))),
        }
    }

    fn fleet_answers(&self) -> Option<FleetAnswers> {
        self.link.lock().gauge.clone()
    }

    fn fleet_proxy_bytes(&self, own: u64) -> Option<u64> {
        // The fleet's count as last heard, and what this worker spent since it reported.
        let fleet = self.link.lock().fleet_proxy_bytes?;
        Some(fleet.saturating_add(own.saturating_sub(self.reported_proxy_bytes)).max(own))
    }

    fn stretch_to_cut(&mut self) -> Option<Stretch> {
        // No lock here: the dispatcher asks on every turn, right after `release_due`.
        self.cut_found.take()
    }

    fn stretch_cut(&mut self, stretch: Stretch, made: bool) {
        let mut exchange = self.link.lock();
        if made {
            exchange.cut = None;
            // The lengths committed since, and about to be, lose the stretch too.
            let (bytes, items) = moved(&stretch, self.committed.bytes, self.committed.items);
            (self.committed.bytes, self.committed.items) = (bytes, items);
            if let Some(output) = exchange.outbox.output.as_mut() {
                (output.1, output.2) = moved(&stretch, output.1, output.2);
                (output.3, output.4) = moved(&stretch, output.3, output.4);
            }
        } else {
            exchange.cut_as_gap();
        }
        drop(exchange);
        self.link.to_syncer.notify_one();
    }

    fn adapt_host(&mut self, host: &str, limit: usize, rps: f64, proposal: Proposal) {
        // Not held for a checkpoint: limits follow no file, and may change when no
        // request finishes (a host's first limits).
        self.link.lock().outbox.adapt.push((host.to_owned(), limit, rps, proposal as u8));
        self.link.to_syncer.notify_one();
    }

    fn fleet_host_limits(&mut self) -> Vec<(HostKey, usize, f64)> {
        let exchange = self.link.lock();
        let mut changed = Vec::new();
        for (host, &limits) in &exchange.fleet_limits {
            if self.seen_limits.insert(host.clone(), limits) != Some(limits) {
                changed.push((HostKey::from(host.as_str()), limits.0, limits.1));
            }
        }
        changed
    }

    fn fleet_refusing_plain(&mut self) -> Vec<String> {
        let exchange = self.link.lock();
        exchange.refusing.iter().filter(|host| self.seen_refusing.insert((*host).clone())).cloned().collect()
    }

    fn hold_host(&mut self, host: &str, until: Instant) {
        let change = (host.to_owned(), millis(until.saturating_duration_since(Instant::now())));
        self.send(|round| round.pause.push(change));
    }
}
