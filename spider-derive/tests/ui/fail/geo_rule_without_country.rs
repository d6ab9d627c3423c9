use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    geo_rules = ["*.de=de", "*.fr"],
)]
struct Books;

fn main() {}
