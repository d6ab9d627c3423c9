use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    rpm = 600,
    rpm = 300,
)]
struct Books;

fn main() {}
