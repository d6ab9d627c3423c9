use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("h1.title")]
    title: String,
    #[page(url)]
    urls: Vec<String>,
}

fn main() {}
