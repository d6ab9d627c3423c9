use spiderling::prelude::*;

#[derive(Item)]
struct Book {
    #[css("li.tag")]
    tags: Option<Vec<String>>,
}

fn main() {}
