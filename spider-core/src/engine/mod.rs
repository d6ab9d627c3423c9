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
mod start_list;
mod task;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use url::Url;

use dispatch::{Dispatcher, Inputs, Limits, Watchers};
use start_list::ListReader;

use crate::error::Error;
use crate::extract::pool::ParsePool;
use crate::observe::dashboard::{write_report, Board};
use crate::observe::gauge::Live;
use crate::observe::stats::{Counts, CrawlStatus, Ending, Stats, Summary};
use crate::observe::timeline::Recorder;
use crate::request::identity::SavedIdentity;
use crate::request::Request;
use crate::request::Ticket;
use crate::schedule::cache::{CacheWrite, Cached, HttpCache};
use crate::schedule::frontier::{Enqueued, Journal, MemoryFrontier, RobotsMemo};
use crate::schedule::robots::RobotsRules;
use crate::schedule::state;
use crate::sinks::failures::{Failure, FailuresFile};
use crate::sinks::{Committed, Encoded, Encoder, Sink};
use crate::spider::start::Start;
use crate::spider::Spider;
use crate::wire::classify::Trouble;
use crate::wire::Exchange;
use spider_settings::Config;

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
        let start = crate::request::start_requests(&config)?;
        let stats = Stats::new();
        // The state file first: one that is not this crawl's is refused before anything is
        // fetched or any file is touched.
        let resumed =
            config.state.as_deref().map(|path| state::open(path, &config, config.fresh)).transpose()?;
        let fleet = match config.frontier.as_deref() {
            Some(address) => Some(crate::schedule::fleet::join(&config, address).await?),
            None => None,
        };
        let (mut frontier, mut earlier, membership) = match (resumed, fleet) {
            (_, Some((frontier, membership))) => {
                (Box::new(frontier) as Box<dyn Journal>, None, Some(membership))
            }
            (Some(opened), None) => {
                let earlier = Earlier {
                    counts: opened.earlier,
                    runs: opened.runs,
                    output: opened.output,
                    failures: opened.failures,
                    complete: opened.complete,
                    identities: opened.identities,
                };
                (Box::new(opened.frontier) as Box<dyn Journal>, Some(earlier), None)
            }
            (None, None) => (Box::new(MemoryFrontier::new(&config)) as Box<dyn Journal>, None, None),
        };
        let exchange = Exchange::new(&config)?;
        let pool = ParsePool::reading(config.parse_threads, config.dom_only)?;
        let mut start = start;
        {
            // Before the start URLs are queued: the hook may log in and add its own.
            let route = |request: &Request| spider.route(request);
            let mut hook = Start::new(&exchange, &pool, &route, config.max_redirects, config.follow_hidden);
            spider.start(&mut hook).await.map_err(|source| Error::Start { source })?;
            start.extend(hook.into_queued());
        }
        seed(frontier.as_mut(), start, &stats, earlier.as_ref().is_some_and(|e| e.runs > 0))?;
        // A start list may hold new URLs: a crawl given one is never already complete.
        let done_before = |e: &&Earlier| e.complete && !frontier.has_pending() && config.start_list.is_none();
        if let Some(earlier) = earlier.as_ref().filter(done_before) {
            // Nothing to do, and nothing touched: the files stay as the last run left them.
            let ending = Ending {
                stopped: Some(CrawlStatus::AlreadyComplete),
                unfinished: 0,
                runs: earlier.runs,
                state: config.state.clone(),
                proxy: None,
                bad_start_lines: 0,
                failure_examples: Default::default(),
            };
            return Ok(Summary::new(&config.name, earlier.counts.clone(), ending));
        }
        let list =
            config.start_list.as_deref().map(|path| ListReader::open(path, config.sticky)).transpose()?;
        let cache = HttpCache::open(&config)?;
        // Bound before the output file is opened: a port in use must not cost the items of
        // the last run.
        let timeline = (config.dashboard.is_some() || config.report.is_some()).then(Recorder::default);
        let board = timeline.clone().map(|timeline| Board::new(&config, timeline));
        let servers: Vec<Background> = crate::observe::serve::start(&config, &live, board.clone())
            .await?
            .into_iter()
            .map(Background)
            .collect();
        let (sink, failures) = open_files(&config, earlier.as_ref())?;
        if sink.is_none() {
            tracing::warn!("no output file: items are counted, not written");
        }
        let shared = Arc::new(Shared {
            exchange,
            pool,
            encoder: config.output.as_deref().map(Encoder::for_output).transpose()?,
            caching: cache.is_some(),
            stats,
            robots_token: config.robots_token().to_owned(),
            max_redirects: config.max_redirects,
            follow_hidden: config.follow_hidden,
            retry_statuses: config.retry_statuses.clone(),
            sitemap_since: config.sitemap_since.map(crate::extract::sitemap::Since::new),
            spider,
        });
        if let Some(earlier) = earlier.as_mut() {
            shared.exchange.identities().resume(std::mem::take(&mut earlier.identities));
        }
        let progress = config.progress.then(|| crate::observe::progress::show(live.subscribe()));
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let signals = config.handle_signals.then(|| Background(tokio::spawn(forward_signals(stop_tx))));
        tracing::info!(spider = %config.name, concurrency = config.concurrency, per_host = config.per_host, "crawl starting");
        let files = Files { sink, failures, cache };
        let limits = Limits::new(&config, earlier.as_ref().map(|e| &e.counts));
        let (requests, reader) = list.unzip();
        let inputs = Inputs { stop_rx, start_list: requests };
        let watchers = Watchers { live, timeline };
        let dispatcher = Dispatcher::new(&config, frontier, shared.clone(), files, inputs, watchers, limits);
        let end = dispatcher.run().await;
        let bad_start_lines = reader.as_ref().map_or(0, ListReader::bad_lines);
        if let Some(membership) = membership {
            membership.leave(config.grace).await;
        }
        drop((signals, servers));
        if let Some(progress) = progress {
            // The dispatcher's end closed the snapshots: the line clears itself.
            let _ = progress.await;
        }

        let mut counts = earlier.as_ref().map(|e| e.counts.clone()).unwrap_or_default();
        counts.add(&shared.stats.counts(shared.pool.html_parses(), shared.pool.streamed_pages()));
        let ending = Ending {
            stopped: end.stopped,
            unfinished: end.unfinished,
            runs: earlier.as_ref().map_or(0, |e| e.runs) + 1,
            state: config.state.clone(),
            proxy: shared.exchange.spend(),
            bad_start_lines,
            failure_examples: shared.stats.failure_examples(),
        };
        let summary = Summary::new(&config.name, counts, ending);
        if let (Some(path), Some(board)) = (&config.report, &board) {
            // The items are already safe: a report that cannot be written is only logged.
            match write_report(path, board, &summary) {
                Ok(()) => tracing::info!(path = %path.display(), "report written"),
                Err(error) => tracing::error!(%error, "the report was not written"),
            }
        }
        if let Some(path) = config.stats_path() {
            write_stats(&path, &summary)?;
        }
        tracing::info!(pages = summary.pages, items = summary.items, failures = summary.failures, status = ?summary.status, "crawl finished");
        match end.error {
            Some(error) => Err(error),
            None => Ok(summary),
        }
    }
}

/// What the earlier runs of a state file left.
struct Earlier {
    counts: Counts,
    runs: u32,
    output: Committed,
    failures: u64,
    complete: bool,
    /// The identities its last checkpoint saved.
    identities: Vec<SavedIdentity>,
}

/// Queue the start URLs. On a resumed crawl they were seen in its first run, and their
/// duplicates are not counted again.
fn seed(frontier: &mut dyn Journal, start: Vec<Request>, stats: &Stats, resumed: bool) -> Result<(), Error> {
    for request in start {
        match frontier.enqueue(request)? {
            Enqueued::Accepted(_) | Enqueued::Shared => {}
            Enqueued::Duplicate if resumed => {}
            Enqueued::Duplicate => Stats::add(&stats.duplicates, 1),
            Enqueued::OutOfScope => Stats::add(&stats.out_of_scope, 1),
            Enqueued::TooDeep => Stats::add(&stats.too_deep, 1),
        }
    }
    Ok(())
}

/// The output and failures files: new ones, or a resumed crawl's cut back to what its
/// state file committed.
fn open_files(
    config: &Config,
    earlier: Option<&Earlier>,
) -> Result<(Option<Sink>, Option<FailuresFile>), Error> {
    let output = earlier.map_or(Committed::default(), |e| e.output);
    let sink = match config.output.as_deref() {
        Some(path) if output.bytes > 0 => Some(Sink::resume(path, output)?),
        Some(path) => Some(Sink::create(path)?),
        None => None,
    };
    let committed = earlier.map_or(0, |e| e.failures);
    let failures = match config.failures_path() {
        Some(path) if committed > 0 => Some(FailuresFile::resume(&path, committed)?),
        Some(path) => Some(FailuresFile::create(&path)?),
        None => None,
    };
    Ok((sink, failures))
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
    /// Every request's way out: route, identity, transport, block verdict.
    exchange: Exchange,
    pool: ParsePool,
    /// Encodes each page's items for the output file, on the page's task.
    encoder: Option<Encoder>,
    /// Whether answers are kept in the HTTP cache: tasks prepare them for it.
    caching: bool,
    /// Whether links a person cannot see are followed (`Config::follow_hidden`).
    follow_hidden: bool,
    stats: Stats,
    robots_token: String,
    max_redirects: u8,
    retry_statuses: Vec<u16>,
    /// `sitemap_since`: sitemap URLs modified before it are skipped.
    sitemap_since: Option<crate::extract::sitemap::Since>,
}

type HostId = usize;

/// The files the dispatcher writes.
struct Files {
    sink: Option<Sink>,
    failures: Option<FailuresFile>,
    /// The HTTP cache, looked up before admission and written with what tasks bring back.
    cache: Option<HttpCache>,
}

/// What a task is sent to do: a page, or a host's robots.txt, and the cached answer to
/// take or to have the server confirm.
struct Job {
    request: Request,
    robots: bool,
    cached: Option<Cached>,
}

impl Job {
    fn page(request: Request) -> Self {
        Job { request, robots: false, cached: None }
    }

    fn robots(request: Request) -> Self {
        Job { request, robots: true, cached: None }
    }

    /// Whether the answer is taken from the cache without asking the network: then the
    /// request needs no rate token, no host slot and no pause.
    fn offline(&self) -> bool {
        self.cached.as_ref().is_some_and(|cached| !cached.revalidate)
    }
}

/// What a task learned besides its outcome: the answer's verdict and latency for the
/// gauges, and what to write to the cache.
#[derive(Default)]
struct Notes {
    sample: Option<Sample>,
    cache: Option<CacheWrite>,
}

/// What a task reports back.
enum Outcome {
    /// The page was parsed: its items, encoded; its follow-ups; and the failure if `parse`
    /// returned an error after finding some (its items are still written and its links
    /// still followed). `not_html`: the link rules skipped it as not HTML.
    Parsed {
        items: Encoded,
        follows: Vec<Request>,
        failed: Option<(Url, Method, u32, Failure)>,
        not_html: bool,
    },
    Redirect(Request),
    /// A sitemap was read: what it lists, as requests; and the failure if it could not be
    /// read whole (what was read before is still followed).
    Sitemap {
        follows: Vec<Request>,
        failed: Option<(Url, Method, u32, Failure)>,
    },
    /// robots.txt's rules, and the answer they were read from, for the state file.
    Robots(RobotsRules, RobotsMemo),
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
    /// Cut short by the end of the crawl: given up as interrupted, or, with a state file,
    /// left for the next run.
    Interrupted {
        url: Url,
        method: Method,
        attempts: u32,
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
    /// Whether the request went to the network (not answered from the cache): it took a
    /// host slot, which it gives back.
    network: bool,
    /// The request's ticket, when a durable frontier handed it out.
    ticket: Option<Ticket>,
    outcome: Outcome,
    notes: Notes,
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
    network: bool,
    robots: bool,
    ticket: Option<Ticket>,
    url: Url,
    method: Method,
    attempts: u32,
    to: mpsc::UnboundedSender<Done>,
    sent: bool,
}

impl Report {
    fn send(mut self, outcome: Outcome, notes: Notes) {
        self.sent = true;
        let _ = self.to.send(Done {
            host: self.host,
            network: self.network,
            ticket: self.ticket,
            outcome,
            notes,
        });
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if self.sent {
            return;
        }
        let panicked = std::thread::panicking();
        let outcome = if self.robots {
            // The host must not wait for ever for an answer that will not come.
            let reason = if panicked { "panic" } else { "interrupted" };
            Outcome::RobotsUnavailable(format!("robots.txt fetch ended: {reason}"))
        } else if panicked {
            let failure = Failure { reason: "panic", status: None, error: None };
            Outcome::Failed {
                url: self.url.clone(),
                method: self.method.clone(),
                attempts: self.attempts + 1,
                failure,
            }
        } else {
            Outcome::Interrupted {
                url: self.url.clone(),
                method: self.method.clone(),
                attempts: self.attempts + 1,
            }
        };
        let (host, network, ticket) = (self.host, self.network, self.ticket);
        let _ = self.to.send(Done { host, network, ticket, outcome, notes: Notes::default() });
    }
}
