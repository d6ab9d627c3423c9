//! `spiderling bench --workers 1,2,…`: how the fleet scales. For each count N, N
//! `spiderling` workers (the bench's own contender, as child processes) start at once and
//! share one fresh crawl of the bench's site through Redis; the run is measured from the
//! first start to the last exit, against what the site served and what Redis spent. With
//! `--cluster`, each count runs on one Redis and then on a Redis Cluster, side by side;
//! with `--sites K`, the site is served K times, each copy a host of its own, so that a
//! cluster's crawl is split into parts over its masters.
//!
//! A run counts only when it was correct: every worker exited with success and printed
//! its run, the site answered every page exactly once, and every item was written once.
//! Otherwise its row says why it failed instead of giving numbers that would mean nothing.

pub(super) mod memory;
mod results;
mod store;
mod workers;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spider_sandbox::Sandbox;

use self::results::{Measured, Outcome, Report, Row, Setup};
use self::store::Fleet;
use self::workers::Workers;
use super::measure::{cpu_seconds, parse_threads};
use super::results::Served;
use super::{books_for, demo_site, Args};

/// The fleet's per-host limit is this many times the slots of all its workers (C × N):
/// a slot stays busy in Redis until the worker's next round reports its request done,
/// so a limit of exactly C × N could hold a worker back by a round trip. Twice as many
/// never binds, and the bench measures the fleet, not the limit.
const PER_HOST_PER_SLOT: usize = 2;

/// The most workers one run may start: beyond this the machine, not the fleet, is measured.
const MAX_WORKERS: usize = 64;

/// The most runs one bench makes.
const MAX_RUNS: usize = 16;

/// The most copies of the site one bench serves.
const MAX_SITES: usize = 64;

/// What every run of one bench shares.
struct Bench<'a> {
    args: &'a Args,
    /// The site's copies, each a host of its own.
    sites: Vec<Sandbox>,
    /// One Redis, then the cluster with `--cluster`: each count runs on each.
    fleets: Vec<Fleet>,
    exe: std::path::PathBuf,
    dir: &'a Path,
    expected_pages: usize,
    books: usize,
    /// Makes the bench's crawl ids its own: a Redis given by `--frontier` may hold others.
    stamp: u128,
}

/// Serve the site, run the fleet at each worker count in turn, print the results; exit
/// code 1 when a run failed.
pub(super) fn parent(args: &Args) -> ExitCode {
    if args.workers.len() > MAX_RUNS || args.workers.iter().any(|n| !(1..=MAX_WORKERS).contains(n)) {
        eprintln!("error: --workers takes up to {MAX_RUNS} counts, each from 1 to {MAX_WORKERS}");
        return ExitCode::from(2);
    }
    if !(1..=MAX_SITES).contains(&args.sites) {
        eprintln!("error: --sites takes 1 to {MAX_SITES} copies of the site");
        return ExitCode::from(2);
    }
    let dir = std::env::temp_dir().join(format!("spiderling-bench-fleet-{}", std::process::id()));
    let report = std::fs::create_dir_all(&dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))
        .and_then(|()| measure_all(args, &dir));
    let _ = std::fs::remove_dir_all(&dir);
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let printed = crate::print_report(args.json, &report, || report.table());
    if !report.all_measured() {
        eprintln!("error: a run of the fleet failed; see its row");
        return ExitCode::FAILURE;
    }
    printed
}

fn measure_all(args: &Args, dir: &Path) -> Result<Report, String> {
    let per_site = books_for(args.pages / args.sites);
    let demo = demo_site(per_site, args.page_kb, args.latency_ms);
    let (books, expected_pages) = (per_site * args.sites, demo.expected_pages() * args.sites);
    let sites = (0..args.sites)
        .map(|_| Sandbox::demo(demo.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot serve the bench site on 127.0.0.1: {e}"))?;
    let mut fleets = vec![Fleet::open(args.frontier.as_deref())?];
    if let Some(masters) = args.cluster {
        fleets.push(Fleet::start_cluster(masters, args.replicas)?);
    }
    let exe = std::env::current_exe().map_err(|error| format!("cannot find this binary: {error}"))?;
    let setup = Setup {
        expected_pages,
        books,
        sites: args.sites,
        concurrency: args.concurrency,
        per_host_per_slot: PER_HOST_PER_SLOT,
        latency_ms: args.latency_ms,
        page_kb: args.page_kb,
        parse_cost_us: args.parse_cost_us,
        parse_threads: parse_threads(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        redis: fleets.iter().map(Fleet::origin).collect(),
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
    let bench = Bench { args, sites, fleets, exe, dir, expected_pages, books, stamp };
    let rows =
        args.workers.iter().flat_map(|n| bench.fleets.iter().map(|fleet| bench.row(fleet, *n))).collect();
    Ok(Report::new(setup, rows))
}

impl Bench<'_> {
    /// The run of `workers` workers, on a crawl of its own, removed from Redis after.
    fn row(&self, fleet: &Fleet, workers: usize) -> Row {
        let crawl_id = format!("bench-fleet-{}-{workers}-{}", fleet.kind(), self.stamp);
        let outcome = match self.measure(fleet, workers, &crawl_id) {
            Ok(measured) => Outcome::Measured(measured),
            Err(failed) => Outcome::Failed { failed },
        };
        if let Err(error) = fleet.forget(&crawl_id) {
            eprintln!("warning: {error}");
        }
        Row { workers, redis: fleet.kind(), crawl_id, outcome }
    }

    fn measure(&self, fleet: &Fleet, workers: usize, crawl_id: &str) -> Result<Measured, String> {
        if fleet.holds(crawl_id)? {
            return Err(format!("Redis already holds a crawl {crawl_id}; not a fresh crawl"));
        }
        let per_host = (PER_HOST_PER_SLOT * self.args.concurrency * workers).to_string();
        let before: Vec<usize> = self.sites.iter().map(Sandbox::received).collect();
        let redis_before = fleet.counters()?;
        let server_cpu = cpu_seconds();
        let run = Workers {
            count: workers,
            dir: self.dir,
            within: Duration::from_secs(self.args.run_timeout_secs),
        };
        let finished = run.run(|i| self.worker(fleet, workers, i, crawl_id, &per_host))?;
        // The parent only serves and polls meanwhile: its CPU time is the site's.
        let server_cpu_secs = cpu_seconds() - server_cpu;
        let redis = fleet.counters()?.since(&redis_before);
        let observed: Vec<_> = self.sites.iter().map(Sandbox::observed).collect();
        // Each hit's time since the first worker started.
        let mut at = Vec::new();
        let mut served = Served { pages: 0, duplicates: 0 };
        for (site, before) in observed.iter().zip(&before) {
            let hits = site.hits.get(*before..).unwrap_or_default();
            let here = Served::from(hits);
            served.pages += here.pages;
            served.duplicates += here.duplicates;
            at.extend(
                hits.iter().map(|hit| (site.started + hit.at).saturating_duration_since(finished.started)),
            );
        }
        let items: usize = finished.runs.iter().map(|run| run.items).sum();
        if served.duplicates > 0 {
            return Err(format!("{} requests for a page already fetched", served.duplicates));
        }
        if served.pages != self.expected_pages {
            return Err(format!("the site answered {} of the {} pages", served.pages, self.expected_pages));
        }
        if items != self.books {
            return Err(format!("the workers wrote {items} items for {} books", self.books));
        }
        let pages = served.pages;
        let wall_secs = finished.wall.as_secs_f64();
        let worker_cpu_secs: f64 = finished.runs.iter().map(|run| run.cpu_secs).sum();
        let first = at.iter().min().map_or(0.0, Duration::as_secs_f64);
        let last = at.iter().max().map_or(wall_secs, Duration::as_secs_f64);
        let per_1000 = |total: f64| total * 1000.0 / pages.max(1) as f64;
        Ok(Measured {
            pages,
            duplicates: served.duplicates,
            items,
            pages_by_worker: finished.runs.iter().map(|run| run.pages).collect(),
            wall_secs,
            to_first_request_secs: first,
            after_last_request_secs: (wall_secs - last).max(0.0),
            pages_per_sec: if wall_secs > 0.0 { pages as f64 / wall_secs } else { 0.0 },
            fetch_p50_ms: finished.runs.iter().map(|run| run.latency_p50_ms).fold(0.0, f64::max),
            scale: None,
            vs_one: None,
            worker_cpu_secs,
            worker_cpu_secs_per_1000_pages: per_1000(worker_cpu_secs),
            peak_rss_mb: finished.runs.iter().map(|run| run.peak_rss_kb).max().unwrap_or(0) as f64 / 1024.0,
            server_cpu_secs,
            redis_cpu_secs: redis.cpu_secs,
            redis_cpu_ms_per_1000_pages: per_1000(redis.cpu_secs * 1000.0),
            rounds: redis.script_calls,
            rounds_per_1000_pages: per_1000(redis.script_calls as f64),
            script_ms_per_1000_pages: per_1000(redis.script_usec as f64 / 1000.0),
            commands_per_page: redis.commands as f64 / pages.max(1) as f64,
        })
    }

    /// The command of worker `i` of a run of `workers`: the `spiderling` contender joining
    /// the crawl `crawl_id` in the fleet's Redis.
    fn worker(&self, fleet: &Fleet, workers: usize, i: usize, crawl_id: &str, per_host: &str) -> Command {
        let args = self.args;
        let urls: Vec<String> = self.sites.iter().map(Sandbox::url).collect();
        let mut command = Command::new(&self.exe);
        command
            .args(["bench", "--contender", "spiderling", "--url", &urls.join(",")])
            .arg("--output")
            .arg(self.dir.join(format!("worker-{}-{workers}-{i}.jsonl", fleet.kind())))
            .args(["--concurrency", &args.concurrency.to_string()])
            .args(["--parse-cost-us", &args.parse_cost_us.to_string()])
            .args(["--frontier", fleet.url(), "--crawl-id", crawl_id, "--per-host", per_host]);
        command
    }
}
