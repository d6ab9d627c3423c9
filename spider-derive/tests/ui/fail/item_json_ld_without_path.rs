use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[json_ld(type = "Product")]
    price: String,
}

fn main() {}
