use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    proxy_user_template = "{user}-zone-{country}",
)]
struct Books;

fn main() {}
