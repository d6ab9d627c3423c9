use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    render = "sometimes",
    rule(css = "h3 > a", parse = Book, render = "allways", click = "button[", scroll = true),
)]
struct Books;

fn main() {}
