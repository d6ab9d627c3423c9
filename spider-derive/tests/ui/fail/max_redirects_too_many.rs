use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    max_redirects = 300,
)]
struct Books;

fn main() {}
