use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[json_ld("name", tpye = "Product")]
    name: String,
}

fn main() {}
