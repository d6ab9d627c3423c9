//! The dispatcher: the one task that owns the frontier, the hosts and admission, launches
//! requests and absorbs what they report. Its parts are its fields: `hosts` (each host's
//! slots and robots.txt), `admission` (whether the next request may go now), `commit` (the
//! files and the frontier's checkpoints) and the gauges (`gauges.rs`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use reqwest::Method;
use spider_settings::{Backoff, Config, DelayRange};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinSet;
use tokio::time::Instant;
use url::Url;

use super::admission::{Admission, Admit, Gate, Standing, Stop};
use super::commit::{Commit, Progress};
use super::hosts::{HostId, Hosts, RobotsState};
use super::protocol::{Byproducts, Done, Job, Miss, Outcome, PageSlot, Report, Sorted};
use super::retry_plan::{self, Facts, Next, Refusal};
use super::task::{crawl_page, fetch_robots};
use super::Shared;
use crate::error::cause::Cause;
use crate::error::reason::Reason;
use crate::error::Error;
use crate::observe::gauge::{Latencies, Live, Window, WINDOW};

use crate::observe::summary::CrawlStatus;
use crate::observe::timeline::Recorder;
use crate::request::host::{host_key, HostKey};
use crate::request::{Request, Ticket};
use crate::schedule::frontier::{CrawlFrontier, Enqueued, RobotsMemo, RunEnd};
use crate::schedule::retry;
use crate::schedule::robots::RobotsRules;
use crate::schedule::throttle::adaptive::{self, Proposal};
use crate::schedule::throttle::{self, LaneState, SlotState};
use crate::sinks::failures::Failure;
use crate::spider::Spider;
use crate::wire::classify::Trouble;

/// Start URLs taken from the list in one turn of the dispatcher, beyond the first.
const START_BATCH: usize = 255;

/// Requests queued beyond which the start list waits: a list of a million hosts meets
/// them as the crawl gets to them, so what it holds of each follows the hosts at work.
const START_AHEAD: usize = 1024;

/// What the dispatcher listens to besides its tasks.
pub(super) struct Inputs {
    /// Ctrl-C or SIGTERM.
    pub(super) stop_rx: mpsc::UnboundedReceiver<()>,
    /// The start list's requests as they are read (`--start-urls`).
    pub(super) start_list: Option<mpsc::Receiver<Request>>,
    /// The browsers' requests, asking for admission.
    #[cfg(feature = "render")]
    pub(super) asks: mpsc::UnboundedReceiver<super::protocol::Ask>,
}

#[cfg(feature = "render")]
use super::protocol::Asking;

/// What the browsers tell the dispatcher: nothing without the `render` feature.
#[cfg(not(feature = "render"))]
type Heard = std::convert::Infallible;

/// No browser asks anything without the `render` feature.
#[cfg(not(feature = "render"))]
pub(super) struct Asking;

#[cfg(not(feature = "render"))]
impl Asking {
    async fn next(&mut self) -> Heard {
        std::future::pending().await
    }
}

/// Where the gauges go each second: the [`Live`] channel, and the timeline when a
/// dashboard or a report keeps one.
pub(super) struct Watchers {
    pub(super) live: watch::Sender<Live>,
    pub(super) timeline: Option<Recorder>,
}

/// How the dispatcher ended.
pub(super) struct End {
    pub(super) error: Option<Error>,
    /// What stopped it before the frontier was empty: a signal, the proxy budget, or
    /// `max_pages`/`max_items`.
    pub(super) stopped: Option<CrawlStatus>,
    pub(super) unfinished: usize,
}

pub(super) struct Dispatcher<S: Spider> {
    pub(super) shared: Arc<Shared<S>>,
    pub(super) frontier: Box<dyn CrawlFrontier>,
    pub(super) hosts: Hosts,
    pub(super) admission: Admission,
    pub(super) commit: Commit,
    /// Whether the frontier keeps its requests past the process (see `CrawlFrontier`).
    durable: bool,
    /// Woken when a fleet's frontier has new requests for this worker.
    arrivals: Option<Arc<Notify>>,
    /// Requests cut short at shutdown and left in a durable frontier for the next run.
    left: usize,
    /// With `sitemaps`, the hosts of the start URLs, until their robots.txt arrives: the
    /// sitemaps it lists are queued then.
    sitemap_hosts: HashSet<HostKey>,
    pub(super) in_flight: usize,
    pub(super) concurrency: usize,
    retries: u32,
    backoff: Backoff,
    delay: DelayRange,
    /// Start URLs read from a list while the crawl runs; `None` once it is read to its end.
    start_list: Option<mpsc::Receiver<Request>>,
    /// A request admitted but for its rate token, waiting for it.
    pub(super) held: Option<(HostId, Job)>,
    /// The browsers' requests waiting for admission.
    pub(super) asking: Asking,
    rng: SmallRng,
    tasks: JoinSet<()>,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    /// Ctrl-C or SIGTERM: the first drains, the second aborts.
    stop_rx: mpsc::UnboundedReceiver<()>,
    /// Set by the first stop signal: admit nothing; abandon what is in flight then.
    draining_until: Option<Instant>,
    grace: Duration,
    /// Set when the proxy spend reaches the budget: admit nothing, finish what is in flight.
    budget_reached: bool,
    /// All answers over the last [`WINDOW`], and the latest latencies.
    pub(super) window: Window,
    pub(super) latencies: Latencies,
    /// The gauges' channel and timeline, and when they are next published (and the
    /// controllers step).
    pub(super) live: watch::Sender<Live>,
    pub(super) timeline: Option<Recorder>,
    pub(super) next_tick: Instant,
    fatal: Option<Error>,
}

impl<S: Spider> Dispatcher<S> {
    pub(super) fn new(
        config: &Config,
        mut frontier: Box<dyn CrawlFrontier>,
        shared: Arc<Shared<S>>,
        commit: Commit,
        inputs: Inputs,
        watchers: Watchers,
        admission: Admission,
    ) -> Self {
        #[cfg(feature = "render")]
        let Inputs { stop_rx, start_list, asks } = inputs;
        #[cfg(not(feature = "render"))]
        let Inputs { stop_rx, start_list } = inputs;
        let Watchers { live, timeline } = watchers;
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let arrivals = frontier.shared().map(|shared| shared.arrivals());
        let mut dispatcher = Dispatcher {
            shared,
            durable: frontier.durable().is_some(),
            frontier,
            hosts: Hosts::new(config),
            admission,
            commit,
            arrivals,
            left: 0,
            sitemap_hosts: sitemap_hosts(config),
            in_flight: 0,
            concurrency: config.concurrency,
            retries: config.retries,
            backoff: config.backoff,
            delay: config.delay,
            start_list,
            held: None,
            #[cfg(feature = "render")]
            asking: Asking::new(asks),
            #[cfg(not(feature = "render"))]
            asking: Asking,
            rng: SmallRng::from_os_rng(),
            tasks: JoinSet::new(),
            done_tx,
            done_rx,
            stop_rx,
            draining_until: None,
            grace: config.grace,
            budget_reached: false,
            window: Window::new(WINDOW),
            latencies: Latencies::default(),
            live,
            timeline,
            next_tick: Instant::now() + adaptive::STEP,
            fatal: None,
        };
        let now = Instant::now();
        let hosts = dispatcher.frontier.hosts();
        for key in dispatcher.ok(hosts).unwrap_or_default() {
            dispatcher.ready_host(key, now);
        }
        dispatcher
    }

    /// Run until idle, or until a stop signal's grace runs out.
    pub(super) async fn run(mut self) -> End {
        loop {
            let now = Instant::now();
            while self.tasks.try_join_next().is_some() {}
            if self.commit.due(now, self.draining_until.is_some()) {
                self.checkpoint(None);
            }
            let released = self.frontier.release_due(now);
            for key in self.ok(released).unwrap_or_default() {
                self.ready_host(key, now);
            }
            self.hosts.wake_due(now);
            if now >= self.next_tick {
                self.tick(now);
                if let Some(error) = self.commit.table_trouble() {
                    self.fail(error);
                }
            }
            if self.draining_until.is_some_and(|deadline| deadline <= now) {
                tracing::warn!(
                    target: "spiderling",
                    in_flight = self.in_flight,
                    "grace period over: abandoning requests in flight"
                );
                return self.abandon().await;
            }
            let asked_token_at = self.admit_asks(now);
            let token_at = self.launch_ready(now);
            if self.is_idle() {
                return self.end().await;
            }
            let wake_at = [
                self.hosts.next_wake(),
                self.commit.due_at(),
                self.frontier.next_due(),
                token_at,
                asked_token_at,
                self.draining_until,
            ]
            .into_iter()
            .flatten()
            .min();
            if self.in_flight == 0 && wake_at.is_none() && self.start_list.is_none() {
                tracing::error!(
                    target: "spiderling",
                    pending = self.frontier.len(),
                    "requests are queued but no host can take them; stopping"
                );
                self.fatal.get_or_insert(Error::Stalled { pending: self.frontier.len() });
                return self.end().await;
            }
            // The list waits while the frontier has work enough, unless nothing else would
            // wake the crawl. A fleet's frontier is in Redis, not here: it reads on.
            let read_start = self.frontier.shared().is_some()
                || self.frontier.len() < START_AHEAD
                || (self.in_flight == 0 && wake_at.is_none());
            // The gauges' tick wakes the dispatcher too, but is no work: not counted above.
            let wake_at = wake_at.map_or(self.next_tick, |at| at.min(self.next_tick));
            tokio::select! {
                biased;
                Some(()) = self.stop_rx.recv() => {
                    if self.draining_until.is_some() {
                        tracing::warn!(target: "spiderling", in_flight = self.in_flight, "second stop signal: abandoning requests in flight");
                        return self.abandon().await;
                    }
                    tracing::warn!(target: "spiderling", in_flight = self.in_flight, grace = ?self.grace, "stop signal: admitting nothing more, finishing requests in flight");
                    self.draining_until = Some(Instant::now() + self.grace);
                }
                Some(done) = self.done_rx.recv() => {
                    let now = Instant::now();
                    self.on_done(done, now);
                    while let Ok(done) = self.done_rx.try_recv() {
                        self.on_done(done, now);
                    }
                }
                heard = self.asking.next() => self.hear(heard, Instant::now()),
                () = tokio::time::sleep_until(wake_at) => {}
                () = arrived(self.arrivals.as_deref()) => {}
                read = next_start(self.start_list.as_mut()), if read_start => match read {
                    Some(request) => {
                        let now = Instant::now();
                        self.enqueue(request, now);
                        // What else is read already, in one turn; a bounded batch, so the
                        // crawl's own work is never kept waiting long.
                        for _ in 0..START_BATCH {
                            match self.start_list.as_mut().map(mpsc::Receiver::try_recv) {
                                Some(Ok(request)) => self.enqueue(request, now),
                                _ => break,
                            }
                        }
                    }
                    None => self.start_list = None,
                },
            }
        }
    }

    /// Nothing in flight and nothing that may still be launched: the crawl is over.
    fn is_idle(&self) -> bool {
        self.in_flight == 0
            && (self.fatal.is_some()
                || self.draining_until.is_some()
                || self.budget_reached
                || self.admission.limit_reached(&self.shared.tally)
                || (self.held.is_none() && !self.frontier.has_pending() && self.start_list.is_none()))
    }

    /// Abort the tasks in flight; each reports its request as interrupted.
    async fn abandon(mut self) -> End {
        self.tasks.shutdown().await;
        let now = Instant::now();
        while let Ok(done) = self.done_rx.try_recv() {
            self.on_done(done, now);
        }
        self.end().await
    }

    async fn end(mut self) -> End {
        self.publish(Instant::now());
        let unfinished = self.frontier.len() + self.in_flight + usize::from(self.held.is_some()) + self.left;
        let stopped = if self.draining_until.is_some() {
            Some(CrawlStatus::Interrupted)
        } else if self.budget_reached {
            Some(CrawlStatus::BudgetReached)
        } else if unfinished > 0 && self.admission.limit_reached(&self.shared.tally) {
            // A limit reached as the last request finished leaves nothing: that crawl is
            // complete.
            Some(CrawlStatus::LimitReached)
        } else {
            None
        };
        let ended = if self.fatal.is_some() {
            RunEnd::Failed
        } else if let Some(stopped) = stopped {
            RunEnd::Finished(stopped)
        } else if self.shared.tally.failure_count() > 0 {
            RunEnd::Finished(CrawlStatus::CompleteWithFailures)
        } else {
            RunEnd::Finished(CrawlStatus::Complete)
        };
        self.checkpoint(Some(ended));
        if let Err(error) = self.commit.close() {
            self.fatal.get_or_insert(error);
        }
        let held = self.commit.items_held();
        if held > 0 {
            tracing::info!(target: "spiderling", items = held, "waiting for the tables to take the last items");
        }
        if let Err(error) = self.commit.deliver().await {
            tracing::error!(target: "spiderling", %error, "stopping");
            self.fatal.get_or_insert(error);
        }
        End { error: self.fatal, stopped, unfinished }
    }

    /// Commit what this run did since the last checkpoint (see `commit.rs`).
    fn checkpoint(&mut self, ended: Option<RunEnd>) {
        let shared = &self.shared;
        let committed = self.commit.checkpoint(self.frontier.durable(), |keeps_identities| Progress {
            counts: shared.tally.counts(shared.pool.html_parses(), shared.pool.streamed_pages()),
            proxy_bytes: shared.exchange.proxy_bytes(),
            identities: shared.exchange.identities().changes(keeps_identities),
            ended,
        });
        if let Err(error) = committed {
            self.fail(error);
        }
    }

    /// Stop admitting: the first error of the crawl is the one it ends with.
    fn fail(&mut self, error: Error) {
        if self.fatal.is_none() {
            tracing::error!(target: "spiderling", %error, "stopping: no new requests are admitted");
            self.fatal = Some(error);
        }
    }

    /// The value of a frontier call, or `None` after stopping the crawl on its error.
    fn ok<T>(&mut self, result: Result<T, Error>) -> Option<T> {
        result.map_err(|error| self.fail(error)).ok()
    }

    /// The frontier is done with the request of `ticket`, which came back from no task
    /// (robots.txt turned it away), or with one whose task came back already.
    fn finish(&mut self, ticket: Option<Ticket>, now: Instant) {
        self.commit.changed(now);
        if let Some(ticket) = ticket {
            let finished = self.frontier.finish(ticket);
            self.ok(finished);
        }
    }

    /// Launch requests while admission allows; returns when the next rate token is due
    /// when that is what stopped it.
    fn launch_ready(&mut self, now: Instant) -> Option<Instant> {
        loop {
            let standing = Standing {
                slots_taken: self.in_flight + self.commit.slots_held(),
                in_flight: self.in_flight,
                stopping: self.fatal.is_some() || self.draining_until.is_some(),
                budget_reached: self.budget_reached,
            };
            let (exchange, frontier) = (&self.shared.exchange, &mut self.frontier);
            let budget_spent =
                || exchange.budget_reached(|own| frontier.shared().and_then(|s| s.fleet_proxy_bytes(own)));
            match self.admission.crawl(standing, &self.shared.tally, budget_spent) {
                Gate::Open => {}
                Gate::Full | Gate::Closed(Stop::Stopping) => return None,
                Gate::Closed(Stop::Budget) => {
                    if !self.budget_reached {
                        tracing::warn!(
                            target: "spiderling",
                            in_flight = self.in_flight,
                            "proxy budget reached: admitting nothing more, finishing requests in flight"
                        );
                        self.budget_reached = true;
                    }
                    return None;
                }
            }
            let (host, job) = match self.held.take() {
                Some(held) => held,
                None => self.next_job(now)?,
            };
            let state = self.hosts.state(host, now);
            match self.admission.request(state, job.offline()) {
                Admit::Launch => self.launch(host, job, now),
                Admit::WaitUntil(at) => {
                    self.held = Some((host, job));
                    return Some(at);
                }
                // The host was told to slow down while this request waited for its token.
                Admit::Hold(_) => self.put_back(host, job),
            }
        }
    }

    /// The next request of the first ready host, round-robin. Holds nothing: the host's
    /// slot is taken only at launch.
    fn next_job(&mut self, now: Instant) -> Option<(HostId, Job)> {
        // Requests of hosts whose robots.txt could not be had: given up, with the reason;
        // and those robots.txt disallows: finished unfetched.
        let mut unreachable = Vec::new();
        let mut disallowed = Vec::new();
        let mut failed = None;
        while let Some(id) = self.hosts.pop_ready() {
            match self.hosts.state(id, now) {
                SlotState::Free => {}
                SlotState::PausedUntil(due) => {
                    self.hosts.wake_at(id, due);
                    continue;
                }
                // Woken again when a request of this host or its group finishes; its
                // slots or its group's, not its pace, held it back (`Hosts::state` marks
                // which ran out, for adaptive mode to give it more).
                SlotState::Busy => continue,
            }
            let host = &mut self.hosts[id];
            let robots = matches!(host.robots, RobotsState::Unknown | RobotsState::Redirected(_))
                .then(|| self.hosts.robots_request(id))
                .flatten();
            let host = &mut self.hosts[id];
            let job = match (robots, &host.robots) {
                (Some(request), _) => Some(Job::robots(request)),
                (None, RobotsState::Known(rules)) => loop {
                    match self.frontier.next(&host.key) {
                        Ok(Some(request)) if !rules.allows(request.url()) => {
                            if let RobotsRules::Unavailable(reason) = rules {
                                unreachable.push((request, reason.clone()));
                            } else {
                                tracing::debug!(target: "spiderling", url = %request.url(), "disallowed by robots.txt");
                                self.shared.tally.robots_disallowed.add(1);
                                disallowed.push(request.ticket);
                            }
                        }
                        Ok(next) => break next.map(Job::page),
                        Err(error) => {
                            failed = Some(error);
                            break None;
                        }
                    }
                },
                // Woken again when robots.txt arrives.
                (None, _) => None,
            };
            if job.is_none() && matches!(self.hosts[id].robots, RobotsState::Known(_)) {
                self.hosts.note_quiet(id, now);
            }
            if let Some(error) = failed.take() {
                self.fail(error);
            }
            for ticket in disallowed.drain(..) {
                self.finish(ticket, now);
            }
            for (request, reason) in unreachable.drain(..) {
                // A proxy that could not be reached is the route's trouble, and said so.
                let why = Cause::behind_proxy_message(&reason).map_or_else(
                    || Reason::RobotsUnavailable(Cause::behind_robots_message(&reason)),
                    Reason::ProxyUnreachable,
                );
                let failure = Failure::error(why, &reason);
                self.give_up(request.url(), request.method(), request.attempts + 1, &failure);
                self.finish(request.ticket, now);
            }
            if let Some(mut job) = job {
                self.hosts.mark_ready(id);
                if let Some(lane) = job.request.lane.filter(|_| !job.robots) {
                    let host = &mut self.hosts[id];
                    match host.slots.lane(lane, now) {
                        LaneState::Ready => {}
                        LaneState::ReadyAt(due) => {
                            let deferred = self.frontier.defer(job.request, due);
                            self.ok(deferred);
                            continue;
                        }
                        LaneState::Busy => {
                            host.parked.push(job.request);
                            continue;
                        }
                        LaneState::Gone => job.request.lane = None,
                    }
                }
                let cached = self.commit.cached(&job.request);
                job.cached = self.ok(cached).flatten();
                return Some((id, job));
            }
        }
        None
    }

    /// Return a request that could not launch after all; the host launches it when ready.
    fn put_back(&mut self, id: HostId, job: Job) {
        if job.robots {
            self.hosts[id].robots = RobotsState::Redirected(Box::new(job.request));
        } else {
            let deferred = self.frontier.defer(job.request, Instant::now());
            self.ok(deferred);
        }
        self.hosts.mark_ready(id);
    }

    pub(super) fn launch(&mut self, id: HostId, mut job: Job, now: Instant) {
        let slot = (!job.offline()).then(|| self.hosts.take(id, job.request.lane, now));
        job.slot = slot.map(|lane| PageSlot { host: id, lane });
        if slot.is_some() {
            self.shared.tally.requests.add(1);
            // A host's first request: the clients may hold a connection to it from now on.
            if !std::mem::replace(&mut self.hosts[id].contacted, true) {
                let met = self.shared.exchange.met_host();
                self.ok(met);
            }
        }
        // A redirect hop and a request passing a wall keep their lane: the cookie the hop or
        // the wall set is in that lane's jar.
        if job.request.lane.is_none() {
            job.request.lane = slot;
        }
        self.in_flight += 1;
        let request = &job.request;
        let report = Report {
            host: id,
            slot: job.slot.map(|slot| slot.lane),
            launched: now,
            robots: job.robots,
            ticket: request.ticket,
            url: request.url().clone(),
            method: request.method().clone(),
            attempts: request.attempts,
            to: self.done_tx.clone(),
            sent: false,
        };
        let shared = self.shared.clone();
        self.tasks.spawn(async move {
            let mut notes = Byproducts::default();
            let outcome = if job.robots {
                fetch_robots(&shared, job, &mut notes).await
            } else {
                crawl_page(&shared, job, &mut notes).await
            };
            report.send(outcome, notes);
        });
    }

    /// A request of host `id` on `lane` ended: the slot rests for its politeness pause,
    /// and requests parked for that lane go back to the queue.
    pub(super) fn release(&mut self, id: HostId, lane: u32, ticket: Option<Ticket>, now: Instant) {
        let pause = throttle::pause(&self.delay, self.hosts[id].crawl_delay, &mut self.rng);
        self.hosts.release(id, lane, now + pause);
        let host = &mut self.hosts[id];
        let parked = std::mem::take(&mut host.parked);
        let (waiting, free): (Vec<_>, Vec<_>) = parked.into_iter().partition(|r| r.lane != Some(lane));
        host.parked = waiting;
        if let (Some(ticket), Some(shared)) = (ticket, self.frontier.shared()) {
            shared.rest_slot(ticket, now + pause);
        }
        for request in free {
            let deferred = self.frontier.defer(request, now);
            self.ok(deferred);
        }
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        self.in_flight -= 1;
        self.commit.returned(now);
        let ticket = done.ticket;
        let id = done.host;
        if let Some(lane) = done.slot {
            self.release(id, lane, ticket, now);
        }
        // A retry as someone else owes nothing to the blocked identity's backoff.
        let followed_identity = done.notes.sample.is_some_and(|sample| sample.follows_identity);
        if let Some(server) = done.notes.sample.and_then(|sample| sample.server) {
            self.hosts.learn_server(id, server);
        }
        if let Some(mut sample) = done.notes.sample {
            // A limiter's refusal (`classify`) is a block to the host's controller.
            sample.blocked |= matches!(&done.outcome, Outcome::Trouble { trouble: Trouble::SlowDown, .. });
            self.record(id, sample, done.launched, now);
        }
        // The archive first: with both, the cache keeps where the archive put the body.
        let stored = match done.notes.archive {
            Some(archived) => {
                let written = self.commit.archive(&archived);
                self.ok(written).flatten()
            }
            None => None,
        };
        if let Some(write) = done.notes.cache {
            let written = self.commit.cache(write, stored.as_ref());
            self.ok(written);
        }
        if let (Some(ticket), Some(shared)) = (ticket, self.frontier.shared()) {
            if !shared.holds(ticket, now) {
                shared.forsake(ticket);
                self.hosts.mark_ready(id);
                return;
            }
        }
        match done.outcome {
            Outcome::Parsed { sorted, follows, failed, not_html, missed } => {
                self.hosts.answered_well(id);
                self.write_items(&sorted);
                if let Some(miss) = missed {
                    self.missed(&miss);
                }
                let tally = &self.shared.tally;
                let counter = if not_html { &tally.skipped_not_html } else { &tally.pages };
                counter.add(1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket, now);
            }
            Outcome::Sitemap { follows, failed } => {
                self.shared.tally.sitemaps.add(1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket, now);
            }
            Outcome::Redirect(request) => {
                self.shared.tally.redirects.add(1);
                self.enqueue(request, now);
                self.finish(ticket, now);
            }
            Outcome::Robots(rules, memo) => {
                let key = self.hosts[id].key.clone();
                self.remember_robots(&key, &memo);
                if self.sitemap_hosts.remove(&key) {
                    self.queue_sitemaps(&key, rules.sitemaps(), now);
                }
                self.hosts.learn_robots(id, rules, now);
            }
            Outcome::RobotsRedirect(next) => self.hosts[id].robots = RobotsState::Redirected(Box::new(next)),
            Outcome::RobotsUnavailable(_) if self.hosts[id].robots_attempts < self.retries => {
                let host = &mut self.hosts[id];
                host.robots_attempts += 1;
                let wait =
                    retry::wait(&self.backoff, host.last_robots_backoff, Duration::ZERO, &mut self.rng);
                host.last_robots_backoff = wait;
                host.robots = RobotsState::Unknown;
                host.slots.pause_until(now + wait);
            }
            Outcome::RobotsUnavailable(reason) => {
                let key = self.hosts[id].key.clone();
                tracing::warn!(target: "spiderling", host = %key, %reason, "robots.txt unavailable: nothing on this host is fetched (RFC 9309)");
                self.remember_robots(&key, &RobotsMemo::Unavailable(reason.clone()));
                self.hosts[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            Outcome::Trouble { mut request, trouble, retry_after, failure } => {
                if followed_identity {
                    request.last_backoff = Duration::ZERO;
                }
                self.retry_or_give_up(id, request, trouble, retry_after, &failure, now);
            }
            Outcome::Failed { url, method, attempts, failure } => {
                self.give_up(&url, &method, attempts, &failure);
                self.finish(ticket, now);
            }
            // Left in flight in a durable frontier, which queues it again on resume.
            Outcome::Interrupted { .. } if self.durable => self.left += 1,
            Outcome::Interrupted { url, method, attempts } => {
                let failure = Failure::bare(Reason::Interrupted);
                self.give_up(&url, &method, attempts, &failure);
            }
            // Not finished: with a durable frontier, a resumed crawl fetches it again.
            Outcome::Fatal(error) => self.fail(error),
        }
        self.hosts.mark_ready(id);
    }

    /// Remember what a host's robots.txt said, in a durable frontier.
    fn remember_robots(&mut self, host: &str, memo: &RobotsMemo) {
        if let Some(durable) = self.frontier.durable() {
            let remembered = durable.remember_robots(host, memo);
            self.ok(remembered);
        }
    }

    /// Queue the sitemaps a start host's robots.txt lists. Only an answer fetched in this
    /// run comes here: one remembered by a state file or learnt from the fleet had its
    /// sitemaps queued by the run, or the worker, that fetched it, in the same checkpoint.
    fn queue_sitemaps(&mut self, host: &str, sitemaps: &[String], now: Instant) {
        for listed in sitemaps {
            match Url::parse(listed) {
                Ok(url) => {
                    tracing::info!(target: "spiderling", %host, sitemap = %url, "robots.txt lists a sitemap");
                    self.enqueue(Request::sitemap(url), now);
                }
                Err(error) => {
                    tracing::warn!(target: "spiderling", %host, sitemap = %listed, %error, "robots.txt lists a sitemap that is not a URL")
                }
            }
        }
    }

    /// Append a page's items to the output file, file those its pipeline dropped, and
    /// count both.
    fn write_items(&mut self, sorted: &Sorted) {
        if let Err(error) = self.commit.write_items(sorted) {
            self.fail(error);
            return;
        }
        self.shared.tally.items.add(sorted.items.count);
        for dropped in &sorted.dropped {
            self.shared.tally.dropped(dropped.reason);
        }
    }

    /// A page without the item its rule parses: counted by rule and filed, never a block.
    fn missed(&mut self, miss: &Miss) {
        tracing::debug!(target: "spiderling", url = %miss.url, rule = %miss.rule, "no item on the page");
        self.shared.tally.no_item(&miss.rule);
        let filed = self.commit.record_miss(miss);
        self.ok(filed);
    }

    /// Defer the request for a jittered backoff (holding no slot), or give it up when
    /// its attempts are spent. A 429 also pauses its whole host.
    fn retry_or_give_up(
        &mut self,
        id: HostId,
        mut request: Request,
        trouble: Trouble,
        retry_after: Option<Duration>,
        failure: &Failure,
        now: Instant,
    ) {
        // A 503 in a run at hosts that share a budget is a limiter's: they slow down.
        let trouble = match trouble {
            Trouble::TryAgain if failure.status == Some(503) && self.hosts.unavailable_again(id) => {
                Trouble::SlowDown
            }
            trouble => trouble,
        };
        // At once, also in adaptive mode, and also for a request given up below: a limiter
        // bans a client that keeps going.
        let refusal = (trouble == Trouble::SlowDown).then(|| {
            let first = self.hosts.slow_down(id, now);
            if first {
                let key = &self.hosts[id].key;
                let hosts = self.hosts.group(id).members().len();
                tracing::info!(target: "spiderling", host = %key, hosts, "told to slow down: the host and those sharing its budget paced from a slow start from now on, faster while they answer");
            }
            Refusal { first, paced: self.hosts.group(id).controller.is_some() }
        });
        let wait =
            retry::wait(&self.backoff, request.last_backoff, retry_after.unwrap_or_default(), &mut self.rng);
        let facts = Facts {
            trouble,
            retry_after,
            wait,
            attempts: request.attempts,
            retries: self.retries,
            walls: request.walls,
            refusal,
        };
        let planned = retry_plan::plan(&facts);
        if let Some(pause) = planned.pause {
            let until = now + pause;
            self.hosts.pause(id, until);
            let host = &self.hosts[id];
            tracing::info!(target: "spiderling", host = %host.key, status = ?failure.status, ?retry_after, "told to slow down: backing off the host");
            let key = host.key.clone();
            if let Some(shared) = self.frontier.shared() {
                shared.hold_host(&key, until);
            }
        }
        match planned.next {
            Next::PassWall { walls } => {
                request.walls = walls;
                tracing::debug!(target: "spiderling", url = %request.url(), walls, "a wall gave the identity a cookie: sending it again");
                let deferred = self.frontier.defer(request, now);
                self.ok(deferred);
            }
            Next::GiveUp => {
                let attempts = request.attempts + 1;
                self.give_up(request.url(), request.method(), attempts, failure);
                self.finish(request.ticket, now);
            }
            Next::Retry { wait } => {
                request.attempts += 1;
                request.last_backoff = wait;
                request.walls = 0;
                // Tried again on whichever slot is free, as that slot's identity: a fresh
                // one after a block, with its first answer settled before its next request.
                request.lane = None;
                tracing::debug!(target: "spiderling", url = %request.url(), reason = %failure.reason, ?wait, attempt = request.attempts, "retrying");
                self.shared.tally.retries.add(1);
                let deferred = self.frontier.defer(request, now + wait);
                self.ok(deferred);
            }
        }
    }

    /// Count a request given up, and file it: the failures file, a durable frontier, the
    /// timeline.
    fn give_up(&mut self, url: &Url, method: &Method, attempts: u32, failure: &Failure) {
        tracing::warn!(target: "spiderling", %url, reason = %failure.reason, status = ?failure.status, error = failure.error.as_deref().unwrap_or_default(), attempts, "giving up");
        let message = match (&failure.error, failure.status) {
            (Some(error), _) => error.clone(),
            (None, Some(status)) => format!("status {status}"),
            (None, None) => failure.reason.as_str().to_owned(),
        };
        self.shared.tally.failure(failure.reason, &message);
        if let Some(timeline) = &self.timeline {
            timeline.lock().failure(failure.reason.as_str(), url.as_str(), message);
        }
        let filed = self.commit.give_up(self.frontier.durable(), url, method, attempts, failure);
        self.ok(filed);
    }

    fn enqueue(&mut self, request: Request, now: Instant) {
        // What robots.txt is known to turn away is only remembered as seen: it would
        // cost a place in the queue (a durable frontier's rows, a fleet's shared rate
        // token) to be dropped when its turn came.
        if self.hosts.known_disallowed(request.url()) {
            let seen = self.frontier.see(&request);
            match self.ok(seen) {
                Some(Enqueued::Accepted(_)) => {
                    tracing::debug!(target: "spiderling", url = %request.url(), "disallowed by robots.txt");
                    self.shared.tally.robots_disallowed.add(1);
                }
                Some(other) => self.count(&other),
                None => {}
            }
            return;
        }
        let enqueued = self.frontier.enqueue(request);
        let enqueued = self.ok(enqueued);
        match enqueued {
            Some(Enqueued::Accepted(key)) => self.ready_host(key, now),
            Some(other) => self.count(&other),
            None => {}
        }
    }

    /// Count a request the frontier turned away.
    fn count(&self, enqueued: &Enqueued) {
        let tally = &self.shared.tally;
        match enqueued {
            Enqueued::Duplicate => tally.duplicates.add(1),
            Enqueued::OutOfScope => tally.out_of_scope.add(1),
            Enqueued::TooDeep => tally.too_deep.add(1),
            Enqueued::Accepted(_) | Enqueued::Shared => {}
        }
    }

    /// Put the host of `key` in the ready queue, meeting it first if new: with what a
    /// durable frontier remembers of its robots.txt, and in a fleet its first limits.
    fn ready_host(&mut self, key: HostKey, now: Instant) {
        let id = self.meet_host(key, now);
        self.hosts.mark_ready(id);
    }

    /// The host of `key`, met now if it was not before.
    pub(super) fn meet_host(&mut self, key: HostKey, now: Instant) -> HostId {
        if let Some(id) = self.hosts.id_of(&key) {
            return id;
        }
        let memo = match self.frontier.durable().filter(|_| self.hosts.obey_robots()) {
            Some(durable) => {
                let memo = durable.robots(&key);
                self.ok(memo).flatten()
            }
            None => None,
        };
        let id = self.hosts.add(key.clone(), now, memo, &self.shared.robots_token);
        let limits = self.hosts[id].controller.as_ref().map(|c| (c.limit(), c.rps()));
        if let (Some((limit, rps)), Some(shared)) = (limits, self.frontier.shared()) {
            shared.adapt_host(&key, limit, rps, Proposal::First);
        }
        id
    }
}

/// Without the `render` feature no browser asks anything.
#[cfg(not(feature = "render"))]
impl<S: Spider> Dispatcher<S> {
    fn hear(&mut self, heard: Heard, _: Instant) {
        match heard {}
    }

    fn admit_asks(&mut self, _: Instant) -> Option<Instant> {
        None
    }
}

/// The hosts whose robots.txt lists sitemaps to read: those of the start URLs, with
/// `sitemaps` on; none without.
fn sitemap_hosts(config: &Config) -> HashSet<HostKey> {
    if !config.sitemaps {
        return HashSet::new();
    }
    let urls = config.start_urls.iter().filter_map(|url| Url::parse(url).ok());
    urls.filter_map(|url| host_key(&url)).collect()
}

/// Requests arrived from a fleet's frontier; never, for a frontier of this process.
async fn arrived(arrivals: Option<&Notify>) {
    match arrivals {
        Some(arrivals) => arrivals.notified().await,
        None => std::future::pending().await,
    }
}

/// The next start URL of the list; `None` once it is read to its end; never, without one.
async fn next_start(list: Option<&mut mpsc::Receiver<Request>>) -> Option<Request> {
    match list {
        Some(list) => list.recv().await,
        None => std::future::pending().await,
    }
}
