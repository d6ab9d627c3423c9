use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/", "books.example/catalogue"],
)]
struct Books;

fn main() {}
