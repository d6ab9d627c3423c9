use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(depth, default)]
    depth: u32,
}

fn main() {}
