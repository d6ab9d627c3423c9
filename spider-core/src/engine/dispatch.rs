//! The dispatcher: the one task that owns the frontier, the hosts and admission; it
//! launches requests (`launch.rs`) and takes in what they report (`outcomes.rs`). Its
//! parts are its fields: `hosts` (each host's slots and robots.txt), `admission` (whether
//! the next request may go now), `commit` (the files and the frontier's checkpoints).
mod inputs;
mod launch;
mod outcomes;
#[cfg(test)]
mod tests;

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

pub(super) use inputs::Inputs;
use inputs::{arrived, next_start};
#[cfg(not(feature = "render"))]
use inputs::{Asking, Heard};

use super::admission::{Admission, Admit, Gate, Standing, Stop};
use super::commit::{Commit, Progress};
use super::hosts::{HostId, Hosts, RobotsState};
#[cfg(feature = "render")]
use super::protocol::Asking;
use super::protocol::{Byproducts, Done, Job, Miss, Outcome, PageSlot, Report, Sorted};
use super::retry_plan::{self, Facts, Next, Refusal};
use super::shared::Shared;
use super::task::{crawl_page, fetch_robots};
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
            self.wake_due(now);
            self.cut_void_stretch();
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
                        tracing::warn!(target: "spiderling", in_flight = self.in_flight, "second stop \
                            signal: abandoning requests in flight");
                        return self.abandon().await;
                    }
                    tracing::warn!(
                        target: "spiderling",
                        in_flight = self.in_flight,
                        grace = ?self.grace,
                        "stop signal: admitting nothing more, finishing requests in flight"
                    );
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

    /// The hosts whose deferred requests or pauses came due are ready again.
    fn wake_due(&mut self, now: Instant) {
        let released = self.frontier.release_due(now);
        for key in self.ok(released).unwrap_or_default() {
            self.ready_host(key, now);
        }
        self.hosts.wake_due(now);
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
            tracing::info!(target: "spiderling", items = held, "waiting for the tables to take the last \
                items");
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
