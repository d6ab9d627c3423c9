//! `spiderling bench --session-limited`: adaptive mode against the best hand-set crawl on
//! the session-limited shop (each visitor cookie and each exit address ten requests in any
//! ten seconds, a captcha with 200 past that, a consent wall for a new visitor), through
//! the mock rotating gateway with sticky identities.
//!
//! The hand-set contenders use a fixed number of slots (a quarter, half and all of
//! `--concurrency`); the adaptive one finds its own under `--concurrency` as the ceiling.
//! Each run crawls a fresh site and gateway, in this process, one after another, the
//! contenders alternating over `--rounds`; what is compared is wall time (the site
//! answers after `--latency-ms`, so the machine's load counts little) and the requests
//! the site received. A run that misses an item fails the bench.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;
use spider_sandbox::{GatewayConfig, MockGateway, Sandbox, SessionLimit, ShopSite};
use spiderling::prelude::*;

/// The site's limit: ten requests in any ten seconds per cookie and per address.
const LIMIT: SessionLimit = SessionLimit { requests: 10, window: Duration::from_secs(10) };

#[derive(Item, Serialize)]
struct Product {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
}

/// The product pages, reached by a rule that parses them, so the wall and the captcha
/// are told without markers.
#[derive(Spider, Default)]
#[spider(
    name = "sessions",
    start_urls = ["http://127.0.0.1/"],
    rule(css = "li > a", allow = "/product/", parse = Product),
    retries = 10
)]
struct Shopper;

/// What the bench is asked for.
pub(crate) struct Setup {
    pub(crate) products: usize,
    pub(crate) concurrency: usize,
    pub(crate) latency_ms: u64,
    pub(crate) rounds: usize,
}

/// One contender's runs.
#[derive(Debug, Serialize)]
struct Row {
    contender: String,
    /// Wall seconds of each run.
    seconds: Vec<f64>,
    /// Requests the site received in each run.
    requests: Vec<usize>,
    /// Captchas the site served in each run.
    captchas: Vec<u64>,
}

#[derive(Debug, Serialize)]
struct Report {
    products: usize,
    concurrency: usize,
    latency_ms: u64,
    rounds: usize,
    rows: Vec<Row>,
    /// Median wall time of adaptive mode over that of the fastest hand-set contender.
    adaptive_over_best_hand: f64,
}

/// Run the bench and print its table, or its JSON.
pub(crate) fn run(setup: &Setup, json: bool) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start a runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(measure(setup)) {
        Ok(report) => crate::print_report(json, &report, || table(&report)),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The contenders: the slots of each hand-set one, `None` for adaptive mode.
fn contenders(concurrency: usize) -> Vec<Option<usize>> {
    let mut slots: Vec<usize> =
        [concurrency / 4, concurrency / 2, concurrency].into_iter().filter(|n| *n > 0).collect();
    slots.dedup();
    slots.into_iter().map(Some).chain([None]).collect()
}

fn name(slots: Option<usize>) -> String {
    slots.map_or_else(|| "adaptive".to_owned(), |n| format!("hand-set {n} slots"))
}

async fn measure(setup: &Setup) -> Result<Report, String> {
    let dir = std::env::temp_dir().join(format!("spiderling-bench-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let contenders = contenders(setup.concurrency);
    let mut rows: Vec<Row> = contenders
        .iter()
        .map(|slots| Row { contender: name(*slots), seconds: vec![], requests: vec![], captchas: vec![] })
        .collect();
    let mut result = Ok(());
    'rounds: for _ in 0..setup.rounds {
        for (slots, row) in contenders.iter().zip(&mut rows) {
            match once(setup, *slots, &dir).await {
                Ok((seconds, requests, captchas)) => {
                    row.seconds.push(seconds);
                    row.requests.push(requests);
                    row.captchas.push(captchas);
                }
                Err(error) => {
                    result = Err(format!("{}: {error}", row.contender));
                    break 'rounds;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let best_hand = rows
        .iter()
        .filter(|row| row.contender != "adaptive")
        .map(|row| median(&row.seconds))
        .fold(f64::INFINITY, f64::min);
    let adaptive =
        rows.iter().find(|row| row.contender == "adaptive").map_or(f64::NAN, |row| median(&row.seconds));
    Ok(Report {
        products: setup.products,
        concurrency: setup.concurrency,
        latency_ms: setup.latency_ms,
        rounds: setup.rounds,
        rows,
        adaptive_over_best_hand: adaptive / best_hand,
    })
}

/// One crawl of a fresh site: its wall seconds, the requests the site received, the
/// captchas it served.
async fn once(setup: &Setup, slots: Option<usize>, dir: &Path) -> Result<(f64, usize, u64), String> {
    let site = Sandbox::shop(ShopSite {
        products: setup.products,
        limit: Some(LIMIT),
        latency: Duration::from_millis(setup.latency_ms),
        wall_first: false,
    })
    .map_err(|error| format!("cannot serve the site: {error}"))?;
    let gateway = MockGateway::start(GatewayConfig::default())
        .map_err(|error| format!("cannot start the gateway: {error}"))?;
    let ceiling = slots.unwrap_or(setup.concurrency);
    let config = Shopper
        .config()
        .set("start_urls", &site.url())
        .map_err(|error| error.to_string())?
        .output(dir.join("items.jsonl"))
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .geo("us")
        .concurrency(ceiling)
        .per_host(ceiling)
        .adaptive(slots.is_none());
    let started = Instant::now();
    let summary = Crawler::with_config(Shopper, config).run().await.map_err(|error| error.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    if summary.counts.items != setup.products as u64 {
        return Err(format!("{} items of {}:\n{summary}", summary.counts.items, setup.products));
    }
    let requests = site.observed().pages().count();
    let captchas = site.shop_tally().map_or(0, |tally| tally.captchas);
    Ok((seconds, requests, captchas))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn table(report: &Report) -> String {
    let mut out = format!(
        "session-limited shop: {} products, {} ms a page, ceiling {} slots, {} rounds\n\n",
        report.products, report.latency_ms, report.concurrency, report.rounds
    );
    out.push_str(
        "contender              median s   runs (s)                     requests \
        (median)   captchas (median)\n",
    );
    for row in &report.rows {
        let runs: Vec<String> = row.seconds.iter().map(|s| format!("{s:.2}")).collect();
        let requests: Vec<f64> = row.requests.iter().map(|n| *n as f64).collect();
        let captchas: Vec<f64> = row.captchas.iter().map(|n| *n as f64).collect();
        out.push_str(&format!(
            "{:<22} {:>8.2}   {:<28} {:>17.0}   {:>17.0}\n",
            row.contender,
            median(&row.seconds),
            runs.join(" "),
            median(&requests),
            median(&captchas)
        ));
    }
    out.push_str(&format!(
        "\nadaptive / best hand-set, median wall time: {:.2}\n",
        report.adaptive_over_best_hand
    ));
    out
}
