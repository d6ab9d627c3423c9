use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(status)]
    status: Option<u16>,
}

fn main() {}
