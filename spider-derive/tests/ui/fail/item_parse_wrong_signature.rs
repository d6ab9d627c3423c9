use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("p.price", parse = parse_price)]
    price: f64,
}

fn parse_price(text: String) -> f64 {
    text.len() as f64
}

fn main() {}
