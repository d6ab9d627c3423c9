//! Adaptive mode against a rate-limited site, offline: watch the limit climb and back off.
//!
//! ```text
//! cargo run --release --example adaptive
//! ```
//!
//! The hostile sandbox site (127.0.0.1:8769) allows each client IP 40 requests a second
//! and answers 429, without a Retry-After, beyond that; a client that keeps going through
//! ten 429s in a second is banned for a minute (every answer 403). Fifty slots with no
//! pause get banned there within seconds. With `adaptive = true` the spider starts at 4
//! requests a second, grows while its block rate stays under `block_target`, cuts (by
//! half the first time, by 20% after) when it moves, and holds. Each second it prints the host's limits from the crawl's
//! gauges (`Crawler::live`), then the summary and what the site saw.

use std::process::ExitCode;
use std::time::Duration;

use spider_sandbox::{HostileSite, IdentityLimit, Sandbox};
use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "adaptive",
    start_urls = ["http://127.0.0.1:8769/"],
    concurrency = 50,
    per_host = 50,
    adaptive = true,
    progress = false,
    follow = "a[href]",
    item = Product,
    output = "adaptive.jsonl",
)]
struct Shop;

#[derive(Item, Serialize)]
struct Product {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
}

fn main() -> ExitCode {
    let limit = IdentityLimit {
        requests: 40,
        per: Duration::from_secs(1),
        ban_after: 10,
        ban_for: Duration::from_secs(60),
    };
    let site = HostileSite { pages: 300, limit: Some(limit), silent_limit: true, ..HostileSite::empty() };
    let site = match Sandbox::hostile_on(site, 8769) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve the hostile site on 127.0.0.1:8769: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("hostile site at {}: 40 requests/s per client, then 429; ten 429s in a second ban", site.url());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let ended = runtime.block_on(async {
        let crawler = Crawler::new(Shop);
        let mut live = crawler.live();
        let watch = tokio::spawn(async move {
            println!("  time  slots  allowed/s  pages/s  block rate");
            while live.changed().await.is_ok() {
                let now = live.borrow().clone();
                if let Some(host) = now.hosts.first() {
                    println!(
                        "{:5.0}s  {:5}  {:9.1}  {:7.1}  {:9.1}%{}",
                        now.counts.elapsed_secs,
                        host.limit,
                        host.rate_per_sec.unwrap_or_default(),
                        now.pages_per_sec,
                        host.block_rate * 100.0,
                        if host.tripped { "  breaker open" } else { "" }
                    );
                }
            }
        });
        let ended = crawler.run().await;
        let _ = watch.await;
        ended
    });
    let seen = site.observed();
    match ended {
        Ok(summary) => {
            println!("{summary}");
            println!("the site answered 429 ×{} and 403 ×{}", seen.answered(429), seen.answered(403));
            summary.exit_code()
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}
