use spiderling::prelude::*;

#[derive(Item, Serialize)]
#[item(validate = priced)]
struct Book {
    #[css("h1")]
    title: String,
}

fn priced(book: Book) -> bool {
    !book.title.is_empty()
}

fn main() {}
