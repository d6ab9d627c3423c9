//! Pages built by JavaScript: the sandbox's client-rendered shop, crawled in auto mode.
//!
//! ```text
//! cargo run --release --example rendered --features render    # writes products.jsonl
//! ```
//!
//! The shop (127.0.0.1:8768) sends half its pages as empty shells that a script fills in
//! from a JSON API: the listing's links (more behind a "load more" button) and each
//! product's name and price, written after a delay. The other half is served whole. The
//! spider reads every page as sent first; a page that lacks what its rule reads (a product
//! without its name, a listing without its links) is rendered in headless Chromium, its
//! "load more" clicked until it is gone, and read again. Once a rule's pages keep needing
//! the browser, they go to it at once, one in ten still read as sent to notice a change.
//! Every request the browser makes goes through the crawl: its identity, route and rate.

use std::process::ExitCode;

use spider_sandbox::{RenderedSite, Sandbox};
use spiderling::prelude::*;

const SHOP: &str = "http://127.0.0.1:8768/";

#[derive(Spider, Default)]
#[spider(
    name = "rendered",
    start_urls = ["http://127.0.0.1:8768/"],
    allowed_domains = ["127.0.0.1"],
    render = "auto",
    concurrency = 8,
    output = "products.jsonl",
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Shop;

/// A product: its page, its name and price, and whether a browser built it.
#[derive(Item, Serialize)]
struct Product {
    #[page(url)]
    url: String,
    #[css("h1.name")]
    name: String,
    #[css("p.price")]
    price: String,
    #[page(rendered)]
    rendered: bool,
}

fn main() -> ExitCode {
    let site = match Sandbox::rendered_on(RenderedSite::new(), 8768) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("cannot serve the client-rendered shop on {SHOP}: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("client-rendered shop at {}", site.url());
    spiderling::cli::run(Shop, std::env::args_os())
}
