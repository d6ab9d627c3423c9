//! Validators and conditional requests (RFC 9110 §8.8, §13): what lets a cache revalidate
//! a page it holds instead of fetching it again.

use std::hash::{DefaultHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpdate::HttpDate;
use hyper::header::{HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use hyper::Method;

/// The validators of one representation: a strong entity tag of its exact bytes and the
/// date it was last modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Validators {
    /// The entity tag, quoted: `"` + 16 hex digits of the body's hash + `"`.
    etag: String,
    last_modified: HttpDate,
}

/// What a request's preconditions decide (RFC 9110 §13.2.2, steps 3 and 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// No precondition stops it: answer as usual.
    Serve,
    /// A GET or HEAD for a representation the client already has: `304 Not Modified`.
    NotModified,
    /// `If-None-Match` matched on another method: `412 Precondition Failed`.
    Failed,
}

impl Validators {
    /// The validators of `body`, last modified at `last_modified` (to the second, clamped
    /// to the years HTTP-date can spell, 1970 to 9999).
    ///
    /// The hash is std's [`DefaultHasher`] with its fixed keys: the same bytes give the same
    /// tag in every process built by one compiler, which is as long as a sandbox lives.
    pub(crate) fn of(body: &[u8], last_modified: SystemTime) -> Self {
        let mut hasher = DefaultHasher::new();
        hasher.write(body);
        Validators { etag: format!("\"{:016x}\"", hasher.finish()), last_modified: http_date(last_modified) }
    }

    /// The `ETag` field value.
    pub(crate) fn etag(&self) -> &str {
        &self.etag
    }

    /// The `Last-Modified` field value, an IMF-fixdate.
    pub(crate) fn last_modified(&self) -> String {
        self.last_modified.to_string()
    }

    /// Evaluate the request's `If-None-Match` and `If-Modified-Since` against these
    /// validators, in the order and with the rules of RFC 9110 §13.2.2:
    ///
    /// - `If-None-Match`, when present, decides alone: it matches when it is `*` or lists
    ///   this entity tag, compared weakly (`W/"x"` matches `"x"`). A match is `304` for GET
    ///   and HEAD, `412` otherwise; a field that does not parse matches nothing.
    /// - Otherwise `If-Modified-Since`, on GET and HEAD only, is `304` when the date is at
    ///   or after `Last-Modified`. It is ignored when it is not one valid HTTP-date.
    pub(crate) fn evaluate(&self, method: &Method, headers: &HeaderMap) -> Precondition {
        let safe = method == Method::GET || method == Method::HEAD;
        if headers.contains_key(IF_NONE_MATCH) {
            let matched = match if_none_match(headers) {
                Some(IfNoneMatch::Any) => true,
                Some(IfNoneMatch::Tags(tags)) => tags.contains(&self.etag.as_bytes()),
                None => false,
            };
            return match (matched, safe) {
                (false, _) => Precondition::Serve,
                (true, true) => Precondition::NotModified,
                (true, false) => Precondition::Failed,
            };
        }
        match if_modified_since(headers) {
            Some(since) if safe && self.last_modified <= since => Precondition::NotModified,
            _ => Precondition::Serve,
        }
    }
}

/// Whether a request is conditional: it carries `If-None-Match` or `If-Modified-Since`.
pub(crate) fn is_conditional(headers: &HeaderMap) -> bool {
    headers.contains_key(IF_NONE_MATCH) || headers.contains_key(IF_MODIFIED_SINCE)
}

/// `time` as an HTTP-date, clamped to what one can spell (`HttpDate::from` panics outside).
fn http_date(time: SystemTime) -> HttpDate {
    // 9999-12-31T23:59:59Z.
    let last = UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    HttpDate::from(time.clamp(UNIX_EPOCH, last))
}

/// A parsed `If-None-Match` (RFC 9110 §13.1.2): `"*" / #entity-tag`.
#[derive(Debug, PartialEq, Eq)]
enum IfNoneMatch<'a> {
    Any,
    /// The opaque tags, quotes included and `W/` dropped: weak comparison compares these.
    Tags(Vec<&'a [u8]>),
}

/// Every `If-None-Match` line of `headers` as one list; `None` when one does not parse.
fn if_none_match(headers: &HeaderMap) -> Option<IfNoneMatch<'_>> {
    let lines: Vec<&[u8]> = headers.get_all(IF_NONE_MATCH).iter().map(|v| v.as_bytes()).collect();
    if let [line] = lines.as_slice() {
        if line.trim_ascii() == b"*" {
            return Some(IfNoneMatch::Any);
        }
    }
    let mut tags = Vec::new();
    for line in lines {
        tags.extend(entity_tags(line)?);
    }
    Some(IfNoneMatch::Tags(tags))
}

/// The opaque tags of a comma-separated list of entity tags, or `None` when it is not one.
/// Commas inside a tag are part of it, so the list is scanned, not split.
fn entity_tags(mut rest: &[u8]) -> Option<Vec<&[u8]>> {
    let mut tags = Vec::new();
    loop {
        // Empty list elements are allowed (RFC 9110 §5.6.1).
        rest = rest.trim_ascii_start();
        while let Some(after) = rest.strip_prefix(b",") {
            rest = after.trim_ascii_start();
        }
        if rest.is_empty() {
            return Some(tags);
        }
        let opaque = rest.strip_prefix(b"W/").unwrap_or(rest);
        let close = 1 + opaque.strip_prefix(b"\"")?.iter().position(|&b| b == b'"')?;
        let (tag, after) = opaque.split_at(close + 1);
        // etagc = %x21 / %x23-7E / obs-text
        if !tag[1..close].iter().all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80) {
            return None;
        }
        tags.push(tag);
        rest = after.trim_ascii_start();
        if !rest.is_empty() && !rest.starts_with(b",") {
            return None;
        }
    }
}

/// The one valid HTTP-date of `If-Modified-Since`, or `None` when it must be ignored:
/// absent, sent twice, or not a date (RFC 9110 §13.1.3).
fn if_modified_since(headers: &HeaderMap) -> Option<HttpDate> {
    let mut lines = headers.get_all(IF_MODIFIED_SINCE).iter();
    let (Some(line), None) = (lines.next(), lines.next()) else {
        return None;
    };
    line.to_str().ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(fields: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            map.append(*name, HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{value}: {e}")));
        }
        map
    }

    fn page() -> Validators {
        Validators::of(b"<p>page</p>", UNIX_EPOCH + Duration::from_secs(1_735_689_600))
    }

    #[test]
    fn the_etag_is_quoted_hex_of_the_bytes_and_the_date_an_imf_fixdate() {
        let v = page();
        assert_eq!(v.etag().len(), 18);
        assert!(v.etag().starts_with('"') && v.etag().ends_with('"'));
        assert!(v.etag()[1..17].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(v, page());
        assert_ne!(v.etag(), Validators::of(b"<p>page!</p>", SystemTime::now()).etag());
        assert_eq!(v.last_modified(), "Wed, 01 Jan 2025 00:00:00 GMT");
    }

    #[test]
    fn if_none_match_matches_a_list_star_and_weak_tags() {
        let v = page();
        let tag = v.etag().to_owned();
        let weak = format!("W/{tag}");
        let listed = format!(r#""a,b", W/"zz" ,, {tag}"#);
        for value in [tag.as_str(), weak.as_str(), listed.as_str(), "*", " * "] {
            let h = headers(&[("if-none-match", value)]);
            assert_eq!(v.evaluate(&Method::GET, &h), Precondition::NotModified, "{value}");
            assert_eq!(v.evaluate(&Method::HEAD, &h), Precondition::NotModified, "{value}");
            assert_eq!(v.evaluate(&Method::POST, &h), Precondition::Failed, "{value}");
        }
        let two_lines = headers(&[("if-none-match", r#""other""#), ("if-none-match", &tag)]);
        assert_eq!(v.evaluate(&Method::GET, &two_lines), Precondition::NotModified);
        let unquoted = tag.trim_matches('"').to_owned();
        for value in [r#""other""#, "", unquoted.as_str(), &format!("{tag} junk"), &format!("*, {tag}")] {
            let h = headers(&[("if-none-match", value)]);
            assert_eq!(v.evaluate(&Method::GET, &h), Precondition::Serve, "{value:?}");
        }
    }

    #[test]
    fn if_modified_since_counts_only_without_if_none_match_and_on_get_or_head() {
        let v = page();
        let same = "Wed, 01 Jan 2025 00:00:00 GMT";
        for (fields, method, expected) in [
            (vec![("if-modified-since", same)], Method::GET, Precondition::NotModified),
            (
                vec![("if-modified-since", "Thu, 02 Jan 2025 00:00:00 GMT")],
                Method::HEAD,
                Precondition::NotModified,
            ),
            (
                vec![("if-modified-since", "Wednesday, 01-Jan-25 00:00:00 GMT")],
                Method::GET,
                Precondition::NotModified,
            ),
            (vec![("if-modified-since", "Tue, 31 Dec 2024 23:59:59 GMT")], Method::GET, Precondition::Serve),
            (vec![("if-modified-since", same)], Method::POST, Precondition::Serve),
            (vec![("if-modified-since", "yesterday")], Method::GET, Precondition::Serve),
            (
                vec![("if-modified-since", same), ("if-modified-since", same)],
                Method::GET,
                Precondition::Serve,
            ),
            (
                vec![("if-modified-since", same), ("if-none-match", "\"other\"")],
                Method::GET,
                Precondition::Serve,
            ),
        ] {
            assert_eq!(v.evaluate(&method, &headers(&fields)), expected, "{method} {fields:?}");
        }
        assert_eq!(v.evaluate(&Method::GET, &HeaderMap::new()), Precondition::Serve);
        assert!(!is_conditional(&HeaderMap::new()));
        assert!(is_conditional(&headers(&[("if-modified-since", "yesterday")])));
    }

    #[test]
    fn dates_http_cannot_spell_are_clamped_not_a_panic() {
        assert_eq!(http_date(UNIX_EPOCH - Duration::from_secs(1)), http_date(UNIX_EPOCH));
        let far = Validators::of(b"", UNIX_EPOCH + Duration::from_secs(u32::MAX as u64 * 1000));
        assert_eq!(far.last_modified(), "Fri, 31 Dec 9999 23:59:59 GMT");
    }
}
