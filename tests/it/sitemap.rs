//! Sitemaps end to end against the demo site, whose robots.txt names a sitemap index of a
//! gzipped sitemap of every book and a plain one of the listings: a spider that follows no
//! link finds every book through them, each page and each sitemap fetched once, also
//! across a state file's runs and a fleet's workers; `sitemap_since` skips exactly the
//! books modified before it; a broken sitemap and one over the protocol's limit are
//! failures with their reason, and the crawl goes on.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use spider_sandbox::{DemoSite, Observed, RedisServer, Sandbox};
use spiderling::prelude::*;
use spiderling::{CrawlStatus, Crawler, Summary};
use support::{expected_books, read_json_lines, read_jsonl, Book};

/// Emits the book a page shows and follows no link: what it fetches, a sitemap listed.
/// With `counted`, it only counts the URLs sitemaps list, and fetches none of them.
struct Shop {
    config: Config,
    counted: Option<Arc<AtomicUsize>>,
}

impl Shop {
    fn new(config: Config) -> Self {
        Shop { config, counted: None }
    }
}

impl SpiderConfig for Shop {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

#[async_trait]
impl Spider for Shop {
    type Item = Book;

    async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
        if let Some(book) = page.extract::<Book>().await? {
            cx.emit(book);
        }
        Ok(())
    }

    fn sitemap_request(&self, url: Url) -> Option<Request> {
        match &self.counted {
            Some(counted) => {
                counted.fetch_add(1, Ordering::SeqCst);
                None
            }
            None => Some(Request::new(url)),
        }
    }
}

fn shop(books: usize) -> (DemoSite, Sandbox) {
    let demo = DemoSite { books, per_page: 20, ..DemoSite::default() };
    (demo.clone(), Sandbox::demo(demo).unwrap())
}

fn config(dir: &Path, output: &str) -> Config {
    Config::new("shop").allowed_domain("127.0.0.1").output(dir.join(output)).progress(false)
}

async fn crawl(config: Config) -> Summary {
    Crawler::new(Shop::new(config)).run().await.unwrap()
}

/// Requests for exactly `target` (path and query).
fn count(seen: &Observed, target: &str) -> usize {
    seen.hits.iter().filter(|hit| hit.target == target).count()
}

/// Every book page was fetched once, and the three sitemap files once each.
fn assert_each_fetched_once(seen: &Observed, books: usize) {
    assert_eq!(seen.duplicates(), Default::default(), "nothing is fetched twice");
    assert_eq!(seen.under("/catalogue/book_"), books, "every book page");
    for sitemap in ["/sitemap.xml", "/sitemap-books.xml.gz", "/sitemap-listings.xml"] {
        assert_eq!(count(seen, sitemap), 1, "{sitemap}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sitemaps_robots_txt_names_find_every_book_without_following_a_link() {
    let (demo, site) = shop(150);
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "books.jsonl").start_url(site.url()).sitemaps(true);

    let summary = crawl(config).await;

    assert_eq!(read_jsonl(&dir.path().join("books.jsonl")), expected_books(demo.books), "every book once");
    let seen = site.observed();
    assert_each_fetched_once(&seen, demo.books);
    assert_eq!(count(&seen, "/robots.txt"), 1);
    // The plain child lists the listings, in the spelling their links use.
    assert_eq!(seen.under("/catalogue/page-"), demo.listing_pages());
    // The home page and the listings; the sitemaps are not pages.
    assert_eq!(summary.counts.pages as usize, 1 + demo.listing_pages() + demo.books);
    assert_eq!((summary.counts.sitemaps, summary.failures), (3, 0));
    assert_eq!(summary.status, CrawlStatus::Complete);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_urls_alone_are_a_whole_crawl() {
    let (demo, site) = shop(60);
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "books.jsonl").sitemap_url(format!("{}sitemap.xml", site.url()));

    let summary = crawl(config).await;

    assert_eq!(read_jsonl(&dir.path().join("books.jsonl")), expected_books(demo.books));
    let seen = site.observed();
    assert_each_fetched_once(&seen, demo.books);
    assert_eq!(count(&seen, "/"), 0, "no start URL, no home page");
    assert_eq!(summary.counts.sitemaps, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_since_skips_exactly_the_books_modified_before_the_day() {
    let (demo, site) = shop(80);
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "books.jsonl")
        .sitemap_url(format!("{}sitemap.xml", site.url()))
        .sitemap_since("2026-01-01");

    crawl(config).await;

    // Even books were modified in 2026 in UTC, odd ones before; half of each are written
    // in a zone that puts their local date on the other side of the new year.
    let recent: Vec<Book> =
        expected_books(demo.books).into_iter().filter(|book| id_of(book).is_multiple_of(2)).collect();
    assert_eq!(read_jsonl(&dir.path().join("books.jsonl")), recent);
    let seen = site.observed();
    for id in 1..=demo.books {
        let fetched = count(&seen, &format!("/catalogue/book_{id}.html"));
        assert_eq!(
            fetched,
            usize::from(id.is_multiple_of(2)),
            "book {id}, modified {}",
            DemoSite::book_modified(id)
        );
    }
    // The listings' sitemap has no dates: all kept.
    assert_eq!(seen.under("/catalogue/page-"), demo.listing_pages());
}

/// The catalogue number in a book's title, `The Silent Garden (12)`.
fn id_of(book: &Book) -> usize {
    let number = book.title.rsplit_once('(').and_then(|(_, n)| n.strip_suffix(')'));
    number.unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sitemaps_no_sitemap_is_requested() {
    let (demo, site) = shop(40);
    let dir = tempfile::tempdir().unwrap();
    // The books spider follows every link, and robots.txt names the index.
    let (config, output) = support::config_for(&site, dir.path(), "books.jsonl");
    Crawler::new(support::BookSpider::new(config.progress(false))).run().await.unwrap();
    assert_eq!(read_jsonl(&output), expected_books(demo.books));
    let seen = site.observed();
    assert_eq!(count(&seen, "/robots.txt"), 1);
    assert_eq!(seen.under("/sitemap"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_sitemap_is_one_failure_with_its_reason_and_the_crawl_goes_on() {
    let (demo, site) = shop(60);
    let dir = tempfile::tempdir().unwrap();
    let broken = format!("{}sitemap-broken.xml", site.url());
    let config = config(dir.path(), "books.jsonl")
        .sitemap_url(&broken)
        .sitemap_url(format!("{}sitemap.xml", site.url()));

    let summary = crawl(config).await;

    // Books 1 to 3, listed before the mistake, come from both sitemaps: once each.
    assert_eq!(read_jsonl(&dir.path().join("books.jsonl")), expected_books(demo.books));
    assert_each_fetched_once(&site.observed(), demo.books);
    let failures = read_json_lines(&dir.path().join("books.failures.jsonl"));
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["url"], broken.as_str());
    assert_eq!(failures[0]["reason"], "sitemap malformed");
    let error = failures[0]["error"].as_str().unwrap();
    assert!(error.contains("XML error at byte") && error.contains("</lok>"), "{error}");
    assert!(error.contains("the 3 URLs before it were taken"), "{error}");
    assert_eq!(summary.counts.failures_by_reason.get("sitemap malformed"), Some(&1));
    assert_eq!(summary.counts.sitemaps, 4);
    // A failure in the failures file, as for any request: complete, exit code 3.
    assert_eq!(summary.status, CrawlStatus::CompleteWithFailures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sitemap_over_50_000_urls_gives_its_first_50_000_and_a_failure() {
    let (_, site) = shop(10);
    let dir = tempfile::tempdir().unwrap();
    let huge = format!("{}sitemap-huge.xml", site.url());
    let counted = Arc::new(AtomicUsize::new(0));
    let config = config(dir.path(), "books.jsonl").sitemap_url(&huge);
    let spider = Shop { config, counted: Some(counted.clone()) };

    let summary = Crawler::new(spider).run().await.unwrap();

    assert_eq!(counted.load(Ordering::SeqCst), 50_000, "the first 50,000 of 50,001 reach sitemap_request");
    let failures = read_json_lines(&dir.path().join("books.failures.jsonl"));
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(
        (failures[0]["url"].as_str(), failures[0]["reason"].as_str()),
        (Some(huge.as_str()), Some("sitemap over 50,000 URLs"))
    );
    assert_eq!(summary.counts.failures_by_reason.get("sitemap over 50,000 URLs"), Some(&1));
    let seen = site.observed();
    assert_eq!(seen.hits.len(), 2, "robots.txt and the sitemap, nothing it lists: {:?}", seen.hits);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_neither_loses_nor_repeats_sitemaps_across_runs() {
    let (demo, site) = shop(100);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("shop.state");
    let config = config(dir.path(), "books.jsonl").start_url(site.url()).sitemaps(true).state(&state);

    // The first run stops after a few pages, with the sitemaps' URLs still queued; the
    // second goes on, robots.txt remembered.
    let first = crawl(config.clone().max_pages(10)).await;
    assert_eq!(first.status, CrawlStatus::LimitReached);
    assert!(read_jsonl(&dir.path().join("books.jsonl")).len() < demo.books);
    let second = crawl(config).await;

    assert_eq!(second.status, CrawlStatus::Complete);
    assert_eq!(read_jsonl(&dir.path().join("books.jsonl")), expected_books(demo.books));
    let seen = site.observed();
    assert_each_fetched_once(&seen, demo.books);
    assert_eq!(count(&seen, "/robots.txt"), 1, "the second run remembers robots.txt");
    assert_eq!(second.counts.sitemaps, 3, "counted over both runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_reads_each_sitemap_once_and_finds_every_book_once() {
    let (demo, site) = shop(120);
    let redis = RedisServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let worker = |i: usize| {
        let config = config(dir.path(), &format!("worker-{i}.jsonl"))
            .start_url(site.url())
            .sitemaps(true)
            .frontier(redis.url())
            .concurrency(4);
        crawl(config)
    };

    let (a, b) = tokio::join!(worker(0), worker(1));

    let mut books = read_jsonl(&dir.path().join("worker-0.jsonl"));
    books.extend(read_jsonl(&dir.path().join("worker-1.jsonl")));
    books.sort();
    assert_eq!(books, expected_books(demo.books), "every book once across the workers");
    let seen = site.observed();
    assert_each_fetched_once(&seen, demo.books);
    assert_eq!(count(&seen, "/robots.txt"), 1, "robots.txt once for the fleet");
    assert_eq!(a.counts.sitemaps + b.counts.sitemaps, 3);
}
