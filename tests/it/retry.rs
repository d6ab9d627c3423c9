//! Retries that never amplify, observed by the hostile site.

use crate::support;

use std::time::Duration;

use spider_sandbox::{HostileSite, IdentityLimit, Sandbox};
use spiderling::{CrawlStatus, Crawler};
use support::{config_for, BookSpider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_is_not_retried_before_it() {
    let retry_after = Duration::from_secs(2);
    let site = Sandbox::hostile(HostileSite { throttled: 3, retry_after, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!(summary.counts.items, 3);
    let seen = site.observed();
    assert_eq!(seen.answered(429), 3);
    for i in 1..=3 {
        let times = seen.times_of(&format!("/throttled/{i}"));
        assert_eq!(times.len(), 2, "/throttled/{i}: {times:?}");
        assert!(times[1] - times[0] >= retry_after, "/throttled/{i} retried after {:?}", times[1] - times[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_requests_failing_together_come_back_spread_out() {
    let site =
        Sandbox::hostile(HostileSite { flaky: 50, flaky_failures: 1, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    Crawler::new(BookSpider::new(config.concurrency(50).per_host(50))).run().await.unwrap();

    let seen = site.observed();
    let (mut first, mut retries) = (Vec::new(), Vec::new());
    for i in 1..=50 {
        let times = seen.times_of(&format!("/flaky/{i}"));
        assert_eq!(times.len(), 2, "/flaky/{i} is recovered by one retry");
        first.push(times[0]);
        retries.push(times[1]);
    }
    let most_in_100ms = |times: &mut Vec<Duration>| {
        times.sort();
        let mut most = 0;
        for (i, t) in times.iter().enumerate() {
            most = most.max(times[i..].iter().take_while(|u| **u - *t < Duration::from_millis(100)).count());
        }
        most
    };
    assert!(most_in_100ms(&mut first) >= 40, "the first attempts did fail together");
    let bunched = most_in_100ms(&mut retries);
    println!("most retries within any 100 ms: {bunched} of 50");
    assert!(bunched <= 20, "{bunched} of 50 retries arrived within 100 ms");
    let spread = retries.last().unwrap().saturating_sub(retries[0]);
    assert!(spread >= Duration::from_millis(600), "retries spread over only {spread:?}");
    assert_eq!(support::read_jsonl(&output).len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flaky_pages_recover_and_lasting_failures_are_filed_with_their_reason() {
    let site = Sandbox::hostile(HostileSite {
        pages: 5,
        flaky: 5,
        flaky_failures: 2,
        slow: 2,
        slow_for: Duration::from_secs(2),
        gone: 2,
        resets: 1,
        ..HostileSite::empty()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let config = config
        .timeout(Duration::from_millis(500))
        .retries(2)
        .backoff(Duration::from_millis(50), Duration::from_millis(200));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!(support::read_jsonl(&output).len(), 10, "ordinary and flaky pages all recovered");
    assert_eq!(summary.status, CrawlStatus::CompleteWithFailures);
    assert_eq!(format!("{:?}", summary.exit_code()), format!("{:?}", std::process::ExitCode::from(3)));
    let filed = support::read_json_lines(&dir.path().join("items.failures.jsonl"));
    let reasons: Vec<(&str, &str, u64)> = filed
        .iter()
        .map(|f| (f["url"].as_str().unwrap(), f["reason"].as_str().unwrap(), f["attempts"].as_u64().unwrap()))
        .collect();
    assert_eq!(filed.len(), 5, "{reasons:?}");
    for (url, reason, attempts) in &reasons {
        let expected = if url.contains("/slow/") {
            ("timed out", 3)
        } else if url.contains("/gone/") {
            ("http 404", 1)
        } else if url.contains("/reset/") {
            ("connection closed", 3)
        } else {
            panic!("unexpected failure {url}")
        };
        assert_eq!((*reason, *attempts), expected, "{url}");
    }
    // RFC 3339, the format of every time the crawl writes (`#[page(fetched_at)]` too).
    let rfc3339 = |t: &str| t.len() == 24 && t.as_bytes()[10] == b'T' && t.ends_with('Z');
    assert!(filed.iter().all(|f| f["failed_at"].as_str().is_some_and(rfc3339)), "{filed:?}");
    assert_eq!(summary.counts.failures_by_reason.get("timed out"), Some(&2));
    let seen = site.observed();
    assert_eq!(seen.times_of("/gone/1").len(), 1, "a 404 is not retried");
    assert_eq!(seen.times_of("/slow/1").len(), 3, "a timeout is retried twice");
    assert_eq!(seen.times_of("/reset/1").len(), 3, "a reset is retried twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polite_crawl_within_the_limit_is_never_banned_and_an_aggressive_one_is() {
    let hostile = HostileSite {
        pages: 30,
        flaky: 5,
        limit: Some(IdentityLimit {
            requests: 10,
            per: Duration::from_secs(1),
            ban_after: 3,
            ban_for: Duration::from_secs(30),
        }),
        ..HostileSite::empty()
    };
    let dir = tempfile::tempdir().unwrap();

    let polite = Sandbox::hostile(hostile.clone()).unwrap();
    let (config, output) = config_for(&polite, dir.path(), "polite.jsonl");
    let summary = Crawler::new(BookSpider::new(config.rps(8))).run().await.unwrap();
    let seen = polite.observed();
    assert_eq!((seen.answered(403), seen.answered(429)), (0, 0), "never throttled, never banned");
    assert_eq!(support::read_jsonl(&output).len(), hostile.recoverable_items());
    assert_eq!(summary.status, CrawlStatus::Complete);

    // The control: the same site bans a crawl that ignores its limit. Its 429s say no
    // Retry-After here, so the host pause is only the short backoff below, and the burst
    // that follows each pause reaches the ban whatever the machine's speed.
    let rude = Sandbox::hostile(HostileSite { silent_limit: true, ..hostile }).unwrap();
    let (config, _) = config_for(&rude, dir.path(), "rude.jsonl");
    let config = config
        .concurrency(16)
        .per_host(16)
        .retries(1)
        .backoff(Duration::from_millis(50), Duration::from_millis(100));
    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert!(rude.observed().answered(403) > 0, "the control was never banned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_count_against_the_rate_ceiling() {
    let rate = 10;
    let site =
        Sandbox::hostile(HostileSite { flaky: 15, flaky_failures: 1, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let config = config
        .concurrency(16)
        .per_host(16)
        .rps(rate)
        .backoff(Duration::from_millis(10), Duration::from_millis(20));
    Crawler::new(BookSpider::new(config)).run().await.unwrap();

    let seen = site.observed();
    assert_eq!(seen.hits.len(), 2 + 15 * 2, "robots.txt, home, and each flaky page twice");
    // As in tests/admission.rs: rate + 1 evenly spaced requests span exactly one second.
    let most = seen.max_in_window(Duration::from_millis(950));
    assert!(most <= rate as usize, "{most} requests within 950 ms, retries included");
    assert_eq!(support::read_jsonl(&output).len(), 15);
}
