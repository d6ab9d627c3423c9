use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    extract = "stream",
    rule(css = "ul > li:nth-child(2) a", follow),
    rule(css = "h3 > a", parse = Book),
)]
struct Books;

fn main() {}
