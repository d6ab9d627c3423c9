//! A spider with its own `parse`, for what rules cannot say: many items per page, and
//! state carried from one page to the next.
//!
//! ```text
//! cargo run --release --example listings                      # writes listings.jsonl
//! ```
//!
//! It walks only the demo shop's listing pages (`a.next`), and emits one item per product
//! on each, with the page it was listed on, read from the request's meta.

use std::process::ExitCode;
use std::sync::LazyLock;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "listings",
    start_urls = ["http://127.0.0.1:8766/catalogue/page-1.html?sort=title&order=asc"],
    allowed_domains = ["127.0.0.1"],
    output = "listings.jsonl",
)]
struct Listings;

/// One product as a listing page shows it.
#[derive(Item, Serialize)]
struct Listed {
    #[css("h3 > a")]
    title: String,
    #[css("h3 > a", attr = "href")]
    url: Url,
    #[css("p.price_color", parse = pounds)]
    price: f64,
}

#[derive(Serialize)]
struct Row {
    listing_page: u64,
    #[serde(flatten)]
    product: Listed,
}

fn pounds(text: &str) -> std::result::Result<f64, std::num::ParseFloatError> {
    text.trim_start_matches('£').parse()
}

static PRODUCT: LazyLock<Selector> = LazyLock::new(|| css("article.product_pod"));
static NEXT: LazyLock<Selector> = LazyLock::new(|| css("a.next"));

#[allow(clippy::expect_used)]
fn css(selector: &str) -> Selector {
    Selector::parse(selector).expect("a selector written in this file")
}

#[async_trait]
impl Spider for Listings {
    type Item = Row;

    async fn parse(&self, page: Page, cx: &mut Cx<Row>) -> Result {
        let listing_page = page.request().meta().get("page").and_then(|p| p.as_u64()).unwrap_or(1);
        // One parse: every product of the page, and the next page's link.
        let (products, next) = page
            .html(|doc| {
                let products: Vec<_> =
                    doc.select(&PRODUCT).map(|product| doc.within(product).extract::<Listed>()).collect();
                (products, doc.links(&NEXT))
            })
            .await?;
        for product in products {
            if let Some(product) = product? {
                cx.emit(Row { listing_page, product });
            }
        }
        for url in next {
            cx.request(Request::new(url).with_meta("page", listing_page + 1));
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    let site = match Sandbox::demo_on(DemoSite::default(), 8766) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve the demo site on 127.0.0.1:8766: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("demo site at {}", site.url());
    spiderling::cli::main::<Listings>()
}
