use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    follow = "a.next:unknown-pseudo",
)]
struct Books;

fn main() {}
