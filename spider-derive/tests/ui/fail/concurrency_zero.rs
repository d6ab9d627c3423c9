use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    concurrency = 0,
)]
struct Books;

fn main() {}
