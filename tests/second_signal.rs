//! A second Ctrl-C abandons requests in flight at once. Alone in its test binary, because
//! it signals its own process.

mod support;

use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{CrawlStatus, Crawler};
use support::{config_for, BookSpider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_stops_at_once_and_files_what_was_in_flight() {
    let latency = Duration::from_secs(3);
    let site = Sandbox::demo(DemoSite { books: 40, per_page: 10, latency, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let crawl = tokio::spawn(Crawler::new(BookSpider::new(config.grace(Duration::from_secs(60)))).run());

    // The home page takes `latency`; its follow-ups are in flight after that.
    tokio::time::sleep(latency + Duration::from_millis(500)).await;
    let started = Instant::now();
    support::interrupt(std::process::id());
    tokio::time::sleep(Duration::from_millis(200)).await;
    support::interrupt(std::process::id());
    let summary = crawl.await.unwrap().unwrap();

    assert!(started.elapsed() < latency, "stopped in {:?}", started.elapsed());
    assert_eq!(summary.status, CrawlStatus::Interrupted);
    let abandoned = summary.counts.failures_by_reason.get("interrupted").copied().unwrap_or(0);
    assert!(abandoned >= 1, "{:?}", summary.counts.failures_by_reason);
    let failures = std::fs::read_to_string(dir.path().join("books.failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count() as u64, abandoned);
    assert!(std::fs::read_to_string(output)
        .unwrap()
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
}
