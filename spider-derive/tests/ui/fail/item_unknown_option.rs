use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("a.cover", atr = "href")]
    cover: String,
}

fn main() {}
