use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    sitemap_urls = ["https://books.example/sitemap.xml"],
    sitemap_since = "01/02/2026",
)]
struct Books;

fn main() {}
