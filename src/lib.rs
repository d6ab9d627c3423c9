//! Spiderling: declarative web spiders for Rust.
//!
//! A spider says where to start and what to do with a page; Spiderling turns it into a
//! scheduled crawl: deduplicated frontier, robots.txt, a global and a per-host
//! concurrency cap, a hard rate ceiling, politeness pauses with jitter, retries with
//! decorrelated-jitter backoff, HTML parsing on a bounded thread pool, and items streamed
//! to JSON Lines, CSV or JSON.
//!
//! ```text
//! #[spider(..)] ─► frontier ─► robots ─► admission ─► fetch ─► classify ─► parse pool ─► export
//!                     ▲                                                        │
//!                     └────────────── follow rules / Cx::follow ◄──────────────┘
//! ```
//!
//! # Examples
//!
//! The whole spider, with no crawl code (see [`Spider`](derive@Spider) for every key and
//! [`Item`](derive@Item) for every field option):
//!
//! ```no_run
//! use spiderling::prelude::*;
//!
//! #[derive(Spider, Default)]
//! #[spider(
//!     name = "books",
//!     start_urls = ["http://127.0.0.1:8000/"],
//!     allowed_domains = ["127.0.0.1"],
//!     profile = "general",
//!     rpm = 600,
//!     follow = "a.next, h3 > a",
//!     item = Book,
//!     output = "books.jsonl",
//! )]
//! struct Books;
//!
//! #[derive(Item, Serialize)]
//! struct Book {
//!     #[css("h1.title")]
//!     title: String,
//!     #[css("p.price", parse = pounds)]
//!     price: f64,
//!     #[css("p.availability")]
//!     stock: Option<String>,
//! }
//!
//! fn pounds(text: &str) -> std::result::Result<f64, std::num::ParseFloatError> {
//!     text.trim_start_matches('£').parse()
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     spiderling::cli::main::<Books>() // -o FILE, --set key=value, SPIDERLING_KEY=value
//! }
//! ```
//!
//! When rules are not enough, leave out `follow` and `item` and write `parse`; do the
//! page's work in one [`Page::html`] job so it is parsed once:
//!
//! ```no_run
//! use spiderling::prelude::*;
//! # #[derive(Item, Serialize)] struct Book { #[css("h1")] title: String }
//!
//! #[derive(Spider, Default)]
//! #[spider(start_urls = ["http://127.0.0.1:8000/"])]
//! struct Books;
//!
//! #[async_trait]
//! impl Spider for Books {
//!     type Item = Book;
//!
//!     async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
//!         let next = Selector::parse("a.next").map_err(|e| e.to_string())?;
//!         let (book, links) = page.html(move |doc| (doc.extract::<Book>(), doc.links(&next))).await?;
//!         if let Some(book) = book? {
//!             cx.emit(book);
//!         }
//!         cx.follow_all(links);
//!         Ok(())
//!     }
//! }
//! ```

pub mod cli;

pub use spider_core::*;
pub use spider_derive::{Item, Spider};

/// What a spider needs, in one import.
pub mod prelude {
    pub use serde::{Deserialize, Serialize};
    pub use spider_core::scraper::Selector;
    pub use spider_core::url::Url;
    pub use spider_core::{
        async_trait, Config, CrawlStatus, Crawler, Cx, Document, Dropped, Error, Form, Item, Page, Pipeline,
        Record, Request, Result, Spider, SpiderConfig, Stages, Start, Verdict,
    };
    pub use spider_derive::{Item, Spider};
}
