//! The demo shop's books: generated from their number, the same on every run.

/// One book of the demo catalogue, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Book {
    /// 1-based number; the page is `/catalogue/book_{id}.html`.
    pub id: usize,
    /// The `h1.title` text.
    pub title: String,
    /// The `p.price` text, such as `£23.17`.
    pub price: String,
    /// The `p.availability` text.
    pub availability: String,
    /// Its universal product code, 16 hex digits: the `sku` of its page's JSON-LD.
    pub upc: String,
}

impl Book {
    /// The JSON-LD block of its page: a schema.org `Product` with its name, its UPC as
    /// `sku`, and an `Offer` with the price (the `p.price` text without the pound sign,
    /// as a string so that `5.00` stays `5.00`), `GBP` and the availability, in the way
    /// shops publish product data beside their HTML.
    ///
    /// # Examples
    ///
    /// ```
    /// let book = &spider_sandbox::catalogue(1)[0];
    /// assert!(book.json_ld().contains(&format!(r#""sku": "{}""#, book.upc)));
    /// ```
    pub fn json_ld(&self) -> String {
        let availability = if self.availability.starts_with("In stock") { "InStock" } else { "OutOfStock" };
        // Titles come from the word lists above: nothing in them needs escaping in JSON.
        format!(
            r#"<script type="application/ld+json">
{{"@context": "https://schema.org", "@type": "Product", "name": "{}", "sku": "{}",
 "offers": {{"@type": "Offer", "price": "{}", "priceCurrency": "GBP", "availability": "https://schema.org/{availability}"}}}}
</script>"#,
            self.title,
            self.upc,
            self.price.trim_start_matches('£'),
        )
    }
}

const ADJECTIVES: [&str; 12] = [
    "Silent",
    "Crimson",
    "Hidden",
    "Last",
    "Wandering",
    "Golden",
    "Broken",
    "Endless",
    "Quiet",
    "Northern",
    "Paper",
    "Glass",
];
const NOUNS: [&str; 10] =
    ["Garden", "Harbour", "Machine", "Letters", "River", "Orchard", "Atlas", "Lantern", "Winter", "Signal"];

/// The first `count` books of the catalogue.
///
/// # Examples
///
/// ```
/// let books = spider_sandbox::catalogue(1000);
/// assert_eq!(books.len(), 1000);
/// assert_eq!(books[0].id, 1);
/// ```
pub fn catalogue(count: usize) -> Vec<Book> {
    (1..=count).map(book).collect()
}

pub(crate) fn book(id: usize) -> Book {
    let title = format!(
        "The {} {} ({})",
        ADJECTIVES[id % ADJECTIVES.len()],
        NOUNS[(id / ADJECTIVES.len()) % NOUNS.len()],
        id
    );
    let pence = 500 + (id * 7919) % 5000;
    let availability = if id.is_multiple_of(7) {
        "Out of stock".to_owned()
    } else {
        format!("In stock ({} available)", 1 + id % 20)
    };
    let upc = format!("{:016x}", (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    Book { id, title, price: format!("£{}.{:02}", pence / 100, pence % 100), availability, upc }
}
