use spiderling::prelude::*;
use spiderling::SpiderConfig;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1.title")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    name = "books",
    start_urls = ["https://books.example/", "https://books.example/new"],
    allowed_domains = ["books.example"],
    profile = "polite",
    concurrency = 5,
    per_host = 3,
    rpm = 600,
    delay = "1s..3s",
    retries = 4,
    timeout = "20s",
    max_depth = 5,
    user_agent = "books-bot/1.0",
    headers = ["Accept-Language: en"],
    obey_robots = false,
    parse_threads = 2,
    output = "books.csv",
    follow = "a.next, h3 > a",
    item = Book,
)]
struct Books;

#[derive(Spider, Default)]
#[spider(rps = 2, delay = "500ms", follow = "a")]
struct LinksOnly;

fn main() {
    let config = Books.config();
    assert!(config.validate().is_ok());
    let settings = config.to_string();
    assert!(settings.contains("concurrency = 5 · per_host = 3 · rpm = 600"), "{settings}");
    assert!(LinksOnly.config().to_string().contains("settings of links_only"));
    fn crawls<S: Spider>(_: S) {}
    crawls(Books);
    crawls(LinksOnly);
}
