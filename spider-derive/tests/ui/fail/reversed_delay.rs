use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    delay = "3s..1s",
)]
struct Books;

fn main() {}
