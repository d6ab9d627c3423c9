use spiderling::prelude::*;

#[derive(Item)]
struct Offer {
    #[json("/name")]
    name: String,
    #[json("/sizes/~eu")]
    size: Option<String>,
}

fn main() {}
