//! Crawl the bundled demo bookshop, offline, and write every book once.
//!
//! ```text
//! cargo run --release --example books                      # writes books.jsonl
//! cargo run --release --example books -- --output books.csv
//! ```
//!
//! The demo site starts in-process on 127.0.0.1; it has 1,000 books over 50 listing
//! pages plus the traps a crawler must avoid: duplicate spellings of URLs, off-site
//! links, a robots.txt-disallowed area and a redirect.

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
    output: PathBuf,
    css: Arc<Selectors>,
}

#[async_trait]
impl Spider for Books {
    type Item = Book;

    fn config(&self) -> Config {
        Config::new("books")
            .start_url(&self.start)
            .allowed_domain("127.0.0.1")
            .concurrency(16)
            .per_host(16)
            .output(&self.output)
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

fn output_flag() -> std::result::Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    let mut output = PathBuf::from("books.jsonl");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--output" | "-o" => output = args.next().ok_or("--output needs a file name")?.into(),
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: books [--output FILE]"
                ))
            }
        }
    }
    Ok(output)
}

async fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let output = output_flag()?;
    let demo = DemoSite::default();
    let site = Sandbox::demo(demo.clone())?;
    println!("demo site at {}", site.url());
    let spider = Books {
        start: site.url(),
        output: output.clone(),
        css: Arc::new(Selectors {
            title: selector("h1.title")?,
            price: selector("p.price")?,
            availability: selector("p.availability")?,
            links: selector("a[href]")?,
        }),
    };
    let summary = Crawler::new(spider).run().await?;
    println!("{summary}");
    println!("wrote {} books to {}", summary.items, output.display());
    if summary.items != demo.books as u64 {
        return Err(format!("expected {} books, scraped {}", demo.books, summary.items).into());
    }
    Ok(())
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
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
