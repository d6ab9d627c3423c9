use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    proxy = "http://me:hunter2@gw.example:8000",
)]
struct Books;

fn main() {}
