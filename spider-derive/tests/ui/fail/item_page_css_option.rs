use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(url, attr = "href")]
    url: String,
}

fn main() {}
