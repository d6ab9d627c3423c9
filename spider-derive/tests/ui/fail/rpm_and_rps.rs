use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    rpm = 600,
    rps = 10,
)]
struct Books;

fn main() {}
