//! Real pages, as their sites served them, through a real nginx with gzip on: what the
//! crawl makes of pages nobody on this project wrote. The server's access log counts what
//! it was asked; the tests assert on that.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use spider_sandbox::{GatewayConfig, MockGateway, NginxServer, NginxSite};
use spiderling::prelude::*;

use crate::support::{read_json_lines, realweb};
use serde::Deserialize;

/// An item none of the real pages carries.
#[derive(Item, Serialize, Debug)]
struct Absent {
    #[css("h1.spiderling-absent")]
    title: String,
}

/// The index follows to every page; each page is parsed for the absent item.
#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], rule(allow = "/p/", parse = Absent))]
struct Misses;

/// 130 real pages (69 with a form, 18 with "consent" and 8 with "captcha" in their HTML),
/// none with the rule's item, crawled with a paid gateway tier above the direct route:
/// every page is a miss of its rule, counted and filed; none is a block, fetched again or
/// sent through the gateway. Before, the pages with a form or those words were judged soft
/// blocks: fetched again from new identities, and the host moved up to the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_without_the_rules_item_are_misses_never_blocks() {
    let Some(pages) = realweb::pages() else { return };
    let root = tempfile::tempdir().unwrap();
    let paths = realweb::site(&pages, root.path());
    let nginx = NginxServer::start(NginxSite { root: root.path().into(), gzip: true, limit: None }).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Misses
        .config()
        .set("start_urls", &format!("{}/", nginx.url()))
        .unwrap()
        .output(dir.path().join("items.jsonl"))
        .failures(dir.path().join("failures.jsonl"))
        .proxy(format!("direct > {}", gateway.url_with_credentials()))
        .concurrency(8)
        .per_host(8);
    let summary = Crawler::with_config(Misses, config).run().await.unwrap();

    let mut asked: BTreeMap<String, usize> = BTreeMap::new();
    for logged in nginx.requests().unwrap() {
        *asked.entry(logged.target).or_default() += 1;
    }
    for path in &paths {
        assert_eq!(asked.get(path), Some(&1), "{path} asked once: {asked:?}");
    }
    assert_eq!(gateway.observed().requests.len(), 0, "nothing through the gateway");
    let counts = &summary.counts;
    assert_eq!((counts.blocked, counts.retries, summary.failures, counts.items), (0, 0, 0, 0), "{summary}");
    assert_eq!(
        counts.no_item_by_rule,
        [("rule 1 (allow \"/p/\")".to_owned(), paths.len() as u64)].into(),
        "every page a miss of its rule: {summary}"
    );
    let filed = read_json_lines(&dir.path().join("failures.jsonl"));
    assert_eq!(filed.len(), paths.len());
    assert!(filed.iter().all(|line| line["reason"] == "no item"), "{:?}", filed.first());
}

/// What a spider users write reads off an article: its title, headings, description,
/// canonical URL and JSON-LD headline.
#[derive(Item, Serialize, Deserialize, Debug, PartialEq)]
struct Article {
    #[page(url)]
    url: String,
    #[css("title")]
    title: Option<String>,
    #[css("h1")]
    headings: Vec<String>,
    #[css("h2")]
    subheadings: Vec<String>,
    #[css("meta[name=description]", attr = "content")]
    description: Option<String>,
    #[css("link[rel=canonical]", attr = "href")]
    canonical: Option<String>,
    #[json_ld("headline")]
    headline: Option<String>,
}

/// Two rules, as users write them: listings (the index) followed, each page parsed.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    rule(allow = "/p/", parse = Article),
    rule(allow = "/$", follow)
)]
struct Articles;

/// Crawl the real pages behind `nginx`, every page into a DOM with `dom`: the items by
/// URL, and how many pages were read in one streaming pass of how many parsed.
async fn articles(nginx: &NginxServer, dom: bool, dir: &Path) -> (BTreeMap<String, Article>, u64, u64) {
    let output = dir.join(format!("dom-{dom}.jsonl"));
    let config = Articles.config().set("start_urls", &format!("{}/", nginx.url())).unwrap().output(&output);
    let config = if dom { config.set("extract", "dom").unwrap() } else { config };
    let summary = Crawler::with_config(Articles, config).run().await.unwrap();
    let items = read_json_lines(&output)
        .into_iter()
        .map(|line| serde_json::from_value::<Article>(line).unwrap())
        .map(|article| (article.url.clone(), article))
        .collect();
    (items, summary.counts.streamed_pages, summary.counts.html_parses)
}

/// The streaming engine on pages nobody on the project wrote: every item it reads is the
/// DOM's, field for field, and the share of pages it reads without a DOM is measured (0.9
/// is the aim, met; what it is today is printed, and held as a floor).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streaming_engine_reads_real_pages_as_the_dom_does() {
    let Some(pages) = realweb::pages() else { return };
    let root = tempfile::tempdir().unwrap();
    let paths = realweb::site(&pages, root.path());
    let nginx = NginxServer::start(NginxSite { root: root.path().into(), gzip: true, limit: None }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (streamed_items, streamed, parsed) = articles(&nginx, false, dir.path()).await;
    let (dom_items, _, _) = articles(&nginx, true, dir.path()).await;
    println!(
        "{streamed} of {parsed} pages streamed ({:.2}); {} items",
        streamed as f64 / parsed as f64,
        dom_items.len()
    );
    assert_eq!(dom_items.len(), streamed_items.len());
    for (url, dom) in &dom_items {
        assert_eq!(streamed_items.get(url), Some(dom), "{url}");
    }
    assert!(
        dom_items.len() >= 100,
        "{} of {} pages had an item: too few to compare",
        dom_items.len(),
        paths.len()
    );
    // Of the 131 (the index and 130 pages): 50 on Dec 7, 2026; 92 once the scan knew the
    // elements that hide links rather than giving up on a page having one; 118 (0.90)
    // once it read a script's `<!--`, hiding styles with character references, and inline
    // SVG (its `<title>`, `<style>`, `<image>`, links) as the tree has them. The floor.
    assert!(streamed >= 118, "{streamed} of {parsed} pages streamed");
}

/// A page's reader view, as `#[page(...)]` fields read it.
#[derive(Item, Serialize, Deserialize, Debug)]
struct ReaderView {
    #[page(url)]
    url: String,
    #[page(markdown)]
    markdown: String,
    #[page(text)]
    text: String,
    #[page(title)]
    title: Option<String>,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    rule(allow = "/p/", parse = ReaderView),
    rule(allow = "/$", follow)
)]
struct ReaderViews;

/// Lowercased runs of letters and digits, every four in a row a shingle, counted.
fn shingles(text: &str) -> BTreeMap<Vec<String>, usize> {
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let mut counted = BTreeMap::new();
    for window in words.windows(4.min(words.len()).max(1)) {
        *counted.entry(window.to_vec()).or_insert(0) += 1;
    }
    counted
}

/// Markdown with its links' and images' targets left out: what it says.
fn said(markdown: &str) -> String {
    let mut out = String::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        rest = rest[at..].find(')').map_or("", |end| &rest[at + end + 1..]);
        out.push(' ');
    }
    out + rest
}

/// Word-shingle F1 of `got` against `reference`.
fn f1(got: &str, reference: &str) -> f64 {
    let (got, reference) = (shingles(got), shingles(reference));
    let total = |set: &BTreeMap<Vec<String>, usize>| set.values().sum::<usize>() as f64;
    let shared: usize = got.iter().map(|(s, n)| (*n).min(reference.get(s).copied().unwrap_or(0))).sum();
    if shared == 0 {
        return 0.0;
    }
    let (precision, recall) = (shared as f64 / total(&got), shared as f64 / total(&reference));
    2.0 * precision * recall / (precision + recall)
}

/// The main content of the real pages, served gzipped by nginx, as `#[page(text)]` and
/// `#[page(markdown)]` read it: against each page's reference extraction (Readability's,
/// `expected.html`) the word-shingle F1 of the text, and of what the Markdown says (its
/// links' targets left out), is 0.95 or more on the mean; no page that has main content
/// comes without it. (0.985 and 0.968 when written; `qq` scores 0: it is UTF-8 and says
/// it is GB2312, so the crawl reads it as a browser would, where the reference read UTF-8.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_content_of_real_pages_comes_as_text_and_markdown() {
    let Some(pages) = realweb::pages() else { return };
    let root = tempfile::tempdir().unwrap();
    realweb::site(&pages, root.path());
    let nginx = NginxServer::start(NginxSite { root: root.path().into(), gzip: true, limit: None }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("views.jsonl");
    let config =
        ReaderViews.config().set("start_urls", &format!("{}/", nginx.url())).unwrap().output(&output);
    let summary = Crawler::with_config(ReaderViews, config).run().await.unwrap();
    let views: BTreeMap<String, ReaderView> = read_json_lines(&output)
        .into_iter()
        .map(|line| serde_json::from_value::<ReaderView>(line).unwrap())
        .map(|view| (view.url.rsplit('/').next().unwrap().trim_end_matches(".html").to_owned(), view))
        .collect();

    let mut scores = Vec::new();
    for name in realweb::names(&pages) {
        let expected = std::fs::read_to_string(pages.join(&name).join("expected.html")).unwrap_or_default();
        let reference: String =
            scraper::Html::parse_fragment(&expected).root_element().text().collect::<Vec<_>>().join(" ");
        if shingles(&reference).is_empty() {
            continue;
        }
        let view = views.get(&name).unwrap_or_else(|| panic!("{name}: no main content read ({summary})"));
        assert!(!view.text.trim().is_empty() && !view.markdown.trim().is_empty(), "{name}: empty");
        scores.push((f1(&view.text, &reference), f1(&said(&view.markdown), &reference), name));
    }
    let count = scores.len() as f64;
    let text = scores.iter().map(|(text, _, _)| text).sum::<f64>() / count;
    let markdown = scores.iter().map(|(_, markdown, _)| markdown).sum::<f64>() / count;
    scores.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lowest = &scores[..5.min(scores.len())];
    println!(
        "{count} pages, mean F1 of the text {text:.3}, of the Markdown {markdown:.3}; lowest {lowest:?}"
    );
    assert!(scores.len() >= 120, "{} pages with a reference", scores.len());
    assert!(text >= 0.95 && markdown >= 0.95, "mean F1 {text:.3} and {markdown:.3}; lowest {lowest:?}");
    assert!(views.values().filter(|view| view.title.is_some()).count() >= scores.len() * 9 / 10, "titles");
}
