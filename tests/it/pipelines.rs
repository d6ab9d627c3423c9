//! Item pipelines end to end on the sandbox: the derived item's checks, a stage of the
//! user's, and one item per key, in one process, across the runs of a state file after
//! SIGKILLs, and across the workers of a fleet; every item dropped counted by reason and
//! filed in the failures file, as the outputs hold it.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use spider_sandbox::{DemoSite, FixedSite, RedisServer, Sandbox};
use spiderling::prelude::*;
use spiderling::Summary;
use support::read_json_lines;

/// A book as the stock pages show it, dropped when it is out of stock.
#[derive(Item, Serialize, Deserialize, Debug)]
#[item(validate = in_stock)]
struct Stocked {
    #[css("h1.title")]
    title: String,
    #[css("p.price", parse = pence)]
    price: u32,
    #[css("p.availability")]
    availability: String,
}

fn pence(text: &str) -> std::result::Result<u32, String> {
    let pounds = text.trim_start_matches('£');
    pounds.replace('.', "").parse().map_err(|e| format!("{pounds}: {e}"))
}

fn in_stock(book: &Stocked) -> std::result::Result<(), String> {
    if book.availability.starts_with("In stock") {
        Ok(())
    } else {
        Err(format!("{} is {}", book.title, book.availability))
    }
}

/// A stage of the user's: books under a price are not kept.
struct AtLeast(u32);

#[async_trait]
impl Pipeline<Stocked> for AtLeast {
    async fn process(&self, book: Stocked) -> Verdict<Stocked> {
        if book.price < self.0 {
            return Verdict::Drop(
                Dropped::new("cheap").because(format!("{} costs {}p", book.title, book.price)),
            );
        }
        Verdict::Keep(Stocked { title: book.title.to_uppercase(), ..book })
    }
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 8,
    per_host = 8,
    delay = "0ms",
    progress = false,
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Stocked, priority = 10),
    pipeline = [AtLeast(3000)],
)]
struct StockedBooks;

async fn crawl<S: Spider>(spider: S, site: &Sandbox, dir: &Path) -> Summary {
    let config = spider.config().set("start_urls", &site.url()).unwrap().output(dir.join("out.jsonl"));
    Crawler::with_config(spider, config).run().await.unwrap()
}

/// The failures file's lines of items dropped, by their `dropped` reason.
fn drop_lines(dir: &Path) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut lines: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for line in read_json_lines(&dir.join("out.failures.jsonl")) {
        assert_eq!(line["reason"], "item dropped", "{line}");
        lines.entry(line["dropped"].as_str().unwrap().to_owned()).or_default().push(line);
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_items_check_and_a_users_stage_drop_items_counted_and_filed_by_reason() {
    let demo = DemoSite { books: 120, per_page: 20, ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(StockedBooks, &site, dir.path()).await;

    let catalogue = spider_sandbox::catalogue(120);
    let price = |book: &spider_sandbox::Book| pence(&book.price).unwrap();
    let out_of_stock: BTreeSet<String> = catalogue
        .iter()
        .filter(|b| !b.availability.starts_with("In stock"))
        .map(|b| b.title.clone())
        .collect();
    let cheap: BTreeSet<String> = catalogue
        .iter()
        .filter(|b| !out_of_stock.contains(&b.title) && price(b) < 3000)
        .map(|b| b.title.clone())
        .collect();
    let kept: BTreeSet<String> = catalogue
        .iter()
        .filter(|b| !out_of_stock.contains(&b.title) && !cheap.contains(&b.title))
        .map(|b| b.title.to_uppercase())
        .collect();
    assert!(!out_of_stock.is_empty() && !cheap.is_empty() && !kept.is_empty());

    let written: Vec<String> = read_json_lines(&dir.path().join("out.jsonl"))
        .iter()
        .map(|item| item["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(written.len(), kept.len(), "each book kept written once");
    assert_eq!(written.into_iter().collect::<BTreeSet<_>>(), kept, "the stage's change written");
    let expected: BTreeMap<String, u64> =
        [("invalid".to_owned(), out_of_stock.len() as u64), ("cheap".to_owned(), cheap.len() as u64)].into();
    assert_eq!(summary.counts.drops_by_reason, expected);
    assert_eq!(summary.counts.items, kept.len() as u64);
    assert_eq!(summary.failures, 0, "a dropped item is no failure");
    assert!(summary.to_string().contains("items dropped: cheap ×"), "{summary}");

    let lines = drop_lines(dir.path());
    let invalid: BTreeSet<String> =
        lines["invalid"].iter().map(|line| line["item"]["title"].as_str().unwrap().to_owned()).collect();
    assert_eq!(invalid, out_of_stock, "the item the check dropped is filed whole");
    assert!(lines["invalid"].iter().all(|l| l["error"].as_str().unwrap().ends_with("is Out of stock")));
    assert!(lines["invalid"].iter().all(|l| l["url"].as_str().unwrap().contains("/catalogue/book_")));
    assert_eq!(lines["cheap"].len(), cheap.len());
    assert!(lines["cheap"]
        .iter()
        .all(|l| l["error"].as_str().unwrap().ends_with('p') && l["item"].is_null()));
}

/// A page's item, whose title must not be empty.
#[derive(Item, Serialize)]
struct Titled {
    #[page(url)]
    url: String,
    #[css("h1")]
    title: String,
    #[css("p.note")]
    note: Option<String>,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    delay = "0ms",
    progress = false,
    follow = "a",
    item = Titled,
)]
struct TitledPages;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_whose_required_text_is_blank_is_dropped_and_an_empty_option_is_not() {
    let html = Some("text/html");
    let site = FixedSite::new()
        .answer("/", html, r#"<h1>Home</h1><a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>"#)
        .answer("/a", html, "<h1>Atlas</h1>")
        .answer("/b", html, "<h1>  \n </h1><p class=note>no title</p>")
        .answer("/c", html, r#"<h1>Cartography</h1><p class="note"></p>"#);
    let site = Sandbox::fixed(site).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(TitledPages, &site, dir.path()).await;

    let titles: BTreeSet<String> = read_json_lines(&dir.path().join("out.jsonl"))
        .iter()
        .map(|item| item["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(titles, ["Atlas", "Cartography", "Home"].map(str::to_owned).into());
    assert_eq!(summary.counts.drops_by_reason, [("empty title".to_owned(), 1)].into());
    let lines = drop_lines(dir.path());
    let blank = &lines["empty title"][0];
    assert_eq!(blank["url"], format!("{}/b", site.url().trim_end_matches('/')));
    assert_eq!(blank["item"]["note"], "no title", "the dropped item is filed whole");
}

/// Books told apart by their availability: one book kept per distinct availability.
#[derive(Item, Serialize, Deserialize, Debug)]
struct ByAvailability {
    #[css("h1.title")]
    title: String,
    #[css("p.availability")]
    #[item(key)]
    availability: String,
}

#[derive(Spider, Default)]
#[spider(
    name = "books",
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 4,
    per_host = 4,
    delay = "0ms",
    progress = false,
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = ByAvailability, priority = 10),
)]
struct OnePerAvailability;

/// The availabilities of the demo's first `books`.
fn availabilities(books: usize) -> BTreeSet<String> {
    spider_sandbox::catalogue(books).into_iter().map(|b| b.availability).collect()
}

/// Every availability in `files` once, and nothing else.
fn assert_one_per_key(files: &[&Path], books: usize) {
    let written: Vec<String> = files
        .iter()
        .flat_map(|file| read_json_lines(file))
        .map(|item| item["availability"].as_str().unwrap().to_owned())
        .collect();
    let distinct: BTreeSet<String> = written.iter().cloned().collect();
    assert_eq!(written.len(), distinct.len(), "no key twice: {written:?}");
    assert_eq!(distinct, availabilities(books), "every key once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_keeps_the_first_item_and_counts_the_others_as_duplicates() {
    let books = 90;
    let site = Sandbox::demo(DemoSite { books, per_page: 15, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(OnePerAvailability, &site, dir.path()).await;
    let out = dir.path().join("out.jsonl");
    assert_one_per_key(&[&out], books);
    let kept = availabilities(books).len() as u64;
    assert_eq!(summary.counts.drops_by_reason, [("duplicate".to_owned(), books as u64 - kept)].into());
    let lines = drop_lines(dir.path());
    let first: BTreeMap<String, String> = read_json_lines(&out)
        .iter()
        .map(|i| (i["availability"].as_str().unwrap().to_owned(), i["title"].as_str().unwrap().to_owned()))
        .collect();
    for line in &lines["duplicate"] {
        let availability = line["item"]["availability"].as_str().unwrap();
        assert_ne!(
            line["item"]["title"].as_str(),
            Some(first[availability].as_str()),
            "another book was dropped"
        );
    }
}

/// What the shop's shelves keep of a book: another type than the one `parse` emits.
#[derive(Serialize)]
struct Shelf {
    stock: String,
    first_book: String,
}

/// Turns a book into its shelf; a shelf of books out of stock is not kept.
struct ToShelf;

#[async_trait]
impl Pipeline<ByAvailability, Shelf> for ToShelf {
    async fn process(&self, book: ByAvailability) -> Verdict<Shelf> {
        if !book.availability.starts_with("In stock") {
            return Verdict::Drop(Dropped::new("sold out").because(&book.availability));
        }
        Verdict::Keep(Shelf { stock: book.availability, first_book: book.title })
    }
}

#[derive(Spider, Default)]
#[spider(
    name = "shelves",
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 4,
    per_host = 4,
    delay = "0ms",
    progress = false,
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = ByAvailability, priority = 10),
    pipeline = [ToShelf],
)]
struct Shelves;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_of_another_type_is_what_the_outputs_write_one_per_key_of_the_item_it_took() {
    let books = 90;
    let site = Sandbox::demo(DemoSite { books, per_page: 15, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Shelves, &site, dir.path()).await;

    let written = read_json_lines(&dir.path().join("out.jsonl"));
    let fields: BTreeSet<String> =
        written.iter().flat_map(|i| i.as_object().unwrap().keys().cloned()).collect();
    assert_eq!(fields, ["first_book", "stock"].map(str::to_owned).into(), "shelves written, not books");
    let stocks: Vec<&str> = written.iter().map(|i| i["stock"].as_str().unwrap()).collect();
    let in_stock: BTreeSet<String> =
        availabilities(books).into_iter().filter(|a| a.starts_with("In stock")).collect();
    assert_eq!(stocks.len(), in_stock.len(), "a shelf per availability, once: {stocks:?}");
    assert_eq!(stocks.into_iter().map(str::to_owned).collect::<BTreeSet<_>>(), in_stock);
    // The key, the book's availability, was read before the stage turned it into a
    // shelf; a book the stage dropped took none.
    let catalogue = spider_sandbox::catalogue(books);
    let sold_out = catalogue.iter().filter(|b| !b.availability.starts_with("In stock")).count();
    let duplicates = books - sold_out - in_stock.len();
    let expected: BTreeMap<String, u64> =
        [("duplicate".to_owned(), duplicates as u64), ("sold out".to_owned(), sold_out as u64)].into();
    assert_eq!(summary.counts.drops_by_reason, expected);
    assert_eq!(drop_lines(dir.path())["sold out"].len(), sold_out);
}

/// The variable that makes this test binary a crawler the tests below start.
const CHILD: &str = "PIPELINES_TEST_CHILD_ARGS";

/// A crawl of `OnePerAvailability` in a child process: this test binary again, with the
/// spider binary's command line in `CHILD`.
#[test]
#[ignore = "a child crawl of the tests below, started by them"]
fn child_crawl() {
    let Ok(args) = std::env::var(CHILD) else { return };
    let args = std::iter::once("books".into()).chain(args.lines().map(std::ffi::OsString::from));
    let code = spiderling::cli::run(OnePerAvailability, args);
    std::process::exit(if code == std::process::ExitCode::SUCCESS { 0 } else { 1 });
}

fn child(args: &[String]) -> Child {
    support::child_command(module_path!(), "child_crawl", CHILD, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn one_item_per_key_across_the_runs_of_a_state_file_killed_four_times() {
    let books = 200;
    let site = Sandbox::demo(DemoSite { books, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("books.jsonl");
    let args = support::child_args(dir.path(), &site, &[out.display().to_string()], &[]);
    let mut kills = 0;
    for _ in 0..4 {
        let mut crawl = child(&args);
        if support::kill_after(&mut crawl, &site, 30) {
            kills += 1;
        }
    }
    assert!(kills >= 2, "the crawl was killed mid-way ({kills} kills)");
    assert!(support::finish(child(&args), Duration::from_secs(120)).success());
    assert_one_per_key(&[&out], books);
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("books.stats.json")).unwrap()).unwrap();
    let kept = availabilities(books).len() as u64;
    assert_eq!(stats["drops_by_reason"]["duplicate"], books as u64 - kept, "{stats}");
}

/// A worker of a fleet in `redis` crawling `site` into `out`.
fn worker(site: &Sandbox, redis: &RedisServer, out: &Path) -> Child {
    let args = [
        "-o".to_owned(),
        out.display().to_string(),
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        format!("frontier={}", redis.url()),
        "--set".to_owned(),
        "lease=2s".to_owned(),
        "--log-level".to_owned(),
        "error".to_owned(),
    ];
    child(&args)
}

#[test]
fn one_item_per_key_across_a_fleet_of_two_workers() {
    let books = 200;
    let site = Sandbox::demo(DemoSite { books, per_page: 10, ..DemoSite::default() }).unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outputs: Vec<_> = (0..2).map(|i| dir.path().join(format!("worker-{i}.jsonl"))).collect();
    let workers: Vec<Child> = outputs.iter().map(|out| worker(&site, &redis, out)).collect();
    for worker in workers {
        assert!(support::finish(worker, Duration::from_secs(120)).success());
    }
    let files: Vec<&Path> = outputs.iter().map(|p| p.as_path()).collect();
    assert_one_per_key(&files, books);
    let written: Vec<usize> = outputs.iter().map(|out| read_json_lines(out).len()).collect();
    let fleet = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(spiderling::FleetReport::read(&redis.url(), Some("books")))
        .unwrap();
    let kept = availabilities(books).len() as u64;
    assert_eq!(fleet.crawls[0].totals.drops_by_reason["duplicate"], books as u64 - kept, "{written:?}");
}

/// A worker killed while it takes the first keys: the pages whose items it had not
/// committed are fetched again, by the other worker or by itself started again on its
/// file (cut back to what the fleet committed), and keep their keys, which were theirs.
#[test]
fn a_page_fetched_again_after_its_worker_was_killed_keeps_the_keys_it_took() {
    let books = 200;
    let site = Sandbox::demo(DemoSite { books, per_page: 10, ..DemoSite::default() }).unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outputs: Vec<_> = (0..2).map(|i| dir.path().join(format!("worker-{i}.jsonl"))).collect();
    // Alone, so that every request the site received before the kill was the killed
    // worker's.
    let mut killed = worker(&site, &redis, &outputs[0]);
    assert!(support::kill_after(&mut killed, &site, 24), "the worker was killed mid-crawl");
    let other = worker(&site, &redis, &outputs[1]);
    let again = worker(&site, &redis, &outputs[0]);
    for worker in [other, again] {
        assert!(support::finish(worker, Duration::from_secs(120)).success());
    }
    let files: Vec<&Path> = outputs.iter().map(|p| p.as_path()).collect();
    assert_one_per_key(&files, books);
}
