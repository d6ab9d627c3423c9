use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    sitemap_urls = ["/sitemap.xml"],
)]
struct Books;

fn main() {}
