use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page(status = "200")]
    status: u16,
}

fn main() {}
