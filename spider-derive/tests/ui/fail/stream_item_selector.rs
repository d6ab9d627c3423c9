use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1 + p")]
    subtitle: String,
}

#[derive(Spider, Default)]
#[spider(extract = "stream", follow = "a.next", item = Book)]
struct Books;

fn main() {}
