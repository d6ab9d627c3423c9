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

fn upper(text: &str) -> std::result::Result<String, std::convert::Infallible> {
    Ok(text.to_uppercase())
}

#[derive(Item, Serialize)]
struct Product {
    #[css("h1.title")]
    title: String,
    #[json_ld("offers.price")]
    price: f64,
    #[json_ld("name", type = "Product", parse = upper)]
    name: String,
    #[json_ld("image")]
    images: Vec<Url>,
    #[json_ld("aggregateRating.ratingValue")]
    rating: Option<f32>,
    #[json_ld("sku", default)]
    sku: String,
    #[page(url)]
    url: Url,
    #[page(final_url)]
    final_url: String,
    #[page(status)]
    status: u16,
    #[page(fetched_at)]
    fetched_at: String,
    #[page(depth)]
    depth: u32,
    #[page(meta = "category")]
    category: Option<String>,
    #[page(meta = "shelf", default)]
    shelf: String,
    #[page(meta = "rank", parse = upper)]
    rank: String,
}

/// An item of page fields only: every page has one.
#[derive(Item, Serialize)]
struct Visit {
    #[page(url)]
    url: String,
    #[page(status)]
    status: u16,
}
