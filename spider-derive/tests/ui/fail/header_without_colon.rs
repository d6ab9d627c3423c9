use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    headers = ["Accept-Language en"],
)]
struct Books;

fn main() {}
