//! One page could hold a parse thread for a minute: html5ever has no bound of its own,
//! and 100,000 nested elements (1.1 MB) cost it 50 s of CPU, whatever `timeout` said.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use spiderling::{Config, Crawler};
use support::BookSpider;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_too_deep_to_parse_fails_within_the_budget_and_the_crawl_goes_on() {
    let deep = format!("<html><body>{}x{}</body></html>", "<div>".repeat(100_000), "</div>".repeat(100_000));
    let site = spider_sandbox::FixedSite::new()
        .answer("/", Some("text/html"), r#"<a href="/deep">deep</a> <a href="/fine">fine</a>"#)
        .answer("/deep", Some("text/html"), deep)
        .answer("/fine", Some("text/html"), "<p>fine</p>");
    let site = spider_sandbox::Sandbox::fixed(site).unwrap();
    let config = Config::new("books")
        .start_url(site.url())
        .allowed_domain("127.0.0.1")
        .max_body_bytes(5_000_000)
        .dom_only(true)
        .handle_signals(false)
        .progress(false);
    let started = Instant::now();
    let crawl = Crawler::new(BookSpider::new(config)).run();
    let summary =
        tokio::time::timeout(Duration::from_secs(60), crawl).await.expect("the crawl ends").unwrap();
    let took = started.elapsed();
    assert_eq!(summary.counts.failures_by_reason.get("parse too long"), Some(&1), "{:?}", summary.counts);
    assert_eq!(summary.counts.pages, 3, "every page is read, the deep one to its budget");
    assert!(took < Duration::from_secs(30), "the crawl took {took:?}");
}
