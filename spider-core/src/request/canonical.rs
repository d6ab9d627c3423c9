//! URL canonicalisation and request fingerprints: two spellings of one resource must
//! collide, two resources must not.
//!
//! The `url` crate already lowercases the scheme and host, drops a default port and
//! resolves dot segments when it parses. On top of that the canonical form drops the
//! fragment, sorts the query's pairs (dropping empty ones), decodes percent-escapes of
//! unreserved characters (`%7E` is `~`) and uppercases the hex of every other escape.
//! A `+` in the query is left alone: whether it means a space is the server's business.

use std::borrow::Cow;

use url::{Position, Url};
use xxhash_rust::xxh3::Xxh3;

/// The canonical spelling of `url`, borrowed when it needs no change (the common case).
///
/// # Examples
///
/// ```
/// use spider_core::canonical_url;
/// use url::Url;
///
/// let a = Url::parse("HTTP://Books.Example:80/%7Euser/a%2fb?b=2&a=1#top").unwrap();
/// assert_eq!(canonical_url(&a), "http://books.example/~user/a%2Fb?a=1&b=2");
/// ```
pub fn canonical_url(url: &Url) -> Cow<'_, str> {
    let without_fragment = &url[..Position::AfterQuery];
    let query_needs_work = url.query().is_some_and(|q| q.is_empty() || q.contains('&'));
    if !query_needs_work && !without_fragment.contains('%') {
        return Cow::Borrowed(without_fragment);
    }
    let mut out = String::with_capacity(without_fragment.len());
    out.push_str(&url[..Position::BeforePath]);
    push_normalised_escapes(&mut out, url.path());
    if let Some(query) = url.query() {
        let mut pairs: Vec<String> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let mut normal = String::with_capacity(pair.len());
                push_normalised_escapes(&mut normal, pair);
                normal
            })
            .collect();
        pairs.sort_unstable();
        if !pairs.is_empty() {
            out.push('?');
            out.push_str(&pairs.join("&"));
        }
    }
    Cow::Owned(out)
}

/// A 128-bit hash of a request's method and canonical URL. At a billion URLs the chance
/// of any two colliding is below 10⁻²⁰.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub u128);

/// The fingerprint the frontier dedupes on.
///
/// # Examples
///
/// ```
/// use spider_core::fingerprint;
/// use url::Url;
///
/// let get = reqwest::Method::GET;
/// let a = Url::parse("https://books.example/list?page=2&sort=asc").unwrap();
/// let b = Url::parse("https://books.example/list?sort=asc&page=2#reviews").unwrap();
/// assert_eq!(fingerprint(&get, &a), fingerprint(&get, &b));
/// ```
///
/// A request with a body is told apart by it too: see
/// [`Request::fingerprint`](crate::Request::fingerprint), which the frontiers use.
pub fn fingerprint(method: &reqwest::Method, url: &Url) -> Fingerprint {
    fingerprint_with_body(method, url, None)
}

/// The fingerprint of a request that may have a body. Without one it is the same hash
/// as ever, so fingerprints stored before bodies existed still match.
pub(crate) fn fingerprint_with_body(method: &reqwest::Method, url: &Url, body: Option<&[u8]>) -> Fingerprint {
    let mut hasher = Xxh3::new();
    hasher.update(method.as_str().as_bytes());
    hasher.update(b" ");
    hasher.update(canonical_url(url).as_bytes());
    if let Some(body) = body {
        // The length first, so no URL can end where a body begins.
        hasher.update(b"\n");
        hasher.update(&(body.len() as u64).to_le_bytes());
        hasher.update(body);
    }
    Fingerprint(hasher.digest128())
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(byte: u8) -> Option<u8> {
    char::from(byte).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// Copy `text`, decoding escapes of unreserved characters and uppercasing the rest.
fn push_normalised_escapes(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = rest.as_bytes().get(at + 1..at + 3);
        match escape.and_then(|hex| Some((hex_value(hex[0])?, hex_value(hex[1])?))) {
            Some((hi, lo)) if is_unreserved(hi * 16 + lo) => out.push(char::from(hi * 16 + lo)),
            Some(_) => {
                out.push('%');
                out.push_str(&rest[at + 1..at + 3].to_ascii_uppercase());
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
                continue;
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
}
