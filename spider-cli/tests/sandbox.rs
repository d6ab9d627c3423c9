//! `spiderling sandbox` serves the demo site, and its gateway, and stops cleanly on Ctrl-C.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use std::io::{BufRead, BufReader, Lines, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};

/// Start `spiderling sandbox ARGS`; its lines up to "press Ctrl-C to stop", and the rest.
fn sandbox(args: &[&str]) -> (Child, Vec<String>, Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .arg("sandbox")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut header = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let done = line == "press Ctrl-C to stop";
        header.push(line);
        if done {
            break;
        }
    }
    (child, header, lines)
}

/// Ctrl-C, a clean exit, and what it printed on the way out.
fn interrupt(mut child: Child, lines: Lines<BufReader<ChildStdout>>) -> Vec<String> {
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    lines.map(Result::unwrap).collect()
}

/// The text after `prefix` on the line that starts with it.
fn after<'a>(header: &'a [String], prefix: &str) -> &'a str {
    let line =
        header.iter().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {header:?}"));
    &line[prefix.len()..]
}

/// `user:password@host:port` of a proxy URL, as the host and a Proxy-Authorization value.
fn proxy_of(url: &str) -> (String, String) {
    let (credentials, host) = url.trim_start_matches("http://").rsplit_once('@').unwrap();
    (host.to_owned(), format!("Basic {}", base64(credentials.as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let sextet = (n >> (18 - 6 * i)) & 63;
            out.push(if i <= chunk.len() { char::from(ALPHABET[sextet as usize]) } else { '=' });
        }
    }
    out
}

/// Send `request` and read the answer's head (up to the blank line).
fn head_of(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed after {head:?}");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

#[test]
fn sandbox_serves_until_interrupted_and_exits_zero() {
    let (child, header, lines) = sandbox(&["--books", "10"]);
    let url = header[0].rsplit(' ').next().unwrap();
    let addr = url.trim_start_matches("http://").trim_end_matches('/');

    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET /catalogue/book_3.html HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"<h1 class="title">"#), "{answer}");

    let rest = interrupt(child, lines);
    assert!(rest.iter().any(|line| line == "stopped after 1 requests"), "{rest:?}");
}

#[test]
fn a_request_through_the_printed_gateway_reaches_the_site() {
    let (child, header, lines) = sandbox(&["--books", "10", "--gateway"]);
    let site = after(&header, "demo bookshop at ").trim_end_matches('/').to_owned();
    let gateway = after(&header, "gateway at ");
    assert!(
        gateway.starts_with("http://127.0.0.1:") && !gateway.contains("s3cret"),
        "no password: {gateway}"
    );
    let (proxy, authorization) = proxy_of(after(&header, "export SPIDERLING_PROXY="));

    let mut stream = TcpStream::connect(&proxy).unwrap();
    let host = site.trim_start_matches("http://");
    write!(
        stream,
        "GET {site}/catalogue/book_3.html HTTP/1.1\r\nHost: {host}\r\nProxy-Authorization: \
            {authorization}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"<h1 class="title">"#), "{answer}");

    let rest = interrupt(child, lines);
    assert!(rest.iter().any(|line| line == "stopped after 1 requests"), "{rest:?}");
    let relayed = "the gateway relayed 1 requests on 1 connections and refused 0 for their credentials";
    assert!(rest.iter().any(|line| line == relayed), "{rest:?}");
}

#[test]
fn with_gateway_and_tls_it_prints_the_addresses_and_tunnels_to_the_https_site() {
    let (child, header, lines) = sandbox(&["--books", "10", "--gateway", "--tls"]);
    let site = after(&header, "demo bookshop at ");
    assert!(site.starts_with("https://localhost:"), "{site}");
    let authority = site.trim_start_matches("https://").trim_end_matches('/').to_owned();
    let certificate = after(&header, "certificate at ").split_once(':').unwrap().0.to_owned();
    assert!(header.iter().any(|l| l.ends_with(&format!("--set ca_cert={certificate}"))), "{header:?}");
    let pem = std::fs::read_to_string(&certificate).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    assert!(!after(&header, "gateway at ").contains("s3cret"));
    let (proxy, authorization) = proxy_of(after(&header, "export SPIDERLING_PROXY="));

    let mut refused = TcpStream::connect(&proxy).unwrap();
    let head = head_of(&mut refused, &format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 407"), "{head}");
    let mut tunnel = TcpStream::connect(&proxy).unwrap();
    let head = head_of(
        &mut tunnel,
        &format!(
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nProxy-Authorization: \
            {authorization}\r\n\r\n"
        ),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "the gateway reached the HTTPS site: {head}");
    drop(tunnel);

    let rest = interrupt(child, lines);
    let relayed = "the gateway relayed 1 requests on 2 connections and refused 1 for their credentials";
    assert!(rest.iter().any(|line| line == relayed), "{rest:?}");
    assert!(!std::path::Path::new(&certificate).exists(), "the certificate is removed on the way out");
}

/// `GET path` on `addr`; the status line, the body and how long the answer took.
fn get(addr: &str, path: &str) -> (String, String, std::time::Duration) {
    let started = std::time::Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned(), started.elapsed())
}

#[test]
fn the_bench_site_is_served_by_pages_page_size_and_latency() {
    let (child, header, lines) = sandbox(&["--pages", "42", "--page-kb", "4", "--latency-ms", "150"]);
    let addr = after(&header, "demo bookshop at ").trim_start_matches("http://").trim_end_matches('/');
    let (status, body, took) = get(addr, "/catalogue/book_40.html");
    let (beyond, _, _) = get(addr, "/catalogue/book_41.html");
    // Stopped before any assertion, so that a failure leaves no sandbox running.
    let rest = interrupt(child, lines);

    // As `bench --pages 42`: 40 books, 2 listings and the home page.
    assert!(
        header.iter().any(|l| l == "site: 43 pages (40 books), 4 KiB each, 150 ms latency"),
        "{header:?}"
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains(r#"<h1 class="title">"#), "{body}");
    assert!((4096..5120).contains(&body.len()), "a page of 4 KiB, not {} bytes", body.len());
    assert!(took >= std::time::Duration::from_millis(150), "answered after {took:?}");
    assert!(beyond.starts_with("HTTP/1.1 404"), "{beyond}");
    assert!(rest.iter().any(|line| line == "stopped after 2 requests"), "{rest:?}");
}

#[test]
fn pages_and_books_cannot_both_be_given() {
    let status = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["sandbox", "--pages", "42", "--books", "10"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2), "a wrong argument");
}
