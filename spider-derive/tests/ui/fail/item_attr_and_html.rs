use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("a.cover", attr = "href", html)]
    cover: String,
}

fn main() {}
