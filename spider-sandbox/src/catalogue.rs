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
    Book { id, title, price: format!("£{}.{:02}", pence / 100, pence % 100), availability }
}
