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
    rule(allow = "/catalogue/", follow),
)]
struct Books;

fn main() {}
