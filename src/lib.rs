//! Spiderling: declarative web spiders for Rust.
//!
//! A spider says where to start and what to do with a page; Spiderling turns it into a
//! scheduled crawl: deduplicated frontier, robots.txt, a global and a per-host
//! concurrency cap, a hard rate ceiling, politeness pauses with jitter, retries with
//! decorrelated-jitter backoff, HTML parsing on a bounded thread pool, and items streamed
//! to JSON Lines, CSV or JSON.
//!
//! ```text
//! Spider::config ─► frontier ─► robots ─► admission ─► fetch ─► classify ─► parse pool ─► export
//!                      ▲                                                       │
//!                      └───────────────────── Cx::follow ◄─────────────────────┘
//! ```
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//! use spiderling::prelude::*;
//!
//! #[derive(Serialize)]
//! struct Book {
//!     title: String,
//! }
//!
//! struct Books {
//!     title: Arc<Selector>,
//!     links: Arc<Selector>,
//! }
//!
//! #[async_trait]
//! impl Spider for Books {
//!     type Item = Book;
//!
//!     fn config(&self) -> Config {
//!         Config::new("books")
//!             .start_url("http://127.0.0.1:8000/")
//!             .allowed_domain("127.0.0.1")
//!             .concurrency(16)
//!             .output("books.jsonl")
//!     }
//!
//!     async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
//!         let (title, links) = (self.title.clone(), self.links.clone());
//!         // One HTML parse, on the parse pool, for both the item and the links.
//!         let (title, links) = page.html(move |doc| (doc.text(&title), doc.links(&links))).await?;
//!         if let Some(title) = title {
//!             cx.emit(Book { title });
//!         }
//!         cx.follow_all(links);
//!         Ok(())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
//!     let spider = Books {
//!         title: Arc::new(Selector::parse("h1.title").map_err(|e| e.to_string())?),
//!         links: Arc::new(Selector::parse("a").map_err(|e| e.to_string())?),
//!     };
//!     println!("{}", Crawler::new(spider).run().await?);
//!     Ok(())
//! }
//! ```

pub use spider_core::*;

/// What a spider needs, in one import.
pub mod prelude {
    pub use serde::Serialize;
    pub use spider_core::scraper::Selector;
    pub use spider_core::url::Url;
    pub use spider_core::{
        async_trait, Config, CrawlStatus, Crawler, Cx, Document, Error, Page, Request, Result,
        Spider,
    };
}
