use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    concurrency = "20",
)]
struct Books;

fn main() {}
