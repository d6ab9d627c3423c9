//! End to end against the demo site: what the server received, and what was written.

use crate::support;

use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{Config, CrawlStatus, Crawler};
use support::{config_for, expected_books, read_jsonl, BookSpider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_crawl_yields_exactly_the_catalogue_and_each_page_once() {
    let demo = DemoSite::default();
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");

    let summary = Crawler::new(BookSpider::new(config.concurrency(16).per_host(16))).run().await.unwrap();

    assert_eq!(read_jsonl(&output), expected_books(demo.books), "every book exactly once");
    let seen = site.observed();
    assert_eq!(seen.duplicates(), Default::default(), "no resource fetched twice in any spelling");
    assert_eq!(seen.off_site(), 0, "no request to another host");
    assert_eq!(seen.under("/private/"), 0, "nothing robots.txt disallows");
    // Home, listings, books, and the one redirect hop.
    assert_eq!(seen.pages().count(), demo.expected_pages() + 1);
    assert_eq!(summary.counts.items, 1000);
    assert_eq!(summary.failures, 0);
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("books.stats.json")).unwrap()).unwrap();
    assert_eq!(stats["items"], 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_and_json_outputs_hold_every_item() {
    let demo = DemoSite { books: 30, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();

    let (config, csv_path) = config_for(&site, dir.path(), "books.csv");
    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    let mut from_csv: Vec<support::Book> =
        csv::Reader::from_path(&csv_path).unwrap().deserialize().map(Result::unwrap).collect();
    from_csv.sort();
    assert_eq!(from_csv, expected_books(30));

    let (config, json_path) = config_for(&site, dir.path(), "books.json");
    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    let mut from_json: Vec<support::Book> =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    from_json.sort();
    assert_eq!(from_json, expected_books(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_output_extension_is_refused_before_any_request() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.xlsx");
    let error = Crawler::new(BookSpider::new(config)).run().await.unwrap_err();
    assert!(error.to_string().contains(".jsonl, .csv or .json"), "{error}");
    assert!(site.observed().hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_depth_stops_following_past_the_limit() {
    let site = Sandbox::demo(DemoSite { books: 40, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    Crawler::new(BookSpider::new(config.max_depth(1))).run().await.unwrap();
    let seen = site.observed();
    // Depth 0: home. Depth 1: the first listing and the redirect (which keeps its depth).
    assert_eq!(seen.under("/catalogue/page-2"), 0);
    assert_eq!(seen.under("/catalogue/book_"), 1, "only the redirect's target");
    assert_eq!(read_jsonl(&output).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pages_stops_at_the_count_with_the_items_of_those_pages() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let summary = Crawler::new(BookSpider::new(config.concurrency(8).max_pages(25))).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::LimitReached);
    assert_eq!(summary.exit_code(), std::process::ExitCode::SUCCESS);
    assert_eq!(summary.counts.pages, 25);
    assert!(summary.unfinished > 0, "the rest of the site was left: {}", summary.unfinished);
    // The pages, and at most the one redirect hop on the way to one of them.
    let fetched = site.observed().pages().count();
    assert!((25..=26).contains(&fetched), "the site answered {fetched} page requests");
    assert_eq!(read_jsonl(&output).len() as u64, summary.counts.items);
    assert!(summary.counts.items > 0 && summary.counts.items < 25, "{} items", summary.counts.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_items_stops_admitting_and_keeps_the_items_in_flight() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let summary = Crawler::new(BookSpider::new(config.concurrency(4).max_items(10))).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::LimitReached);
    // Each book page gives one item; four were in flight at most when the tenth landed.
    assert!((10..=14).contains(&summary.counts.items), "{} items", summary.counts.items);
    assert_eq!(read_jsonl(&output).len() as u64, summary.counts.items, "every item scraped is written");
    let fetched = site.observed().pages().count();
    assert!(fetched < 60, "the crawl went on: {fetched} pages of 1,000 books");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_list_is_crawled_and_its_bad_lines_are_counted_and_skipped() {
    let demo = DemoSite::default();
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let base = site.url();
    let good: Vec<String> = (1..=30).map(|i| format!("{base}catalogue/book_{i}.html")).collect();
    let mut text = String::from("# thirty books, a blank line and five mistakes\n\n");
    for (i, url) in good.iter().enumerate() {
        text.push_str(url);
        text.push('\n');
        if i == 9 {
            text.push_str("not a url\nhttp://\n");
        }
    }
    text.push_str(
        "books.example/no-scheme\nftp://127.0.0.1/catalogue/book_1.html\nmailto:shop@books.example\n",
    );
    std::fs::write(&list, text).unwrap();
    let output = dir.path().join("books.jsonl");
    let config =
        Config::new("books").allowed_domain("127.0.0.1").output(&output).max_depth(0).start_list(&list);

    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!(summary.bad_start_lines, 5, "three that do not parse, an ftp: and a mailto: URL");
    assert_eq!(summary.status, CrawlStatus::Complete);
    assert_eq!(read_jsonl(&output).len(), 30, "a book per good line");
    let seen = site.observed();
    assert_eq!(seen.pages().count(), 30, "the list's pages and nothing else");
    assert_eq!(seen.duplicates(), Default::default());
}

/// A list whose writer never closes it, as `--start-urls -` fed by a program that keeps
/// running: a crawl that reaches its limit ends without waiting for the list's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_at_its_limit_ends_while_its_start_list_is_still_open() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("urls.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (writer_path, url) = (fifo.clone(), format!("{}catalogue/book_1.html", site.url()));
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        use std::io::Write;
        let mut writer = std::fs::OpenOptions::new().write(true).open(writer_path).unwrap();
        writeln!(writer, "{url}").unwrap();
        // Open until the test is over.
        let _ = done_rx.recv_timeout(Duration::from_secs(60));
    });
    let output = dir.path().join("books.jsonl");
    let config =
        Config::new("books").allowed_domain("127.0.0.1").output(&output).max_pages(1).start_list(&fifo);

    let crawl = Crawler::new(BookSpider::new(config)).run();
    let summary = tokio::time::timeout(Duration::from_secs(20), crawl)
        .await
        .expect("the crawl waited for the list")
        .unwrap();
    drop(done_tx);

    assert_eq!(summary.counts.pages, 1);
    assert_eq!(read_jsonl(&output).len(), 1);
    assert_eq!(site.observed().pages().count(), 1, "the one page the list gave");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_list_that_cannot_be_read_is_refused_before_any_request() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    let config = config.start_list(dir.path().join("missing.txt"));
    let error = Crawler::new(BookSpider::new(config)).run().await.unwrap_err();
    assert!(error.to_string().contains("missing.txt"), "{error}");
    assert_eq!(error.exit_code(), std::process::ExitCode::from(2));
    assert!(site.observed().hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_delay_in_robots_txt_is_a_floor_between_requests() {
    let crawl_delay = Duration::from_millis(200);
    let demo = DemoSite { books: 5, per_page: 5, crawl_delay: Some(crawl_delay), ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    Crawler::new(BookSpider::new(config.concurrency(8).per_host(8))).run().await.unwrap();
    let seen = site.observed();
    assert_eq!(seen.max_in_flight, 1, "a Crawl-delay means one request at a time");
    let gaps = seen.gaps();
    assert!(gaps.len() >= 7, "{gaps:?}");
    let shortest = gaps.iter().min().unwrap();
    assert!(*shortest >= crawl_delay, "gaps {gaps:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_cap_fails_that_page_and_the_crawl_goes_on() {
    let site = Sandbox::demo(DemoSite { books: 10, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    // The home page is about 700 bytes and a listing about 4 KB: the cap lets the first
    // through and stops the second.
    let summary = Crawler::new(BookSpider::new(config.max_body_bytes(2_000))).run().await.unwrap();
    assert_eq!(summary.counts.failures_by_reason.get("body too large"), Some(&1));
    let seen = site.observed();
    assert_eq!(seen.under("/catalogue/page-1"), 1, "not retried");
    // Past the failed listing, the crawl goes on through the redirect and related books.
    let books = seen.under("/catalogue/book_");
    assert!(books >= 1);
    assert_eq!(read_jsonl(&output).len(), books, "every book page fetched gave its item");
}

/// Emits one item that CSV cannot hold: a list inside a row.
struct NestedItem;

#[derive(serde::Serialize)]
struct Nested {
    title: String,
    tags: Vec<String>,
}

impl spiderling::SpiderConfig for NestedItem {
    fn config(&self) -> Config {
        Config::new("nested")
    }
}

#[spiderling::async_trait]
impl spiderling::Spider for NestedItem {
    type Item = Nested;

    async fn parse(&self, _: spiderling::Page, cx: &mut spiderling::Cx<Nested>) -> spiderling::Result {
        cx.emit(Nested { title: "ok".into(), tags: vec!["a".into(), "b".into()] });
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_item_that_cannot_be_written_leaves_no_partial_row() {
    let site = Sandbox::demo(DemoSite { books: 1, per_page: 1, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("nested.csv");
    let config = Config::new("nested").start_url(site.url()).output(&output);
    let error = Crawler::with_config(NestedItem, config).run().await.unwrap_err();
    assert!(error.to_string().contains("nested.csv"), "{error}");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "", "no partial row");
}
