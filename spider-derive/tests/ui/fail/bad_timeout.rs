use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    timeout = 30,
)]
struct Books;

fn main() {}
