use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    profile = "turbo",
)]
struct Books;

fn main() {}
