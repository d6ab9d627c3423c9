use spiderling::prelude::*;

#[derive(Item, Serialize)]
#[item(key)]
struct Book {
    #[css("h1")]
    #[item(key)]
    title: String,
    #[css("p.sku")]
    #[item(key, validate = check)]
    sku: String,
}

fn check(_: &Book) -> std::result::Result<(), String> {
    Ok(())
}

fn main() {}
