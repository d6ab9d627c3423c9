//! Bad input gets a clear error and never a panic, and nothing already scraped is lost.

mod support;

use std::time::Duration;

use spider_sandbox::{HostileSite, Sandbox};
use spiderling::{Config, CrawlStatus, Crawler, Error};
use support::{config_for, read_jsonl, BookSpider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_start_url_is_a_configuration_error_before_any_request() {
    let site = Sandbox::hostile(HostileSite::empty()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let error = Crawler::new(BookSpider::new(config.start_url("htp:/nowhere").concurrency(0)))
        .run()
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Config(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("\"htp:/nowhere\"") && message.contains("concurrency = 0"), "{message}");
    assert_eq!(format!("{:?}", error.exit_code()), format!("{:?}", std::process::ExitCode::from(2)));
    assert!(site.observed().hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_ends_in_the_failures_file() {
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    for obey_robots in [true, false] {
        let output = dir.path().join(format!("robots-{obey_robots}.jsonl"));
        let config = Config::new("unreachable")
            .start_url(format!("http://127.0.0.1:{port}/"))
            .obey_robots(obey_robots)
            .retries(1)
            .backoff(Duration::from_millis(10), Duration::from_millis(20))
            .output(&output);
        let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
        assert_eq!(summary.status, CrawlStatus::CompleteWithFailures);
        let failures = std::fs::read_to_string(output.with_extension("failures.jsonl")).unwrap();
        let expected =
            if obey_robots { "robots.txt unavailable: connection refused" } else { "connection refused" };
        assert!(failures.contains(&format!("\"reason\":\"{expected}\"")), "{failures}");
        assert!(failures.contains(&format!("127.0.0.1:{port}")), "{failures}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_chain_back_to_a_url_it_passed_is_a_loop_filed_with_its_chain() {
    let site = Sandbox::hostile(HostileSite { traps: true, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start = format!("{}loop/a", site.url());
    let config = Config::new("books").start_url(&start).output(dir.path().join("items.jsonl"));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(summary.counts.failures_by_reason.get("redirect loop"), Some(&1), "{summary}");
    let filed = support::read_json_lines(&dir.path().join("items.failures.jsonl"));
    let looped: Vec<_> = filed.iter().filter(|f| f["reason"] == "redirect loop").collect();
    assert_eq!(looped.len(), 1, "{filed:?}");
    let (a, b) = (format!("{}loop/a", site.url()), format!("{}loop/b", site.url()));
    assert_eq!(looped[0]["url"], b, "the hop that redirected back");
    assert_eq!(looped[0]["error"], format!("{a} → {b} → {a}"));
    assert_eq!(site.observed().under("/loop/"), 2, "each hop once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_filed_under_the_url_requested_without_its_fragment() {
    let site = Sandbox::hostile(HostileSite { gone: 1, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start = format!("{}gone/1#changelog", site.url());
    let config = Config::new("books").start_url(&start).output(dir.path().join("items.jsonl"));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(summary.counts.failures_by_reason.get("http 404"), Some(&1), "{summary}");
    let filed = support::read_json_lines(&dir.path().join("items.failures.jsonl"));
    assert_eq!(filed.len(), 1, "{filed:?}");
    assert_eq!(filed[0]["url"], format!("{}gone/1", site.url()), "as sent: no fragment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_and_redirect_traps_fail_cleanly_and_the_rest_is_kept() {
    let site = Sandbox::hostile(HostileSite {
        pages: 3,
        traps: true,
        huge_bytes: 16 << 20,
        bomb_bytes: 256 << 20,
        ..HostileSite::empty()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let summary = Crawler::new(BookSpider::new(config.max_redirects(5))).run().await.unwrap();

    let items = read_jsonl(&output);
    assert!(items.iter().any(|item| item.title == "Café Müller"), "Latin-1 decoded: {items:?}");
    assert_eq!(items.len(), 4, "three pages and the Latin-1 one");
    let failed = &summary.counts.failures_by_reason;
    assert_eq!(failed.get("body too large"), Some(&2), "the huge page and the gzip bomb: {failed:?}");
    assert_eq!(failed.get("too many redirects"), Some(&1), "{failed:?}");
    assert_eq!(failed.get("redirect loop"), Some(&2), "/cycle and /loop/a: {failed:?}");
    let seen = site.observed();
    assert_eq!(seen.under("/chain/"), 6, "the first hop and five redirects");
    assert_eq!(seen.under("/cycle"), 1);
    assert_eq!(seen.under("/loop/"), 2, "each hop of the loop once");
    assert_eq!((seen.under("/huge"), seen.under("/bomb")), (1, 1), "too large is not retried");
    // Inflating the bomb would take 256 MiB; reading stopped at the 8 MiB cap.
    let peak_kib = support::peak_rss_kib();
    assert!(peak_kib < 160 * 1024, "peak RSS {peak_kib} KiB");
}
