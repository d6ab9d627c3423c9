use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(start_urls = ["https://books.example/"])]
struct Books<T> {
    marker: std::marker::PhantomData<T>,
}

fn main() {}
