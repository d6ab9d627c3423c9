//! The engine: a dispatcher that owns the frontier and the admission state, and one task
//! per request in flight.
//!
//! The dispatcher is a single task, so the frontier, the per-host slots and the count of
//! requests in flight need no locks. Each turn it absorbs finished requests, releases
//! retries and pauses that fell due, and launches requests while admission allows:
//!
//! ```text
//! ready host (free slot, pause over, robots known) → global slot free → rate token → spawn
//! ```
//!
//! When nothing can be launched it sleeps until the earliest of: a request finishing, a
//! host's pause ending, a retry falling due, the next rate token, a stop signal. A request
//! task fetches, classifies the answer, runs the spider's `parse` (CPU work on the parse
//! pool), writes the items and reports back; the follow-ups go to the frontier.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use reqwest::header::LOCATION;
use reqwest::Method;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use url::Url;

use crate::block::{Answer, BlockRules};
use crate::classify::{self, Trouble};
use crate::config::Config;
use crate::error::Error;
use crate::export::{self, Exporter};
use crate::failures::{Failure, FailuresFile};
use crate::fetch::{Fetched, Fetcher};
use crate::frontier::{fingerprint, Enqueued, Frontier, HostKey, MemoryFrontier};
use crate::gauge::{HostLive, Latencies, Live, Window, WINDOW};
use crate::item::ExtractError;
use crate::page::Page;
use crate::parse::ParsePool;
use crate::proxy::{Router, Verdict};
use crate::request::Request;
use crate::retry::Backoff;
use crate::robots::{self, RobotsRules};
use crate::spider::{Cx, Spider};
use crate::stats::{CrawlStatus, Stats, Summary};
use crate::throttle::adaptive::{self, Change, Controller, Target};
use crate::throttle::{DelayRange, HostSlots, RateGate, SlotState};

/// Runs a spider to the end.
///
/// # Examples
///
/// ```no_run
/// # use spider_core::{async_trait, Config, Cx, Page, Result, Spider, SpiderConfig};
/// # struct Books;
/// # impl SpiderConfig for Books {
/// #     fn config(&self) -> Config { Config::new("books").start_url("http://127.0.0.1:8000/") }
/// # }
/// # #[async_trait]
/// # impl Spider for Books {
/// #     type Item = String;
/// #     async fn parse(&self, _: Page, _: &mut Cx<String>) -> Result { Ok(()) }
/// # }
/// # async fn demo() -> std::process::ExitCode {
/// match spider_core::Crawler::new(Books).run().await {
///     Ok(summary) => {
///         println!("{summary}");
///         summary.exit_code()
///     }
///     Err(error) => {
///         eprintln!("error: {error}");
///         error.exit_code()
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Crawler<S> {
    spider: S,
    config: Config,
    live: watch::Sender<Live>,
}

impl<S: Spider> Crawler<S> {
    /// A crawler for `spider`, with the spider's own config.
    pub fn new(spider: S) -> Self {
        let config = spider.config();
        Crawler::with_config(spider, config)
    }

    /// A crawler for `spider` with another config: the spider's own, changed at run
    /// time (see [`Config::set`]).
    pub fn with_config(spider: S, config: Config) -> Self {
        Crawler { spider, config, live: watch::Sender::new(Live::default()) }
    }

    /// The crawl's gauges, updated once a second while it runs (see [`Live`]).
    pub fn live(&self) -> watch::Receiver<Live> {
        self.live.subscribe()
    }

    /// Crawl until the frontier is empty and nothing is in flight, or until stopped by
    /// Ctrl-C / SIGTERM; then flush the items, write the stats and failures files and
    /// return the summary, whose [`status`](Summary::status) says how it ended.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for settings that cannot work (before any request is sent);
    /// [`Error::Io`] or [`Error::Export`] when items cannot be written, in which case the
    /// crawl stops admitting and what was written so far is flushed first.
    pub async fn run(self) -> Result<Summary, Error> {
        let Crawler { spider, config, live } = self;
        config.validate()?;
        let start = config.start_requests()?;
        // Bound before the output file is opened: a port in use must not cost the items of
        // the last run.
        let metrics = match &config.metrics {
            Some(addr) => Some(Background(crate::metrics::serve(addr, live.subscribe()).await?)),
            None => None,
        };
        let exporter = config.output.as_deref().map(export::open::<S::Item>).transpose()?;
        if exporter.is_none() {
            tracing::warn!("no output file: items are counted, not written");
        }
        let failures = config.failures_path().as_deref().map(FailuresFile::create).transpose()?;
        let shared = Arc::new(Shared {
            fetcher: Fetcher::new(&config),
            router: Router::new(&config)?,
            block_rules: BlockRules::new(&config),
            pool: ParsePool::new(config.parse_threads)?,
            exporter: Mutex::new(exporter),
            stats: Stats::new(),
            robots_token: config.robots_token().to_owned(),
            max_redirects: config.max_redirects,
            retry_statuses: config.retry_statuses.clone(),
            spider,
        });
        let progress = config.progress.then(|| crate::progress::show(live.subscribe()));
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let signals = config.handle_signals.then(|| Background(tokio::spawn(forward_signals(stop_tx))));
        tracing::info!(spider = %config.name, concurrency = config.concurrency, per_host = config.per_host, "crawl starting");
        let frontier = Box::new(MemoryFrontier::new(&config));
        let mut dispatcher = Dispatcher::new(&config, frontier, shared.clone(), failures, stop_rx, live);
        for request in start {
            dispatcher.enqueue(request, Instant::now());
        }
        let end = dispatcher.run().await;
        drop((signals, metrics));
        if let Some(progress) = progress {
            // The dispatcher's end closed the snapshots: the line clears itself.
            let _ = progress.await;
        }

        let flushed = shared
            .exporter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map_or(Ok(()), |exporter| exporter.finish());
        let html_parses = shared.pool.html_parses();
        let stopped = if end.interrupted {
            Some(CrawlStatus::Interrupted)
        } else if end.budget_reached {
            Some(CrawlStatus::BudgetReached)
        } else {
            None
        };
        let proxy = shared.router.spend();
        let summary = shared.stats.summary(&config.name, stopped, end.unfinished, html_parses, proxy);
        if let Some(path) = config.stats_path() {
            write_stats(&path, &summary)?;
        }
        tracing::info!(pages = summary.pages, items = summary.items, failures = summary.failures, status = ?summary.status, "crawl finished");
        match end.error {
            Some(error) => Err(error),
            None => flushed.map(|()| summary),
        }
    }
}

/// A task that ends with the crawl, whichever way the crawl ends.
struct Background(tokio::task::JoinHandle<()>);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn write_stats(path: &Path, summary: &Summary) -> Result<(), Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let json = serde_json::to_vec_pretty(summary).map_err(|e| io(e.into()))?;
    std::fs::write(path, json).map_err(io)
}

/// Forward every Ctrl-C or SIGTERM: the first means drain, the second abort.
async fn forward_signals(stop: mpsc::UnboundedSender<()>) {
    while wait_for_signal().await.is_ok() && stop.send(()).is_ok() {}
}

#[cfg(unix)]
async fn wait_for_signal() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = term.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}

/// What every request task reads.
struct Shared<S: Spider> {
    spider: S,
    fetcher: Fetcher,
    router: Router,
    block_rules: BlockRules,
    pool: ParsePool,
    exporter: Mutex<Option<Box<dyn Exporter<S::Item>>>>,
    stats: Stats,
    robots_token: String,
    max_redirects: u8,
    retry_statuses: Vec<u16>,
}

type HostId = usize;

/// What a task is sent to do.
enum Job {
    Robots(Request),
    Page(Request),
}

impl Job {
    fn request(&self) -> &Request {
        match self {
            Job::Robots(request) | Job::Page(request) => request,
        }
    }
}

/// What a task reports back.
enum Outcome {
    /// The page was parsed; its follow-ups, and the failure if `parse` returned an error
    /// after finding some (their links are still followed).
    Parsed {
        follows: Vec<Request>,
        failed: Option<(Url, Method, u32, Failure)>,
    },
    Redirect(Request),
    Robots(RobotsRules),
    /// robots.txt redirected here.
    RobotsRedirect(Request),
    /// robots.txt could not be had; the reason.
    RobotsUnavailable(String),
    /// Worth another attempt, if any are left.
    Trouble {
        request: Request,
        trouble: Trouble,
        retry_after: Option<Duration>,
        failure: Failure,
    },
    /// Given up for good.
    Failed {
        url: Url,
        method: Method,
        attempts: u32,
        failure: Failure,
    },
    Fatal(Error),
}

impl Outcome {
    fn failed(request: &Request, failure: Failure) -> Self {
        Outcome::Failed {
            url: request.url().clone(),
            method: request.method().clone(),
            attempts: request.attempts + 1,
            failure,
        }
    }
}

struct Done {
    host: HostId,
    outcome: Outcome,
    /// The answer's verdict and latency, when there was an answer.
    sample: Option<Sample>,
}

/// What the gauges learn from one answer.
#[derive(Debug, Clone, Copy)]
struct Sample {
    blocked: bool,
    sent_at: Instant,
    latency: Duration,
}

/// Reports a task's outcome exactly once, even if the task panics (the spider's `parse`
/// is user code) or is abandoned at shutdown: a lost report would leave a slot taken for
/// ever, and the request would be missing from the failures file.
struct Report {
    host: HostId,
    robots: bool,
    url: Url,
    method: Method,
    attempts: u32,
    to: mpsc::UnboundedSender<Done>,
    sent: bool,
}

impl Report {
    fn send(mut self, outcome: Outcome, sample: Option<Sample>) {
        self.sent = true;
        let _ = self.to.send(Done { host: self.host, outcome, sample });
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if !self.sent {
            let reason = if std::thread::panicking() { "panic" } else { "interrupted" };
            if self.robots {
                // The host must not wait for ever for an answer that will not come.
                let outcome = Outcome::RobotsUnavailable(format!("robots.txt fetch ended: {reason}"));
                let _ = self.to.send(Done { host: self.host, outcome, sample: None });
                return;
            }
            let outcome = Outcome::Failed {
                url: self.url.clone(),
                method: self.method.clone(),
                attempts: self.attempts + 1,
                failure: Failure { reason, status: None, error: None },
            };
            let _ = self.to.send(Done { host: self.host, outcome, sample: None });
        }
    }
}

/// How the dispatcher ended.
struct End {
    error: Option<Error>,
    interrupted: bool,
    budget_reached: bool,
    unfinished: usize,
}

enum RobotsState {
    Unknown,
    /// robots.txt redirected: the next hop waits for admission like any request.
    Redirected(Box<Request>),
    Fetching,
    Known(RobotsRules),
}

struct Host {
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

struct Dispatcher<S: Spider> {
    shared: Arc<Shared<S>>,
    frontier: Box<dyn Frontier>,
    hosts: Vec<Host>,
    host_ids: HashMap<HostKey, HostId>,
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
    /// A request popped for launch that is waiting for a rate token.
    held: Option<(HostId, Job)>,
    rng: SmallRng,
    tasks: JoinSet<()>,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    failures: Option<FailuresFile>,
    /// Ctrl-C or SIGTERM: the first drains, the second aborts.
    stop_rx: mpsc::UnboundedReceiver<()>,
    /// Set by the first stop signal: admit nothing; abandon what is in flight then.
    draining_until: Option<Instant>,
    grace: Duration,
    /// Set when the proxy spend reaches the budget: admit nothing, finish what is in flight.
    budget_reached: bool,
    /// Adaptive mode's aim, when on.
    adaptive: Option<Target>,
    /// All answers over the last [`WINDOW`], and the latest latencies.
    window: Window,
    latencies: Latencies,
    /// The gauges' channel, and when they are next published (and the controllers step).
    live: watch::Sender<Live>,
    next_tick: Instant,
    fatal: Option<Error>,
}

impl<S: Spider> Dispatcher<S> {
    fn new(
        config: &Config,
        frontier: Box<dyn Frontier>,
        shared: Arc<Shared<S>>,
        failures: Option<FailuresFile>,
        stop_rx: mpsc::UnboundedReceiver<()>,
        live: watch::Sender<Live>,
    ) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Dispatcher {
            shared,
            frontier,
            hosts: Vec::new(),
            host_ids: HashMap::new(),
            ready: VecDeque::new(),
            timers: BinaryHeap::new(),
            in_flight: 0,
            concurrency: config.concurrency,
            per_host: config.per_host,
            obey_robots: config.obey_robots,
            retries: config.retries,
            backoff: config.backoff,
            delay: config.delay,
            rate: config.rate.and_then(RateGate::new),
            held: None,
            rng: SmallRng::from_os_rng(),
            tasks: JoinSet::new(),
            done_tx,
            done_rx,
            failures,
            stop_rx,
            draining_until: None,
            grace: config.grace,
            budget_reached: false,
            adaptive: config.adaptive.then(|| Target {
                block_rate: config.block_target,
                ceiling: config.per_host.min(config.concurrency),
                max_rps: config.rate.and_then(|r| r.per_second()).unwrap_or(f64::INFINITY),
            }),
            window: Window::new(WINDOW),
            latencies: Latencies::default(),
            live,
            next_tick: Instant::now() + adaptive::STEP,
            fatal: None,
        }
    }

    /// Run until idle, or until a stop signal's grace runs out.
    async fn run(mut self) -> End {
        loop {
            let now = Instant::now();
            while self.tasks.try_join_next().is_some() {}
            for key in self.frontier.release_due(now) {
                if let Some(&id) = self.host_ids.get(&key) {
                    self.mark_ready(id);
                }
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
                self.frontier.next_due(),
                rate_wait.map(|wait| now + wait),
                self.draining_until,
            ]
            .into_iter()
            .flatten()
            .min();
            if self.in_flight == 0 && wake_at.is_none() {
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
            }
        }
    }

    /// Nothing in flight and nothing that may still be launched: the crawl is over.
    fn is_idle(&self) -> bool {
        self.in_flight == 0
            && (self.fatal.is_some()
                || self.draining_until.is_some()
                || self.budget_reached
                || (self.held.is_none() && !self.frontier.has_pending()))
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

    /// What an answer tells the gauges, and the controller of its host.
    fn record(&mut self, id: HostId, sample: Sample, now: Instant) {
        self.latencies.record(sample.latency);
        self.window.record(now, sample.blocked);
        let host = &mut self.hosts[id];
        host.window.record(now, sample.blocked);
        host.good_this_step += usize::from(!sample.blocked);
        let (Some(target), Some(controller)) = (&self.adaptive, host.controller.as_mut()) else { return };
        if let Some(change) = controller.answer(target, now, sample.sent_at, sample.blocked, &host.window) {
            self.apply(id, change, now);
        }
    }

    /// Once a second: the controllers step, the gauges are published.
    fn tick(&mut self, now: Instant) {
        self.next_tick = now + adaptive::STEP;
        if let Some(target) = self.adaptive {
            for id in 0..self.hosts.len() {
                let host = &mut self.hosts[id];
                let used_rps = std::mem::take(&mut host.good_this_step) as f64 / adaptive::STEP.as_secs_f64();
                let saturated = std::mem::take(&mut host.saturated);
                let change = host.controller.as_mut().and_then(|c| c.tick(&target, now, used_rps, saturated));
                if let Some(change) = change {
                    self.apply(id, change, now);
                }
            }
        }
        self.publish(now);
    }

    /// Give a host the limits its controller decided, and say so.
    fn apply(&mut self, id: HostId, change: Change, now: Instant) {
        let host = &mut self.hosts[id];
        let Some(controller) = &host.controller else { return };
        let (limit, rps) = (controller.limit(), controller.rps());
        host.slots.set_limit(limit, now);
        host.slots.set_rate(Some(rps));
        let key = &host.key;
        match change {
            Change::Raised => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, "raised")
            }
            Change::Cut { block_rate } => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, block_rate, "block rate above target: cut by 20%")
            }
            Change::Tripped { until } => {
                host.slots.pause_until(until);
                let pause = until.saturating_duration_since(now);
                tracing::warn!(target: "spiderling::adaptive", host = %key, ?pause, "mostly blocks: circuit breaker open, host paused, then probed");
            }
            Change::Closed => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, "probe answered: circuit breaker closed")
            }
        }
        self.mark_ready(id);
    }

    /// Send the gauges to whoever watches: the progress line, the metrics endpoint.
    fn publish(&mut self, now: Instant) {
        /// Hosts listed, the busiest first.
        const HOSTS_SHOWN: usize = 50;
        self.window.expire(now);
        let stats = &self.shared.stats;
        let [p50, p90, p99] = self.latencies.percentiles();
        let mut hosts: Vec<&mut Host> = self.hosts.iter_mut().collect();
        for host in &mut hosts {
            host.window.expire(now);
        }
        hosts.sort_by_key(|host| Reverse(host.window.answered()));
        let hosts = hosts
            .into_iter()
            .take(HOSTS_SHOWN)
            .map(|host| HostLive {
                host: host.key.to_string(),
                block_rate: host.window.block_rate(),
                answered: host.window.answered(),
                limit: host.slots.limit(),
                rate_per_sec: host.controller.as_ref().map(Controller::rps),
                tripped: host.controller.as_ref().is_some_and(Controller::tripped),
            })
            .collect();
        let proxy = self.shared.router.spend();
        let live = Live {
            elapsed_secs: stats.elapsed().as_secs_f64(),
            requests: Stats::get(&stats.requests),
            pages: Stats::get(&stats.pages),
            items: Stats::get(&stats.items),
            retries: Stats::get(&stats.retries),
            failures: stats.failure_count(),
            blocked: Stats::get(&stats.blocked),
            pages_per_sec: self.window.good_per_second(),
            block_rate: self.window.block_rate(),
            latency_p50_ms: p50,
            latency_p90_ms: p90,
            latency_p99_ms: p99,
            in_flight: self.in_flight,
            queued: self.frontier.len(),
            concurrency_limit: self.concurrency,
            proxy_bytes: proxy.as_ref().map_or(0, |p| p.bytes),
            proxy_spend: proxy.as_ref().map_or(0.0, |p| p.spend),
            hosts,
        };
        self.live.send_replace(live);
    }

    fn end(mut self) -> End {
        self.publish(Instant::now());
        let interrupted = self.draining_until.is_some();
        let unfinished = self.frontier.len() + self.in_flight + usize::from(self.held.is_some());
        if let Some(Err(error)) = self.failures.as_mut().map(FailuresFile::finish) {
            self.fatal.get_or_insert(error);
        }
        End { error: self.fatal, interrupted, budget_reached: self.budget_reached, unfinished }
    }

    /// Launch requests while admission allows; returns the wait for the next rate token
    /// when that is what stopped it.
    fn launch_ready(&mut self, now: Instant) -> Option<Duration> {
        while self.fatal.is_none()
            && self.draining_until.is_none()
            && !self.budget_reached
            && self.in_flight < self.concurrency
        {
            if self.shared.router.budget_reached() {
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
            self.launch(host, job);
        }
        None
    }

    /// The next request of the first ready host, round-robin. Holds nothing: the host's
    /// slot is taken only at launch.
    fn next_job(&mut self, now: Instant) -> Option<(HostId, Job)> {
        // Requests of hosts whose robots.txt could not be had: given up, with the reason.
        let mut unreachable = Vec::new();
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
                            Some(Job::Robots(Request::new(url)))
                        }
                        None => {
                            host.robots = RobotsState::Known(RobotsRules::AllowAll);
                            self.frontier.next(&host.key).map(Job::Page)
                        }
                    }
                }
                RobotsState::Redirected(_) => {
                    match std::mem::replace(&mut host.robots, RobotsState::Fetching) {
                        RobotsState::Redirected(next) => Some(Job::Robots(*next)),
                        _ => None,
                    }
                }
                // Woken again when robots.txt arrives.
                RobotsState::Fetching => None,
                RobotsState::Known(rules) => loop {
                    match self.frontier.next(&host.key) {
                        Some(request) if !rules.allows(request.url()) => {
                            if let RobotsRules::Unavailable(reason) = rules {
                                unreachable.push((request, reason.clone()));
                            } else {
                                tracing::debug!(url = %request.url(), "disallowed by robots.txt");
                                Stats::add(&self.shared.stats.robots_disallowed, 1);
                            }
                        }
                        next => break next.map(Job::Page),
                    }
                },
            };
            for (request, reason) in unreachable.drain(..) {
                let failure = Failure { reason: "robots.txt unavailable", status: None, error: Some(reason) };
                self.give_up(request.url(), request.method(), request.attempts + 1, &failure);
            }
            if let Some(job) = job {
                self.mark_ready(id);
                return Some((id, job));
            }
        }
        None
    }

    /// Return a request that could not launch after all; the host launches it when ready.
    fn put_back(&mut self, id: HostId, job: Job) {
        match job {
            Job::Robots(request) => self.hosts[id].robots = RobotsState::Redirected(Box::new(request)),
            Job::Page(request) => self.frontier.defer(request, Instant::now()),
        }
        self.mark_ready(id);
    }

    fn launch(&mut self, id: HostId, job: Job) {
        let now = Instant::now();
        self.hosts[id].slots.take(now);
        self.in_flight += 1;
        Stats::add(&self.shared.stats.requests, 1);
        let request = job.request();
        let report = Report {
            host: id,
            robots: matches!(job, Job::Robots(_)),
            url: request.url().clone(),
            method: request.method().clone(),
            attempts: request.attempts,
            to: self.done_tx.clone(),
            sent: false,
        };
        let shared = self.shared.clone();
        self.tasks.spawn(async move {
            let mut sample = None;
            let outcome = match job {
                Job::Robots(request) => fetch_robots(&shared, &request, &mut sample).await,
                Job::Page(request) => crawl_page(&shared, request, &mut sample).await,
            };
            report.send(outcome, sample);
        });
    }

    fn on_done(&mut self, done: Done, now: Instant) {
        self.in_flight -= 1;
        let id = done.host;
        let host = &mut self.hosts[id];
        let pause = self.delay.sample(host.crawl_delay, &mut self.rng);
        host.slots.release(now + pause);
        if let Some(sample) = done.sample {
            self.record(id, sample, now);
        }
        let host = &mut self.hosts[id];
        match done.outcome {
            Outcome::Parsed { follows, failed } => {
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
            }
            Outcome::Redirect(request) => {
                Stats::add(&self.shared.stats.redirects, 1);
                self.enqueue(request, now);
            }
            Outcome::Robots(rules) => {
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
            Outcome::RobotsRedirect(next) => host.robots = RobotsState::Redirected(Box::new(next)),
            Outcome::RobotsUnavailable(_) if host.robots_attempts < self.retries => {
                host.robots_attempts += 1;
                let wait = self.backoff.next(host.last_robots_backoff, Duration::ZERO, &mut self.rng);
                host.last_robots_backoff = wait;
                host.robots = RobotsState::Unknown;
                host.slots.pause_until(now + wait);
            }
            Outcome::RobotsUnavailable(reason) => {
                tracing::warn!(host = %host.key, %reason, "robots.txt unavailable: nothing on this host is fetched (RFC 9309)");
                host.robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            Outcome::Trouble { request, trouble, retry_after, failure } => {
                self.retry_or_give_up(id, request, trouble, retry_after, &failure, now);
            }
            Outcome::Failed { url, method, attempts, failure } => {
                self.give_up(&url, &method, attempts, &failure);
            }
            Outcome::Fatal(error) => {
                tracing::error!(%error, "stopping: no new requests are admitted");
                self.fatal.get_or_insert(error);
            }
        }
        self.mark_ready(id);
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
        let wait = self.backoff.next(request.last_backoff, retry_after.unwrap_or_default(), &mut self.rng);
        if trouble == Trouble::SlowDown {
            // At once, also in adaptive mode, and also for a request given up below: a
            // limiter bans a client that keeps going.
            let host = &mut self.hosts[id];
            host.slots.pause_until(now + retry_after.unwrap_or(wait));
            tracing::info!(host = %host.key, ?retry_after, "429: backing off the host");
        }
        if request.attempts >= self.retries {
            let attempts = request.attempts + 1;
            self.give_up(request.url(), request.method(), attempts, failure);
            return;
        }
        let stats = &self.shared.stats;
        request.attempts += 1;
        request.last_backoff = wait;
        tracing::debug!(url = %request.url(), reason = failure.reason, ?wait, attempt = request.attempts, "retrying");
        Stats::add(&stats.retries, 1);
        self.frontier.defer(request, now + wait);
    }

    /// Count a request given up, and write it to the failures file.
    fn give_up(&mut self, url: &Url, method: &Method, attempts: u32, failure: &Failure) {
        tracing::warn!(%url, reason = failure.reason, status = ?failure.status, error = ?failure.error, attempts, "giving up");
        self.shared.stats.failure(failure.reason);
        if let Some(file) = self.failures.as_mut() {
            if let Err(error) = file.record(url.as_str(), method.as_str(), attempts, failure) {
                self.fatal.get_or_insert(error);
            }
        }
    }

    fn enqueue(&mut self, request: Request, now: Instant) {
        let stats = &self.shared.stats;
        match self.frontier.enqueue(request) {
            Enqueued::Accepted(key) => {
                let id = match self.host_ids.get(&key) {
                    Some(&id) => id,
                    None => self.add_host(key, now),
                };
                self.mark_ready(id);
            }
            Enqueued::Duplicate => Stats::add(&stats.duplicates, 1),
            Enqueued::OutOfScope => Stats::add(&stats.out_of_scope, 1),
            Enqueued::TooDeep => Stats::add(&stats.too_deep, 1),
        }
    }

    fn add_host(&mut self, key: HostKey, now: Instant) -> HostId {
        let id = self.hosts.len();
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
            host.controller = Some(controller);
        }
        self.host_ids.insert(key, id);
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

/// Fetch robots.txt. A redirect (RFC 9309 asks to follow five) goes back to the dispatcher
/// as the next hop, so each hop waits for a slot and a rate token.
async fn fetch_robots<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    sample: &mut Option<Sample>,
) -> Outcome {
    let fetched = match fetch_routed(shared, request, sample).await {
        Fetch::Answer { fetched, .. } => fetched,
        Fetch::Failed(error) => return Outcome::RobotsUnavailable(error.to_string()),
        Fetch::Fatal(error) => return Outcome::Fatal(error),
    };
    let status = fetched.status;
    shared.stats.status(status.as_u16());
    // 429 is "slow down", not "no rules": treated as unavailable, as Google does.
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return Outcome::RobotsUnavailable(format!("robots.txt answered {status}"));
    }
    if status.is_redirection() {
        let location = fetched.headers.get(LOCATION).and_then(|l| l.to_str().ok());
        return match location.and_then(|l| request.url().join(l).ok()) {
            Some(next) if request.redirects < 5 => {
                Outcome::RobotsRedirect(request.redirected(next, status.as_u16()))
            }
            _ => {
                Outcome::RobotsUnavailable(format!("robots.txt answered {status} without a usable redirect"))
            }
        };
    }
    Outcome::Robots(RobotsRules::from_answer(status.as_u16(), &fetched.body, &shared.robots_token))
}

/// Fetch one page, classify the answer and, for a 2xx, parse it and write its items.
async fn crawl_page<S: Spider>(shared: &Shared<S>, request: Request, sample: &mut Option<Sample>) -> Outcome {
    let (fetched, blocked, new_identity) = match fetch_routed(shared, &request, sample).await {
        Fetch::Answer { fetched, blocked, new_identity } => (fetched, blocked, new_identity),
        Fetch::Fatal(error) => return Outcome::Fatal(error),
        Fetch::Failed(error) if error.is_transport() => {
            let reason = if error.is_timeout() { "timeout" } else { "connection" };
            let failure = Failure::error(reason, &error);
            return Outcome::Trouble { request, trouble: Trouble::TryAgain, retry_after: None, failure };
        }
        Fetch::Failed(error) => {
            let reason = match error {
                Error::BodyTooLarge { .. } => "body too large",
                _ => "fetch",
            };
            return Outcome::failed(&request, Failure::error(reason, &error));
        }
    };
    let status = fetched.status;
    shared.stats.status(status.as_u16());
    Stats::add(&shared.stats.bytes, fetched.body.len() as u64);
    if !blocked && status.is_redirection() {
        return redirect(shared, &request, &fetched);
    }
    if blocked || !status.is_success() {
        let code = status.as_u16();
        // 403 and 429 keep their configured reactions; a challenge or a marked page is
        // always worth another identity.
        let (reason, trouble) = if blocked && !matches!(code, 403 | 429) {
            ("blocked", Trouble::SwitchIdentity)
        } else {
            (status_reason(code), classify::classify_status(status, &shared.retry_statuses))
        };
        let failure = Failure::status(reason, code);
        return match trouble {
            Trouble::GiveUp => Outcome::failed(&request, failure),
            Trouble::SlowDown | Trouble::SwitchIdentity if new_identity => {
                Outcome::Trouble { request, trouble: Trouble::SwitchIdentity, retry_after: None, failure }
            }
            trouble => {
                let retry_after = classify::retry_after(&fetched.headers);
                Outcome::Trouble { request, trouble, retry_after, failure }
            }
        };
    }

    let (url, method, attempts) = (request.url().clone(), request.method().clone(), request.attempts + 1);
    let mut cx = Cx::for_request(&request);
    let page = Page::new(url.clone(), status, fetched.headers, fetched.body, request, shared.pool.clone());
    let parsed = shared.spider.parse(page, &mut cx).await;
    Stats::add(&shared.stats.pages, 1);
    // Items emitted before an error are kept: nothing scraped is lost.
    if let Err(error) = write_items(shared, &cx.items) {
        return Outcome::Fatal(error);
    }
    if let Err(source) = parsed {
        // An item found only in part is a failed item; any other error a failed parse.
        let reason = if source.is::<ExtractError>() { "item" } else { "parse" };
        let error = Error::Spider { url: url.clone(), source };
        let failed = Some((url, method, attempts, Failure::error(reason, &error)));
        return Outcome::Parsed { follows: cx.follows, failed };
    }
    Outcome::Parsed { follows: cx.follows, failed: None }
}

/// What became of sending a request on its route.
enum Fetch {
    Answer {
        fetched: Fetched,
        /// Whether the answer means this identity is blocked (see `block`).
        blocked: bool,
        /// Whether a retry leaves with another exit identity, so a block is met by
        /// switching rather than by slowing the host down.
        new_identity: bool,
    },
    /// Not answered; the error says why.
    Failed(Error),
    /// A mistake no request can get past: the crawl stops.
    Fatal(Error),
}

/// Send `request` on the route the router (and the spider's `route` hook) chooses, and
/// tell the router what came of it. A gateway's 407 is fatal: the credentials are wrong
/// for every request, so retrying would only repeat the refusal. An answer leaves its
/// verdict and latency in `sample`, for the gauges.
async fn fetch_routed<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    sample: &mut Option<Sample>,
) -> Fetch {
    let routed = match shared.router.route(request, shared.spider.route(request)) {
        Ok(routed) => routed,
        Err(error) => return Fetch::Fatal(error),
    };
    let refused = || Error::ProxyAuth { gateway: shared.router.gateway_of(&routed).unwrap_or_default() };
    let sent_at = Instant::now();
    match shared.fetcher.fetch(&routed.client, request).await {
        Ok(fetched) => {
            if routed.proxied() && fetched.status == reqwest::StatusCode::PROXY_AUTHENTICATION_REQUIRED {
                return Fetch::Fatal(refused());
            }
            let answer = Answer { status: fetched.status, headers: &fetched.headers, body: &fetched.body };
            let blocked =
                shared.spider.is_blocked(&answer).unwrap_or_else(|| shared.block_rules.blocked(&answer));
            if blocked {
                Stats::add(&shared.stats.blocked, 1);
            }
            if fetched.status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                Stats::add(&shared.stats.throttled, 1);
            }
            *sample = Some(Sample { blocked, sent_at, latency: sent_at.elapsed() });
            let verdict = if blocked { Verdict::Blocked } else { Verdict::Answered };
            let new_identity = shared.router.settle(&routed, verdict, fetched.sent, fetched.received);
            Fetch::Answer { fetched, blocked, new_identity }
        }
        Err(error) if routed.proxied() && error.is_proxy_auth() => Fetch::Fatal(refused()),
        Err(error) => {
            if error.is_connect() {
                shared.router.settle(&routed, Verdict::Unreachable, 0, 0);
            }
            Fetch::Failed(error)
        }
    }
}

fn write_items<S: Spider>(shared: &Shared<S>, items: &[S::Item]) -> Result<(), Error> {
    if items.is_empty() {
        return Ok(());
    }
    let mut exporter = shared.exporter.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exporter) = exporter.as_mut() else {
        Stats::add(&shared.stats.items, items.len() as u64);
        return Ok(());
    };
    for item in items {
        // Counted one by one, so the count matches the file even if a write fails.
        exporter.write(item)?;
        Stats::add(&shared.stats.items, 1);
    }
    Ok(())
}

fn redirect<S: Spider>(shared: &Shared<S>, request: &Request, fetched: &Fetched) -> Outcome {
    let target = fetched
        .headers
        .get(LOCATION)
        .and_then(|location| location.to_str().ok())
        .and_then(|location| request.url().join(location).ok());
    let Some(target) = target else {
        return Outcome::failed(request, Failure::status("bad redirect", fetched.status.as_u16()));
    };
    if fingerprint(request.method(), &target) == fingerprint(request.method(), request.url()) {
        let error = format!("{} redirects to itself", request.url());
        return Outcome::failed(request, Failure::error("redirect loop", &error));
    }
    if request.redirects >= shared.max_redirects {
        let error = Error::TooManyRedirects { url: request.url().clone(), limit: shared.max_redirects };
        return Outcome::failed(request, Failure::error("too many redirects", &error));
    }
    Outcome::Redirect(request.redirected(target, fetched.status.as_u16()))
}

/// A static label per status class that stats can count by.
fn status_reason(status: u16) -> &'static str {
    match status {
        403 => "http 403",
        404 => "http 404",
        408 => "http 408",
        429 => "http 429",
        400..=499 => "http 4xx",
        500 => "http 500",
        502 => "http 502",
        503 => "http 503",
        504 => "http 504",
        _ => "http 5xx",
    }
}
