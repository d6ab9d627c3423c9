//! Several outputs at once, each given the items of the type it takes: files in three
//! formats and SQLite tables from one crawl of items of two types, each item once in
//! every output that takes its type, and once in one that takes every type.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;
use spiderling::Crawler;
use support::{expected_books, expected_listings, Book, Listing, ShelfSpider};

/// Every row of an SQLite table, as JSON objects of its columns.
fn rows(path: &Path, table: &str) -> Vec<serde_json::Value> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut select = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
    let names: Vec<String> = select.column_names().into_iter().map(str::to_owned).collect();
    let rows = select.query_map([], |row| {
        let mut object = serde_json::Map::new();
        for (at, name) in names.iter().enumerate() {
            let value = match row.get_ref(at)? {
                rusqlite::types::ValueRef::Integer(n) => serde_json::json!(n),
                rusqlite::types::ValueRef::Text(text) => serde_json::json!(String::from_utf8_lossy(text)),
                other => panic!("{name}: {other:?}"),
            };
            object.insert(name.clone(), value);
        }
        Ok(serde_json::Value::Object(object))
    });
    rows.unwrap().map(Result::unwrap).collect()
}

fn as_books(values: Vec<serde_json::Value>) -> Vec<Book> {
    let mut books: Vec<Book> = values.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect();
    books.sort();
    books
}

fn as_listings(values: Vec<serde_json::Value>) -> Vec<Listing> {
    let mut listings: Vec<Listing> = values.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect();
    listings.sort();
    listings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_output_holds_every_item_of_its_type_once() {
    let (books, per_page) = (60, 8);
    let site = Sandbox::demo(DemoSite { books, per_page, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (db, file) = (dir.path().join("shop.db"), |name: &str| dir.path().join(name));
    let config = support::quick_config(&site)
        .output(format!("{}?type=Book", file("books.csv").display()))
        .output(format!("{}?type=Listing", file("listings.json").display()))
        .output(file("everything.jsonl"))
        .output(format!("sqlite://{}?table=books&type=Book", db.display()))
        .output(format!("sqlite://{}?table=listings&type=Listing", db.display()));
    let summary = Crawler::with_config(ShelfSpider::new(config.clone()), config).run().await.unwrap();
    let (books_expected, listings_expected) = (expected_books(books), expected_listings(books, per_page));
    assert_eq!(summary.counts.items, (books_expected.len() + listings_expected.len()) as u64);

    let mut csv = csv::Reader::from_path(file("books.csv")).unwrap();
    assert_eq!(csv.headers().unwrap(), vec!["title", "price", "availability"]);
    let mut from_csv: Vec<Book> = csv.deserialize().map(Result::unwrap).collect();
    from_csv.sort();
    assert_eq!(from_csv, books_expected, "the CSV file: every book once, nothing else");
    let array: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(file("listings.json")).unwrap()).unwrap();
    assert_eq!(as_listings(array), listings_expected, "the JSON array: every listing once");
    assert_eq!(as_books(rows(&db, "books")), books_expected, "the books table");
    assert_eq!(as_listings(rows(&db, "listings")), listings_expected, "the listings table");

    let everything = support::read_json_lines(&file("everything.jsonl"));
    let (with_title, without): (Vec<_>, Vec<_>) =
        everything.into_iter().partition(|item| item.get("title").is_some());
    assert_eq!(as_books(with_title), books_expected, "every type in the file that takes them all");
    assert_eq!(as_listings(without), listings_expected);
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file("books.stats.json")).unwrap()).unwrap();
    assert_eq!(stats["items"], summary.counts.items, "the stats beside the first file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_of_a_type_no_output_takes_are_counted_and_written_nowhere() {
    let site = Sandbox::demo(DemoSite { books: 20, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("books.jsonl");
    let config = support::quick_config(&site).output(format!("{}?type=Book", out.display()));
    let summary = Crawler::with_config(ShelfSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(summary.counts.items, 22, "20 books and 2 listings");
    let titles: BTreeSet<String> = support::read_jsonl(&out).into_iter().map(|b| b.title).collect();
    assert_eq!(titles.len(), 20);
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    delay = "0ms",
    progress = false,
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Book),
    output = ["placeholder.jsonl", "placeholder.csv"],
)]
struct TwoFiles;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attribute_lists_several_outputs_and_a_run_replaces_them_all() {
    let site = Sandbox::demo(DemoSite { books: 30, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let declared: Vec<String> = TwoFiles.config().outputs.iter().map(ToString::to_string).collect();
    assert_eq!(declared, ["placeholder.jsonl", "placeholder.csv"]);
    let (lines, csv) = (dir.path().join("books.jsonl"), dir.path().join("books.csv"));
    let outputs = format!("{}, {}", lines.display(), csv.display());
    let config = TwoFiles.config().set("start_urls", &site.url()).unwrap().set("output", &outputs).unwrap();
    let summary = Crawler::with_config(TwoFiles, config).run().await.unwrap();
    assert_eq!(summary.counts.items, 30, "{summary}");
    assert_eq!(support::read_jsonl(&lines), expected_books(30));
    let mut from_csv: Vec<Book> =
        csv::Reader::from_path(&csv).unwrap().deserialize().map(Result::unwrap).collect();
    from_csv.sort();
    assert_eq!(from_csv, expected_books(30));
    assert!(!Path::new("placeholder.jsonl").exists(), "the attribute's files were replaced");
}

/// A listing page, read by the derive.
#[derive(Item, Serialize, Deserialize)]
struct Shelf {
    #[page(url)]
    url: String,
    #[css("h3 > a")]
    titles: Vec<String>,
}

/// A book by its title, one kept per title.
#[derive(Item, Serialize, Deserialize)]
struct Titled {
    #[css("h1.title")]
    #[item(key)]
    title: String,
}

/// The items of both rules.
#[derive(Item, Serialize)]
#[serde(untagged)]
enum Shelved {
    Shelf(Shelf),
    Titled(Titled),
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    delay = "0ms",
    progress = false,
    item = Shelved,
    rule(allow = r"/catalogue/page-\d+\.html", follow, parse = Shelf),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Titled, priority = 10),
)]
struct ShelvesAndBooks;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_rules_of_two_item_types_fill_the_outputs_of_each() {
    let (books, per_page) = (45, 10);
    let site = Sandbox::demo(DemoSite { books, per_page, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (shelves, titles) = (dir.path().join("shelves.jsonl"), dir.path().join("titles.csv"));
    let outputs = format!("{}?type=Shelf, {}?type=Titled", shelves.display(), titles.display());
    let config =
        ShelvesAndBooks.config().set("start_urls", &site.url()).unwrap().set("output", &outputs).unwrap();
    let summary = Crawler::with_config(ShelvesAndBooks, config).run().await.unwrap();

    let listed = support::read_json_lines(&shelves);
    let pages: BTreeSet<&str> = listed.iter().map(|shelf| shelf["url"].as_str().unwrap()).collect();
    assert_eq!((listed.len(), pages.len()), (5, 5), "a shelf per listing page, once each: {listed:?}");
    let on_shelves: usize = listed.iter().map(|shelf| shelf["titles"].as_array().unwrap().len()).sum();
    assert_eq!(on_shelves, books);
    let read: Vec<Titled> =
        csv::Reader::from_path(&titles).unwrap().deserialize().map(Result::unwrap).collect();
    let expected: BTreeSet<String> = expected_books(books).into_iter().map(|b| b.title).collect();
    assert_eq!(read.len(), expected.len(), "one book per title");
    assert_eq!(read.into_iter().map(|t| t.title).collect::<BTreeSet<_>>(), expected);
    // The key is a Titled's only: no shelf was dropped as a duplicate of anything.
    assert_eq!(summary.counts.items, (5 + expected.len()) as u64, "{summary}");
}

/// A priced book: its title and price both required.
#[derive(Item, Serialize, Debug)]
struct Priced {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
}

/// A note, a page's one paragraph of it.
#[derive(Item, Serialize, Debug)]
struct Note {
    #[css("p.note")]
    text: String,
}

#[derive(Item, Serialize, Debug)]
#[serde(untagged)]
enum PricedOrNote {
    Priced(Priced),
    Note(Note),
}

#[tokio::test]
async fn an_enum_of_items_reads_the_first_type_a_page_holds_whole() {
    let read = |html: &'static str| async move {
        let page = Page::fixture("https://shop.example/x", html).unwrap();
        page.extract::<PricedOrNote>().await.map_err(|e| e.to_string())
    };
    let both = read(r#"<h1 class="title">Atlas</h1><p class="price">£3</p><p class="note">n</p>"#).await;
    assert!(matches!(both, Ok(Some(PricedOrNote::Priced(_)))), "the first type first: {both:?}");
    let note = read(r#"<h1 class="title">Atlas</h1><p class="note">out of print</p>"#).await;
    assert!(matches!(note, Ok(Some(PricedOrNote::Note(ref n))) if n.text == "out of print"), "{note:?}");
    let part = read(r#"<h1 class="title">Atlas</h1>"#).await;
    assert!(part.is_err_and(|e| e.contains("price")), "a book in part, and no note");
    assert!(matches!(read("<p>nothing</p>").await, Ok(None)));
}

/// Without a state file, items reach their file as they come, not when the crawl ends: a
/// page that holds the crawl (here one that answers after 20 s) keeps nothing already
/// scraped from the disk. Before, the file stayed empty until the crawl's end, however
/// long a paused host kept it going.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_reach_their_file_while_the_crawl_goes_on() {
    use spider_sandbox::HostileSite;
    use std::time::{Duration, Instant};

    let site = Sandbox::hostile(HostileSite {
        pages: 3,
        slow: 1,
        slow_for: Duration::from_secs(20),
        ..HostileSite::empty()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = support::config_for(&site, dir.path(), "items.jsonl");
    let config = config.timeout(Duration::from_secs(15)).retries(0);
    let crawl = tokio::spawn(Crawler::new(support::BookSpider::new(config)).run());

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut lines = 0;
    while lines < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        lines = std::fs::read_to_string(&output).map_or(0, |text| text.lines().count());
    }
    assert_eq!(lines, 3, "the three items, on the disk within 10 s");
    assert!(!crawl.is_finished(), "while the slow page still holds the crawl");
    crawl.abort();
}
