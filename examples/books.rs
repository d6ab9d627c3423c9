//! Crawl the bundled demo bookshop, offline, and write every book once.
//!
//! ```text
//! cargo run --release --example books                      # writes books.jsonl
//! cargo run --release --example books -- --output books.csv
//! cargo run --release --example books -- --rps 50            # a polite 50 requests/s
//! ```
//!
//! The demo site starts in-process on 127.0.0.1; it has 1,000 books over 50 listing
//! pages plus the traps a crawler must avoid: duplicate spellings of URLs, off-site
//! links, a robots.txt-disallowed area and a redirect.
//!
//! Ctrl-C stops admitting, lets requests in flight finish, and still writes every item
//! scraped so far, the stats and the failures file; a second Ctrl-C stops at once. The
//! exit code says how it ended (0 complete, 3 with failures, 130 interrupted).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;

#[derive(Serialize)]
struct Book {
    url: String,
    title: String,
    price: String,
    availability: Option<String>,
}

struct Selectors {
    title: Selector,
    price: Selector,
    availability: Selector,
    links: Selector,
}

struct Books {
    start: String,
    flags: Flags,
    css: Arc<Selectors>,
}

#[async_trait]
impl Spider for Books {
    type Item = Book;

    fn config(&self) -> Config {
        let config = Config::new("books")
            .start_url(&self.start)
            .allowed_domain("127.0.0.1")
            .concurrency(16)
            .per_host(16)
            .output(&self.flags.output);
        match self.flags.rps {
            Some(rps) => config.rps(rps),
            None => config,
        }
    }

    async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
        let css = self.css.clone();
        let url = page.url().to_string();
        // One parse of the page, on the parse pool, for the item and the links.
        let (book, links) = page
            .html(move |doc| {
                let book = doc.text(&css.title).map(|title| Book {
                    url,
                    title,
                    price: doc.text(&css.price).unwrap_or_default(),
                    availability: doc.text(&css.availability),
                });
                (book, doc.links(&css.links))
            })
            .await?;
        if let Some(book) = book {
            cx.emit(book);
        }
        cx.follow_all(links);
        Ok(())
    }
}

fn selector(css: &str) -> std::result::Result<Selector, String> {
    Selector::parse(css).map_err(|e| format!("selector {css:?}: {e}"))
}

#[derive(Clone)]
struct Flags {
    output: PathBuf,
    rps: Option<u32>,
}

const USAGE: &str = "usage: books [--output FILE] [--rps N]";

fn flags() -> std::result::Result<Flags, String> {
    let mut args = std::env::args().skip(1);
    let mut flags = Flags {
        output: PathBuf::from("books.jsonl"),
        rps: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--output" | "-o" => {
                let file = args
                    .next()
                    .ok_or(format!("--output needs a file name; {USAGE}"))?;
                flags.output = file.into();
            }
            "--rps" => {
                let value = args.next().unwrap_or_default();
                let rps = value
                    .parse()
                    .map_err(|_| format!("--rps needs a whole number, not {value:?}; {USAGE}"))?;
                flags.rps = Some(rps);
            }
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        }
    }
    Ok(flags)
}

async fn run() -> std::result::Result<ExitCode, Box<dyn std::error::Error>> {
    let flags = flags()?;
    let demo = DemoSite::default();
    let site = Sandbox::demo(demo.clone())?;
    println!("demo site at {}", site.url());
    let spider = Books {
        start: site.url(),
        flags: flags.clone(),
        css: Arc::new(Selectors {
            title: selector("h1.title")?,
            price: selector("p.price")?,
            availability: selector("p.availability")?,
            links: selector("a[href]")?,
        }),
    };
    let summary = Crawler::new(spider).run().await?;
    println!("{summary}");
    println!(
        "wrote {} books to {}",
        summary.items,
        flags.output.display()
    );
    if summary.status == CrawlStatus::Complete && summary.items != demo.books as u64 {
        return Err(format!("expected {} books, scraped {}", demo.books, summary.items).into());
    }
    Ok(summary.exit_code())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run().await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
