//! The bench's results: a row per contender, the ratios the claims are about,
//! as a table or as JSON.

use std::collections::HashMap;
use std::fmt::Write as _;

use spider_sandbox::Hit;

use super::measure::Run;

/// The site and the limits every contender ran under.
#[derive(Debug, serde::Serialize)]
pub(super) struct Setup {
    /// Pages a complete crawl fetches: home, listings, books.
    pub(super) expected_pages: usize,
    pub(super) books: usize,
    pub(super) concurrency: usize,
    pub(super) latency_ms: u64,
    pub(super) page_kb: usize,
    pub(super) parse_cost_us: u64,
    /// Threads Spiderling parses on (`measure::parse_threads`).
    pub(super) parse_threads: usize,
    /// Pages the sequential loop stops at.
    pub(super) sample: usize,
}

/// One contender's results: its own measures, and what the server saw of it.
#[derive(Debug, serde::Serialize)]
pub(super) struct Row {
    pub(super) name: &'static str,
    pub(super) pages: usize,
    /// Pages read by the streaming engine, without a DOM.
    pub(super) streamed_pages: usize,
    pub(super) items: usize,
    pub(super) elapsed_secs: f64,
    pub(super) pages_per_sec: f64,
    pub(super) latency_p50_ms: f64,
    pub(super) latency_p99_ms: f64,
    pub(super) cpu_secs_per_1000_pages: f64,
    pub(super) peak_rss_mb: f64,
    /// Pages the server answered with 200 to this contender (robots.txt left out).
    pub(super) server_pages: usize,
    /// Requests the server saw beyond the first for a resource: 0 for a correct crawl.
    pub(super) server_duplicates: usize,
    /// CPU the server (the parent process) spent while this contender ran.
    pub(super) server_cpu_secs: f64,
}

impl Row {
    /// The row of `name`, from its run and the server's record of its requests.
    pub(super) fn new(name: &'static str, run: Run, hits: &[Hit], server_cpu_secs: f64) -> Row {
        let served = Served::from(hits);
        let per_page = |total: f64| if run.pages == 0 { 0.0 } else { total / run.pages as f64 };
        Row {
            name,
            pages: run.pages,
            streamed_pages: run.streamed_pages,
            items: run.items,
            elapsed_secs: run.elapsed_secs,
            pages_per_sec: if run.elapsed_secs > 0.0 { run.pages as f64 / run.elapsed_secs } else { 0.0 },
            latency_p50_ms: run.latency_p50_ms,
            latency_p99_ms: run.latency_p99_ms,
            cpu_secs_per_1000_pages: per_page(run.cpu_secs * 1000.0),
            peak_rss_mb: run.peak_rss_kb as f64 / 1024.0,
            server_pages: served.pages,
            server_duplicates: served.duplicates,
            server_cpu_secs,
        }
    }
}

/// What the server saw of a crawl, whichever processes made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Served {
    /// Pages answered with 200 (robots.txt left out).
    pub(super) pages: usize,
    /// Requests beyond the first for a resource: 0 for a correct crawl.
    pub(super) duplicates: usize,
}

impl From<&[Hit]> for Served {
    fn from(hits: &[Hit]) -> Served {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for hit in hits.iter().filter(|hit| hit.on_site) {
            *counts.entry(hit.resource()).or_insert(0) += 1;
        }
        Served {
            pages: hits
                .iter()
                .filter(|hit| hit.on_site && hit.target != "/robots.txt" && hit.status == 200)
                .count(),
            duplicates: counts.values().map(|n| n - 1).sum(),
        }
    }
}

/// The ratios the claims are about; `None` where a contender is missing or idle.
#[derive(Debug, serde::Serialize)]
pub(super) struct Ratios {
    /// Spiderling's pages/s (streaming engine) over the bare loop's (target ≥ 1.4 at
    /// 0 ms latency).
    pub(super) spiderling_over_bare: Option<f64>,
    /// Spiderling's CPU per page (streaming engine) over the bare loop's (target ≤ 0.6).
    pub(super) spiderling_cpu_over_bare: Option<f64>,
    /// Spiderling's pages/s with the DOM engine over the bare loop's (target ≥ 0.90).
    pub(super) dom_over_bare: Option<f64>,
    /// Spiderling's pages/s with a state file over its pages/s in memory: the cost of
    /// durability (target ≥ 0.85).
    pub(super) state_over_memory: Option<f64>,
    /// The rules spider's pages/s, and CPU per page, over the bare loop's (CPU target
    /// ≤ 0.5).
    pub(super) rules_over_bare: Option<f64>,
    pub(super) rules_cpu_over_bare: Option<f64>,
    /// The same with identities on.
    pub(super) identities_over_bare: Option<f64>,
    pub(super) identities_cpu_over_bare: Option<f64>,
    /// Spiderling's pages/s over the sequential loop's (the "10×").
    pub(super) spiderling_over_sequential: Option<f64>,
    /// The bare loop's pages/s over the sequential loop's.
    pub(super) bare_over_sequential: Option<f64>,
    /// Spiderling's pages/s over C / latency, when there is a latency (target ≥ 0.90).
    pub(super) spiderling_over_latency_bound: Option<f64>,
    /// Spiderling's items/s over parse threads / parse cost, when there is a parse cost
    /// (target ≥ 0.85).
    pub(super) spiderling_over_parse_bound: Option<f64>,
    /// Over TLS (`--tls`): the rules spider's pages/s with Chrome's wire over the crawl's
    /// own client on HTTP/2 and on HTTP/1.1 (target ≥ 0.8), and HTTP/2's over HTTP/1.1's.
    pub(super) chrome_over_h2: Option<f64>,
    pub(super) chrome_over_h1: Option<f64>,
    pub(super) h2_over_h1: Option<f64>,
    /// The same, of CPU per page.
    pub(super) chrome_cpu_over_h2: Option<f64>,
    pub(super) h2_cpu_over_h1: Option<f64>,
}

#[derive(Debug, serde::Serialize)]
pub(super) struct Report {
    setup: Setup,
    contenders: Vec<Row>,
    ratios: Ratios,
}

impl Report {
    pub(super) fn new(setup: Setup, contenders: Vec<Row>) -> Report {
        let row = |name: &str| contenders.iter().find(|row| row.name == name);
        let rate = |name: &str| row(name).map(|row| row.pages_per_sec).filter(|r| *r > 0.0);
        let items_per_sec = row("spiderling")
            .filter(|row| row.elapsed_secs > 0.0)
            .map(|row| row.items as f64 / row.elapsed_secs);
        let over = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let bound =
            (setup.latency_ms > 0).then(|| setup.concurrency as f64 * 1000.0 / setup.latency_ms as f64);
        let parse_bound =
            (setup.parse_cost_us > 0).then(|| setup.parse_threads as f64 * 1e6 / setup.parse_cost_us as f64);
        let cpu = |name: &str| row(name).map(|row| row.cpu_secs_per_1000_pages).filter(|c| *c > 0.0);
        let ratios = Ratios {
            spiderling_over_bare: over(rate("spiderling"), rate("bare")),
            spiderling_cpu_over_bare: over(cpu("spiderling"), cpu("bare")),
            dom_over_bare: over(rate("spiderling-dom"), rate("bare")),
            state_over_memory: over(rate("state"), rate("spiderling")),
            rules_over_bare: over(rate("rules"), rate("bare")),
            rules_cpu_over_bare: over(cpu("rules"), cpu("bare")),
            identities_over_bare: over(rate("identities"), rate("bare")),
            identities_cpu_over_bare: over(cpu("identities"), cpu("bare")),
            spiderling_over_sequential: over(rate("spiderling"), rate("sequential")),
            bare_over_sequential: over(rate("bare"), rate("sequential")),
            spiderling_over_latency_bound: over(rate("spiderling"), bound),
            spiderling_over_parse_bound: over(items_per_sec, parse_bound),
            chrome_over_h2: over(rate("rules-chrome"), rate("rules")),
            chrome_over_h1: over(rate("rules-chrome"), rate("rules-h1")),
            h2_over_h1: over(rate("rules"), rate("rules-h1")),
            chrome_cpu_over_h2: over(cpu("rules-chrome"), cpu("rules")),
            h2_cpu_over_h1: over(cpu("rules"), cpu("rules-h1")),
        };
        Report { setup, contenders, ratios }
    }

    /// The report as a text table, the setup above it and the ratios below.
    pub(super) fn table(&self) -> String {
        let s = &self.setup;
        let mut out = format!(
            "site: {} pages ({} books), {} KiB each, {} ms latency; C = {}, parse cost {} µs/item \
             on {} parse threads, sequential sample {}\n\n",
            s.expected_pages,
            s.books,
            s.page_kb,
            s.latency_ms,
            s.concurrency,
            s.parse_cost_us,
            s.parse_threads,
            s.sample
        );
        let _ = writeln!(
            out,
            "{:<14} {:>7} {:>8} {:>7} {:>8} {:>9} {:>8} {:>8} {:>11} {:>8} {:>7} {:>5} {:>9}",
            "contender",
            "pages",
            "streamed",
            "items",
            "secs",
            "pages/s",
            "p50 ms",
            "p99 ms",
            "CPU s/1000",
            "RSS MB",
            "served",
            "dups",
            "server s"
        );
        for r in &self.contenders {
            let _ = writeln!(
                out,
                "{:<14} {:>7} {:>8} {:>7} {:>8.2} {:>9.0} {:>8.2} {:>8.2} {:>11.3} {:>8.1} {:>7} {:>5} \
                    {:>9.2}",
                r.name,
                r.pages,
                r.streamed_pages,
                r.items,
                r.elapsed_secs,
                r.pages_per_sec,
                r.latency_p50_ms,
                r.latency_p99_ms,
                r.cpu_secs_per_1000_pages,
                r.peak_rss_mb,
                r.server_pages,
                r.server_duplicates,
                r.server_cpu_secs
            );
        }
        let shown = |ratio: Option<f64>| ratio.map_or("n/a".to_owned(), |r| format!("{r:.2}"));
        let r = &self.ratios;
        if r.h2_over_h1.is_some() {
            let _ = writeln!(
                out,
                "rules-chrome / rules pages/s, CPU:    {}, {} (Chrome's wire over the own client on HTTP/2; \
                    target ≥ 0.8)",
                shown(r.chrome_over_h2),
                shown(r.chrome_cpu_over_h2)
            );
            let _ = writeln!(out, "rules-chrome / rules-h1 pages/s:      {}", shown(r.chrome_over_h1));
            let _ = writeln!(
                out,
                "rules / rules-h1 pages/s, CPU:        {}, {} (HTTP/2 over HTTP/1.1)",
                shown(r.h2_over_h1),
                shown(r.h2_cpu_over_h1)
            );
            return out;
        }
        let _ = writeln!(
            out,
            "\nspiderling / bare pages/s:      {} (streaming engine; target ≥ 1.4 at 0 ms latency)",
            shown(r.spiderling_over_bare)
        );
        let _ = writeln!(
            out,
            "spiderling / bare CPU per page: {} (streaming engine; target ≤ 0.6)",
            shown(r.spiderling_cpu_over_bare)
        );
        let _ = writeln!(
            out,
            "spiderling-dom / bare pages/s:  {} (DOM engine; target ≥ 0.90)",
            shown(r.dom_over_bare)
        );
        let _ = writeln!(
            out,
            "state / spiderling pages/s:     {} (target ≥ 0.85: a state file on / in memory)",
            shown(r.state_over_memory)
        );
        let _ = writeln!(
            out,
            "rules / bare pages/s, CPU:      {}, {} (two rules, a page field, JSON-LD; CPU target ≤ 0.5)",
            shown(r.rules_over_bare),
            shown(r.rules_cpu_over_bare)
        );
        let _ = writeln!(
            out,
            "identities / bare pages/s, CPU: {}, {} (rules with agents and cookie jars)",
            shown(r.identities_over_bare),
            shown(r.identities_cpu_over_bare)
        );
        let _ = writeln!(out, "spiderling / sequential pages/s: {}", shown(r.spiderling_over_sequential));
        let _ = writeln!(out, "bare / sequential pages/s:      {}", shown(r.bare_over_sequential));
        if r.spiderling_over_latency_bound.is_some() {
            let _ = writeln!(
                out,
                "spiderling / (C / latency):     {} (target ≥ 0.90)",
                shown(r.spiderling_over_latency_bound)
            );
        }
        if r.spiderling_over_parse_bound.is_some() {
            let _ = writeln!(
                out,
                "spiderling items/s / (threads / parse cost): {} (target ≥ 0.85)",
                shown(r.spiderling_over_parse_bound)
            );
        }
        out
    }
}
