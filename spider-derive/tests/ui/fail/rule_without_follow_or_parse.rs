use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(allow = "/catalogue/page-"),
)]
struct Books;

fn main() {}
