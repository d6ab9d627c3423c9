//! What an answer is, from its `Content-Type` or, when it has none, from its first bytes
//! (the WHATWG MIME sniffing standard's "HTML" patterns): the link rules parse only HTML,
//! so a script or a download reached by a link is not run through the HTML parser.

use reqwest::header::{HeaderMap, CONTENT_TYPE};

/// An answer's `Content-Type`: its essence (`type/subtype`, lower case) and its charset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentType<'a> {
    essence: String,
    charset: Option<&'a str>,
}

impl<'a> ContentType<'a> {
    /// The `Content-Type` of `headers`, when it has one that is text and names a type.
    pub(crate) fn of(headers: &'a HeaderMap) -> Option<ContentType<'a>> {
        let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
        let mut parts = value.split(';');
        let essence = parts.next()?.trim().to_ascii_lowercase();
        if !essence.contains('/') {
            return None;
        }
        let charset = parts.find_map(|part| {
            let (key, label) = part.split_once('=')?;
            key.trim().eq_ignore_ascii_case("charset").then(|| label.trim().trim_matches(['"', '\'']))
        });
        Some(ContentType { essence, charset })
    }

    /// The charset label it names, if any.
    pub(crate) fn charset(&self) -> Option<&'a str> {
        self.charset
    }

    /// Whether the type says nothing of the content, as an absent one would not.
    fn is_unknown(&self) -> bool {
        matches!(self.essence.as_str(), "unknown/unknown" | "application/unknown" | "*/*")
    }
}

/// Whether an answer with `headers` and `body` is HTML: its `Content-Type` is `text/html`
/// or `application/xhtml+xml`; or it has none (or one that says nothing) and the body
/// starts like HTML.
pub(crate) fn is_html(headers: &HeaderMap, body: &[u8]) -> bool {
    match ContentType::of(headers) {
        Some(known) if !known.is_unknown() => {
            matches!(known.essence.as_str(), "text/html" | "application/xhtml+xml")
        }
        _ => sniffs_as_html(body),
    }
}

/// The tags that make a body HTML when they open it (after whitespace), followed by a
/// space or `>`: the WHATWG MIME sniffing standard's HTML patterns.
const HTML_OPENINGS: &[&[u8]] = &[
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
];

/// Whether `body`, after leading whitespace, opens with one of [`HTML_OPENINGS`].
fn sniffs_as_html(body: &[u8]) -> bool {
    let start = body.iter().position(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' '));
    let Some(rest) = start.and_then(|start| body.get(start..)) else {
        return false;
    };
    HTML_OPENINGS.iter().any(|opening| {
        rest.len() > opening.len()
            && rest[..opening.len()].eq_ignore_ascii_case(opening)
            && matches!(rest[opening.len()], b' ' | b'>')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn typed(content_type: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers
    }

    #[test]
    fn html_and_xhtml_types_are_html_whatever_the_body() {
        for content_type in ["text/html", "TEXT/HTML; charset=utf-8", "application/xhtml+xml"] {
            assert!(is_html(&typed(content_type), b"print('hi')"), "{content_type}");
        }
        for content_type in ["text/x-python", "text/plain", "application/json", "application/pdf"] {
            assert!(!is_html(&typed(content_type), b"<html><h1>x</h1>"), "{content_type}");
        }
    }

    #[test]
    fn without_a_type_the_body_decides() {
        let none = HeaderMap::new();
        for body in
            [&b"<!DOCTYPE html><p>x"[..], b"\r\n  <HTML lang=en>", b"<p>hello", b"<!-- c --><a>", b"<a>"]
        {
            assert!(is_html(&none, body), "{}", String::from_utf8_lossy(body));
            assert!(is_html(&typed("unknown/unknown"), body));
        }
        for body in [&b"#!/bin/sh\necho '<p>'"[..], b"<?xml version='1.0'?>", b"<pre>", b"", b"   ", b"<p"] {
            assert!(!is_html(&none, body), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn the_charset_is_read_from_the_parameters() {
        let headers = typed("text/html; Charset=\"windows-1251\"");
        assert_eq!(ContentType::of(&headers).and_then(|t| t.charset()), Some("windows-1251"));
        let headers = typed("text/html");
        assert_eq!(ContentType::of(&headers).and_then(|t| t.charset()), None);
    }
}
