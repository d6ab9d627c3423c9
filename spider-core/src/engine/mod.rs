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
//!
//! `dispatch` is the dispatcher (and `dispatch::gauges` what it learns from answers each
//! second); `task` is one request's work; this module starts them and ends the crawl.

mod dispatch;
mod task;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use url::Url;

use dispatch::Dispatcher;

use crate::block::BlockRules;
use crate::classify::Trouble;
use crate::config::Config;
use crate::error::Error;
use crate::export::{self, Exporter};
use crate::failures::{Failure, FailuresFile};
use crate::fetch::Fetcher;
use crate::frontier::MemoryFrontier;
use crate::gauge::Live;
use crate::parse::ParsePool;
use crate::proxy::Router;
use crate::request::Request;
use crate::robots::RobotsRules;
use crate::spider::Spider;
use crate::stats::{CrawlStatus, Stats, Summary};

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
