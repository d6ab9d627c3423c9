use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Item, Serialize)]
struct Author {
    #[css("h1.name")]
    name: String,
}

#[derive(Item, Serialize)]
#[serde(untagged)]
enum Found {
    Book(Book),
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    item = Found,
    rule(allow = "/book/", parse = Book),
    rule(allow = "/author/", parse = Author, follow),
)]
struct Books;

fn main() {}
