use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[json_ld("offers..price")]
    price: String,
}

fn main() {}
