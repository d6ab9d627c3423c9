//! The dispatcher: the one task that owns the frontier and admission, launches
//! requests and absorbs what they report.

mod gauges;
mod limits;

pub(super) use limits::Limits;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use reqwest::Method;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinSet;
use tokio::time::Instant;
use url::Url;

use super::task::{crawl_page, fetch_robots};
use super::{Done, Files, HostId, Job, Notes, Outcome, Report, Shared};
use crate::error::cause::Cause;
use crate::error::Error;
use crate::observe::gauge::{Latencies, Live, Window, WINDOW};
use crate::observe::stats::{CrawlStatus, Stats};
use crate::observe::timeline::Recorder;
use crate::request::host::HostKey;
use crate::request::Request;
use crate::request::Ticket;
use crate::schedule::cache::HttpCache;
use crate::schedule::frontier::{Checkpoint, Enqueued, Journal, RobotsMemo, RunEnd};
use crate::schedule::retry;
use crate::schedule::robots::{self, RobotsRules};
use crate::schedule::throttle::adaptive::{self, Controller, Proposal, Target};
use crate::schedule::throttle::{self, HostSlots, RateGate, SlotState};
use crate::sinks::failures::Failure;
use crate::sinks::Encoded;
use crate::spider::Spider;
use crate::wire::classify::Trouble;
use spider_settings::{Backoff, Config, DelayRange};

/// The longest a finished request waits for its checkpoint (see `checkpoint_due`).
const GROUP_COMMIT: Duration = Duration::from_millis(2);

/// Start URLs taken from the list in one turn of the dispatcher, beyond the first.
const START_BATCH: usize = 255;

/// What the dispatcher listens to besides its tasks.
pub(super) struct Inputs {
    /// Ctrl-C or SIGTERM.
    pub(super) stop_rx: mpsc::UnboundedReceiver<()>,
    /// The start list's requests as they are read (`--start-urls`).
    pub(super) start_list: Option<mpsc::Receiver<Request>>,
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

enum RobotsState {
    Unknown,
    /// robots.txt redirected: the next hop waits for admission like any request.
    Redirected(Box<Request>),
    Fetching,
    Known(RobotsRules),
}

pub(super) struct Host {
    key: HostKey,
    slots: HostSlots,
    robots: RobotsState,
    robots_attempts: u32,
    last_robots_backoff: Duration,
    crawl_delay: Duration,
    in_ready_queue: bool,
    /// Its answers over the last [`WINDOW`].
    window: Window,
    /// Adaptive mode's controller of its slots and pace; none when a Crawl-delay rules.
    controller: Option<Controller>,
    /// Good answers since the controller's last step, and whether every slot was busy.
    good_this_step: usize,
    saturated: bool,
}

pub(super) struct Dispatcher<S: Spider> {
    shared: Arc<Shared<S>>,
    frontier: Box<dyn Journal>,
    /// The output and failures files, written only here, in the order requests finish.
    files: Files,
    /// Whether the frontier keeps its requests past the process: a state file.
    durable: bool,
    /// `state_sync`: the files are synced to the disk before each checkpoint.
    state_sync: bool,
    /// Changes since the last checkpoint.
    unsaved: bool,
    /// With a state file, requests finished since the last checkpoint, and since when:
    /// each keeps its global slot until committed (see `checkpoint_due`).
    uncommitted: usize,
    uncommitted_since: Option<Instant>,
    /// Requests cut short at shutdown and left in the state file for the next run.
    left: usize,
    hosts: Vec<Host>,
    host_ids: HashMap<HostKey, HostId>,
    /// With `sitemaps`, the hosts of the start URLs, until their robots.txt arrives: the
    /// sitemaps it lists are queued then.
    sitemap_hosts: HashSet<HostKey>,
    ready: VecDeque<HostId>,
    timers: BinaryHeap<Reverse<(Instant, HostId)>>,
    in_flight: usize,
    concurrency: usize,
    per_host: usize,
    obey_robots: bool,
    retries: u32,
    backoff: Backoff,
    delay: DelayRange,
    rate: Option<RateGate>,
    /// Whether the frontier holds the limits for a fleet (see [`Journal::shares_limits`]).
    shares_limits: bool,
    /// Woken when a fleet's frontier has new requests for this worker.
    arrivals: Option<Arc<Notify>>,
    /// Start URLs read from a list while the crawl runs; `None` once it is read to its end.
    start_list: Option<mpsc::Receiver<Request>>,
    /// A request popped for launch that is waiting for a rate token.
    held: Option<(HostId, Job)>,
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
    limits: Limits,
    /// Adaptive mode's aim, when on.
    adaptive: Option<Target>,
    /// All answers over the last [`WINDOW`], and the latest latencies.
    window: Window,
    latencies: Latencies,
    /// The gauges' channel and timeline, and when they are next published (and the
    /// controllers step).
    live: watch::Sender<Live>,
    timeline: Option<Recorder>,
    next_tick: Instant,
    fatal: Option<Error>,
}

impl<S: Spider> Dispatcher<S> {
    pub(super) fn new(
        config: &Config,
        frontier: Box<dyn Journal>,
        shared: Arc<Shared<S>>,
        files: Files,
        inputs: Inputs,
        watchers: Watchers,
        limits: Limits,
    ) -> Self {
        let Inputs { stop_rx, start_list } = inputs;
        let Watchers { live, timeline } = watchers;
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        // A fleet's frontier holds the rate for every worker: requests arrive admitted.
        let shares_limits = frontier.shares_limits();
        let rate = config.rate.filter(|_| !shares_limits).and_then(RateGate::new);
        let arrivals = frontier.arrivals();
        let mut dispatcher = Dispatcher {
            shared,
            durable: frontier.is_durable(),
            state_sync: config.state_sync,
            frontier,
            files,
            // The seeds, or an earlier run's queue put back: committed before any launch.
            unsaved: true,
            uncommitted: 0,
            uncommitted_since: None,
            left: 0,
            hosts: Vec::new(),
            host_ids: HashMap::new(),
            sitemap_hosts: sitemap_hosts(config),
            ready: VecDeque::new(),
            timers: BinaryHeap::new(),
            in_flight: 0,
            concurrency: config.concurrency,
            per_host: config.per_host,
            obey_robots: config.obey_robots,
            retries: config.retries,
            backoff: config.backoff,
            delay: config.delay,
            rate,
            shares_limits,
            arrivals,
            start_list,
            held: None,
            rng: SmallRng::from_os_rng(),
            tasks: JoinSet::new(),
            done_tx,
            done_rx,
            stop_rx,
            draining_until: None,
            grace: config.grace,
            budget_reached: false,
            limits,
            adaptive: config.adaptive.then(|| Target {
                block_rate: config.block_target,
                ceiling: config.per_host.min(config.concurrency),
                max_rps: config.rate.and_then(|r| r.per_second()).unwrap_or(f64::INFINITY),
            }),
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
            if self.checkpoint_due(now) {
                self.checkpoint(None);
            }
            let released = self.frontier.release_due(now);
            for key in self.ok(released).unwrap_or_default() {
                self.ready_host(key, now);
            }
            while let Some(&Reverse((due, id))) = self.timers.peek() {
                if due > now {
                    break;
                }
                self.timers.pop();
                self.mark_ready(id);
            }
            if now >= self.next_tick {
                self.tick(now);
            }
            if self.draining_until.is_some_and(|deadline| deadline <= now) {
                tracing::warn!(
                    in_flight = self.in_flight,
                    "grace period over: abandoning requests in flight"
                );
                return self.abandon().await;
            }
            let rate_wait = self.launch_ready(now);
            if self.is_idle() {
                return self.end();
            }
            let wake_at = [
                self.timers.peek().map(|Reverse((due, _))| *due),
                self.uncommitted_since.map(|since| since + GROUP_COMMIT),
                self.frontier.next_due(),
                rate_wait.map(|wait| now + wait),
                self.draining_until,
            ]
            .into_iter()
            .flatten()
            .min();
            if self.in_flight == 0 && wake_at.is_none() && self.start_list.is_none() {
                tracing::error!(
                    pending = self.frontier.len(),
                    "requests are queued but no host can take them; stopping"
                );
                self.fatal.get_or_insert(Error::Stalled { pending: self.frontier.len() });
                return self.end();
            }
            // The gauges' tick wakes the dispatcher too, but is no work: not counted above.
            let wake_at = wake_at.map_or(self.next_tick, |at| at.min(self.next_tick));
            tokio::select! {
                biased;
                Some(()) = self.stop_rx.recv() => {
                    if self.draining_until.is_some() {
                        tracing::warn!(in_flight = self.in_flight, "second stop signal: abandoning requests in flight");
                        return self.abandon().await;
                    }
                    tracing::warn!(in_flight = self.in_flight, grace = ?self.grace, "stop signal: admitting nothing more, finishing requests in flight");
                    self.draining_until = Some(Instant::now() + self.grace);
                }
                Some(done) = self.done_rx.recv() => {
                    let now = Instant::now();
                    self.on_done(done, now);
                    while let Ok(done) = self.done_rx.try_recv() {
                        self.on_done(done, now);
                    }
                }
                () = tokio::time::sleep_until(wake_at) => {}
                () = arrived(self.arrivals.as_deref()) => {}
                read = next_start(self.start_list.as_mut()) => match read {
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
                || self.limits.reached(&self.shared.stats)
                || (self.held.is_none() && !self.frontier.has_pending() && self.start_list.is_none()))
    }

    /// Abort the tasks in flight; each reports its request as interrupted.
    async fn abandon(mut self) -> End {
        self.tasks.shutdown().await;
        let now = Instant::now();
        while let Ok(done) = self.done_rx.try_recv() {
            self.on_done(done, now);
        }
        self.end()
    }

    fn end(mut self) -> End {
        self.publish(Instant::now());
        let unfinished = self.frontier.len() + self.in_flight + usize::from(self.held.is_some()) + self.left;
        let stopped = if self.draining_until.is_some() {
            Some(CrawlStatus::Interrupted)
        } else if self.budget_reached {
            Some(CrawlStatus::BudgetReached)
        } else if unfinished > 0 && self.limits.reached(&self.shared.stats) {
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
        } else if self.shared.stats.failure_count() > 0 {
            RunEnd::Finished(CrawlStatus::CompleteWithFailures)
        } else {
            RunEnd::Finished(CrawlStatus::Complete)
        };
        self.checkpoint(Some(ended));
        if let Some(Err(error)) = self.files.cache.as_mut().map(HttpCache::commit) {
            self.fatal.get_or_insert(error);
        }
        // After the last checkpoint: a JSON array's closing bracket is not committed, so a
        // resumed crawl cuts it off and goes on.
        if let Some(Err(error)) = self.files.sink.as_mut().map(|sink| sink.finish()) {
            self.fatal.get_or_insert(error);
        }
        if let Some(Err(error)) = self.files.failures.as_mut().map(|file| file.flush()) {
            self.fatal.get_or_insert(error);
        }
        End { error: self.fatal, stopped, unfinished }
    }

    /// Commit what this run did since the last checkpoint, with a state file: flush the
    /// files to the operating system, then commit the frontier's changes together with
    /// their lengths. Without one, the files are flushed when the crawl ends.
    fn checkpoint(&mut self, ended: Option<RunEnd>) {
        self.unsaved = false;
        self.uncommitted = 0;
        self.uncommitted_since = None;
        if !self.durable {
            return;
        }
        let sync = self.state_sync;
        let output = self.files.sink.as_mut().map(|sink| {
            let committed = sink.flush()?;
            synced(sync, || sink.sync()).map(|()| committed)
        });
        let failures = self.files.failures.as_mut().map(|file| {
            let committed = file.flush()?;
            synced(sync, || file.sync()).map(|()| committed)
        });
        let (output, failures) = (output.transpose(), failures.transpose());
        let (output, failures) = match (output, failures) {
            (Ok(output), Ok(failures)) => (output, failures),
            (Err(error), _) | (_, Err(error)) => {
                // Nothing is committed past what the files hold.
                self.fail(error);
                return;
            }
        };
        let counts =
            self.shared.stats.counts(self.shared.pool.html_parses(), self.shared.pool.streamed_pages());
        let proxy_bytes = self.shared.exchange.proxy_bytes();
        // Only a state file keeps the cookie jars: a fleet's workers keep their own.
        let identities =
            if self.frontier.keeps_identities() { self.shared.exchange.identities().changes() } else { None };
        let checkpoint = Checkpoint { output, failures, counts: &counts, proxy_bytes, ended, identities };
        if let Err(error) = self.frontier.checkpoint(&checkpoint) {
            self.fail(error);
        }
    }

    /// Whether to checkpoint now. Changes that finished no request (the seeds, an earlier
    /// run's queue) are committed at once. Finished requests are committed in groups, at
    /// most [`GROUP_COMMIT`] after the first: each commit costs about as much as a hundred
    /// requests' changes, so one per request would slow a fast crawl by a fifth. Until
    /// committed, a finished request keeps its global slot, so a crash fetches again at
    /// most `concurrency` pages: those in flight, and those finished but not committed.
    fn checkpoint_due(&self, now: Instant) -> bool {
        match self.uncommitted_since {
            _ if !self.unsaved => false,
            None => true,
            Some(since) => now >= since + GROUP_COMMIT || self.draining_until.is_some(),
        }
    }

    /// Global slots taken: requests in flight, and with a state file those finished but
    /// not yet committed.
    fn slots_taken(&self) -> usize {
        self.in_flight + self.uncommitted
    }

    /// Stop admitting: the first error of the crawl is the one it ends with.
    fn fail(&mut self, error: Error) {
        if self.fatal.is_none() {
            tracing::error!(%error, "stopping: no new requests are admitted");
            self.fatal = Some(error);
        }
    }

    /// The value of a frontier call, or `None` after stopping the crawl on its error.
    fn ok<T>(&mut self, result: Result<T, Error>) -> Option<T> {
        result.map_err(|error| self.fail(error)).ok()
    }

    /// The frontier is done with the request of `ticket`.
    fn finish(&mut self, ticket: Option<Ticket>) {
        // Also for requests finished unfetched (robots.txt): their end is a change to save,
        // with the next group.
        self.unsaved = true;
        if self.durable {
            self.uncommitted_since.get_or_insert_with(Instant::now);
        }
        if let Some(ticket) = ticket {
            let finished = self.frontier.finish(ticket);
            self.ok(finished);
        }
    }

    /// Launch requests while admission allows; returns the wait for the next rate token
    /// when that is what stopped it.
    fn launch_ready(&mut self, now: Instant) -> Option<Duration> {
        while self.fatal.is_none()
            && self.draining_until.is_none()
            && !self.budget_reached
            && self.slots_taken() < self.concurrency
            && self.limits.admit(&self.shared.stats, self.in_flight)
        {
            if self.shared.exchange.budget_reached(|own| self.frontier.fleet_proxy_bytes(own)) {
                tracing::warn!(
                    in_flight = self.in_flight,
                    "proxy budget reached: admitting nothing more, finishing requests in flight"
                );
                self.budget_reached = true;
                return None;
            }
            let (host, job) = match self.held.take() {
                Some(held) => held,
                None => self.next_job(now)?,
            };
            if job.offline() {
                // Nothing is sent: no rate token, no host slot, no pause.
                self.launch(host, job, now);
                continue;
            }
            if let Some(rate) = &self.rate {
                if let Err(wait) = rate.try_pass() {
                    self.held = Some((host, job));
                    return Some(wait);
                }
            }
            if self.hosts[host].slots.state(now) != SlotState::Free {
                // The host was told to slow down while this request waited for its token.
                self.put_back(host, job);
                continue;
            }
            self.launch(host, job, now);
        }
        None
    }

    /// The next request of the first ready host, round-robin. Holds nothing: the host's
    /// slot is taken only at launch.
    fn next_job(&mut self, now: Instant) -> Option<(HostId, Job)> {
        // Requests of hosts whose robots.txt could not be had: given up, with the reason;
        // and those robots.txt disallows: finished unfetched.
        let mut unreachable = Vec::new();
        let mut disallowed = Vec::new();
        let mut failed = None;
        while let Some(id) = self.ready.pop_front() {
            let host = &mut self.hosts[id];
            host.in_ready_queue = false;
            match host.slots.state(now) {
                SlotState::Free => {}
                SlotState::PausedUntil(due) => {
                    self.timers.push(Reverse((due, id)));
                    continue;
                }
                // Woken again when a request of this host finishes. Its slots, not its
                // pace, held it back: adaptive mode may give it more.
                SlotState::Busy => {
                    host.saturated = true;
                    continue;
                }
            }
            let job = match &host.robots {
                RobotsState::Unknown => {
                    let robots = Url::parse(&host.key).ok().and_then(|url| robots::robots_url(&url));
                    match robots {
                        Some(url) => {
                            host.robots = RobotsState::Fetching;
                            Some(Job::robots(Request::new(url)))
                        }
                        None => {
                            host.robots = RobotsState::Known(RobotsRules::AllowAll);
                            let next = self.frontier.next(&host.key);
                            self.ok(next).flatten().map(Job::page)
                        }
                    }
                }
                RobotsState::Redirected(_) => {
                    match std::mem::replace(&mut host.robots, RobotsState::Fetching) {
                        RobotsState::Redirected(next) => Some(Job::robots(*next)),
                        _ => None,
                    }
                }
                // Woken again when robots.txt arrives.
                RobotsState::Fetching => None,
                RobotsState::Known(rules) => loop {
                    match self.frontier.next(&host.key) {
                        Ok(Some(request)) if !rules.allows(request.url()) => {
                            if let RobotsRules::Unavailable(reason) = rules {
                                unreachable.push((request, reason.clone()));
                            } else {
                                tracing::debug!(url = %request.url(), "disallowed by robots.txt");
                                Stats::add(&self.shared.stats.robots_disallowed, 1);
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
            };
            if let Some(error) = failed.take() {
                self.fail(error);
            }
            for ticket in disallowed.drain(..) {
                self.finish(ticket);
            }
            for (request, reason) in unreachable.drain(..) {
                let failure =
                    Failure { reason: Cause::robots_reason(&reason), status: None, error: Some(reason) };
                self.give_up(request.url(), request.method(), request.attempts + 1, &failure);
                self.finish(request.ticket);
            }
            if let Some(mut job) = job {
                self.mark_ready(id);
                if let Some(cache) = &self.files.cache {
                    let cached = cache.lookup(&job.request);
                    job.cached = self.ok(cached).flatten();
                }
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
        self.mark_ready(id);
    }

    fn launch(&mut self, id: HostId, job: Job, now: Instant) {
        let network = !job.offline();
        if network {
            self.hosts[id].slots.take(now);
            Stats::add(&self.shared.stats.requests, 1);
        }
        self.in_flight += 1;
        let request = &job.request;
        let report = Report {
            host: id,
            network,
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
            let mut notes = Notes::default();
            let outcome = if job.robots {
                fetch_robots(&shared, job, &mut notes).await
            } else {
                crawl_page(&shared, job, &mut notes).await
            };
            report.send(outcome, notes);
        });
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        self.in_flight -= 1;
        self.unsaved = true;
        if self.durable {
            self.uncommitted += 1;
            self.uncommitted_since.get_or_insert(now);
        }
        let ticket = done.ticket;
        let id = done.host;
        if done.network {
            let host = &mut self.hosts[id];
            let pause = throttle::pause(&self.delay, host.crawl_delay, &mut self.rng);
            host.slots.release(now + pause);
            if let Some(ticket) = ticket {
                self.frontier.rest_slot(ticket, now + pause);
            }
        }
        if let Some(sample) = done.notes.sample {
            self.record(id, sample, now);
        }
        if let (Some(cache), Some(write)) = (self.files.cache.as_mut(), done.notes.cache) {
            let written = cache.write(write);
            self.ok(written);
        }
        let host = &mut self.hosts[id];
        match done.outcome {
            Outcome::Parsed { items, follows, failed, not_html } => {
                self.write_items(&items);
                let counter =
                    if not_html { &self.shared.stats.skipped_not_html } else { &self.shared.stats.pages };
                Stats::add(counter, 1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket);
            }
            Outcome::Sitemap { follows, failed } => {
                Stats::add(&self.shared.stats.sitemaps, 1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket);
            }
            Outcome::Redirect(request) => {
                Stats::add(&self.shared.stats.redirects, 1);
                self.enqueue(request, now);
                self.finish(ticket);
            }
            Outcome::Robots(rules, memo) => {
                let key = host.key.clone();
                let remembered = self.frontier.remember_robots(&key, &memo);
                self.ok(remembered);
                if self.sitemap_hosts.remove(&key) {
                    self.queue_sitemaps(&key, rules.sitemaps(), now);
                }
                self.learn_robots(id, rules, now);
            }
            Outcome::RobotsRedirect(next) => host.robots = RobotsState::Redirected(Box::new(next)),
            Outcome::RobotsUnavailable(_) if host.robots_attempts < self.retries => {
                host.robots_attempts += 1;
                let wait =
                    retry::wait(&self.backoff, host.last_robots_backoff, Duration::ZERO, &mut self.rng);
                host.last_robots_backoff = wait;
                host.robots = RobotsState::Unknown;
                host.slots.pause_until(now + wait);
            }
            Outcome::RobotsUnavailable(reason) => {
                tracing::warn!(host = %host.key, %reason, "robots.txt unavailable: nothing on this host is fetched (RFC 9309)");
                let key = host.key.clone();
                let remembered =
                    self.frontier.remember_robots(&key, &RobotsMemo::Unavailable(reason.clone()));
                self.ok(remembered);
                self.hosts[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            Outcome::Trouble { request, trouble, retry_after, failure } => {
                self.retry_or_give_up(id, request, trouble, retry_after, &failure, now);
            }
            Outcome::Failed { url, method, attempts, failure } => {
                self.give_up(&url, &method, attempts, &failure);
                self.finish(ticket);
            }
            // Left in flight in the state file, which queues it again on resume.
            Outcome::Interrupted { .. } if self.frontier.is_durable() => self.left += 1,
            Outcome::Interrupted { url, method, attempts } => {
                let failure = Failure { reason: "interrupted", status: None, error: None };
                self.give_up(&url, &method, attempts, &failure);
            }
            // Not finished: with a state file, a resumed crawl fetches it again.
            Outcome::Fatal(error) => self.fail(error),
        }
        self.mark_ready(id);
    }

    /// Queue the sitemaps a start host's robots.txt lists. Only an answer fetched in this
    /// run comes here: one remembered by a state file or learnt from the fleet had its
    /// sitemaps queued by the run, or the worker, that fetched it, in the same checkpoint.
    fn queue_sitemaps(&mut self, host: &str, sitemaps: &[String], now: Instant) {
        for listed in sitemaps {
            match Url::parse(listed) {
                Ok(url) => {
                    tracing::info!(%host, sitemap = %url, "robots.txt lists a sitemap");
                    self.enqueue(Request::sitemap(url), now);
                }
                Err(error) => {
                    tracing::warn!(%host, sitemap = %listed, %error, "robots.txt lists a sitemap that is not a URL")
                }
            }
        }
    }

    /// Obey a host's robots.txt, its Crawl-delay included.
    fn learn_robots(&mut self, id: HostId, rules: RobotsRules, now: Instant) {
        let host = &mut self.hosts[id];
        if let Some(delay) = rules.crawl_delay() {
            tracing::info!(host = %host.key, ?delay, "robots.txt sets a Crawl-delay: one slot, paused at least that long");
            host.crawl_delay = delay;
            host.controller = None;
            host.slots.set_rate(None);
            host.slots.set_limit(1, now);
            host.slots.pause_until(now + delay);
        }
        host.robots = RobotsState::Known(rules);
    }

    /// Append a page's items to the output file, and count them.
    fn write_items(&mut self, items: &Encoded) {
        if let Some(sink) = self.files.sink.as_mut() {
            if let Err(error) = sink.write(items) {
                self.fail(error);
                return;
            }
        }
        Stats::add(&self.shared.stats.items, items.count);
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
        let wait =
            retry::wait(&self.backoff, request.last_backoff, retry_after.unwrap_or_default(), &mut self.rng);
        if trouble == Trouble::SlowDown {
            // At once, also in adaptive mode, and also for a request given up below: a
            // limiter bans a client that keeps going.
            let host = &mut self.hosts[id];
            let until = now + retry_after.unwrap_or(wait);
            host.slots.pause_until(until);
            tracing::info!(host = %host.key, ?retry_after, "429: backing off the host");
            let key = host.key.clone();
            self.frontier.hold_host(&key, until);
        }
        if request.attempts >= self.retries {
            let attempts = request.attempts + 1;
            self.give_up(request.url(), request.method(), attempts, failure);
            self.finish(request.ticket);
            return;
        }
        let stats = &self.shared.stats;
        request.attempts += 1;
        request.last_backoff = wait;
        tracing::debug!(url = %request.url(), reason = failure.reason, ?wait, attempt = request.attempts, "retrying");
        Stats::add(&stats.retries, 1);
        let deferred = self.frontier.defer(request, now + wait);
        self.ok(deferred);
    }

    /// Count a request given up, write it to the failures file and the state file.
    fn give_up(&mut self, url: &Url, method: &Method, attempts: u32, failure: &Failure) {
        tracing::warn!(%url, reason = failure.reason, status = ?failure.status, error = failure.error.as_deref().unwrap_or_default(), attempts, "giving up");
        let message = match (&failure.error, failure.status) {
            (Some(error), _) => error.clone(),
            (None, Some(status)) => format!("status {status}"),
            (None, None) => failure.reason.to_owned(),
        };
        self.shared.stats.failure(failure.reason, &message);
        if let Some(timeline) = &self.timeline {
            timeline.lock().failure(failure.reason, url.as_str(), message);
        }
        if let Some(file) = self.files.failures.as_mut() {
            if let Err(error) = file.record(url.as_str(), method.as_str(), attempts, failure) {
                self.fail(error);
            }
        }
        let recorded = self.frontier.record_failure(url, method, attempts, failure);
        self.ok(recorded);
    }

    fn enqueue(&mut self, request: Request, now: Instant) {
        if self.shares_limits && self.known_disallowed(request.url()) {
            // In a fleet, a request leased costs a token of the shared rate even if
            // robots.txt then turns it away: what is known to be disallowed stays here.
            tracing::debug!(url = %request.url(), "disallowed by robots.txt");
            Stats::add(&self.shared.stats.robots_disallowed, 1);
            return;
        }
        let enqueued = self.frontier.enqueue(request);
        let enqueued = self.ok(enqueued);
        let stats = &self.shared.stats;
        match enqueued {
            Some(Enqueued::Accepted(key)) => self.ready_host(key, now),
            Some(Enqueued::Duplicate) => Stats::add(&stats.duplicates, 1),
            Some(Enqueued::OutOfScope) => Stats::add(&stats.out_of_scope, 1),
            Some(Enqueued::TooDeep) => Stats::add(&stats.too_deep, 1),
            Some(Enqueued::Shared) | None => {}
        }
    }

    /// Whether the robots.txt of `url`'s host is known here and disallows it.
    fn known_disallowed(&self, url: &Url) -> bool {
        let Some(&id) = crate::request::host::host_key(url).and_then(|key| self.host_ids.get(&key)) else {
            return false;
        };
        matches!(&self.hosts[id].robots, RobotsState::Known(rules @ RobotsRules::Rules(_)) if !rules.allows(url))
    }

    /// Put the host of `key` in the ready queue, meeting it first if new.
    fn ready_host(&mut self, key: HostKey, now: Instant) {
        let id = match self.host_ids.get(&key) {
            Some(&id) => id,
            None => self.add_host(key, now),
        };
        self.mark_ready(id);
    }

    fn add_host(&mut self, key: HostKey, now: Instant) -> HostId {
        let id = self.hosts.len();
        // What robots.txt said in an earlier run, if the state file has it.
        let memo = if self.obey_robots {
            let memo = self.frontier.robots(&key);
            self.ok(memo).flatten()
        } else {
            None
        };
        let robots =
            if self.obey_robots { RobotsState::Unknown } else { RobotsState::Known(RobotsRules::AllowAll) };
        self.hosts.push(Host {
            key: key.clone(),
            slots: HostSlots::new(self.per_host, now),
            robots,
            robots_attempts: 0,
            last_robots_backoff: Duration::ZERO,
            crawl_delay: Duration::ZERO,
            in_ready_queue: false,
            window: Window::new(WINDOW),
            controller: None,
            good_this_step: 0,
            saturated: false,
        });
        if let Some(target) = &self.adaptive {
            let controller = Controller::new(target, now);
            let host = &mut self.hosts[id];
            host.slots.set_limit(controller.limit(), now);
            host.slots.set_rate(Some(controller.rps()));
            self.frontier.adapt_host(&key, controller.limit(), controller.rps(), Proposal::First);
            host.controller = Some(controller);
        }
        self.host_ids.insert(key, id);
        match memo {
            Some(RobotsMemo::Answer { status, body }) => {
                let rules = RobotsRules::from_answer(status, &body, &self.shared.robots_token);
                self.learn_robots(id, rules, now);
            }
            Some(RobotsMemo::Unavailable(reason)) => {
                self.hosts[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            None => {}
        }
        id
    }

    /// Put a host in the ready queue; whether it can really launch is checked when it
    /// comes out.
    fn mark_ready(&mut self, id: HostId) {
        let host = &mut self.hosts[id];
        if !host.in_ready_queue {
            host.in_ready_queue = true;
            self.ready.push_back(id);
        }
    }
}

/// The hosts whose robots.txt lists sitemaps to read: those of the start URLs, with
/// `sitemaps` on; none without.
fn sitemap_hosts(config: &Config) -> HashSet<HostKey> {
    if !config.sitemaps {
        return HashSet::new();
    }
    let urls = config.start_urls.iter().filter_map(|url| Url::parse(url).ok());
    urls.filter_map(|url| crate::request::host::host_key(&url)).collect()
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

/// Sync a file to the disk with `sync`, when `state_sync` asks for it.
fn synced(asked: bool, sync: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
    if asked {
        sync()
    } else {
        Ok(())
    }
}
