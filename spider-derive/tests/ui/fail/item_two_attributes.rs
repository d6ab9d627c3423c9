use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("h1.title")]
    #[page(url)]
    title: String,
}

fn main() {}
