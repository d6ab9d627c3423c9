use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    rpm = 0,
)]
struct Books;

fn main() {}
