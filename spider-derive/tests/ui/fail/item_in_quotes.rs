use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    item = "Book",
)]
struct Books;

fn main() {}
