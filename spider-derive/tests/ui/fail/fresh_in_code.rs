use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    state = "books.state",
    fresh = true,
)]
struct Books;

fn main() {}
