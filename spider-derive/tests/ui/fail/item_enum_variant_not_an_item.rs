use spiderling::prelude::*;

#[derive(Item)]
enum Book {
    Title(String),
}

fn main() {}
