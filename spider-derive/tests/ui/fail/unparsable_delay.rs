use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    delay = "a while",
)]
struct Books;

fn main() {}
