//! Real pages, as their sites served them, through a real nginx with gzip on: what the
//! crawl makes of pages nobody on this project wrote. The server's access log counts what
//! it was asked; the tests assert on that.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use spider_sandbox::{GatewayConfig, MockGateway, NginxServer, NginxSite};
use spiderling::prelude::*;

use crate::support::{read_json_lines, realweb};

/// An item none of the real pages carries.
#[derive(Item, Serialize, Debug)]
struct Absent {
    #[css("h1.spiderling-absent")]
    title: String,
}

/// The index follows to every page; each page is parsed for the absent item.
#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], rule(allow = "/p/", parse = Absent))]
struct Misses;

/// 130 real pages (69 with a form, 18 with "consent" and 8 with "captcha" in their HTML),
/// none with the rule's item, crawled with a paid gateway tier above the direct route:
/// every page is a miss of its rule, counted and filed; none is a block, fetched again or
/// sent through the gateway. Before, the pages with a form or those words were judged soft
/// blocks: fetched again from new identities, and the host moved up to the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_without_the_rules_item_are_misses_never_blocks() {
    let Some(pages) = realweb::pages() else { return };
    let root = tempfile::tempdir().unwrap();
    let paths = realweb::site(&pages, root.path());
    let nginx = NginxServer::start(NginxSite { root: root.path().into(), gzip: true, limit: None }).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Misses
        .config()
        .set("start_urls", &format!("{}/", nginx.url()))
        .unwrap()
        .output(dir.path().join("items.jsonl"))
        .failures(dir.path().join("failures.jsonl"))
        .proxy(format!("direct > {}", gateway.url_with_credentials()))
        .concurrency(8)
        .per_host(8);
    let summary = Crawler::with_config(Misses, config).run().await.unwrap();

    let mut asked: BTreeMap<String, usize> = BTreeMap::new();
    for logged in nginx.requests().unwrap() {
        *asked.entry(logged.target).or_default() += 1;
    }
    for path in &paths {
        assert_eq!(asked.get(path), Some(&1), "{path} asked once: {asked:?}");
    }
    assert_eq!(gateway.observed().requests.len(), 0, "nothing through the gateway");
    let counts = &summary.counts;
    assert_eq!((counts.blocked, counts.retries, summary.failures, counts.items), (0, 0, 0, 0), "{summary}");
    assert_eq!(
        counts.no_item_by_rule,
        [("rule 1 (allow \"/p/\")".to_owned(), paths.len() as u64)].into(),
        "every page a miss of its rule: {summary}"
    );
    let filed = read_json_lines(&dir.path().join("failures.jsonl"));
    assert_eq!(filed.len(), paths.len());
    assert!(filed.iter().all(|line| line["reason"] == "no item"), "{:?}", filed.first());
}
