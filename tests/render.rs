//! The rendering tier on real headless Chromium against the client-rendered shop: what the
//! site received (pages, API calls, scripts, images) and what the output holds.

#![cfg(feature = "render")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use spider_sandbox::{Observed, RenderedSite, Sandbox};
use spiderling::prelude::*;
use spiderling::Summary;

/// A product as the shop shows it, whichever way the page was built.
#[derive(Item, serde::Serialize)]
struct Product {
    #[css("h1.name")]
    name: String,
    #[css("p.price")]
    price: String,
    #[page(url)]
    url: String,
    #[page(rendered)]
    rendered: bool,
}

/// What the output holds of a product.
#[derive(Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    name: String,
    price: String,
    url: String,
    rendered: bool,
}

/// Every page rendered: the listing's "load more" clicked until it is gone.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    render = "always",
    delay = "0ms",
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Always;

/// The answer as sent first; a browser only for pages lacking their item or links.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    render = "auto",
    delay = "0ms",
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Auto;

async fn crawl<S: Spider>(spider: S, site: &Sandbox, dir: &Path, settings: &[(&str, &str)]) -> Summary {
    let mut config = spider.config().set("start_urls", &site.url()).unwrap().output(dir.join("out.jsonl"));
    for (key, value) in settings {
        config = config.set(key, value).unwrap();
    }
    Crawler::with_config(spider, config).run().await.unwrap()
}

fn rows(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    let mut rows: Vec<Row> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    rows.sort();
    rows
}

/// What the site received, by kind.
fn kinds(seen: &Observed) -> BTreeMap<&'static str, usize> {
    let mut kinds = BTreeMap::new();
    for hit in &seen.hits {
        *kinds.entry(RenderedSite::kind(&hit.target)).or_default() += 1;
    }
    kinds
}

/// The names of the shop's products, client-rendered and whole.
fn names(site: &RenderedSite) -> Vec<String> {
    let rendered = (1..=site.product_count()).map(|id| RenderedSite::product(id).0);
    let mut names: Vec<String> =
        rendered.chain((1..=site.plain_count()).map(|id| RenderedSite::product(1000 + id).0)).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_product_of_the_client_rendered_shop_once_when_every_page_is_rendered() {
    let shop = RenderedSite::new().products(12).page_size(5).plain(3).delay_ms(700);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Always, &site, dir.path(), &[]).await;

    let rows = rows(dir.path());
    let mut got: Vec<String> = rows.iter().map(|row| row.name.clone()).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once: {summary}");
    assert!(rows.iter().all(|row| row.rendered), "every page was read as the browser rendered it");
    let seen = kinds(&site.observed());
    // Home, the two listings, every product page: each document once, fetched by the crawl.
    let pages = 3 + shop.product_count() + shop.plain_count();
    assert_eq!(seen.get("page"), Some(&pages), "{seen:?}");
    assert_eq!(seen.get("script"), Some(&pages), "each rendered page loaded the script: {seen:?}");
    // The listing's pages, one per click, and one product each.
    assert_eq!(seen.get("api"), Some(&(shop.list_pages() + shop.product_count())), "{seen:?}");
    assert_eq!(seen.get("image"), None, "images refused: {seen:?}");
    assert_eq!(summary.counts.rendered, pages as u64);
    assert_eq!(summary.counts.render_actions, shop.list_pages() as u64 - 1, "one click per page left");
    assert!(summary.counts.subrequests_refused >= pages as u64, "a logo per page refused");
    assert_eq!(summary.failures, 0, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_renders_only_the_pages_that_lack_their_item_or_links_as_sent() {
    let shop = RenderedSite::new().products(10).page_size(5).plain(10).delay_ms(700);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Auto, &site, dir.path(), &[]).await;

    let rows = rows(dir.path());
    let mut got: Vec<String> = rows.iter().map(|row| row.name.clone()).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once: {summary}");
    for row in &rows {
        assert_eq!(row.rendered, row.url.contains("/product/"), "only the client-rendered pages: {row:?}");
    }
    let seen = kinds(&site.observed());
    // The script is loaded only by a page in the browser: the listing and its products.
    let rendered = 1 + shop.product_count();
    assert_eq!(seen.get("script"), Some(&rendered), "{seen:?}");
    assert_eq!(
        seen.get("page"),
        Some(&(3 + shop.product_count() + shop.plain_count())),
        "each page once: {seen:?}"
    );
    assert_eq!(summary.counts.rendered, rendered as u64, "{summary}");
    assert!(summary.counts.rendered_learnt > 0, "the product rule learnt: {summary}");
    assert_eq!(summary.failures, 0, "{summary}");
}
