use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("p.price", parse = "parse_price")]
    price: f64,
}

fn main() {}
