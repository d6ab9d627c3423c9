use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page()]
    url: String,
}

fn main() {}
