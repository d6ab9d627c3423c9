use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    follow = "a.next",
    rule(allow = "/catalogue/", follow),
)]
struct Books;

fn main() {}
