use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(url, final_url)]
    url: String,
}

fn main() {}
