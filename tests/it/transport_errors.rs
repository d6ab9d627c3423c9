//! A request that gets no answer says why: the whole chain of the transport's error in one
//! line in the failures file, and its root cause as the reason the summary counts by.
//! Each cause is produced for real on 127.0.0.1 (and a `.invalid` name, which never
//! resolves).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{Config, CrawlStatus, Crawler, Summary};
use support::BookSpider;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// Crawl `url` once, no retries, and return the summary and the failures file's lines.
async fn crawl(url: &str, obey_robots: bool, timeout: Duration) -> (Summary, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("items.jsonl");
    let config = Config::new("causes")
        .start_url(url)
        .obey_robots(obey_robots)
        .retries(0)
        .timeout(timeout)
        .output(&output);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::CompleteWithFailures);
    (summary, support::read_json_lines(&output.with_extension("failures.jsonl")))
}

/// The one failure of a crawl of `url` has `reason` (counted so in the summary and its
/// printed line) and an error that says `says`, in one line.
async fn fails_with(url: &str, obey_robots: bool, timeout: Duration, reason: &str, says: &str) {
    let (summary, filed) = crawl(url, obey_robots, timeout).await;
    assert_eq!(filed.len(), 1, "{filed:?}");
    assert_eq!(filed[0]["reason"], reason, "{filed:?}");
    let error = filed[0]["error"].as_str().unwrap();
    assert!(error.contains(says), "{error}");
    assert!(!error.contains('\n'), "{error}");
    assert_eq!(
        summary.counts.failures_by_reason.get(reason),
        Some(&1),
        "{:?}",
        summary.counts.failures_by_reason
    );
    assert!(summary.to_string().contains(&format!("{reason} ×1")), "{summary}");
    assert_eq!(summary.failure_examples.get(reason).map(String::as_str), Some(error));
}

/// A port that nothing listens on: one just released.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_is_connection_refused_also_behind_robots_txt() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let secs = Duration::from_secs(5);
    fails_with(&url, false, secs, "connection refused", "Connection refused").await;
    fails_with(&url, true, secs, "robots.txt unavailable: connection refused", "Connection refused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_timed_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Accepts and holds every connection, answering nothing.
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        for _ in 0..8 {
            let Ok((stream, _)) = listener.accept().await else { break };
            held.push(stream);
        }
    });
    fails_with(&url, false, Duration::from_millis(300), "timed out", "timed out").await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_resets_the_connection_is_connection_reset() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Reads the request, then resets the connection (SO_LINGER 0: close sends RST).
    let server = tokio::spawn(async move {
        for _ in 0..8 {
            let Ok((mut stream, _)) = listener.accept().await else { break };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
                match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => request.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            stream.set_zero_linger().unwrap();
            drop(stream);
        }
    });
    fails_with(&url, false, Duration::from_secs(5), "connection reset", "reset").await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_resolve_is_dns_lookup_failed() {
    // `.invalid` is reserved never to resolve (RFC 2606); no packet leaves for a server.
    let url = "http://spiderling-test.invalid/";
    fails_with(url, false, Duration::from_secs(5), "DNS lookup failed", "dns error").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_nobody_vouches_for_is_tls_certificate_rejected() {
    // The sandbox's certificate is made at start; without `ca_cert` nobody trusts it.
    let site = Sandbox::demo_tls(DemoSite { books: 1, per_page: 1, ..DemoSite::default() }).unwrap();
    let (secs, reason) = (Duration::from_secs(5), "TLS certificate rejected");
    fails_with(&site.url(), false, secs, reason, "invalid peer certificate").await;
    assert!(site.observed().hits.is_empty(), "no request got through");
}
