use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("p.price", default)]
    price: Option<String>,
}

fn main() {}
