//! The work of the hand-written contenders, written once so the concurrent and the
//! sequential loop do exactly the same per page: what a competent person writes without a
//! framework, and what the framework must also do (stay on the site, obey robots.txt,
//! deduplicate URL spellings, follow redirects through the same dedup, write each item).

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use percent_encoding::percent_decode_str;
use reqwest::header::LOCATION;
use scraper::{Html, Selector};
use url::Url;

use super::measure::{cpu_seconds, spin};

/// One book, as Spiderling's derived item writes it.
#[derive(serde::Serialize)]
struct Book {
    title: String,
    price: String,
    availability: Option<String>,
}

/// A page's yield: its item as a JSON line, if it has one, and its links.
pub(super) struct Scraped {
    pub(super) item: Option<String>,
    pub(super) links: Vec<Url>,
}

/// An answer as the loops need it.
pub(super) enum Fetched {
    /// A 2xx page, read whole.
    Page(String),
    /// A redirect's resolved target.
    Redirect(Url),
    /// Anything else: nothing to parse.
    Other,
}

/// The URLs still to fetch and every URL ever queued.
pub(super) struct Frontier {
    origin: String,
    disallowed: Vec<String>,
    seen: HashSet<String>,
    queue: VecDeque<Url>,
}

impl Frontier {
    /// A frontier for `start`'s site, given that site's robots.txt.
    pub(super) fn new(start: Url, robots: &str) -> Frontier {
        let disallowed = robots
            .lines()
            .filter_map(|line| line.strip_prefix("Disallow:"))
            .map(|path| path.trim().to_owned())
            .filter(|path| !path.is_empty())
            .collect();
        let mut frontier = Frontier {
            origin: start.origin().ascii_serialization(),
            disallowed,
            seen: HashSet::new(),
            queue: VecDeque::new(),
        };
        frontier.offer(start);
        frontier
    }

    /// Queue `url` unless it is off-site, disallowed or already seen in any spelling.
    pub(super) fn offer(&mut self, url: Url) {
        if url.origin().ascii_serialization() != self.origin {
            return;
        }
        let key = canonical(&url);
        if self.disallowed.iter().any(|prefix| key.starts_with(prefix.as_str())) {
            return;
        }
        if self.seen.insert(key) {
            self.queue.push_back(url);
        }
    }

    pub(super) fn next(&mut self) -> Option<Url> {
        self.queue.pop_front()
    }
}

/// The path percent-decoded and the query pairs sorted, empty ones dropped: two spellings
/// of one resource give one key (the origin is checked apart).
fn canonical(url: &Url) -> String {
    let path = percent_decode_str(url.path()).decode_utf8_lossy().into_owned();
    let mut pairs: Vec<&str> = url.query().unwrap_or("").split('&').filter(|p| !p.is_empty()).collect();
    pairs.sort_unstable();
    if pairs.is_empty() {
        path
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

/// Where both loops start: the CPU time and the clock when they began, the client, the
/// frontier seeded with `start` and its site's robots.txt, and the items file.
pub(super) struct Start {
    pub(super) cpu: f64,
    pub(super) started: Instant,
    pub(super) client: reqwest::Client,
    pub(super) frontier: Frontier,
    pub(super) out: BufWriter<File>,
}

/// Read the clocks, build the client, fetch robots.txt, seed the frontier, open `output`.
pub(super) async fn start(start: Url, output: &Path) -> std::io::Result<Start> {
    let (cpu, started) = (cpu_seconds(), Instant::now());
    let client = client().map_err(std::io::Error::other)?;
    let robots = robots_txt(&client, &start).await;
    let frontier = Frontier::new(start, &robots);
    let out = BufWriter::new(File::create(output)?);
    Ok(Start { cpu, started, client, frontier, out })
}

/// The client both loops use: no automatic redirects, so a redirect's target is
/// deduplicated like any link; a timeout, so no fetch waits for ever.
fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
}

/// Fetch `url`; the answer and the time it took, the body read whole.
pub(super) async fn fetch(client: &reqwest::Client, url: &Url) -> reqwest::Result<(Fetched, Duration)> {
    let start = Instant::now();
    let response = client.get(url.clone()).send().await?;
    let status = response.status();
    let location = response.headers().get(LOCATION).and_then(|to| to.to_str().ok()).map(str::to_owned);
    let body = response.text().await?;
    let fetched = if status.is_success() {
        Fetched::Page(body)
    } else if let Some(to) = location.filter(|_| status.is_redirection()).and_then(|to| url.join(&to).ok()) {
        Fetched::Redirect(to)
    } else {
        Fetched::Other
    };
    Ok((fetched, start.elapsed()))
}

/// The site's robots.txt; empty (everything allowed) when it cannot be had.
async fn robots_txt(client: &reqwest::Client, start: &Url) -> String {
    let Ok(url) = start.join("/robots.txt") else { return String::new() };
    match fetch(client, &url).await {
        Ok((Fetched::Page(text), _)) => text,
        _ => String::new(),
    }
}

/// Parse `html`, extract the book (when the page has one, paying `cost` for it as every
/// contender does) and every link.
pub(super) fn scrape(html: &str, base: &Url, cost: Duration) -> Scraped {
    static TITLE: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("h1.title").ok());
    static PRICE: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("p.price").ok());
    static STOCK: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("p.availability").ok());
    static LINKS: LazyLock<Option<Selector>> = LazyLock::new(|| Selector::parse("a[href]").ok());
    let document = Html::parse_document(html);
    let text = |selector: &Option<Selector>| {
        let element = document.select(selector.as_ref()?).next()?;
        Some(element.text().collect::<String>().trim().to_owned())
    };
    let item = text(&TITLE).zip(text(&PRICE)).map(|(title, price)| {
        spin(cost);
        let book = Book { title, price, availability: text(&STOCK) };
        serde_json::to_string(&book).unwrap_or_default()
    });
    let links = LINKS
        .as_ref()
        .map(|links| {
            document
                .select(links)
                .filter_map(|a| a.value().attr("href"))
                .filter_map(|href| base.join(href).ok())
                .collect()
        })
        .unwrap_or_default();
    Scraped { item, links }
}

/// Write one item line.
pub(super) fn write_item(out: &mut impl Write, item: &str) -> std::io::Result<()> {
    out.write_all(item.as_bytes())?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_resource_are_queued_once_and_traps_not_at_all() {
        let start = Url::parse("http://127.0.0.1:80/").unwrap();
        let mut frontier = Frontier::new(start, "User-agent: *\nDisallow: /private/\n");
        for spelling in [
            "http://127.0.0.1:80/catalogue/book_1.html",
            "http://127.0.0.1:80/catalogue/%62ook_1.html",
            "HTTP://127.0.0.1:80/catalogue/./book_1.html#reviews",
            "http://127.0.0.1:80/catalogue/book_1.html?",
            "http://127.0.0.1:80/p?b=2&a=1",
            "http://127.0.0.1:80/p?a=1&b=2",
            "http://localhost:80/catalogue/book_1.html",
            "http://127.0.0.1:80/private/admin.html",
            "mailto:shop@books.invalid",
        ] {
            frontier.offer(Url::parse(spelling).unwrap());
        }
        let queued: Vec<String> = std::iter::from_fn(|| frontier.next()).map(|u| canonical(&u)).collect();
        assert_eq!(queued, ["/", "/catalogue/book_1.html", "/p?a=1&b=2"]);
    }
}
