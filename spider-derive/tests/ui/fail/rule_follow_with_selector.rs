use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(follow = "a.next"),
)]
struct Books;

fn main() {}
