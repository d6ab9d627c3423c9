//! A robots.txt redirect is a request like any other: it never leaves the crawl's allowed
//! domains. A site answering `/robots.txt` with a redirect to another host made the crawler
//! send a GET there and apply what came back.

#![allow(clippy::unwrap_used)]

use crate::support;

use spider_sandbox::RawSite;
use spiderling::{Config, Crawler};
use support::BookSpider;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_txt_redirect_to_another_host_is_not_followed_and_nothing_there_is_fetched() {
    // Another host (127.0.0.2 is this machine too, but not an allowed domain).
    let elsewhere = RawSite::start("127.0.0.2", |_| {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 26\r\nConnection: \
            close\r\n\r\nUser-agent: *\nAllow: /\n\n\n"
            .to_owned()
    })
    .unwrap();
    let target = format!("{}robots.txt", elsewhere.url());
    let site = RawSite::start("127.0.0.1", move |path| match path {
        "/robots.txt" => {
            format!(
                "HTTP/1.1 301 Moved\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: \
                close\r\n\r\n"
            )
        }
        _ => "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: \
            close\r\n\r\n<p>hello</p>\n"
            .to_owned(),
    })
    .unwrap();
    let config = Config::new("books")
        .start_url(site.url())
        .allowed_domain("127.0.0.1")
        .retries(0)
        .handle_signals(false)
        .progress(false);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(elsewhere.received(), 0, "nothing is sent outside the allowed domains");
    assert_eq!(summary.counts.pages, 0, "robots.txt could not be read, so nothing of the host is fetched");
}

/// A robots.txt over the page cap shut the whole host out, and was downloaded again with
/// every retry. RFC 9309: at least the first 500 KiB are read, and what was read is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_txt_over_the_page_cap_is_read_to_500_kib_and_obeyed() {
    let mut robots = String::from("User-agent: *\nDisallow: /private\n");
    while robots.len() < 600 * 1024 {
        robots.push_str("# a long comment line, of the kind some sites pad their robots.txt with\n");
    }
    let site = spider_sandbox::FixedSite::new()
        .answer("/robots.txt", Some("text/plain"), robots)
        .answer("/", Some("text/html"), r#"<a href="/public">p</a> <a href="/private">x</a>"#)
        .answer("/public", Some("text/html"), "<p>public</p>")
        .answer("/private", Some("text/html"), "<p>private</p>");
    let site = spider_sandbox::Sandbox::fixed(site).unwrap();
    let config = Config::new("books")
        .start_url(site.url())
        .allowed_domain("127.0.0.1")
        .max_body_bytes(100_000)
        .handle_signals(false)
        .progress(false);
    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    let observed = site.observed();
    assert_eq!(observed.under("/robots.txt"), 1, "robots.txt is fetched once");
    assert_eq!(observed.under("/public"), 1, "the host is crawled");
    assert_eq!(observed.under("/private"), 0, "and its robots.txt obeyed");
}
