use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    impersonate = "safari",
    rule(css = "h3 > a", parse = Book, impersonate = "chorme"),
)]
struct Books;

fn main() {}
