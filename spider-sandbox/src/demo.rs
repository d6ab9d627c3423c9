//! The demo book shop.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::catalogue::book;

/// The demo site: a book shop with a fixed catalogue and every trap a crawler must avoid.
///
/// Layout (`N` = `books`, `P` = `per_page`):
/// - `/robots.txt` disallows `/private/`, with `Crawl-delay` when `crawl_delay` is set,
///   and names `/sitemap.xml` in a `Sitemap:` line (an absolute URL, with the Host the
///   request named).
/// - `/` links the first listing, a redirect, a staff page under `/private/`, an
///   off-site page (the other loopback name: `localhost` when the site is served as
///   `127.0.0.1`, `127.0.0.1` when it is served as `localhost` over TLS), an
///   out-of-scope domain and a `mailto:`.
/// - `/catalogue/page-K.html` lists books `(K-1)·P+1 ..= K·P` as `h3 > a` links and
///   links the next page as `a.next`. Each book is also linked in another spelling
///   (fragment, percent-encoded, dot segment, empty query, an absolute URL with an
///   upper-case scheme and the host the request named), each next page twice with its
///   query in two orders, and each listing has a mirror link to the other loopback name.
/// - `/catalogue/book_I.html` has `h1.title`, `p.price` and `p.availability`, the same
///   facts in a JSON-LD `Product` ([`Book::json_ld`](crate::Book::json_ld)), and links
///   back to the first listing and to a related book.
/// - `/catalogue/latest` redirects (301) to the last book.
/// - `/sitemap.xml` is a sitemap index (`application/xml`) of two sitemaps:
///   `/sitemap-books.xml.gz`, served as `application/gzip` without a `Content-Encoding`
///   (a gzipped file, told by its bytes), lists every book with its `<lastmod>`
///   ([`book_modified`](Self::book_modified)); `/sitemap-listings.xml` lists every listing
///   in the spelling the listings link it, without `<lastmod>`. Nothing links them.
/// - Two sitemaps for the failures of a reader, listed nowhere: `/sitemap-broken.xml`
///   lists books 1 to 3, then its XML breaks in book 4's entry (`</lok>` closing a `<loc>`);
///   `/sitemap-huge.xml` lists 50,001 URLs, one more than the protocol allows, from
///   `/catalogue/book_1.html` on (past the catalogue's end, they are 404s), about 3 MB.
///
/// Every page and robots.txt carries validators, so an HTTP cache can revalidate them: a
/// strong `ETag` (the quoted hex hash of the exact body bytes, so it changes whenever the
/// body does, with `page_bytes` or the Host the page was asked as) and `Last-Modified`
/// ([`last_modified`](Self::last_modified)). A GET or HEAD whose `If-None-Match` lists that
/// tag (weak comparison, a list or `*`) is answered `304 Not Modified` with both validators
/// and no body; without `If-None-Match`, so is one whose `If-Modified-Since` is at or after
/// `Last-Modified` (RFC 9110 §13.2.2). Any other method whose `If-None-Match` matches gets
/// `412 Precondition Failed`. [`Hit::conditional`](crate::Hit::conditional) marks the
/// requests that asked.
///
/// A complete, correct crawl fetches every listing and every book exactly once.
#[derive(Debug, Clone)]
pub struct DemoSite {
    /// Books in the catalogue (default 1,000).
    pub books: usize,
    /// Books per listing page (default 20).
    pub per_page: usize,
    /// Time the server waits before answering any page (default none).
    pub latency: Duration,
    /// A `Crawl-delay` line in robots.txt (default none).
    pub crawl_delay: Option<Duration>,
    /// Every HTML page is padded with filler paragraphs to at least this many bytes
    /// (default 0: no filler). Benchmarks set it so that pages weigh what real pages do
    /// and parsing costs what it would; the filler holds no links, so the crawl is the same.
    pub page_bytes: usize,
    /// Listing pages each listing links to, the next one first (default 1: only "next").
    /// A wider pager makes a wider frontier: with `k`, a crawl finds `k` new listings per
    /// listing fetched instead of one, so high concurrency has enough to fetch at once.
    pub pager: usize,
    /// The `Last-Modified` date of every page and of robots.txt, to the second (default
    /// 2025-01-01T00:00:00Z). Dates before 1970 or after 9999 are clamped.
    pub last_modified: SystemTime,
}

/// 2025-01-01T00:00:00Z.
const LAST_MODIFIED: Duration = Duration::from_secs(1_735_689_600);

impl Default for DemoSite {
    fn default() -> Self {
        DemoSite {
            books: 1000,
            per_page: 20,
            latency: Duration::ZERO,
            crawl_delay: None,
            page_bytes: 0,
            pager: 1,
            last_modified: UNIX_EPOCH + LAST_MODIFIED,
        }
    }
}

/// Where a page is served from, for the absolute links on it.
pub(crate) struct Origin<'a> {
    /// `http` or `https`.
    pub(crate) scheme: &'a str,
    /// The Host the request named (`127.0.0.1:PORT`, or `shop.de:PORT` through a gateway).
    pub(crate) host: &'a str,
    /// The other loopback spelling with this port: reachable, but another site.
    pub(crate) elsewhere: &'a str,
}

/// An answer of the demo site.
pub(crate) enum Answer {
    Html(String),
    Text(String),
    Xml(String),
    Gzip(Vec<u8>),
    Redirect(String),
    NotFound,
}

impl DemoSite {
    /// Listing pages in the catalogue.
    pub fn listing_pages(&self) -> usize {
        self.books.div_ceil(self.per_page.max(1))
    }

    /// Pages a complete crawl fetches: the home page, every listing and every book.
    pub fn expected_pages(&self) -> usize {
        1 + self.listing_pages() + self.books
    }

    pub(crate) fn answer(&self, path: &str, origin: &Origin<'_>) -> Answer {
        if path == "/robots.txt" {
            let mut txt = "User-agent: *\nDisallow: /private/\n".to_owned();
            if let Some(delay) = self.crawl_delay {
                let _ = writeln!(txt, "Crawl-delay: {}", delay.as_secs_f64());
            }
            let _ = writeln!(txt, "\nSitemap: {}://{}/sitemap.xml", origin.scheme, origin.host);
            return Answer::Text(txt);
        }
        if let Some(sitemap) = self.sitemap(path, origin) {
            return sitemap;
        }
        match self.html(path, origin) {
            Some(html) => Answer::Html(pad(html, self.page_bytes)),
            None if path == "/catalogue/latest" => {
                Answer::Redirect(format!("/catalogue/book_{}.html", self.books))
            }
            None => Answer::NotFound,
        }
    }

    /// The HTML page at `path`, if there is one.
    fn html(&self, path: &str, origin: &Origin<'_>) -> Option<String> {
        if path == "/" || path == "/index.html" {
            return Some(self.home(origin));
        }
        if path.starts_with("/private/") {
            return Some(page("Staff only", "<p>Crawlers should not be here.</p>"));
        }
        if let Some(k) =
            number(path, "/catalogue/page-", ".html").filter(|k| (1..=self.listing_pages()).contains(k))
        {
            return Some(self.listing(k, origin));
        }
        if let Some(i) = number(path, "/catalogue/book_", ".html").filter(|i| (1..=self.books).contains(i)) {
            return Some(self.book_page(i));
        }
        None
    }

    fn home(&self, origin: &Origin<'_>) -> String {
        let Origin { scheme, elsewhere, .. } = origin;
        page(
            "Demo bookshop",
            &format!(
                r#"<ul>
<li><a href="catalogue/page-1.html?sort=title&amp;order=asc">All books</a></li>
<li><a href="/catalogue/latest">Newest book</a></li>
<li><a href="/private/admin.html">Staff</a></li>
<li><a href="{scheme}://{elsewhere}/offsite.html">Our partner</a></li>
<li><a href="https://elsewhere.invalid/">Elsewhere</a></li>
<li><a href="mailto:shop@books.invalid">Write to us</a></li>
</ul>"#
            ),
        )
    }

    fn listing(&self, k: usize, origin: &Origin<'_>) -> String {
        let Origin { scheme, host, elsewhere } = origin;
        let shouted = scheme.to_ascii_uppercase();
        let first = (k - 1) * self.per_page + 1;
        let last = (k * self.per_page).min(self.books);
        let mut body = String::from("<ol class=\"row\">\n");
        for i in first..=last {
            let b = book(i);
            let variant = match i % 4 {
                0 => format!("book_{i}.html#reviews"),
                1 => format!("/catalogue/%62ook_{i}.html"),
                2 => format!("{shouted}://{host}/catalogue/./book_{i}.html"),
                _ => format!("../catalogue/book_{i}.html?"),
            };
            let _ = writeln!(
                body,
                r#"<li><article class="product_pod"><h3><a href="book_{i}.html">{}</a></h3><p class="price_color">{}</p><a class="quick" href="{variant}">Quick view</a></article></li>"#,
                b.title, b.price
            );
        }
        body.push_str("</ol>\n");
        if k < self.listing_pages() {
            let next = k + 1;
            body.push_str(r#"<ul class="pager">"#);
            let _ = write!(
                body,
                r#"<li><a class="next" href="page-{next}.html?sort=title&amp;order=asc">next</a></li>"#
            );
            for further in (k + 2..=k + self.pager).take_while(|&n| n <= self.listing_pages()) {
                let _ = write!(
                    body,
                    r#"<li><a href="page-{further}.html?sort=title&amp;order=asc">{further}</a></li>"#
                );
            }
            let _ = writeln!(
                body,
                r#"</ul>
<p class="bottom"><a href="page-{next}.html?order=asc&amp;sort=title#top">next page</a></p>"#
            );
        }
        let _ = writeln!(
            body,
            r#"<p><a href="/private/page-{k}.html">Edit</a> <a href="{scheme}://{elsewhere}/catalogue/page-{k}.html">Mirror</a></p>"#
        );
        page(&format!("Catalogue, page {k}"), &body)
    }

    fn book_page(&self, i: usize) -> String {
        let b = book(i);
        let related = i * 7 % self.books + 1;
        page(
            &b.title,
            &format!(
                r#"{}
<article class="product_page">
<h1 class="title">{}</h1>
<p class="price">{}</p>
<p class="availability">{}</p>
</article>
<p><a href="page-1.html?order=asc&amp;sort=title">Back to the catalogue</a>
<a href="book_{related}.html">You may also like</a>
<a href="/private/edit/{i}">Edit</a></p>"#,
                b.json_ld(),
                b.title,
                b.price,
                b.availability
            ),
        )
    }
}

impl DemoSite {
    /// The `<lastmod>` of book `id` in `/sitemap-books.xml.gz`: before 2026-01-01 in UTC
    /// for odd books, on or after it for even ones. Half of each are written with a zone
    /// that puts their local date on the other side of that day, and the rest are a date
    /// (odd) or a W3C datetime (even), so a reader that ignores zones gets half wrong.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_sandbox::DemoSite;
    /// assert_eq!(DemoSite::book_modified(2), "2025-12-31T23:30:00-01:00");
    /// assert_eq!(DemoSite::book_modified(3), "2026-01-01T00:30:00+01:00");
    /// ```
    pub fn book_modified(id: usize) -> String {
        let day = 1 + id % 28;
        match id % 4 {
            // 10:00 two hours east of UTC, in 2026.
            0 => format!("2026-03-{day:02}T10:00:00+02:00"),
            // A date in 2025.
            1 => format!("2025-11-{day:02}"),
            // 23:30 an hour west of UTC on the last day of 2025: already 2026 in UTC.
            2 => "2025-12-31T23:30:00-01:00".to_owned(),
            // 00:30 an hour east of UTC on the first day of 2026: still 2025 in UTC.
            _ => "2026-01-01T00:30:00+01:00".to_owned(),
        }
    }

    /// The sitemaps, when `path` is one.
    fn sitemap(&self, path: &str, origin: &Origin<'_>) -> Option<Answer> {
        let Origin { scheme, host, .. } = origin;
        let site = format!("{scheme}://{host}");
        let entry = |loc: &str, lastmod: Option<String>| {
            let lastmod = lastmod.map(|date| format!("<lastmod>{date}</lastmod>")).unwrap_or_default();
            format!("<url><loc>{site}{loc}</loc>{lastmod}</url>\n")
        };
        Some(match path {
            "/sitemap.xml" => Answer::Xml(format!(
                "{XML}<sitemapindex {NAMESPACE}>\n\
                 <sitemap><loc>{site}/sitemap-books.xml.gz</loc></sitemap>\n\
                 <sitemap><loc>{site}/sitemap-listings.xml</loc></sitemap>\n\
                 </sitemapindex>\n"
            )),
            "/sitemap-books.xml.gz" => {
                let books = (1..=self.books)
                    .map(|i| entry(&format!("/catalogue/book_{i}.html"), Some(Self::book_modified(i))));
                Answer::Gzip(gzip(&urlset(books)))
            }
            "/sitemap-listings.xml" => Answer::Xml(urlset(
                (1..=self.listing_pages())
                    .map(|k| entry(&format!("/catalogue/page-{k}.html?sort=title&amp;order=asc"), None)),
            )),
            "/sitemap-broken.xml" => {
                let books =
                    (1..=3).map(|i| entry(&format!("/catalogue/book_{i}.html"), None)).collect::<String>();
                Answer::Xml(format!(
                    "{XML}<urlset \
                        {NAMESPACE}>\n{books}<url><loc>{site}/catalogue/book_4.html</lok></url>\n</urlset>\n"
                ))
            }
            "/sitemap-huge.xml" => {
                Answer::Xml(urlset((1..=50_001).map(|i| entry(&format!("/catalogue/book_{i}.html"), None))))
            }
            _ => return None,
        })
    }
}

const XML: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
const NAMESPACE: &str = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"";

fn urlset(entries: impl Iterator<Item = String>) -> String {
    format!("{XML}<urlset {NAMESPACE}>\n{}</urlset>\n", entries.collect::<String>())
}

fn gzip(bytes: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to memory cannot fail.
    let _ = encoder.write_all(bytes.as_bytes());
    encoder.finish().unwrap_or_default()
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta \
        charset=\"utf-8\"><title>{title}</title></head>\n<body>\n{body}\n</body></html>\n"
    )
}

/// `html` with filler paragraphs before `</body>` until it is at least `bytes` long.
fn pad(mut html: String, bytes: usize) -> String {
    const FILLER: &str = "<p class=\"filler\">Lorem ipsum dolor sit amet, <em>consectetur</em> adipiscing \
        elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>\n";
    let Some(end) = html.rfind("</body>").filter(|_| html.len() < bytes) else {
        return html;
    };
    let filler = FILLER.repeat((bytes - html.len()).div_ceil(FILLER.len()));
    html.insert_str(end, &filler);
    html
}

fn number(path: &str, prefix: &str, suffix: &str) -> Option<usize> {
    path.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_reaches_the_size_and_adds_no_links() {
        let origin = Origin { scheme: "http", host: "127.0.0.1:80", elsewhere: "localhost:80" };
        let plain = DemoSite::default();
        let padded = DemoSite { page_bytes: 15 * 1024, ..DemoSite::default() };
        let (Answer::Html(small), Answer::Html(big)) = (
            plain.answer("/catalogue/page-1.html", &origin),
            padded.answer("/catalogue/page-1.html", &origin),
        ) else {
            panic!("a listing is HTML");
        };
        assert!(big.len() >= 15 * 1024 && big.len() < 16 * 1024, "{}", big.len());
        assert_eq!(big.matches("href").count(), small.matches("href").count());
        assert!(big.ends_with("</body></html>\n"));
    }

    #[test]
    fn robots_txt_names_the_index_and_the_index_its_sitemaps() {
        let origin = Origin { scheme: "http", host: "127.0.0.1:80", elsewhere: "localhost:80" };
        let site = DemoSite { books: 30, per_page: 10, ..DemoSite::default() };
        let Answer::Text(robots) = site.answer("/robots.txt", &origin) else { panic!("text") };
        assert!(robots.contains("\nSitemap: http://127.0.0.1:80/sitemap.xml\n"), "{robots}");
        let Answer::Xml(index) = site.answer("/sitemap.xml", &origin) else { panic!("XML") };
        assert!(index.contains("<loc>http://127.0.0.1:80/sitemap-books.xml.gz</loc>"), "{index}");
        let Answer::Gzip(books) = site.answer("/sitemap-books.xml.gz", &origin) else { panic!("gzip") };
        let mut xml = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(books.as_slice()), &mut xml).unwrap();
        assert_eq!(xml.matches("<url>").count(), 30);
        assert!(
            xml.contains(
                "<loc>http://127.0.0.1:80/catalogue/book_29.html</loc><lastmod>2025-11-02</lastmod>"
            ),
            "{xml}"
        );
        let Answer::Xml(huge) = site.answer("/sitemap-huge.xml", &origin) else { panic!("XML") };
        assert_eq!(huge.matches("<url>").count(), 50_001);
    }

    #[test]
    fn a_wide_pager_links_the_next_listings_up_to_the_last() {
        let origin = Origin { scheme: "http", host: "127.0.0.1:80", elsewhere: "localhost:80" };
        let site = DemoSite { books: 100, per_page: 10, pager: 4, ..DemoSite::default() };
        let Answer::Html(first) = site.answer("/catalogue/page-1.html", &origin) else { panic!("HTML") };
        for k in 2..=5 {
            assert!(first.contains(&format!("href=\"page-{k}.html?sort=title")), "page {k}: {first}");
        }
        assert!(!first.contains("href=\"page-6.html"));
        let Answer::Html(ninth) = site.answer("/catalogue/page-9.html", &origin) else { panic!("HTML") };
        assert!(ninth.contains("href=\"page-10.html?sort") && !ninth.contains("page-11"), "{ninth}");
    }
}
