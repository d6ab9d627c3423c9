use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(extract = "fast", follow = "a.next")]
struct Books;

fn main() {}
