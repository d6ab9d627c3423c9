use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(alow = "/catalogue/page-", follow),
)]
struct Books;

fn main() {}
