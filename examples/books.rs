//! Crawl the bundled demo bookshop, offline, and write every book once — with no crawl
//! code at all: the spider is its attribute and two link rules (listings are followed,
//! books scraped), the item its page's URL, CSS selectors and the page's JSON-LD.
//!
//! ```text
//! cargo run --release --example books                         # writes books.jsonl
//! cargo run --release --example books -- -o books.csv
//! cargo run --release --example books -- --set rps=50         # a polite 50 requests/s
//! cargo run --release --example books -- --help
//! ```
//!
//! The demo site starts in-process on 127.0.0.1:8765 (or, when something serves that port
//! already, such as `spiderling sandbox --port 8765` for a fleet of workers, that is
//! crawled); it has 1,000 books over 50 listing pages plus the traps a crawler must
//! avoid: duplicate spellings of URLs, off-site links, a robots.txt-disallowed area and a
//! redirect.
//!
//! Ctrl-C stops admitting, lets requests in flight finish, and still writes every item
//! scraped so far, the stats and the failures file; a second Ctrl-C stops at once. The
//! exit code says how it ended (0 complete, 3 with failures, 130 interrupted).

use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "books",
    start_urls = ["http://127.0.0.1:8765/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 16,
    per_host = 16,
    // Listings lead to books: follow their links, scrape nothing.
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    // Books: the title links of a listing, each page scraped into a `Book`, and fetched
    // before further listings so items flow from the first second.
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Book, priority = 10),
    output = "books.jsonl",
)]
struct Books;

#[derive(Item, Serialize)]
struct Book {
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
}

fn main() -> std::process::ExitCode {
    use spider_sandbox::{DemoSite, Sandbox};
    // Workers of one fleet crawl one site: the demo served once, by `spiderling sandbox
    // --port 8765`, is crawled where it is.
    let _site = match Sandbox::demo_on(DemoSite::default(), 8765) {
        Ok(site) => {
            println!("demo site at {}", site.url());
            Some(site)
        }
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            println!(
                "demo site already served at http://127.0.0.1:8765/ (by `spiderling sandbox --port \
                8765`?); crawling it"
            );
            None
        }
        Err(error) => {
            eprintln!("error: cannot serve the demo site on 127.0.0.1:8765: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    spiderling::cli::main::<Books>()
}
