use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("p..price")]
    price: String,
}

fn main() {}
