//! The HTTP cache: every answer kept in one SQLite file, so later runs answer from it
//! without the network, or ask the server only whether it changed.
//!
//! The dispatcher looks a request up before admission: a fresh answer needs no rate token,
//! no host slot and no politeness pause, since nothing is sent. The request's task rebuilds
//! the answer (or, revalidating, sends the request with `If-None-Match` /
//! `If-Modified-Since` and takes a 304 as the cached answer) and hands new answers back for
//! the dispatcher to store: only the dispatcher touches the file. Bodies are stored
//! deflated; blocked answers and failures are never stored, nor answers to a request
//! other than GET or HEAD: a POST (a login, a search, an order) is sent every run, as
//! HTTP caches do (RFC 9111 lets no later POST be answered from a stored one).

#[cfg(not(feature = "state"))]
mod off;
#[cfg(feature = "state")]
mod store;

#[cfg(not(feature = "state"))]
pub(crate) use off::HttpCache;
#[cfg(feature = "state")]
pub(crate) use store::HttpCache;

use std::io::{Read, Write};

use bytes::Bytes;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use reqwest::header::{HeaderMap, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use reqwest::{Method, StatusCode};

use crate::request::canonical::Fingerprint;
use crate::request::headers::StoredHeaders;
use crate::request::Request;

/// An answer from the cache, travelling with its request to the task.
#[derive(Debug)]
pub(crate) struct Cached {
    fingerprint: Fingerprint,
    status: StatusCode,
    headers: HeaderMap,
    /// Deflated: inflated on the task.
    body: Vec<u8>,
    max_body: usize,
    /// Whether the server is asked first whether it still holds.
    pub(crate) revalidate: bool,
}

/// What a task hands back for the dispatcher to write to the cache (which only the
/// `state` feature brings: without it, none is written).
#[derive(Debug)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(crate) enum CacheWrite {
    /// A new answer.
    Store(Entry),
    /// A revalidated answer, fresh again from now.
    Touch(Fingerprint),
}

/// A new answer, its body already deflated on the task.
#[derive(Debug)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(crate) struct Entry {
    fingerprint: Fingerprint,
    url: String,
    status: u16,
    headers: String,
    body: Vec<u8>,
}

/// Whether `request`'s answer is kept and reused: GET and HEAD only.
fn keeps(request: &Request) -> bool {
    matches!(*request.method(), Method::GET | Method::HEAD)
}

impl Entry {
    /// The entry to store for `request`'s answer; `None` for a request whose answers are
    /// not kept, or when the answer cannot be encoded.
    pub(crate) fn new(
        fingerprint: Fingerprint,
        request: &Request,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<Self> {
        if !keeps(request) {
            return None;
        }
        let mut deflated = DeflateEncoder::new(Vec::with_capacity(body.len() / 4), Compression::fast());
        deflated.write_all(body).ok()?;
        Some(Entry {
            fingerprint,
            url: request.url().to_string(),
            status: status.as_u16(),
            headers: serde_json::to_string(&StoredHeaders::of(headers)).ok()?,
            body: deflated.finish().ok()?,
        })
    }
}

impl Cached {
    /// The request to send when revalidating: with the answer's validators.
    pub(crate) fn conditional(&self, request: &Request) -> Request {
        let mut conditional = request.clone();
        for (stored, condition) in [(ETAG, IF_NONE_MATCH), (LAST_MODIFIED, IF_MODIFIED_SINCE)] {
            if let Some(value) = self.headers.get(stored) {
                conditional.headers.insert(condition, value.clone());
            }
        }
        conditional
    }

    /// Whether the answer carries a validator the server can confirm with a 304.
    pub(crate) fn has_validators(&self) -> bool {
        self.headers.contains_key(ETAG) || self.headers.contains_key(LAST_MODIFIED)
    }

    pub(crate) fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The stored answer: status, headers and inflated body (within the body cap).
    pub(crate) fn answer(self) -> Result<(StatusCode, HeaderMap, Bytes), String> {
        let mut body = Vec::new();
        let limit = u64::try_from(self.max_body).unwrap_or(u64::MAX).saturating_add(1);
        DeflateDecoder::new(&self.body[..])
            .take(limit)
            .read_to_end(&mut body)
            .map_err(|e| format!("body: {e}"))?;
        if body.len() > self.max_body {
            return Err(format!("body over the cap of {} bytes", self.max_body));
        }
        Ok((self.status, self.headers, Bytes::from(body)))
    }
}
