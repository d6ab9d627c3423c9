//! A request as a row of the `requests` table, and back.
//!
//! The columns hold what every request has; the rest (headers, meta, session, the last
//! backoff, redirects so far, a redirect hop's first URL) goes in one JSON `extra` ([`Extra`]), NULL for the common
//! request that has none of it.

use reqwest::Method;
use url::Url;

use crate::request::stored::Extra;
use crate::request::Request;
use crate::request::Ticket;

/// The JSON of a request's `extra` column, `None` when it has nothing beyond the columns.
pub(super) fn extra(request: &Request) -> Option<String> {
    Extra::of(request).map(|extra| serde_json::to_string(&extra).unwrap_or_default())
}

/// The columns of a row, as read.
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) url: String,
    pub(super) method: String,
    pub(super) priority: i64,
    pub(super) depth: i64,
    pub(super) attempts: i64,
    pub(super) extra: Option<String>,
}

impl Row {
    /// The request this row holds, with its ticket; a message when a column does not
    /// read back (the file was edited, or is damaged).
    pub(super) fn request(self) -> Result<Request, String> {
        let url =
            Url::parse(&self.url).map_err(|e| format!("request {}: URL {:?}: {e}", self.id, self.url))?;
        let method = Method::from_bytes(self.method.as_bytes())
            .map_err(|_| format!("request {}: method {:?}", self.id, self.method))?;
        let number = |name: &str, n: i64| {
            u32::try_from(n).map_err(|_| format!("request {}: {name} {n} out of range", self.id))
        };
        let mut request = Request::new(url).with_method(method);
        request.depth = number("depth", self.depth)?;
        request.attempts = number("attempts", self.attempts)?;
        request.priority = i32::try_from(self.priority)
            .map_err(|_| format!("request {}: priority out of range", self.id))?;
        request.ticket = Some(Ticket(self.id));
        let Some(json) = self.extra else { return Ok(request) };
        let extra: Extra =
            serde_json::from_str(&json).map_err(|e| format!("request {}: extra {json:?}: {e}", self.id))?;
        extra.apply(&mut request).map_err(|problem| format!("request {}: {problem}", self.id))?;
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};

    use super::*;

    fn row(request: &Request, id: i64) -> Row {
        Row {
            id,
            url: request.url().to_string(),
            method: request.method().to_string(),
            priority: i64::from(request.priority()),
            depth: i64::from(request.depth()),
            attempts: i64::from(request.attempts),
            extra: extra(request),
        }
    }

    #[test]
    fn a_plain_request_has_no_extra() {
        let request = Request::get("https://books.example/a").unwrap();
        assert_eq!(extra(&request), None);
        let back = row(&request, 7).request().unwrap();
        assert_eq!((back.url(), back.ticket), (request.url(), Some(Ticket(7))));
    }

    #[test]
    fn everything_a_request_carries_comes_back() {
        let mut request = Request::get("https://books.example/a?x=1")
            .unwrap()
            .with_method(Method::POST)
            .with_priority(-3)
            .with_meta("category", "poetry")
            .with_session("shopper-7")
            .with_header(AUTHORIZATION, HeaderValue::from_static("Bearer t"))
            .with_header(HeaderName::from_static("x-raw"), HeaderValue::from_bytes(b"caf\xe9").unwrap())
            .with_body("application/octet-stream", &b"\x00caf\xe9 binary"[..])
            .unwrap()
            .child_of(2, None);
        request.attempts = 2;
        request.last_backoff = Duration::from_millis(1500);
        request.redirects = 1;
        request.sitemap = true;
        request.chain = vec![
            Url::parse("https://books.example/latest").unwrap(),
            Url::parse("https://books.example/moved").unwrap(),
        ];
        let back = row(&request, 1).request().unwrap();
        assert_eq!(back.method(), Method::POST);
        assert_eq!((back.priority(), back.depth(), back.attempts), (-3, 3, 2));
        assert_eq!(back.meta(), request.meta());
        assert_eq!(back.session(), Some("shopper-7"));
        assert_eq!(back.headers(), request.headers());
        assert_eq!(back.body(), Some(&b"\x00caf\xe9 binary"[..]), "bytes that are not text too");
        assert_eq!(back.fingerprint(), request.fingerprint());
        assert_eq!((back.last_backoff, back.redirects), (Duration::from_millis(1500), 1));
        assert!(back.is_sitemap());
        assert_eq!(back.chain, request.chain, "a loop is told across runs");
    }

    #[test]
    fn a_redirect_hop_stored_before_first_urls_were_kept_is_its_own_first_url() {
        let request = Request::get("https://books.example/b").unwrap();
        let old = Row { extra: Some(r#"{"redirects":1}"#.into()), ..row(&request, 4) };
        let back = old.request().unwrap();
        assert_eq!((back.redirects, back.first_url()), (1, back.url()));
        assert_eq!(back.body(), None, "a request stored before bodies existed has none");
    }

    #[test]
    fn a_damaged_row_is_a_message_not_a_panic() {
        let bad = Row {
            id: 3,
            url: "not a url".into(),
            method: "GET".into(),
            priority: 0,
            depth: 0,
            attempts: 0,
            extra: None,
        };
        assert!(bad.request().is_err_and(|e| e.contains("request 3")));
    }
}
