use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    concurency = 4,
)]
struct Books;

fn main() {}
