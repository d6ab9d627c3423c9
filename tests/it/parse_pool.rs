//! The parse pool: CPU-heavy parsing overlaps fetching, and back-pressure keeps fetching
//! from running ahead of parsing.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::Crawler;
use support::{config_for, BookSpider, Lag};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_heavy_parse_overlaps_fetching_and_fetching_waits_for_it() {
    let cost = Duration::from_millis(30);
    let demo = DemoSite { books: 60, per_page: 20, latency: cost, ..DemoSite::default() };
    let pages = demo.expected_pages() as u32;
    let site = Arc::new(Sandbox::demo(demo).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    let concurrency = 8;
    let lag = Lag::watching(site.clone());
    let spider = BookSpider::new(config.concurrency(concurrency).per_host(concurrency).parse_threads(1))
        .burning(cost)
        .watching_lag(lag.clone());

    let started = Instant::now();
    let summary = Crawler::new(spider).run().await.unwrap();
    let elapsed = started.elapsed();

    assert_eq!(summary.counts.items, 60);
    // One request after another would take pages × (latency + parse); overlapped, the
    // crawl is bound by the single parse thread instead.
    let sequential = (cost * 2) * pages;
    assert!(elapsed < sequential * 3 / 4, "{elapsed:?} against {sequential:?} sequential");
    // Requests the server received but whose pages were not parsed yet: at most the
    // requests in flight, plus robots.txt and the redirect hop, which are never parsed.
    assert!(lag.most() <= concurrency + 2, "fetching ran {} pages ahead of parsing", lag.most());
}
