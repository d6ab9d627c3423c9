//! A derived spider's link rules parse only HTML answers: a script, a text file or JSON a
//! link led to is fetched, but neither parsed for an item nor searched for links, and the
//! summary counts it as skipped by content type, not as a page. An answer without a
//! Content-Type is parsed when its body starts like HTML.

#![allow(clippy::unwrap_used)]

use crate::support;

use spider_sandbox::{FixedSite, Sandbox};
use spiderling::prelude::*;
use support::read_json_lines;

/// What `spiderling gen` writes, aimed at the fixed site.
#[derive(Spider, Default)]
#[spider(
    name = "docs",
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = [r"/page/\d+"], follow),
    rule(parse = DocsPage, follow),
)]
struct Docs;

#[derive(Item, Serialize, Debug)]
struct DocsPage {
    #[page(url)]
    url: String,
    #[css("title")]
    title: String,
    #[css("h1")]
    heading: Option<String>,
}

const HTML: Option<&str> = Some("text/html; charset=utf-8");

/// A documentation site whose home page links to HTML pages and to answers that are not
/// HTML, each of which holds markup and a link to a page that only it links to.
fn docs_site() -> FixedSite {
    let home = r#"<!doctype html><title>Docs</title><h1>Home</h1>
        <a href="/download/setup">setup.py</a> <a href="/notes">notes</a>
        <a href="/api/versions">versions</a> <a href="/raw/install">install script</a>
        <a href="/bare">bare page</a> <a href="/xhtml">XHTML page</a>"#;
    let python = r#""""<title>setup</title>"""
print("<h1>Not a page</h1>")
# <a href="/from-python">more</a>
"#;
    let mut site = FixedSite::new()
        .answer("/", HTML, home)
        .answer("/download/setup", Some("text/x-python"), python)
        .answer("/notes", Some("text/plain; \
            charset=utf-8"), r#"<title>notes</title><a href="/from-text">more</a>"#)
        .answer("/api/versions", Some("application/json"), r#"{"html": "<title>v</title><a href='/from-json'>x</a>"}"#)
        .answer("/raw/install", None, "#!/bin/sh\necho '<title>install</title><a href=/from-script>x</a>'\n")
        .answer("/bare", None, "\n  <!DOCTYPE html><title>Bare</title><h1>No Content-Type</h1>")
        .answer(
            "/xhtml",
            Some("application/xhtml+xml"),
            r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>XHTML</title></head><body><h1>Strict</h1></body></html>"#,
        );
    for only_linked_from_a_file in ["/from-python", "/from-text", "/from-json", "/from-script"] {
        site = site.answer(only_linked_from_a_file, HTML, "<title>Should not be reached</title>");
    }
    site
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_are_not_html_are_fetched_but_not_parsed_and_counted_as_skipped() {
    let site = Sandbox::fixed(docs_site()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("docs.jsonl");
    let config = Docs.config().set("start_urls", &site.url()).unwrap().output(&out);
    let summary = Crawler::with_config(Docs, config).run().await.unwrap();

    let mut fetched: Vec<String> = site.observed().hits.iter().map(|hit| hit.resource()).collect();
    fetched.sort();
    assert_eq!(
        fetched,
        ["/", "/api/versions", "/bare", "/download/setup", "/notes", "/raw/install", "/robots.txt", "/xhtml"],
        "every link of the home page once, and no link found inside a file"
    );

    let base = site.url();
    let mut items: Vec<(String, String, Option<String>)> = read_json_lines(&out)
        .iter()
        .map(|item| {
            let path =
                item["url"].as_str().unwrap().strip_prefix(base.trim_end_matches('/')).unwrap().to_owned();
            let heading = item["heading"].as_str().map(str::to_owned);
            (path, item["title"].as_str().unwrap().to_owned(), heading)
        })
        .collect();
    items.sort();
    let expected = [
        ("/", "Docs", Some("Home")),
        ("/bare", "Bare", Some("No Content-Type")),
        ("/xhtml", "XHTML", Some("Strict")),
    ]
    .map(|(path, title, heading)| (path.to_owned(), title.to_owned(), heading.map(str::to_owned)));
    assert_eq!(items, expected, "an item from each HTML answer, none from the others");

    assert_eq!(
        (summary.counts.pages, summary.counts.skipped_not_html, summary.failures),
        (3, 4, 0),
        "{summary}"
    );
    assert_eq!(summary.counts.html_parses, 3, "only the HTML answers are parsed");
    let text = summary.to_string();
    assert!(text.contains("\n  skipped by content type: 4 answers not HTML, not parsed\n"), "{text}");
}
