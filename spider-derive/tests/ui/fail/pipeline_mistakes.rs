use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

struct NotAStage;

#[derive(Spider)]
#[spider(rule(css = "a", parse = Book), pipeline = [NotAStage])]
struct Books;

#[derive(Spider)]
#[spider(name = "hand_written", pipeline = [NotAStage])]
struct HandWritten;

#[derive(Spider)]
#[spider(rule(css = "a", parse = Book), pipeline = [])]
struct Empty;

fn main() {}
