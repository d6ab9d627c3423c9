use spiderling::prelude::*;

fn cents(text: &str) -> std::result::Result<u32, std::num::ParseIntError> {
    text.replace(['£', '.'], "").parse()
}

#[derive(Item, Serialize)]
struct Book {
    #[css("h1.title")]
    title: String,
    #[css("p.price", parse = cents)]
    price: u32,
    #[css("span.stock")]
    stock: u32,
    #[css("p.subtitle")]
    subtitle: Option<String>,
    #[css("li.tag")]
    tags: Vec<String>,
    #[css("a.cover", attr = "href")]
    cover: Url,
    #[css("a.cover", attr = "title")]
    cover_title: Option<String>,
    #[css("div.blurb", html)]
    blurb: String,
    #[css("span.rating", default)]
    rating: u8,
    #[css("li.score", parse = cents)]
    scores: Vec<u32>,
}
