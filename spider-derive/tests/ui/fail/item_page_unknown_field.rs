use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(urll)]
    url: String,
}

fn main() {}
