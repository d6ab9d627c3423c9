//! What a crawl opens before its first request and closes after its last: where its
//! frontier lives (memory, a state file, a fleet's Redis), its files, its HTTP cache, and
//! what watches it (the metrics and dashboard server, the report). The parts that need a
//! cargo feature are here, each refused with a clear error when the build leaves it out.

use std::path::Path;

use spider_settings::Config;
use tokio::sync::watch;

use super::commit::Files;
use crate::error::Error;
use crate::observe::counters::Counts;
use crate::observe::gauge::Live;
use crate::observe::summary::Summary;
use crate::observe::timeline::Recorder;
use crate::request::identity::SavedIdentity;
use crate::schedule::cache::HttpCache;
use crate::schedule::frontier::{CrawlFrontier, MemoryFrontier};
use crate::schedule::item_keys::KeptKeys;
use crate::sinks::failures::FailuresFile;
use crate::sinks::store::{Outbox, Outboxed};
use crate::sinks::warc::{Archive, WarcFile};
use crate::sinks::{Committed, Sink};

/// What the earlier runs of a state file left.
pub(super) struct PreviousRuns {
    pub(super) counts: Counts,
    pub(super) runs: u32,
    pub(super) failures: u64,
    /// The WARC archive's last file and its committed length.
    pub(super) warc: Archive,
    pub(super) complete: bool,
    /// The identities its last checkpoint saved.
    pub(super) identities: Vec<SavedIdentity>,
    /// The hosts that had refused the crawl's own client.
    pub(super) refusing_plain: Vec<String>,
}

/// Where the crawl lives.
pub(super) struct OpenedFrontier {
    pub(super) frontier: Box<dyn CrawlFrontier>,
    /// With a state file, what its earlier runs left.
    pub(super) earlier: Option<PreviousRuns>,
    /// The fleet joined, when the frontier is a fleet's.
    pub(super) fleet: Fleet,
    /// How much of each items file an earlier run committed, in the state file or, for
    /// this worker's file, in the fleet, in `outputs` order: kept, and the rest cut off
    /// (none: new files).
    pub(super) outputs: Vec<Committed>,
    /// Where the outbox for the tables starts: a state file's, or a new one.
    pub(super) outbox: Outboxed,
    /// The keys of the items kept so far: a state file's, the fleet's, or none yet.
    pub(super) kept_keys: KeptKeys,
}

/// The crawl's frontier: a fleet's (`frontier`), a state file's (`state`), or in memory.
pub(super) async fn open_frontier(config: &Config) -> Result<OpenedFrontier, Error> {
    if let Some(address) = config.frontier.as_deref() {
        return join(config, address).await;
    }
    if let Some(path) = config.state.as_deref() {
        return resume(config, path);
    }
    Ok(OpenedFrontier {
        frontier: Box::new(MemoryFrontier::new(config)),
        earlier: None,
        fleet: Fleet::default(),
        outputs: Vec::new(),
        outbox: Outboxed::new(),
        kept_keys: KeptKeys::local([]),
    })
}

#[cfg(feature = "state")]
fn resume(config: &Config, path: &Path) -> Result<OpenedFrontier, Error> {
    let opened = crate::schedule::state::open(path, config, config.fresh)?;
    let earlier = PreviousRuns {
        counts: opened.earlier,
        runs: opened.runs,
        failures: opened.failures,
        warc: opened.warc,
        complete: opened.complete,
        identities: opened.identities,
        refusing_plain: opened.refusing_plain,
    };
    Ok(OpenedFrontier {
        frontier: Box::new(opened.frontier),
        earlier: Some(earlier),
        fleet: Fleet::default(),
        outputs: opened.outputs,
        outbox: opened.outbox,
        kept_keys: KeptKeys::local(opened.kept_keys),
    })
}

#[cfg(not(feature = "state"))]
fn resume(_: &Config, _: &Path) -> Result<OpenedFrontier, Error> {
    Err(Error::left_out("state", "state"))
}

#[cfg(feature = "fleet")]
async fn join(config: &Config, address: &str) -> Result<OpenedFrontier, Error> {
    let (frontier, membership, output, keys) = crate::schedule::fleet::join(config, address).await?;
    Ok(OpenedFrontier {
        frontier: Box::new(frontier),
        earlier: None,
        fleet: Fleet(Some(membership)),
        outputs: vec![output],
        outbox: Outboxed::new(),
        kept_keys: KeptKeys::Fleet(Box::new(keys)),
    })
}

#[cfg(not(feature = "fleet"))]
async fn join(_: &Config, _: &str) -> Result<OpenedFrontier, Error> {
    Err(Error::left_out("frontier", "fleet"))
}

/// The fleet a worker joined, if it did: left when the crawl ends.
#[derive(Default)]
pub(super) struct Fleet(#[cfg(feature = "fleet")] Option<crate::schedule::fleet::Membership>);

impl Fleet {
    /// Under the fleet's rate ceiling, the starts the browsers' requests and the late
    /// leased ones wait for.
    #[cfg(feature = "fleet")]
    pub(super) fn spare_starts(&self) -> Option<std::sync::Arc<crate::schedule::fleet::SpareStarts>> {
        self.0.as_ref().and_then(crate::schedule::fleet::Membership::spare_starts)
    }

    /// Give back what this worker holds, within `grace`.
    pub(super) async fn leave(self, grace: std::time::Duration) {
        #[cfg(feature = "fleet")]
        if let Some(membership) = self.0 {
            membership.leave(grace).await;
        }
        let _ = grace;
    }
}

/// The items and failures files and the WARC archive: new ones, or a resumed crawl's cut
/// back to what its state file (or, for the items, the fleet) committed; with the cache
/// and the tables' outbox, what the dispatcher writes.
pub(super) fn open_files(
    config: &Config,
    outputs: &[Committed],
    earlier: Option<&PreviousRuns>,
    cache: Option<HttpCache>,
    outbox: Option<Outbox>,
) -> Result<Files, Error> {
    let mut sinks = Vec::with_capacity(config.outputs.len());
    for (at, file) in config.outputs.iter().enumerate() {
        let path = file.path.as_path();
        sinks.push(match outputs.get(at).copied().unwrap_or_default() {
            committed if committed.bytes > 0 => Sink::resume(path, committed)?,
            // A state file's or a fleet's output is the crawl's own, counted from its start.
            _ if !config.overwrite && config.state.is_none() && config.frontier.is_none() => {
                Sink::append(path)?
            }
            _ => Sink::create(path)?,
        });
    }
    let committed = earlier.map_or(0, |e| e.failures);
    let failures = match config.failures_path() {
        Some(path) if committed > 0 => Some(FailuresFile::resume(&path, committed)?),
        Some(path) => Some(FailuresFile::create(&path)?),
        None => None,
    };
    let archived = earlier.map_or_else(Archive::default, |e| e.warc);
    let mut cache = cache;
    let warc = match config.warc.as_deref() {
        Some(path) if archived.bytes > 0 => {
            // The cache's bodies in records the resume cuts off are not there to read.
            if let Some(cache) = cache.as_mut() {
                cache.forget_beyond(path, archived)?;
            }
            Some(WarcFile::resume(path, archived, config.warc_max_bytes)?)
        }
        // The cache's bodies may be in the files there: a new archive goes on after them.
        Some(path) => Some(WarcFile::create(path, config.warc_max_bytes, cache.is_some())?),
        None => None,
    };
    Ok(Files { sinks, failures, cache, outbox, warc })
}

/// What watches the crawl: the timeline a dashboard or a report draws, and the servers of
/// `metrics` and `dashboard`, stopped when this is dropped.
pub(super) struct Watch {
    timeline: Option<Recorder>,
    #[cfg(feature = "observe")]
    board: Option<crate::observe::dashboard::Board>,
    /// The servers: stopped when the watch is dropped, after the report.
    #[cfg(feature = "observe")]
    _servers: Vec<Background>,
}

impl Watch {
    /// Bind the servers `config` asks for, and keep a timeline for a dashboard or a report.
    #[cfg(feature = "observe")]
    pub(super) async fn start(config: &Config, live: &watch::Sender<Live>) -> Result<Watch, Error> {
        use crate::observe::dashboard::Board;
        let timeline = (config.dashboard.is_some() || config.report.is_some()).then(Recorder::default);
        let board = timeline.clone().map(|timeline| Board::new(config, timeline));
        let servers = crate::observe::serve::start(config, live, board.clone()).await?;
        Ok(Watch { timeline, board, _servers: servers.into_iter().map(Background).collect() })
    }

    /// Refuse what only the `observe` feature serves or writes.
    #[cfg(not(feature = "observe"))]
    pub(super) async fn start(config: &Config, _: &watch::Sender<Live>) -> Result<Watch, Error> {
        let asked = [("metrics", config.metrics.is_some()), ("dashboard", config.dashboard.is_some())];
        let asked = asked.into_iter().chain([("report", config.report.is_some())]);
        match asked.into_iter().find(|(_, set)| *set) {
            Some((key, _)) => Err(Error::left_out(key, "observe")),
            None => Ok(Watch { timeline: None }),
        }
    }

    /// The timeline the dispatcher records each second into, when one is kept.
    pub(super) fn timeline(&self) -> Option<Recorder> {
        self.timeline.clone()
    }

    /// Stop the servers, and write the report of the crawl that ended with `summary`.
    pub(super) fn end(self, config: &Config, summary: &Summary) {
        #[cfg(feature = "observe")]
        if let (Some(path), Some(board)) = (&config.report, &self.board) {
            // The items are already safe: a report that cannot be written is only logged.
            match crate::observe::dashboard::write_report(path, board, summary) {
                Ok(()) => tracing::info!(target: "spiderling", path = %path.display(), "report written"),
                Err(error) => tracing::error!(target: "spiderling", %error, "the report was not written"),
            }
        }
        let _ = (config, summary);
    }
}

/// Refuse what needs a feature this build leaves out before anything is opened: a crawl
/// that renders its pages without the `render` feature.
pub(super) fn refuse_left_out(config: &Config) -> Result<(), Error> {
    if config.render != spider_settings::Render::Never && !cfg!(feature = "render") {
        return Err(Error::left_out(&format!("render = \"{}\"", config.render.name()), "render"));
    }
    Ok(())
}

/// Raise the soft limit of open files to the hard one, and warn when even that is short of
/// what `concurrency` connections want: past it, connections fail with "too many open
/// files", as if the sites were down.
pub(super) fn raise_file_limit(concurrency: usize) {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource};
        let mut limit = getrlimit(Resource::Nofile);
        // `None` is no limit; a hard limit of none is left alone (the kernel has its own).
        if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
            let raised = rustix::process::Rlimit { current: Some(maximum), maximum: Some(maximum) };
            if current < maximum && setrlimit(Resource::Nofile, raised).is_ok() {
                limit = getrlimit(Resource::Nofile);
            }
        }
        // A connection each, the files and the state file's, and the servers' own.
        let wanted = u64::try_from(concurrency).unwrap_or(u64::MAX).saturating_mul(2).saturating_add(64);
        if let Some(open) = limit.current.filter(|open| *open < wanted) {
            tracing::warn!(
                target: "spiderling",
                "this process may open {open} files, and concurrency = {concurrency} wants about {wanted}: \
                 connections past the limit fail as \"too many open files\"; raise it (ulimit -n) or lower \
                     concurrency"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = concurrency;
}

/// A task that ends with the crawl, whichever way the crawl ends.
pub(super) struct Background(pub(super) tokio::task::JoinHandle<()>);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(all(feature = "state", feature = "fleet", feature = "observe", feature = "render")))]
    use super::*;
    #[cfg(not(all(feature = "state", feature = "fleet", feature = "observe")))]
    use crate::schedule::cache::HttpCache;

    /// What a build without a feature says to a setting that needs it.
    #[cfg(not(all(feature = "state", feature = "fleet", feature = "observe")))]
    async fn refusal(config: Config) -> String {
        match open_frontier(&config).await {
            Ok(opened) => {
                let (live, _) = watch::channel(Live::default());
                let cache = HttpCache::open(&config).err();
                let watch = Watch::start(&config, &live).await.err();
                drop(opened);
                cache.or(watch).map(|error| error.to_string()).unwrap_or_default()
            }
            Err(error) => error.to_string(),
        }
    }

    #[cfg(not(feature = "state"))]
    #[tokio::test]
    async fn a_state_file_and_a_cache_need_the_state_feature() {
        let state = refusal(Config::new("shop").state("shop.state")).await;
        assert!(state.contains("state needs spiderling's `state` feature"), "{state}");
        let cache = refusal(Config::new("shop").cache("shop.cache")).await;
        assert!(cache.contains("cache needs spiderling's `state` feature"), "{cache}");
    }

    #[cfg(not(feature = "fleet"))]
    #[tokio::test]
    async fn a_fleet_needs_the_fleet_feature() {
        let fleet = refusal(Config::new("shop").frontier("redis://127.0.0.1:1/0")).await;
        assert!(fleet.contains("frontier needs spiderling's `fleet` feature"), "{fleet}");
    }

    #[cfg(not(feature = "observe"))]
    #[tokio::test]
    async fn metrics_a_dashboard_and_a_report_need_the_observe_feature() {
        for (config, key) in [
            (Config::new("shop").metrics("127.0.0.1:9898"), "metrics"),
            (Config::new("shop").dashboard("127.0.0.1:9898"), "dashboard"),
            (Config::new("shop").report("crawl.html"), "report"),
        ] {
            let refused = refusal(config).await;
            assert!(refused.contains(&format!("{key} needs spiderling's `observe` feature")), "{refused}");
        }
    }

    #[cfg(not(feature = "render"))]
    #[test]
    fn rendering_needs_the_render_feature_and_says_how_to_build_it() {
        let config = Config::new("shop").render(spider_settings::Render::Always);
        let refused = refuse_left_out(&config).map_err(|error| error.to_string()).err().unwrap_or_default();
        assert!(refused.contains("render = \"always\" needs spiderling's `render` feature"), "{refused}");
        assert!(refused.contains("build with `--features render`"), "{refused}");
    }
}
