use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(allow = r"/catalogue/book_(\d+\.html", parse = Book),
)]
struct Books;

fn main() {}
