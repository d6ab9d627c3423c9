use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("h1")]
    title: String,
    price: String,
}

fn main() {}
