use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    geo = "usa",
)]
struct Books;

fn main() {}
