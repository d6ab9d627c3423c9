//! The fleet bench's results: a row per worker count and Redis, each as measured or as
//! failed, with its pages/s over N × one worker's on the same Redis, and a cluster's over
//! one Redis's at the same count, as a table or as JSON.

use std::fmt::Write as _;

/// The site, the workers' limits and the Redis every run shared.
#[derive(Debug, serde::Serialize)]
pub(super) struct Setup {
    /// Pages a complete crawl fetches: home, listings, books.
    pub(super) expected_pages: usize,
    pub(super) books: usize,
    /// Copies of the site, each a host of its own.
    pub(super) sites: usize,
    /// Requests in flight per worker.
    pub(super) concurrency: usize,
    /// The fleet's per-host limit is this many times C × N.
    pub(super) per_host_per_slot: usize,
    pub(super) latency_ms: u64,
    pub(super) page_kb: usize,
    pub(super) parse_cost_us: u64,
    /// Parse threads of each worker.
    pub(super) parse_threads: usize,
    /// Cores of this machine, shared by the workers, the site and Redis.
    pub(super) cores: usize,
    /// Each Redis the runs were made on, in the order of the rows.
    pub(super) redis: Vec<String>,
}

/// One worker count's run.
#[derive(Debug, serde::Serialize)]
pub(super) struct Row {
    pub(super) workers: usize,
    /// `one` or `cluster`.
    pub(super) redis: &'static str,
    pub(super) crawl_id: String,
    #[serde(flatten)]
    pub(super) outcome: Outcome,
}

/// A run is a number only when it was correct: every worker succeeded and the server
/// answered every page exactly once.
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub(super) enum Outcome {
    Measured(Measured),
    Failed { failed: String },
}

/// What a correct run came to.
#[derive(Debug, serde::Serialize)]
pub(super) struct Measured {
    /// Pages the server answered with 200, every worker together.
    pub(super) pages: usize,
    /// Requests the server saw beyond the first for a resource.
    pub(super) duplicates: usize,
    /// Lines in the workers' items files together.
    pub(super) items: usize,
    /// Pages each worker parsed: how the fleet shared the crawl.
    pub(super) pages_by_worker: Vec<usize>,
    /// From the first worker started to the last one exited.
    pub(super) wall_secs: f64,
    /// From the first worker started to the first request the site saw: processes
    /// starting, joining the fleet, robots.txt.
    pub(super) to_first_request_secs: f64,
    /// From the last request the site saw to the last worker exited: the last pages'
    /// latency, the fleet finding the crawl over, the workers leaving.
    pub(super) after_last_request_secs: f64,
    pub(super) pages_per_sec: f64,
    /// The slowest worker's median fetch time (request sent to body read): what a slot's
    /// cycle would be if a freed slot started its next request at once.
    pub(super) fetch_p50_ms: f64,
    /// pages/s over N × the one-worker run's pages/s on the same Redis (target ≥ 0.85);
    /// `None` without a one-worker row to compare with.
    pub(super) scale: Option<f64>,
    /// A cluster's pages/s over one Redis's at the same worker count; `None` on one Redis,
    /// or without its row.
    pub(super) vs_one: Option<f64>,
    /// User and system CPU of every worker together, over their crawls.
    pub(super) worker_cpu_secs: f64,
    pub(super) worker_cpu_secs_per_1000_pages: f64,
    /// The largest worker's peak resident set.
    pub(super) peak_rss_mb: f64,
    /// CPU the site (the parent process) spent during the run.
    pub(super) server_cpu_secs: f64,
    /// Redis's CPU (`used_cpu_sys + used_cpu_user`) over the run.
    pub(super) redis_cpu_secs: f64,
    pub(super) redis_cpu_ms_per_1000_pages: f64,
    /// Calls of the round script (`EVALSHA`/`EVAL`) over the run.
    pub(super) rounds: u64,
    pub(super) rounds_per_1000_pages: f64,
    /// Time Redis spent inside the round script, per 1,000 pages.
    pub(super) script_ms_per_1000_pages: f64,
    /// Redis commands a page (`INFO commandstats`: the round script's calls and the
    /// commands it ran, the item keys' script, the bench's own few).
    pub(super) commands_per_page: f64,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct Report {
    setup: Setup,
    runs: Vec<Row>,
}

impl Report {
    /// The report of `runs`, each measured one's scale set against the one-worker run on
    /// the same Redis, and a cluster's against one Redis at the same count.
    pub(super) fn new(setup: Setup, mut runs: Vec<Row>) -> Report {
        let rate = |runs: &[Row], redis: &str, workers: usize| {
            runs.iter().find_map(|row| match &row.outcome {
                Outcome::Measured(m)
                    if row.redis == redis && row.workers == workers && m.pages_per_sec > 0.0 =>
                {
                    Some(m.pages_per_sec)
                }
                _ => None,
            })
        };
        let rates: Vec<(Option<f64>, Option<f64>)> = runs
            .iter()
            .map(|row| {
                (
                    rate(&runs, row.redis, 1),
                    if row.redis == "one" { None } else { rate(&runs, "one", row.workers) },
                )
            })
            .collect();
        for (row, (one_worker, one_redis)) in runs.iter_mut().zip(rates) {
            if let Outcome::Measured(m) = &mut row.outcome {
                m.scale = one_worker.map(|one| m.pages_per_sec / (row.workers as f64 * one));
                m.vs_one = one_redis.map(|one| m.pages_per_sec / one);
            }
        }
        Report { setup, runs }
    }

    /// Whether every run was correct.
    pub(super) fn all_measured(&self) -> bool {
        self.runs.iter().all(|row| matches!(row.outcome, Outcome::Measured(_)))
    }

    /// The report as a text table, the setup above it.
    pub(super) fn table(&self) -> String {
        let s = &self.setup;
        let mut out = format!(
            "site: {} pages ({} books) on {} host(s), {} KiB each, {} ms latency; per worker C = {}, {} \
             parse threads, parse cost {} µs/item; per_host = {} × C × N for the fleet; {} cores; Redis: \
                 {}\n\n",
            s.expected_pages,
            s.books,
            s.sites,
            s.page_kb,
            s.latency_ms,
            s.concurrency,
            s.parse_threads,
            s.parse_cost_us,
            s.per_host_per_slot,
            s.cores,
            s.redis.join("; ")
        );
        let _ = writeln!(
            out,
            "{:>7} {:>7} {:>7} {:>5} {:>7} {:>6} {:>6} {:>8} {:>6} {:>6} {:>6} {:>7} {:>10} {:>7} {:>8} \
                {:>10} {:>11} {:>9} {:>8}  pages by worker",
            "redis",
            "workers",
            "pages",
            "dups",
            "secs",
            "lead s",
            "tail s",
            "pages/s",
            "p50 ms",
            "ratio",
            "vs one",
            "CPU s",
            "CPU s/1000",
            "RSS MB",
            "server s",
            "redis ms/k",
            "rounds/1000",
            "Lua ms/k",
            "cmds/pg",
        );
        for row in &self.runs {
            let m = match &row.outcome {
                Outcome::Measured(m) => m,
                Outcome::Failed { failed } => {
                    let _ = writeln!(out, "{:>7} {:>7} FAILED: {failed}", row.redis, row.workers);
                    continue;
                }
            };
            let split: Vec<String> = m.pages_by_worker.iter().map(usize::to_string).collect();
            let _ = writeln!(
                out,
                "{:>7} {:>7} {:>7} {:>5} {:>7.2} {:>6.2} {:>6.2} {:>8.0} {:>6.1} {:>6} {:>6} {:>7.2} \
                    {:>10.3} {:>7.1} {:>8.2} {:>10.1} {:>11.1} {:>9.1} {:>8.1}  {}",
                row.redis,
                row.workers,
                m.pages,
                m.duplicates,
                m.wall_secs,
                m.to_first_request_secs,
                m.after_last_request_secs,
                m.pages_per_sec,
                m.fetch_p50_ms,
                m.scale.map_or("n/a".to_owned(), |r| format!("{r:.2}")),
                m.vs_one.map_or("-".to_owned(), |r| format!("{r:.2}")),
                m.worker_cpu_secs,
                m.worker_cpu_secs_per_1000_pages,
                m.peak_rss_mb,
                m.server_cpu_secs,
                m.redis_cpu_ms_per_1000_pages,
                m.rounds_per_1000_pages,
                m.script_ms_per_1000_pages,
                m.commands_per_page,
                split.join("/")
            );
        }
        out.push_str(
            "\nsecs: first worker started to last exited; lead s: to the site's first request; tail s: \
             from its last request; p50 ms: the slowest worker's median fetch\nratio: pages/s over N × the \
             one-worker pages/s on the same Redis (target ≥ 0.85); vs one: a cluster's pages/s over one \
             Redis's with as many workers; redis ms/k: Redis's CPU per 1,000 pages; rounds: calls of the \
                 fleet's round script; Lua ms/k: time inside it; cmds/pg: Redis commands a page, the \
                     script's own included\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(pages_per_sec: f64) -> Outcome {
        Outcome::Measured(Measured {
            pages: 100,
            duplicates: 0,
            items: 90,
            pages_by_worker: vec![100],
            wall_secs: 1.0,
            to_first_request_secs: 0.01,
            after_last_request_secs: 0.06,
            pages_per_sec,
            fetch_p50_ms: 5.5,
            scale: None,
            vs_one: None,
            worker_cpu_secs: 0.5,
            worker_cpu_secs_per_1000_pages: 5.0,
            peak_rss_mb: 10.0,
            server_cpu_secs: 0.1,
            redis_cpu_secs: 0.01,
            redis_cpu_ms_per_1000_pages: 100.0,
            rounds: 10,
            rounds_per_1000_pages: 100.0,
            script_ms_per_1000_pages: 1.0,
            commands_per_page: 12.0,
        })
    }

    fn setup() -> Setup {
        Setup {
            expected_pages: 100,
            books: 90,
            sites: 1,
            concurrency: 8,
            per_host_per_slot: 2,
            latency_ms: 5,
            page_kb: 2,
            parse_cost_us: 0,
            parse_threads: 2,
            cores: 2,
            redis: vec!["started".to_owned()],
        }
    }

    #[test]
    fn scale_is_against_the_one_worker_run_and_a_failure_is_no_number() {
        let row = |workers, outcome| Row { workers, redis: "one", crawl_id: format!("c{workers}"), outcome };
        let report = Report::new(
            setup(),
            vec![
                row(1, measured(100.0)),
                row(2, measured(180.0)),
                row(3, Outcome::Failed { failed: "a page fetched twice".to_owned() }),
            ],
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["runs"][0]["scale"], 1.0);
        assert_eq!(json["runs"][1]["scale"], 0.9);
        assert_eq!(json["runs"][2]["failed"], "a page fetched twice");
        assert!(json["runs"][2].get("pages_per_sec").is_none());
        assert!(!report.all_measured());
        let table = report.table();
        assert!(table.contains("0.90"), "{table}");
        assert!(table.contains("      3 FAILED: a page fetched twice"), "{table}");
    }

    #[test]
    fn without_a_one_worker_run_there_is_no_ratio() {
        let row = Row { workers: 2, redis: "one", crawl_id: "c2".to_owned(), outcome: measured(180.0) };
        let report = Report::new(setup(), vec![row]);
        assert!(report.all_measured());
        assert!(report.table().contains(" n/a "));
    }

    #[test]
    fn a_cluster_scales_against_its_own_one_worker_run_and_is_set_against_one_redis() {
        let row = |redis, workers, rate| Row {
            workers,
            redis,
            crawl_id: format!("{redis}{workers}"),
            outcome: measured(rate),
        };
        let report = Report::new(
            setup(),
            vec![
                row("one", 1, 100.0),
                row("cluster", 1, 80.0),
                row("one", 2, 200.0),
                row("cluster", 2, 144.0),
            ],
        );
        let json = serde_json::to_value(&report).unwrap();
        let runs = &json["runs"];
        assert_eq!(runs[1]["scale"], 1.0, "the cluster's one worker is its own baseline");
        assert_eq!(runs[3]["scale"], 0.9);
        assert_eq!(runs[1]["vs_one"], 0.8);
        assert_eq!(runs[3]["vs_one"], 0.72);
        assert!(runs[2]["vs_one"].is_null(), "one Redis is not set against itself");
        assert!(report.table().contains("cluster       2"), "{}", report.table());
    }
}
