//! The declarative face: a derived spider crawls with no parse code, and derived items
//! read every kind of field: CSS matches, the page's JSON-LD, the page's own facts.

use crate::support;

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
use spiderling::reqwest::StatusCode;
use spiderling::testing::PageFixture;
use spiderling::{ExtractErrorKind, FieldSource, SpiderConfig};

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
    assert_eq!(summary.counts.html_parses, summary.counts.pages, "one HTML parse per page");
    assert_eq!(site.observed().duplicates(), Default::default());
}

#[test]
fn explicit_keys_win_over_the_profile() {
    let settings = Derived.config().to_string();
    assert!(settings.contains("concurrency = 16"), "the key: {settings}");
    assert!(settings.contains("per_host = 40"), "the profile: {settings}");
    assert!(settings.contains("delay = 500ms..1500ms"), "the profile: {settings}");
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
        (source.field, source.from, &source.kind),
        ("stock", FieldSource::Css("span.stock"), &ExtractErrorKind::Missing)
    );
    assert_eq!(
        error.to_string(),
        "extracting an item from https://books.example/atlas.html: field `stock`: \
        nothing matches `span.stock`"
    );

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

    assert_eq!(summary.counts.failures_by_reason.get("item"), Some(&(demo.listing_pages() as u64)));
    assert_eq!(
        site.observed().under("/catalogue/book_"),
        demo.books,
        "every book reached through the listings"
    );
    let failures = std::fs::read_to_string(dir.path().join("x.failures.jsonl")).unwrap();
    assert!(failures.contains("field `rating`: nothing matches `p.rating`"), "{failures}");
}

/// A first try on a sample (`max_pages`) whose items all fail exits as a whole crawl with
/// failures does, 3, not as a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sample_stopped_at_max_pages_with_failed_items_exits_3() {
    let site = Sandbox::demo(DemoSite { books: 200, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Strict.config().set("start_urls", &site.url()).unwrap().output(dir.path().join("x.jsonl"));
    let summary = Crawler::with_config(Strict, config.max_pages(8)).run().await.unwrap();
    assert_eq!(summary.status, spiderling::CrawlStatus::LimitReached);
    assert!(summary.counts.failures_by_reason.get("item").is_some_and(|n| *n > 0), "{summary}");
    assert_eq!(summary.exit_code(), std::process::ExitCode::from(3));
    assert_eq!(summary.counts.pages, 8, "stopped at the limit: {summary}");
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

/// Every page field, each meta value's kind, a page field with its own parser.
#[derive(Item, Debug, PartialEq)]
struct Visited {
    #[css("h1")]
    title: String,
    #[page(url)]
    url: Url,
    #[page(final_url)]
    final_url: String,
    #[page(status)]
    status: u16,
    #[page(status, parse = status_class)]
    status_class: String,
    #[page(fetched_at)]
    fetched_at: String,
    #[page(depth)]
    depth: u32,
    #[page(meta = "category")]
    category: String,
    #[page(meta = "rank")]
    rank: u8,
    #[page(meta = "shelf")]
    shelf: String,
    #[page(meta = "note")]
    note: Option<String>,
    #[page(meta = "note", default)]
    note_or_empty: String,
}

fn status_class(text: &str) -> std::result::Result<String, String> {
    text.get(..1).map(|digit| format!("{digit}xx")).ok_or_else(|| "empty status".to_owned())
}

fn visited_fixture() -> PageFixture {
    PageFixture::new("https://books.example/catalogue/book_9.html", "<h1>Atlas</h1>")
        .status(StatusCode::NON_AUTHORITATIVE_INFORMATION)
        .redirected_from("https://books.example/catalogue/latest")
        .depth(3)
        .meta("category", "maps")
        .meta("rank", 7)
        .meta("shelf", serde_json::json!({"row": 2, "side": "left"}))
        .fetched_at(std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_735_689_600_250))
}

#[tokio::test]
async fn every_page_field_reads_the_page_facts() {
    let page = visited_fixture().build().unwrap();
    let item = page.extract::<Visited>().await.unwrap().unwrap();
    assert_eq!(
        item,
        Visited {
            title: "Atlas".to_owned(),
            url: Url::parse("https://books.example/catalogue/latest").unwrap(),
            final_url: "https://books.example/catalogue/book_9.html".to_owned(),
            status: 203,
            status_class: "2xx".to_owned(),
            fetched_at: "2025-01-01T00:00:00.250Z".to_owned(),
            depth: 3,
            category: "maps".to_owned(),
            rank: 7,
            shelf: r#"{"row":2,"side":"left"}"#.to_owned(),
            note: None,
            note_or_empty: String::new(),
        }
    );

    // Without a redirect, the URL asked for is the page's own.
    let page =
        PageFixture::new("https://books.example/b", "<h1>B</h1>").meta("category", "x").meta("rank", 1);
    let item = page.meta("shelf", "top").build().unwrap().extract::<Visited>().await.unwrap().unwrap();
    assert_eq!(
        (item.url.as_str(), item.final_url.as_str()),
        ("https://books.example/b", "https://books.example/b")
    );
    assert_eq!((item.status, item.depth, item.shelf.as_str()), (200, 0, "top"));
}

#[tokio::test]
async fn page_fields_never_decide_whether_the_page_has_the_item() {
    let book = visited_fixture().build().unwrap();
    assert!(book.extract::<Visited>().await.unwrap().is_some());
    let no_title = PageFixture::new("https://books.example/", "<p>a listing</p>").build().unwrap();
    assert_eq!(no_title.extract::<Visited>().await.unwrap(), None, "the page fields alone are not the item");

    #[derive(Item, Debug)]
    struct OnlyPage {
        #[page(final_url)]
        url: String,
        #[page(status)]
        status: u16,
    }
    let visit =
        no_title.extract::<OnlyPage>().await.unwrap().expect("an item of page fields only, every page has");
    assert_eq!((visit.url.as_str(), visit.status), ("https://books.example/", 200));
}

#[tokio::test]
async fn a_missing_or_unparsable_meta_value_names_the_field() {
    let page = PageFixture::new("https://books.example/b", "<h1>B</h1>").meta("rank", 1).build().unwrap();
    let error = page.extract::<Visited>().await.unwrap_err();
    let Error::Extract { source, .. } = &error else { panic!("{error:?}") };
    assert_eq!((source.from, &source.kind), (FieldSource::Meta("category"), &ExtractErrorKind::Missing));
    assert_eq!(
        error.to_string(),
        "extracting an item from https://books.example/b: field `category`: the \
        request has no meta `category`"
    );

    let page = visited_fixture().meta("rank", "high").build().unwrap();
    let error = page.extract::<Visited>().await.unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("field `rank` (meta `rank`): cannot parse \"high\": invalid digit found in string"),
        "{error}"
    );
}

/// A product page's JSON-LD, as shops publish it: a breadcrumb trail first, then the
/// product in a `@graph` beside the shop.
const PRODUCT: &str = r#"<html><head>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "BreadcrumbList", "name": "Home › Maps"}</script>
<script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [
  {"@type": "Organization", "name": "The Map Shop"},
  {"@type": ["Product", "Book"], "name": "The Paper Atlas", "sku": "A-17",
   "image": ["https://books.example/img/atlas-1.jpg", "https://books.example/img/atlas-2.jpg"],
   "offers": [{"@type": "Offer", "price": "12.50", "priceCurrency": "GBP", "inventoryLevel": {"value": 7}},
              {"@type": "Offer", "price": "9.99"}],
   "isbn": null}
]}
</script></head>
<body><h1 class="title">The Paper Atlas</h1></body></html>"#;

#[derive(Item, Debug, PartialEq)]
struct Product {
    #[css("h1.title")]
    title: String,
    #[json_ld("name", type = "Product")]
    name: String,
    #[json_ld("name")]
    first_name: String,
    #[json_ld("name", type = "Organization")]
    shop: String,
    #[json_ld("offers.price", type = "Product")]
    price: f64,
    #[json_ld("offers.price", type = "Product", parse = cents)]
    price_cents: u32,
    #[json_ld("offers.inventoryLevel.value")]
    stock: u32,
    #[json_ld("offers.priceCurrency")]
    currency: String,
    #[json_ld("image")]
    images: Vec<Url>,
    #[json_ld("image")]
    first_image: Url,
    #[json_ld("offers", type = "Product")]
    offer: String,
    #[json_ld("isbn")]
    isbn: Option<String>,
    #[json_ld("aggregateRating.ratingValue", default)]
    rating: f32,
    #[json_ld("review.author")]
    reviewers: Vec<String>,
}

#[tokio::test]
async fn json_ld_fields_read_the_first_object_that_has_their_path() {
    let page = Page::fixture("https://books.example/atlas", PRODUCT).unwrap();
    let product = page.extract::<Product>().await.unwrap().unwrap();
    assert_eq!(
        product,
        Product {
            title: "The Paper Atlas".to_owned(),
            name: "The Paper Atlas".to_owned(),
            first_name: "Home › Maps".to_owned(),
            shop: "The Map Shop".to_owned(),
            price: 12.5,
            price_cents: 1250,
            stock: 7,
            currency: "GBP".to_owned(),
            images: vec![
                Url::parse("https://books.example/img/atlas-1.jpg").unwrap(),
                Url::parse("https://books.example/img/atlas-2.jpg").unwrap()
            ],
            first_image: Url::parse("https://books.example/img/atlas-1.jpg").unwrap(),
            offer: r#"{"@type":"Offer","inventoryLevel":{"value":7},"price":"12.50","priceCurrency":"GBP"}"#
                .to_owned(),
            isbn: None,
            rating: 0.0,
            reviewers: vec![],
        }
    );
}

/// An item read from JSON-LD alone.
#[derive(Item, Debug, PartialEq)]
struct Listed {
    #[json_ld("name", type = "Product")]
    name: String,
    #[json_ld("sku", type = "Product")]
    sku: String,
    #[json_ld("offers.priceCurrency")]
    currency: Option<String>,
}

#[tokio::test]
async fn json_ld_fields_decide_whether_the_page_has_the_item() {
    let none = Page::fixture("https://books.example/", "<h1>No structured data</h1>").unwrap();
    assert_eq!(none.extract::<Listed>().await.unwrap(), None);
    let shop_only = PRODUCT.replace("\"Product\", ", "");
    let page = Page::fixture("https://books.example/", shop_only).unwrap();
    assert_eq!(page.extract::<Listed>().await.unwrap(), None, "no Product on the page");

    let no_sku = PRODUCT.replace(r#""sku": "A-17","#, "");
    let page = Page::fixture("https://books.example/atlas", no_sku).unwrap();
    let error = page.extract::<Listed>().await.unwrap_err();
    let Error::Extract { source, .. } = &error else { panic!("{error:?}") };
    assert_eq!(
        (source.field, source.from, &source.kind),
        ("sku", FieldSource::JsonLd { path: "sku", of_type: Some("Product") }, &ExtractErrorKind::Missing)
    );
    assert!(
        error.to_string().ends_with("field `sku`: the page has no JSON-LD `sku` of a `Product`"),
        "{error}"
    );
}

#[tokio::test]
async fn invalid_json_ld_is_an_error_naming_the_field_unless_a_valid_block_has_it() {
    // The breadcrumb block is broken; the product's block still answers every field.
    let broken_crumbs = PRODUCT.replace(r#""name": "Home › Maps"}"#, r#""name": "Home › Maps",}"#);
    let page = Page::fixture("https://books.example/atlas", broken_crumbs).unwrap();
    let product = page.extract::<Listed>().await.unwrap().unwrap();
    assert_eq!((product.name.as_str(), product.sku.as_str()), ("The Paper Atlas", "A-17"));

    // Now the product's block is the broken one: nothing valid has its fields.
    let broken_product = PRODUCT.replace(r#""sku": "A-17","#, r#""sku": "A-17",,"#);
    let page = Page::fixture("https://books.example/atlas", broken_product).unwrap();
    let error = page.extract::<Listed>().await.unwrap_err();
    let Error::Extract { source, .. } = &error else { panic!("{error:?}") };
    assert_eq!(
        (source.field, source.from),
        ("name", FieldSource::JsonLd { path: "name", of_type: Some("Product") })
    );
    let ExtractErrorKind::InvalidJsonLd { message } = &source.kind else { panic!("{source:?}") };
    assert!(message.starts_with("block 2 of the page: key must be a string at line 4"), "{message}");
    assert_eq!(
        source.to_string(),
        format!(
            "field `name` (JSON-LD `name` of a `Product`): no valid JSON-LD block has it, and a block is \
            not valid JSON: {message}"
        )
    );

    // An optional field is no excuse: the page may have had it.
    #[derive(Item, Debug)]
    #[allow(dead_code)]
    struct MaybePrice {
        #[css("h1.title")]
        title: String,
        #[json_ld("offers.price")]
        price: Option<String>,
    }
    let broken = Page::fixture(
        "https://books.example/a",
        "<h1 class='title'>A</h1><script type='application/ld+json'>{\"offers\": </script>",
    )
    .unwrap();
    let error = broken.extract::<MaybePrice>().await.unwrap_err();
    assert!(
        error.to_string().contains("field `price` (JSON-LD `offers.price`): no valid JSON-LD block has it"),
        "{error}"
    );
}

/// The demo shop's books with their page facts and their JSON-LD beside the HTML.
#[derive(Item, Serialize)]
struct BookPage {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
    #[json_ld("offers.price", type = "Product")]
    ld_price: String,
    #[json_ld("sku", type = "Product")]
    sku: String,
    #[page(url)]
    url: String,
    #[page(final_url)]
    final_url: String,
    #[page(status)]
    status: u16,
    #[page(depth)]
    depth: u32,
}

/// One request at a time, so the crawl goes in the frontier's order (first in, first
/// out) and the depths it finds are known: see the test.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 1,
    follow = "a[href]",
    item = BookPage
)]
struct BookPages;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_writes_each_book_with_its_page_facts_and_json_ld() {
    let demo = DemoSite { books: 100, per_page: 20, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("books.jsonl");
    let config = BookPages.config().set("start_urls", &site.url()).unwrap().output(&output);
    Crawler::with_config(BookPages, config).run().await.unwrap();

    let items = support::read_json_lines(&output);
    let books = spider_sandbox::catalogue(demo.books);
    assert_eq!(items.len(), demo.books, "every book once");
    let page_of = |id: usize| format!("{}catalogue/book_{id}.html", site.url());
    for book in &books {
        let item = items.iter().find(|item| item["title"] == book.title.as_str()).unwrap();
        assert_eq!(item["final_url"], page_of(book.id).as_str());
        assert_eq!(item["status"], 200);
        assert_eq!(item["price"], book.price.as_str());
        assert_eq!(
            format!("£{}", item["ld_price"].as_str().unwrap()),
            book.price,
            "JSON-LD price = CSS price"
        );
        assert_eq!(item["sku"], book.upc.as_str());
        let depth = item["depth"].as_u64().unwrap();
        if book.id == demo.books {
            // The home page links the first listing, then /catalogue/latest, a redirect to
            // the last book, whose hop is queued before any book page is read.
            assert_eq!(item["url"], format!("{}catalogue/latest", site.url()).as_str());
            assert_eq!(depth, 1, "a redirect hop keeps its request's depth");
        } else {
            assert_eq!(item["url"], item["final_url"], "book {}", book.id);
            // Home → first listing → its books, read before any book page; the others
            // are found further on, from a later listing or a related book.
            assert!(
                if book.id <= demo.per_page { depth == 2 } else { depth >= 2 },
                "book {}: depth {depth}",
                book.id
            );
        }
    }
    let observed = site.observed();
    assert_eq!(observed.duplicates(), Default::default());
    assert_eq!(observed.under("/catalogue/latest"), 1);
}

#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], allowed_domains = ["127.0.0.1"], item = BookPage)]
struct Latest;

/// The redirect hop goes through a state file's queue, so the first URL is read back
/// from it, not only carried in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_page_keeps_the_url_the_crawl_asked_for() {
    let demo = DemoSite { books: 30, ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("latest.jsonl");
    let latest = format!("{}catalogue/latest", site.url());
    let config = Latest.config().set("start_urls", &latest).unwrap().output(&output);
    let config = config.set("state", dir.path().join("latest.state").to_str().unwrap()).unwrap();
    Crawler::with_config(Latest, config).run().await.unwrap();

    let items = support::read_json_lines(&output);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["url"], latest.as_str());
    assert_eq!(items[0]["final_url"], format!("{}catalogue/book_30.html", site.url()).as_str());
    assert_eq!((items[0]["status"].as_u64(), items[0]["depth"].as_u64()), (Some(200), Some(0)));
    let observed = site.observed();
    let asked: Vec<String> = observed.pages().map(|hit| hit.resource()).collect();
    assert_eq!(asked, ["/catalogue/latest", "/catalogue/book_30.html"]);
}

/// The books example's spider as written, and the same forced to the DOM.
mod engines {
    use spiderling::prelude::*;

    #[derive(Spider, Default)]
    #[spider(
        name = "streamed",
        start_urls = ["http://placeholder.invalid/"],
        allowed_domains = ["127.0.0.1"],
        rule(allow = r"/catalogue/page-\d+\.html", follow),
        rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Book, priority = 10),
    )]
    pub struct Streamed;

    #[derive(Spider, Default)]
    #[spider(
        name = "dom",
        start_urls = ["http://placeholder.invalid/"],
        allowed_domains = ["127.0.0.1"],
        extract = "dom",
        rule(allow = r"/catalogue/page-\d+\.html", follow),
        rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Book, priority = 10),
    )]
    pub struct Dom;

    #[derive(Item, Serialize)]
    pub struct Book {
        #[page(url)]
        url: String,
        #[css("h1.title")]
        title: String,
        #[json_ld("offers.price", type = "Product")]
        price: f64,
        #[json_ld("sku", type = "Product")]
        sku: String,
        #[css("p.availability")]
        availability: Option<String>,
        #[css("p > a", attr = "href")]
        links: Vec<String>,
    }
}

/// Both engines write the same items, byte for byte once sorted; the spider whose
/// selectors all stream reads every page without a DOM, the one forced to the DOM none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streaming_and_dom_engines_write_identical_items() {
    let site = Sandbox::demo(DemoSite { books: 60, per_page: 20, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for (name, streams) in [("streamed", true), ("dom", false)] {
        let output = dir.path().join(format!("{name}.jsonl"));
        let config = |config: spiderling::Config| {
            config.set("start_urls", &site.url()).unwrap().set("delay", "0ms").unwrap().output(&output)
        };
        let summary = if streams {
            Crawler::with_config(engines::Streamed, config(engines::Streamed.config())).run().await.unwrap()
        } else {
            Crawler::with_config(engines::Dom, config(engines::Dom.config())).run().await.unwrap()
        };
        assert_eq!(summary.counts.items, 60, "{name}");
        let streamed = if streams { summary.counts.pages } else { 0 };
        assert_eq!(summary.counts.streamed_pages, streamed, "{name}: pages read without a DOM");
        let mut lines: Vec<String> =
            std::fs::read_to_string(&output).unwrap().lines().map(String::from).collect();
        lines.sort();
        outputs.push(lines);
    }
    assert_eq!(outputs[0], outputs[1]);
}
