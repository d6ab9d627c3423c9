use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Item, Serialize)]
enum Found {
    Book(Book),
    Again(Book),
    Author { name: String },
}

#[derive(Item, Serialize)]
enum Empty {}

fn main() {}
