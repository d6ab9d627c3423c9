//! Items of two types, each to outputs of its own: every book of the demo shop to a CSV
//! file and every listing page, with how many books it lists, to JSON Lines.
//!
//! ```text
//! cargo run --release --example shelves                       # books.csv and listings.jsonl
//! cargo run --release --example shelves -- -O 'shop.jsonl' -O 'sqlite://shop.db?table=books&type=Book'
//! ```
//!
//! An item's type is the name of the struct it is written as: the spider's item is an
//! enum of both, `#[serde(untagged)]`, so each is written as itself, and `?type=NAME`
//! after a file (`&type=NAME` in a table's URI) sends it the items of that type only.

use std::process::ExitCode;
use std::sync::LazyLock;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "shelves",
    start_urls = ["http://127.0.0.1:8770/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 16,
    per_host = 16,
    output = ["books.csv?type=Book", "listings.jsonl?type=Listing"],
)]
struct Shelves;

/// A book, from its own page.
#[derive(Item, Serialize)]
struct Book {
    #[page(url)]
    url: String,
    #[css("h1.title")]
    title: String,
    #[json_ld("offers.price", type = "Product")]
    price: f64,
}

/// A listing page and how many books it lists.
#[derive(Serialize)]
struct Listing {
    url: String,
    books: usize,
}

/// What the spider finds, each written as its own struct.
#[derive(Serialize)]
#[serde(untagged)]
enum Found {
    Book(Book),
    Listing(Listing),
}

static LISTED: LazyLock<Selector> = LazyLock::new(|| css("h3 > a"));
static LINKS: LazyLock<Selector> = LazyLock::new(|| css("a[href]"));

#[allow(clippy::expect_used)]
fn css(selector: &str) -> Selector {
    Selector::parse(selector).expect("a selector written in this file")
}

#[async_trait]
impl Spider for Shelves {
    type Item = Found;

    async fn parse(&self, page: Page, cx: &mut Cx<Found>) -> Result {
        let url = page.url().to_string();
        // One parse: the book if this is a book's page, the listed books, the links.
        let (book, listed, links) =
            page.html(|doc| (doc.extract::<Book>(), doc.select(&LISTED).count(), doc.links(&LINKS))).await?;
        if let Some(book) = book? {
            cx.emit(Found::Book(book));
        }
        if listed > 0 && url.contains("/catalogue/page-") {
            cx.emit(Found::Listing(Listing { url, books: listed }));
        }
        cx.follow_all(links);
        Ok(())
    }
}

fn main() -> ExitCode {
    let site = match Sandbox::demo_on(DemoSite::default(), 8770) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve the demo site on 127.0.0.1:8770: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("demo site at {}", site.url());
    spiderling::cli::main::<Shelves>()
}
