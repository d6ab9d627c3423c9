use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    concurrency = 0,
    delay = "2s..1s",
    start_urls = ["not a url"],
    rmp = 600,
)]
struct Books;

fn main() {}
