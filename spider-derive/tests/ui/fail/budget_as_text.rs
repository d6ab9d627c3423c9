use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    proxy_budget = "20",
)]
struct Books;

fn main() {}
