//! Crawl the bundled demo bookshop, offline, and write every book once — with no crawl
//! code at all: the spider is its attribute, the item its selectors.
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

use std::process::ExitCode;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "books",
    start_urls = ["http://127.0.0.1:8765/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 16,
    per_host = 16,
    follow = "a[href]",
    item = Book,
    output = "books.jsonl",
)]
struct Books;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
    #[css("p.availability")]
    availability: Option<String>,
}

fn main() -> ExitCode {
    // Workers of one fleet crawl one site: the demo served once, by `spiderling sandbox
    // --port 8765`, is crawled where it is.
    let _site = match Sandbox::demo_on(DemoSite::default(), 8765) {
        Ok(site) => {
            println!("demo site at {}", site.url());
            Some(site)
        }
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            println!("demo site already served at http://127.0.0.1:8765/ (by `spiderling sandbox --port 8765`?); crawling it");
            None
        }
        Err(error) => {
            eprintln!("error: cannot serve the demo site on 127.0.0.1:8765: {error}");
            return ExitCode::FAILURE;
        }
    };
    spiderling::cli::main::<Books>()
}
