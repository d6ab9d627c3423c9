//! Cookie values never show: not in logs at any level, errors, the summary, the stats and
//! failures files or the settings printed at start. Alone in its binary because it
//! installs the process-wide log subscriber.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use spider_sandbox::{GatewayConfig, MockGateway, Sandbox, ShopSite, CONSENT_MARKER};
use spiderling::prelude::*;
use spiderling::{Config, Crawler};

const SEEDED: &str = "seeded-secret-redact-me";

#[derive(Item, serde::Serialize)]
struct Product {
    #[css("h1.title")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], follow = "a", item = Product)]
struct Shopper;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_values_never_show_anywhere() {
    let captured = support::capture_logs();
    let (site, gateway) =
        (Sandbox::shop(ShopSite::default()).unwrap(), MockGateway::start(GatewayConfig::default()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("items.jsonl");
    let mut shown = Vec::new();

    // Walls, bans (honeypots followed), retired identities, a resumable state file, and a
    // cookie given before the crawl.
    let config = Shopper
        .config()
        .set("start_urls", &site.url())
        .unwrap()
        .output(&output)
        .state(dir.path().join("shop.state"))
        .block_marker(CONSENT_MARKER)
        .follow_hidden(true)
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
        .seed_cookie(site.url(), format!("seed={SEEDED}; Path=/"));
    shown.push(config.to_string());
    shown.push(format!("{config:?}"));
    let summary = Crawler::with_config(Shopper, config).run().await.unwrap();
    assert!(summary.failures > 0, "the honeypots were given up: {summary}");
    shown.push(summary.to_string());
    shown.push(format!("{summary:?}"));
    for file in ["items.stats.json", "items.failures.jsonl", "items.jsonl"] {
        shown.push(std::fs::read_to_string(output.with_file_name(file)).unwrap_or_default());
    }

    // A cookie given for another site, and one that does not parse: errors name the cookie.
    for (url, line) in [
        ("http://a.example/", format!("sid={SEEDED}; Domain=b.example")),
        ("not a url", format!("sid={SEEDED}")),
    ] {
        let error = Config::new("x").seed_cookie(url, line).validate().unwrap_err();
        assert!(error.to_string().contains("sid") || error.to_string().contains("not a url"), "{error}");
        shown.push(error.to_string());
        shown.push(format!("{error:?}"));
    }

    let logs = captured.text();
    assert!(logs.contains("cookie kept"), "the logs were captured at debug level");
    assert!(logs.contains("retired with its cookies"));
    shown.push(logs);
    let seen = site.observed();
    let mut values: BTreeSet<String> = BTreeSet::from([SEEDED.to_owned()]);
    for cookie in seen.hits.iter().filter_map(|h| h.cookie.as_deref()) {
        values.extend(
            cookie.split(';').filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.trim().to_owned()),
        );
    }
    assert!(values.len() > 3, "the shop handed out cookies and they came back: {values:?}");
    assert!(seen.hits.iter().any(|h| h.cookie("seed") == Some(SEEDED)), "the seeded cookie was sent");
    for value in &values {
        for text in &shown {
            assert!(!text.contains(value.as_str()), "the cookie value {value} shows in:\n{text}");
        }
    }
}
