use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[json_ld("name", type = Product)]
    name: String,
}

fn main() {}
