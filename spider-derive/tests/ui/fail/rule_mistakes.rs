use spiderling::prelude::*;

// Every mistake of one rule reported at once, each at its token.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(css = "h3 >", allow = [], deny = 7, priority = 3000000000, follow = true),
)]
struct Books;

fn main() {}
