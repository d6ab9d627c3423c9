//! The declarative face: a derived spider crawls with no parse code, and derived items
//! read every kind of field.

mod support;

// Spiders and items that must build: every key, every field option, a parse of one's own.
#[path = "derive/custom_parse.rs"]
mod custom_parse;
#[path = "derive/every_field_option.rs"]
#[allow(dead_code)]
mod every_field_option;
#[path = "derive/every_key.rs"]
#[allow(clippy::unwrap_used)]
mod every_key;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;
use spiderling::{ExtractErrorKind, SpiderConfig};

#[derive(Spider, Default)]
#[spider(
    name = "derived",
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    profile = "bulk",
    concurrency = 16,
    follow = "a[href]",
    item = support::Book,
)]
struct Derived;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_derived_spider_scrapes_the_catalogue_with_one_parse_per_page() {
    let demo = DemoSite { books: 100, per_page: 20, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("books.jsonl");
    let config =
        Derived.config().set("start_urls", &site.url()).unwrap().set("delay", "0ms").unwrap().output(&output);
    let summary = Crawler::with_config(Derived, config).run().await.unwrap();

    assert_eq!(support::read_jsonl(&output), support::expected_books(demo.books));
    assert_eq!(summary.html_parses, summary.pages, "one HTML parse per page");
    assert_eq!(site.observed().duplicates(), Default::default());
}

#[test]
fn explicit_keys_win_over_the_profile() {
    let settings = Derived.config().to_string();
    assert!(settings.contains("concurrency = 16"), "the key: {settings}");
    assert!(settings.contains("per_host = 40"), "the profile: {settings}");
    assert!(settings.contains("delay = 500ms..1.5s"), "the profile: {settings}");
    assert!(settings.contains("settings of derived"), "{settings}");
}

fn cents(text: &str) -> std::result::Result<u32, String> {
    let (pounds, pence) = text.trim_start_matches('£').split_once('.').ok_or("no decimal point")?;
    let value = |s: &str| s.parse::<u32>().map_err(|e| e.to_string());
    Ok(value(pounds)? * 100 + value(pence)?)
}

#[derive(Item, Debug, PartialEq)]
struct Everything {
    #[css("h1.title")]
    title: String,
    #[css("p.price", parse = cents)]
    price_cents: u32,
    #[css("span.stock")]
    stock: u32,
    #[css("p.missing")]
    missing: Option<String>,
    #[css("li.tag")]
    tags: Vec<String>,
    #[css("a.cover", attr = "href")]
    cover: Url,
    #[css("a.cover", attr = "title")]
    cover_title: String,
    #[css("div.blurb", html)]
    blurb: String,
    #[css("span.rating", default)]
    rating: u8,
    #[css("li.score")]
    scores: Vec<u16>,
}

const FIXTURE: &str = r#"<html><body>
<h1 class="title"> The Paper Atlas </h1>
<p class="price">£12.34</p><span class="stock">7</span>
<ul><li class="tag">maps</li><li class="tag">travel</li></ul>
<a class="cover" href="../img/atlas.jpg" title="Cover">cover</a>
<div class="blurb"><b>Bold</b> claims</div>
<ol><li class="score">3</li><li class="score">5</li></ol>
</body></html>"#;

#[tokio::test]
async fn every_field_option_reads_the_fixture() {
    let page = Page::fixture("https://books.example/catalogue/atlas.html", FIXTURE).unwrap();
    let item = page.extract::<Everything>().await.unwrap().unwrap();
    assert_eq!(
        item,
        Everything {
            title: "The Paper Atlas".to_owned(),
            price_cents: 1234,
            stock: 7,
            missing: None,
            tags: vec!["maps".to_owned(), "travel".to_owned()],
            cover: Url::parse("https://books.example/img/atlas.jpg").unwrap(),
            cover_title: "Cover".to_owned(),
            blurb: "<b>Bold</b> claims".to_owned(),
            rating: 0,
            scores: vec![3, 5],
        }
    );
}

#[tokio::test]
async fn a_page_without_the_item_is_none_and_a_partial_one_names_the_field() {
    let listing = Page::fixture("https://books.example/", "<ul><li class='tag'>x</li></ul>").unwrap();
    assert!(listing.extract::<Everything>().await.unwrap().is_none());

    let partial = FIXTURE.replace(r#"<span class="stock">7</span>"#, "");
    let page = Page::fixture("https://books.example/atlas.html", partial).unwrap();
    let error = page.extract::<Everything>().await.unwrap_err();
    let Error::Extract { source, .. } = &error else { panic!("{error:?}") };
    assert_eq!(
        (source.field, source.selector, &source.kind),
        ("stock", "span.stock", &ExtractErrorKind::Missing)
    );
    assert_eq!(error.to_string(), "extracting an item from https://books.example/atlas.html: field `stock`: nothing matches `span.stock`");

    let bad_price = FIXTURE.replace("£12.34", "twelve");
    let page = Page::fixture("https://books.example/atlas.html", bad_price).unwrap();
    let error = page.extract::<Everything>().await.unwrap_err();
    assert!(
        error.to_string().contains("field `price_cents` (selector `p.price`): cannot parse \"twelve\""),
        "{error}"
    );
}

/// An item that listing pages have only in part: the first product, but never a rating.
#[derive(Item, Serialize)]
struct HalfOnListings {
    #[css("article.product_pod h3 > a")]
    first_product: String,
    #[css("p.rating")]
    rating: String,
}

#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], allowed_domains = ["127.0.0.1"], follow = "a[href]", item = HalfOnListings)]
struct Strict;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_a_failed_item_still_has_its_links_followed() {
    let demo = DemoSite { books: 40, per_page: 10, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Strict.config().set("start_urls", &site.url()).unwrap().output(dir.path().join("x.jsonl"));
    let summary = Crawler::with_config(Strict, config).run().await.unwrap();

    assert_eq!(summary.failures_by_reason.get("item"), Some(&(demo.listing_pages() as u64)));
    assert_eq!(
        site.observed().under("/catalogue/book_"),
        demo.books,
        "every book reached through the listings"
    );
    let failures = std::fs::read_to_string(dir.path().join("x.failures.jsonl")).unwrap();
    assert!(failures.contains("field `rating`: nothing matches `p.rating`"), "{failures}");
}

#[test]
fn every_key_is_accepted_and_shown_in_the_settings() {
    every_key::main();
}

#[test]
fn a_spider_with_its_own_parse_builds_a_crawler() {
    custom_parse::main();
}

#[derive(Spider, Default)]
#[spider(start_urls = ["https://shop.example/"], follow = "a")]
struct EveryLink;

#[tokio::test]
async fn follow_skips_links_to_files_that_are_not_pages() {
    let html = r#"<a href="/product/1">a product</a> <a href="/files/catalogue.zip">the catalogue</a>
        <a href="/covers/1.JPG">a cover</a> <a href="/src/setup.py">the source</a>
        <a href="/manual.pdf#page=2">the manual</a> <a href="/list?page=2">next</a>"#;
    let page = spiderling::Page::fixture("https://shop.example/", html).unwrap();
    let (_, follows) = spiderling::testing::parse_page(&EveryLink, page).await.unwrap();
    let paths: Vec<&str> = follows.iter().map(|request| request.url().path()).collect();
    assert_eq!(paths, ["/product/1", "/list"]);
}
