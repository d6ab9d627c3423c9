use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[json_ld("description", html)]
    description: String,
}

fn main() {}
