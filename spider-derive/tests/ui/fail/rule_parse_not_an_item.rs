use spiderling::prelude::*;

#[derive(Serialize)]
struct Book {
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["https://books.example/"],
    rule(css = "h3 > a", parse = Book),
)]
struct Books;

fn main() {}
