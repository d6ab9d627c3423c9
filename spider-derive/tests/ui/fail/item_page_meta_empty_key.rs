use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(meta = "")]
    category: String,
}

fn main() {}
