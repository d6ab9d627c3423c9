//! The HTTP cache, as the demo site saw it: a second run is answered from the cache
//! without one request; with `revalidate`, every page is asked for with its validators and
//! a 304 is parsed from the cache; expired and blocked answers are fetched again.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use crate::support;

use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{Config, Crawler, Summary};
use support::{config_for, expected_books, read_jsonl, BookSpider};

async fn crawl(config: Config) -> Summary {
    Crawler::new(BookSpider::new(config)).run().await.unwrap()
}

fn small_site() -> (DemoSite, Sandbox) {
    let demo = DemoSite { books: 40, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    (demo, site)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_is_answered_from_the_cache_and_the_site_receives_nothing() {
    let (demo, site) = small_site();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join(".spiderling/cache");
    let (config, first_output) = config_for(&site, dir.path(), "first.jsonl");
    // A politeness pause that would make a fetched crawl slow: a cached one waits for none.
    let first = crawl(config.cache(&cache).per_host(1).delay(Duration::from_millis(20))).await;
    let received = site.received();
    assert_eq!(first.counts.from_cache, 0);
    assert!(received > demo.expected_pages(), "{received}");

    let (config, second_output) = config_for(&site, dir.path(), "second.jsonl");
    let second = crawl(config.cache(&cache).per_host(1).delay(Duration::from_secs(5))).await;
    assert_eq!(site.received(), received, "the second run sent nothing");
    assert_eq!(read_jsonl(&second_output), read_jsonl(&first_output));
    assert_eq!(read_jsonl(&second_output), expected_books(demo.books));
    assert_eq!(second.counts.requests, 0);
    assert_eq!(
        second.counts.from_cache, first.counts.requests,
        "every answer, robots.txt and the redirect included"
    );
    assert!(second.counts.elapsed_secs < 5.0, "no politeness pause for a cached answer: {second}");
    assert!(
        second.to_string().contains(&format!("from the cache: {} answers", second.counts.from_cache)),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revalidating_asks_with_the_validators_and_parses_a_304_from_the_cache() {
    let (demo, site) = small_site();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.db");
    let (config, _) = config_for(&site, dir.path(), "first.jsonl");
    let first = crawl(config.cache(&cache)).await;
    let before = site.observed().hits.len();

    let (config, output) = config_for(&site, dir.path(), "second.jsonl");
    let second = crawl(config.cache(&cache).revalidate(true)).await;
    let observed = site.observed();
    let asked = &observed.hits[before..];
    assert_eq!(asked.len() as u64, first.counts.requests, "every answer asked for again");
    // Pages and robots.txt carry validators; the redirect does not, and is fetched again.
    let plain: Vec<String> = asked.iter().filter(|hit| !hit.conditional).map(|hit| hit.resource()).collect();
    assert_eq!(plain, ["/catalogue/latest"], "every other request carries its validators");
    let not_modified = asked.iter().filter(|hit| hit.status == 304).count() as u64;
    assert_eq!(not_modified, first.counts.requests - 1, "each confirmed with a 304");
    assert_eq!(second.counts.revalidated, not_modified);
    assert_eq!(read_jsonl(&output), expected_books(demo.books), "parsed from the cache");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_answers_are_fetched_again_and_blocked_ones_were_never_kept() {
    let (demo, site) = small_site();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.db");
    // Listing 2 reads as a block: never kept, so never answered from the cache.
    let (config, _) = config_for(&site, dir.path(), "first.jsonl");
    let first = crawl(config.cache(&cache).block_marker("Catalogue, page 2").retries(0)).await;
    assert_eq!(first.failures, 1, "{first}");
    let before = site.observed().hits.len();

    let (config, output) = config_for(&site, dir.path(), "second.jsonl");
    let second = crawl(config.cache(&cache)).await;
    let observed = site.observed();
    let fetched: Vec<String> = observed.hits[before..].iter().map(|hit| hit.resource()).collect();
    assert!(fetched.iter().any(|r| r.starts_with("/catalogue/page-2.html")), "the blocked page: {fetched:?}");
    assert!(!fetched.iter().any(|r| r.starts_with("/catalogue/page-1.html")), "a kept page: {fetched:?}");
    assert_eq!(read_jsonl(&output), expected_books(demo.books));
    assert!(second.counts.from_cache > 0);

    let received = site.received();
    let (config, _) = config_for(&site, dir.path(), "third.jsonl");
    let third = crawl(config.cache(&cache).cache_ttl(Duration::ZERO)).await;
    assert_eq!(third.counts.from_cache, 0, "every answer expired");
    assert_eq!(site.received() - received, third.counts.requests as usize, "all fetched again");
}

/// `--cache books.jsonl`, a slip of the keyboard, is refused as a cache file (once it was
/// called a state file), with exit code 2, nothing fetched and the file left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_no_cache_is_refused_as_a_cache_file_and_left_as_it_was() {
    let (_, site) = small_site();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "out.jsonl");
    let items = dir.path().join("books.jsonl");
    std::fs::write(&items, "{\"title\":\"kept\"}\n").unwrap();
    let error = Crawler::new(BookSpider::new(config.cache(&items))).run().await.unwrap_err();
    assert!(matches!(error, spiderling::Error::CacheFile { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("cache file {}: is not a Spiderling cache", items.display())),
        "{message}"
    );
    assert_eq!(error.exit_code(), std::process::ExitCode::from(2));
    assert_eq!(std::fs::read_to_string(&items).unwrap(), "{\"title\":\"kept\"}\n");
    assert_eq!(site.observed().pages().count(), 0, "nothing fetched");
}
