use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    item = Book,
    rule(allow = "/catalogue/book_", parse = Book),
)]
struct Books;

fn main() {}
