//! Link rules, `#[spider(rule(...))]`, end to end on the demo bookshop: which pages the
//! rules reach, as the site recorded them, and what they give, as the output file holds it.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::Path;

use spider_sandbox::{DemoSite, Observed, Sandbox};
use spiderling::prelude::*;
use spiderling::Summary;
use support::{expected_books, read_jsonl};

/// Listing pages are only followed; book pages, linked from a listing's `h3`, only parsed.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = support::Book, priority = 10),
)]
struct Shelves;

async fn crawl<S: Spider>(spider: S, site: &Sandbox, dir: &Path, start: &str) -> Summary {
    let config = spider
        .config()
        .set("start_urls", &format!("{}{start}", site.url()))
        .unwrap()
        .output(dir.join("out.jsonl"));
    Crawler::with_config(spider, config).run().await.unwrap()
}

/// What a request was for: `robots`, `home`, `listing K`, `book I` or its path.
fn kind(resource: &str) -> String {
    let path = resource.split('?').next().unwrap_or_default();
    let number = |prefix: &str| path.strip_prefix(prefix)?.strip_suffix(".html")?.parse::<usize>().ok();
    match (path, number("/catalogue/page-"), number("/catalogue/book_")) {
        ("/robots.txt", ..) => "robots".to_owned(),
        ("/", ..) => "home".to_owned(),
        (_, Some(k), _) => format!("listing {k}"),
        (_, _, Some(i)) => format!("book {i}"),
        _ => path.to_owned(),
    }
}

fn kinds(seen: &Observed) -> Vec<String> {
    seen.hits.iter().map(|hit| kind(&hit.resource())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rules_reach_every_listing_and_book_once_and_nothing_else() {
    let demo = DemoSite { books: 45, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Shelves, &site, dir.path(), "").await;

    let mut fetched = kinds(&site.observed());
    fetched.sort();
    let mut expected = vec!["robots".to_owned(), "home".to_owned()];
    expected.extend((1..=demo.listing_pages()).map(|k| format!("listing {k}")));
    expected.extend((1..=demo.books).map(|i| format!("book {i}")));
    expected.sort();
    // Not the redirect to the newest book, the private pages, the mirror on the other
    // host, nor a quick-view link in another spelling of a book.
    assert_eq!(fetched, expected, "robots.txt, the start page, every listing and every book, each once");
    assert_eq!(read_jsonl(&dir.path().join("out.jsonl")), expected_books(demo.books), "every book once");
    assert_eq!(summary.failures, 0);
    assert_eq!(summary.counts.html_parses, summary.counts.pages, "one HTML parse per page");
}

/// The books whose number ends in 7 denied.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > \
        a", allow = "/catalogue/book_", deny = [r"book_\d*7\.html", "/private/"], parse = support::Book),
)]
struct NoSevens;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_keeps_the_books_it_matches_from_being_fetched() {
    let demo = DemoSite { books: 30, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    crawl(NoSevens, &site, dir.path(), "").await;

    let books: Vec<String> = kinds(&site.observed()).into_iter().filter(|k| k.starts_with("book")).collect();
    assert_eq!(books.len(), 27, "{books:?}");
    assert!(!books.iter().any(|k| k.ends_with('7')), "{books:?}");
    let items = read_jsonl(&dir.path().join("out.jsonl"));
    let expected: Vec<_> = expected_books(30).into_iter().filter(|b| !b.title.ends_with("7)")).collect();
    assert_eq!(items, expected);
}

/// Two rules take the book pages: the first, which only parses, wins over the second,
/// which would only follow them.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(css = "h3 > a", allow = "/catalogue/book_", parse = support::Book),
    rule(allow = "/catalogue/(book_|page-)", follow),
)]
struct ParseFirst;

/// The same two rules the other way round.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = "/catalogue/(book_|page-)", follow),
    rule(css = "h3 > a", allow = "/catalogue/book_", parse = support::Book),
)]
struct FollowFirst;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_two_rules_take_a_link_the_first_decides() {
    let demo = DemoSite { books: 20, per_page: 10, ..DemoSite::default() };

    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    crawl(ParseFirst, &site, dir.path(), "").await;
    assert_eq!(read_jsonl(&dir.path().join("out.jsonl")), expected_books(demo.books));
    assert_eq!(site.observed().duplicates(), Default::default());

    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    crawl(FollowFirst, &site, dir.path(), "").await;
    assert_eq!(read_jsonl(&dir.path().join("out.jsonl")), [], "the book pages were only followed");
    assert_eq!(site.observed().under("/catalogue/book_"), 20, "but they were fetched");
}

/// `Shelves` without the books' priority.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = support::Book),
)]
struct Unprioritised;

/// Whether, one request at a time, each listing's books were fetched before the next
/// listing.
async fn books_before_the_next_listing<S: Spider>(spider: S) -> bool {
    let demo = DemoSite { books: 30, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = spider
        .config()
        .set("start_urls", &site.url())
        .unwrap()
        .concurrency(1)
        .per_host(1)
        .output(dir.path().join("out.jsonl"));
    Crawler::with_config(spider, config).run().await.unwrap();

    let order = kinds(&site.observed());
    let at = |kind: &str| order.iter().position(|k| k == kind).unwrap();
    (1..3).all(|k| {
        (1..=10).all(|i| at(&format!("book {}", (k - 1) * 10 + i)) < at(&format!("listing {}", k + 1)))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_priority_fetches_its_pages_first() {
    assert!(books_before_the_next_listing(Shelves).await, "priority 10: a listing's books, then the next");
    assert!(!books_before_the_next_listing(Unprioritised).await, "all at 0: the next listing is found first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_url_a_rule_takes_does_what_that_rule_says() {
    let demo = DemoSite { books: 30, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    crawl(Shelves, &site, dir.path(), "catalogue/book_12.html").await;

    assert_eq!(kinds(&site.observed()), ["robots", "book 12"], "parsed, not followed");
    let items = read_jsonl(&dir.path().join("out.jsonl"));
    assert_eq!(items, [expected_books(30).into_iter().find(|b| b.title.ends_with("(12)")).unwrap()]);
}

#[test]
fn a_sitemap_url_goes_to_the_first_rule_that_takes_it() {
    let url = |path: &str| Url::parse(&format!("http://127.0.0.1:8000{path}")).unwrap();
    let book = Shelves.sitemap_request(url("/catalogue/book_3.html")).unwrap();
    assert_eq!(book.priority(), 10);
    let listing = Shelves.sitemap_request(url("/catalogue/page-2.html")).unwrap();
    assert_eq!(listing.priority(), 0);
    assert_ne!(book.meta(), listing.meta(), "each carries its rule");
    assert!(Shelves.sitemap_request(url("/catalogue/latest")).is_none(), "no rule takes it");
}
