//! Pages in legacy encodings come out as their authors wrote them: decoded as browsers
//! decode them (a byte order mark, else the Content-Type's charset, else a `<meta>` in the
//! first 1024 bytes, else UTF-8), for a derived spider's items and for a hand-written
//! `parse` reading `page.text()` and `page.html(...)`.

#![allow(clippy::unwrap_used)]

use crate::support;

use encoding_rs::Encoding;
use spider_sandbox::{FixedSite, Sandbox};
use spiderling::prelude::*;
use spiderling::Summary;
use support::read_json_lines;

const RUSSIAN: &str = "Привет, мир";
const JAPANESE: &str = "こんにちは、世界";
const LATIN: &str = "Café à Zürich, señor";

/// How a page says which encoding it is in.
#[derive(Clone, Copy)]
enum Declared {
    Header,
    MetaCharset,
    HttpEquiv,
}

/// A page: its path, Content-Type, bytes, and the heading it must give.
struct Fixture {
    path: String,
    content_type: String,
    body: Vec<u8>,
    heading: &'static str,
}

fn encoded(label: &str, text: &str) -> Vec<u8> {
    let encoding = Encoding::for_label(label.as_bytes()).unwrap();
    let (bytes, _, unmappable) = encoding.encode(text);
    assert!(!unmappable, "{text} in {label}");
    bytes.into_owned()
}

fn declared(label: &str, heading: &'static str, way: Declared) -> Fixture {
    let (name, content_type, meta) = match way {
        Declared::Header => ("header", format!("text/html; charset={label}"), String::new()),
        Declared::MetaCharset => ("meta", "text/html".to_owned(), format!(r#"<meta charset="{label}">"#)),
        Declared::HttpEquiv => (
            "http-equiv",
            "text/html".to_owned(),
            format!(r#"<meta http-equiv="Content-Type" content="text/html; charset={label}">"#),
        ),
    };
    let html = format!(
        "<!doctype \
        html><html><head>{meta}<title>{heading}</title></head><body><h1>{heading}</h1></body></html>"
    );
    Fixture { path: format!("/{label}/{name}"), content_type, body: encoded(label, &html), heading }
}

fn page(heading: &str) -> String {
    format!("<!doctype html><title>{heading}</title><h1>{heading}</h1>")
}

/// Every page, and a home page linking to each.
fn fixtures() -> Vec<Fixture> {
    let mut pages = Vec::new();
    for (label, heading) in [("windows-1251", RUSSIAN), ("shift_jis", JAPANESE), ("iso-8859-1", LATIN)] {
        for way in [Declared::Header, Declared::MetaCharset, Declared::HttpEquiv] {
            pages.push(declared(label, heading, way));
        }
    }
    let utf16 = |heading: &str, little: bool| {
        let units = page(heading).encode_utf16().collect::<Vec<u16>>();
        let bom: &[u8] = if little { b"\xFF\xFE" } else { b"\xFE\xFF" };
        let bytes = units.iter().flat_map(|u| if little { u.to_le_bytes() } else { u.to_be_bytes() });
        bom.iter().copied().chain(bytes).collect::<Vec<u8>>()
    };
    pages.extend([
        // A byte order mark overrides a wrong header.
        Fixture {
            path: "/bom/utf-8".to_owned(),
            content_type: "text/html; charset=windows-1251".to_owned(),
            body: [b"\xEF\xBB\xBF".as_slice(), page(RUSSIAN).as_bytes()].concat(),
            heading: RUSSIAN,
        },
        Fixture {
            path: "/bom/utf-16le".to_owned(),
            content_type: "text/html".to_owned(),
            body: utf16(JAPANESE, true),
            heading: JAPANESE,
        },
        Fixture {
            path: "/bom/utf-16be".to_owned(),
            content_type: "text/html".to_owned(),
            body: utf16(LATIN, false),
            heading: LATIN,
        },
        // The header overrides a `<meta>`.
        Fixture {
            path: "/header-over-meta".to_owned(),
            content_type: "text/html; charset=windows-1251".to_owned(),
            body: encoded("windows-1251", &format!("<meta charset=utf-8>{}", page(RUSSIAN))),
            heading: RUSSIAN,
        },
        // Nothing declared: UTF-8.
        Fixture {
            path: "/undeclared".to_owned(),
            content_type: "text/html".to_owned(),
            body: page(JAPANESE).into_bytes(),
            heading: JAPANESE,
        },
    ]);
    let links: String = pages.iter().map(|p| format!(r#"<a href="{}">{}</a> "#, p.path, p.path)).collect();
    pages.push(Fixture {
        path: "/".to_owned(),
        content_type: "text/html; charset=utf-8".to_owned(),
        body: format!("<title>Index</title><h1>Index</h1>{links}").into_bytes(),
        heading: "Index",
    });
    pages
}

fn site() -> (Sandbox, Vec<Fixture>) {
    let pages = fixtures();
    let site = pages.iter().fold(FixedSite::new(), |site, p| {
        site.answer(&p.path, Some(p.content_type.as_str()), p.body.clone())
    });
    (Sandbox::fixed(site).unwrap(), pages)
}

/// Each page's heading as `(path, heading)`, sorted.
fn expected(pages: &[Fixture]) -> Vec<(String, String)> {
    let mut expected: Vec<(String, String)> =
        pages.iter().map(|p| (p.path.clone(), p.heading.to_owned())).collect();
    expected.sort();
    expected
}

/// Crawl `site` with `spider` into a JSON Lines file; its items and the summary.
async fn crawl<S: Spider>(spider: S, site: &Sandbox) -> (Vec<serde_json::Value>, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let config =
        spider.config().set("start_urls", &site.url()).unwrap().allowed_domain("127.0.0.1").output(&out);
    let summary = Crawler::with_config(spider, config).run().await.unwrap();
    (read_json_lines(&out), summary)
}

fn path_of(site: &Sandbox, url: &str) -> String {
    url.strip_prefix(site.url().trim_end_matches('/')).unwrap().to_owned()
}

#[derive(Spider, Default)]
#[spider(name = "headings", start_urls = ["http://placeholder.invalid/"], rule(parse = Heading, follow))]
struct Headings;

#[derive(Item, Serialize, Debug)]
struct Heading {
    #[page(url)]
    url: String,
    #[css("title")]
    title: String,
    #[css("h1")]
    heading: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_derived_spider_reads_legacy_encodings_declared_every_way() {
    let (site, pages) = site();
    let (items, summary) = crawl(Headings, &site).await;
    assert_eq!((summary.counts.pages as usize, summary.failures), (pages.len(), 0), "{summary}");
    let mut headings: Vec<(String, String)> = items
        .iter()
        .map(|item| {
            assert_eq!(item["title"], item["heading"], "the head decoded as the body");
            (path_of(&site, item["url"].as_str().unwrap()), item["heading"].as_str().unwrap().to_owned())
        })
        .collect();
    headings.sort();
    assert_eq!(headings, expected(&pages));
}

/// A hand-written `parse` that keeps what `page.text()` and `page.html(...)` read.
struct Reader;

#[derive(Serialize)]
struct Read {
    path: String,
    heading: Option<String>,
    text: String,
}

impl SpiderConfig for Reader {
    fn config(&self) -> Config {
        Config::new("reader")
    }
}

#[async_trait]
impl Spider for Reader {
    type Item = Read;

    async fn parse(&self, page: Page, cx: &mut Cx<Read>) -> Result {
        let h1 = Selector::parse("h1").unwrap();
        let a = Selector::parse("a").unwrap();
        let (heading, links) = page.html(move |doc| (doc.text(&h1), doc.links(&a))).await?;
        let text = page.text().into_owned();
        cx.emit(Read { path: page.url().path().to_owned(), heading, text });
        cx.follow_all(links);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_text_and_page_html_decode_as_a_browser_does() {
    let (site, pages) = site();
    let (items, _) = crawl(Reader, &site).await;
    let mut headings = Vec::new();
    for item in &items {
        let (path, heading) = (item["path"].as_str().unwrap(), item["heading"].as_str().unwrap());
        let text = item["text"].as_str().unwrap();
        assert!(text.contains(&format!("<h1>{heading}</h1>")), "{path}: page.text() is {text:?}");
        assert!(!text.starts_with('\u{FEFF}'), "{path}: the byte order mark is not text");
        headings.push((path.to_owned(), heading.to_owned()));
    }
    headings.sort();
    assert_eq!(headings, expected(&pages));
}
