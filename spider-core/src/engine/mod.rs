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
//! `dispatch` is the dispatcher's loop; it asks `admission` what may go (with the page
//! and item `limits`), keeps its hosts in `hosts` (slots, robots.txt, the ready queue),
//! writes and checkpoints through `commit`, and hears from its tasks in the messages of
//! `protocol`; `gauges` is what it learns from answers each second. `task` is one
//! request's work, `start_list` feeds the start URLs, `start_admission` holds the start
//! hook's requests to the crawl's scope and robots.txt, `open` opens what a crawl keeps
//! (its frontier, files and watchers); this module wires them together and ends the
//! crawl.

mod admission;
mod commit;
mod dispatch;
mod gauges;
mod group;
mod hosts;
mod limits;
mod open;
mod protocol;
mod render;
mod retry_plan;
mod shared;
mod start_admission;
mod start_list;
#[cfg(feature = "render")]
mod subrequests;
mod task;
#[cfg(test)]
mod test_crawl;
mod tier;

use std::path::Path;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use admission::Admission;
use commit::Commit;
use dispatch::{Dispatcher, Inputs, Watchers};
use limits::Limits;
use open::{open_files, open_frontier, Background, OpenedFrontier, PreviousRuns, Watch};
use shared::Shared;
use start_admission::HookAdmission;
use start_list::ListReader;

use crate::error::Error;
use crate::extract::parse_pool::ParsePool;
use crate::observe::counters::Tally;
use crate::observe::gauge::Live;
use crate::observe::summary::{CrawlStatus, Ending, Summary};
use crate::request::Request;
use crate::schedule::cache::HttpCache;
use crate::schedule::frontier::Scope;
use crate::schedule::frontier::{CrawlFrontier, Enqueued};
use crate::schedule::throttle::RateGate;
use crate::sinks::store::Outbox;
use crate::sinks::Encoder;
use crate::spider::start::Start;
use crate::spider::Spider;
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
        open::refuse_left_out(&config)?;
        crate::sinks::check_appendable(&config)?;
        open::raise_file_limit(config.concurrency);
        let start = crate::request::start_requests(&config)?;
        let tally = Tally::new();
        // The state file first: one that is not this crawl's is refused before anything is
        // fetched or any file is touched.
        let OpenedFrontier { mut frontier, mut earlier, fleet, outputs, outbox, kept_keys } =
            open_frontier(&config).await?;
        let exchange = Exchange::new(&config)?;
        let pool = ParsePool::reading(config.parse_threads, config.dom_only)?;
        // A fleet's frontier admits under the fleet's rate instead.
        let rate = config.rate.filter(|_| frontier.shared().is_none()).and_then(RateGate::new);
        let mut start = start;
        let (rate, hook_robots) = {
            // Before the start URLs are queued: the hook may log in and add its own.
            let route = |request: &Request| spider.route(request);
            let admission = HookAdmission::new(&exchange, &config, rate);
            let mut hook = Start::new(&exchange, &pool, &route, &admission, &config);
            spider.start(&mut hook).await.map_err(|source| Error::Start { source })?;
            start.extend(hook.into_queued());
            admission.into_crawl()
        };
        seed(frontier.as_mut(), start, &tally, earlier.as_ref().is_some_and(|e| e.runs > 0))?;
        // A start list may hold new URLs: a crawl given one is never already complete.
        let done_before = |e: &&PreviousRuns| {
            e.complete && !frontier.has_pending() && config.start_list.is_none() && outbox.held.is_empty()
        };
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
        let list = config.start_list.as_deref().map(ListReader::open).transpose()?;
        let cache = HttpCache::open(&config)?;
        // Bound before the items files are opened: a port in use must not cost the items of
        // the last run.
        let watch = Watch::start(&config, &live).await?;
        let outbox = Outbox::open(&config, outbox)?;
        let caching = cache.is_some();
        let files = open_files(&config, &outputs, earlier.as_ref(), cache, outbox)?;
        if files.sinks.is_empty() && files.outbox.is_none() {
            tracing::warn!(target: "spiderling", "no output file: items are counted, not written");
        }
        #[cfg(feature = "render")]
        let (asks, asked) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            exchange,
            render: tier::Tier::new(&config),
            #[cfg(feature = "render")]
            asks,
            #[cfg(feature = "fleet")]
            spare_starts: fleet.spare_starts(),
            pool,
            encoder: Encoder::for_outputs(&config)?,
            pipeline: Box::new(spider.pipeline()),
            kept_keys,
            caching,
            archive: config.warc.is_some().then(|| config.user_agent.clone()),
            tally,
            robots_token: config.robots_token().to_owned(),
            scope: Scope::new(&config.allowed_domains),
            max_redirects: config.max_redirects,
            follow_hidden: config.follow_hidden,
            retry_statuses: config.retry_statuses.clone(),
            sitemap_since: config.sitemap_since.map(crate::extract::sitemap::Since::new),
            spider,
        });
        if let Some(earlier) = earlier.as_mut() {
            shared.exchange.identities().resume(std::mem::take(&mut earlier.identities));
            shared.exchange.identities().resume_refusing(std::mem::take(&mut earlier.refusing_plain));
        }
        if let Some(fleet) = frontier.shared() {
            shared.exchange.identities().resume_refusing(fleet.fleet_refusing_plain());
        }
        let progress = config.progress.then(|| crate::observe::progress::show(live.subscribe()));
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let signals = config.handle_signals.then(|| Background(tokio::spawn(forward_signals(stop_tx))));
        tracing::info!(
            target: "spiderling",
            spider = %config.name,
            concurrency = config.concurrency,
            per_host = config.per_host,
            "crawl starting"
        );
        let limits = Limits::new(&config, earlier.as_ref().map(|e| &e.counts));
        let admission = Admission::new(&config, limits, rate);
        let commit = Commit::new(files, frontier.durable().is_some(), config.state_sync);
        let (requests, reader) = list.unzip();
        #[cfg(feature = "render")]
        let inputs = Inputs { stop_rx, start_list: requests, asks: asked };
        #[cfg(not(feature = "render"))]
        let inputs = Inputs { stop_rx, start_list: requests };
        let watchers = Watchers { live, timeline: watch.timeline() };
        // What robots.txt the hook read, the crawl need not read again; but a fleet's
        // workers claim each host's robots.txt in Redis, and with `sitemaps` the sitemaps
        // it lists are read when the crawl reads it.
        let keeps_hook_robots = frontier.shared().is_none() && !config.sitemaps;
        let mut dispatcher =
            Dispatcher::new(&config, frontier, shared.clone(), commit, inputs, watchers, admission);
        if keeps_hook_robots {
            dispatcher.hosts.keep_robots(hook_robots, tokio::time::Instant::now());
        }
        let end = dispatcher.run().await;
        shared.render.close().await;
        let bad_start_lines = reader.as_ref().map_or(0, ListReader::bad_lines);
        fleet.leave(config.grace).await;
        drop(signals);
        if let Some(progress) = progress {
            // The dispatcher's end closed the snapshots: the line clears itself.
            let _ = progress.await;
        }

        let mut counts = earlier.as_ref().map(|e| e.counts.clone()).unwrap_or_default();
        counts.add(&shared.tally.counts(shared.pool.html_parses(), shared.pool.streamed_pages()));
        let ending = Ending {
            stopped: end.stopped,
            unfinished: end.unfinished,
            runs: earlier.as_ref().map_or(0, |e| e.runs) + 1,
            state: config.state.clone(),
            proxy: shared.exchange.spend(),
            bad_start_lines,
            failure_examples: shared.tally.failure_examples(),
        };
        let summary = Summary::new(&config.name, counts, ending);
        watch.end(&config, &summary);
        let stats = config.stats_path().map(|path| write_stats(&path, &summary)).transpose();
        match end.error {
            // The error that stopped the crawl is the one to tell, not a stats file that the
            // same full disk refused after it.
            Some(error) => {
                if let Err(unwritten) = stats {
                    tracing::warn!(target: "spiderling", error = %unwritten, "the stats file could not be \
                        written either");
                }
                Err(error)
            }
            None => {
                stats?;
                tracing::info!(
                    target: "spiderling",
                    pages = summary.counts.pages,
                    items = summary.counts.items,
                    failures = summary.failures,
                    status = ?summary.status,
                    "crawl finished"
                );
                Ok(summary)
            }
        }
    }
}

/// Queue the start URLs. On a resumed crawl they were seen in its first run, and their
/// duplicates are not counted again.
fn seed(
    frontier: &mut dyn CrawlFrontier,
    start: Vec<Request>,
    tally: &Tally,
    resumed: bool,
) -> Result<(), Error> {
    for request in start {
        match frontier.enqueue(request)? {
            Enqueued::Accepted(_) | Enqueued::Shared => {}
            Enqueued::Duplicate if resumed => {}
            Enqueued::Duplicate => tally.duplicates.add(1),
            Enqueued::OutOfScope => tally.out_of_scope.add(1),
            Enqueued::TooDeep => tally.too_deep.add(1),
        }
    }
    Ok(())
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
