use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[page("url")]
    url: String,
}

fn main() {}
