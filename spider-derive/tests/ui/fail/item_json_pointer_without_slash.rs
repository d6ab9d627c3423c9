use spiderling::prelude::*;

#[derive(Item)]
struct Offer {
    #[json("offers.0.price")]
    price: f64,
}

fn main() {}
