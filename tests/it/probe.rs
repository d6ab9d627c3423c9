//! Probe mode against the hostile site's per-IP limit, as the site saw it: a safe rate
//! found below the limit without a ban, and a crawl at the line it prints meets no 429;
//! against the cookie shop, its consent wall passed by sending its cookie back.

#![allow(clippy::unwrap_used)] // the helper below is test code too

use crate::support;

use std::time::{Duration, Instant};

use spider_sandbox::{HostileSite, IdentityLimit, Sandbox, ShopSite, CONSENT_MARKER};
use spiderling::{probe, Config, Crawler, ProbePlan};
use support::BookSpider;

/// 20 requests a second per IP; the eleventh 429 within a second bans the IP for a minute.
const LIMIT: IdentityLimit = IdentityLimit {
    requests: 20,
    per: Duration::from_secs(1),
    ban_after: 10,
    ban_for: Duration::from_secs(60),
};

/// The `key = value` pairs of a `#[spider(...)]` line.
fn keys_of(line: &str) -> Vec<(String, String)> {
    let inner = line.strip_prefix("#[spider(").and_then(|rest| rest.strip_suffix(")]")).unwrap();
    inner
        .split(", ")
        .map(|pair| {
            let (key, value) = pair.split_once(" = ").unwrap();
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_reports_a_safe_rate_within_20_percent_below_the_limit_and_never_gets_banned() {
    let site =
        Sandbox::hostile(HostileSite { pages: 100, limit: Some(LIMIT), ..HostileSite::empty() }).unwrap();
    let config = Config::new("probe")
        .start_url(format!("{}page/1", site.url()))
        .start_url(format!("{}page/2", site.url()));
    let plan = ProbePlan::default()
        .start_rps(4.0)
        .step(Duration::from_millis(1500))
        .max_duration(Duration::from_secs(40));
    let started = Instant::now();
    let report = probe(&config, &plan).await.unwrap();
    let took = started.elapsed();
    println!("{report}\n(took {took:?})");

    let seen = site.observed();
    assert_eq!(seen.answered(403), 0, "never banned:\n{report}");
    assert!(seen.answered(429) > 0, "the probe did meet the limit:\n{report}");
    // The limit is a sliding window: a pace of exactly 20/s may pass or not, so the
    // highest clean rate is at most a hair over 20/s, and 90 % of it lands in [16, 20).
    let safe = report.safe_rps.unwrap();
    assert!((16.0..20.0).contains(&safe), "safe rate {safe}:\n{report}");
    assert!(report.blocked_rps.is_some_and(|blocked| blocked > safe), "{report}");
    // Each block ended its step at once: a handful of 429s per blocked step, not a flood.
    let blocked_steps = report.steps.iter().filter(|s| !s.clean).count();
    assert!(seen.answered(429) <= blocked_steps * 3, "{} 429s:\n{report}", seen.answered(429));
    assert!(took < Duration::from_secs(40), "{took:?}");

    let line = report.attribute().unwrap();
    let keys = keys_of(&line);
    let rps: u64 = keys.iter().find(|(k, _)| k == "rps").unwrap().1.parse().unwrap();
    assert!((16..=19).contains(&rps), "{line}");
    assert_eq!(keys.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["concurrency", "rps"], "{line}");

    // The line holds: a crawl of the 100 pages at it, in a fresh window, meets no 429. By
    // the second, on a busy machine too: `rpm` let a late wake-up's catch-up put more than
    // the second's share of a minute into one second, past this site's per-second window.
    tokio::time::sleep(LIMIT.per).await;
    let throttled_before = seen.answered(429);
    let mut crawl = Config::new("books").start_url(site.url()).allowed_domain("127.0.0.1");
    for (key, value) in &keys {
        crawl = crawl.set(key, value).unwrap();
    }
    let summary = Crawler::new(BookSpider::new(crawl)).run().await.unwrap();
    let after = site.observed();
    assert_eq!(after.answered(429), throttled_before, "{summary}");
    assert_eq!((summary.counts.items, after.answered(403)), (100, 0), "{summary}");
}

#[tokio::test]
async fn a_start_url_that_does_not_parse_is_a_config_error_before_any_request() {
    let site = Sandbox::hostile(HostileSite::empty()).unwrap();
    let config = Config::new("probe").start_url("not a url");
    let error = probe(&config, &ProbePlan::default()).await.unwrap_err();
    assert!(error.to_string().contains("\"not a url\" does not parse"), "{error}");
    let error = probe(&Config::new("probe"), &ProbePlan::default()).await.unwrap_err();
    assert!(error.to_string().contains("needs a start URL"), "{error}");
    let bad_plan = ProbePlan::default().start_rps(0.0).max_requests(0);
    let error = probe(&Config::new("probe").start_url(site.url()), &bad_plan).await.unwrap_err();
    assert!(error.to_string().contains("start rate") && error.to_string().contains("budget"), "{error}");
    assert!(site.observed().hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_keeps_its_cookies_so_a_consent_wall_is_passed_not_taken_for_a_limit() {
    let site = Sandbox::shop(ShopSite { products: 2, ..ShopSite::default() }).unwrap();
    let config =
        Config::new("probe").start_url(format!("{}product/1", site.url())).block_marker(CONSENT_MARKER);
    let plan = ProbePlan::default()
        .start_rps(4.0)
        .step(Duration::from_millis(500))
        .max_duration(Duration::from_secs(3));
    let report = probe(&config, &plan).await.unwrap();

    let seen = site.observed();
    let product: Vec<_> = seen.hits.iter().filter(|hit| hit.target == "/product/1").collect();
    assert!(product.len() > 4, "the probe went on: {report}");
    assert!(product[0].cookie("visitor").is_none(), "the first request meets the wall");
    assert!(
        product[1..].iter().all(|hit| hit.cookie("visitor").is_some()),
        "every later one sends the wall's cookie back"
    );
    assert!(report.steps.iter().all(|step| step.clean), "the wall is no limit:\n{report}");
}
