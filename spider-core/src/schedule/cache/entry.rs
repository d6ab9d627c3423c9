//! What the cache holds and hands out: an answer from it ([`Cached`]), an answer to keep
//! ([`Entry`], through a [`CacheWrite`]), and where each keeps its body.

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
use crate::sinks::warc::{read_payload, Stored};

/// An answer from the cache, travelling with its request to the task.
#[derive(Debug)]
pub(crate) struct Cached {
    pub(super) fingerprint: Fingerprint,
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    /// Read on the task.
    pub(super) body: Body,
    pub(super) max_body: usize,
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

/// Where a cached answer's body is.
#[derive(Debug)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(super) enum Body {
    /// In the cache, deflated.
    Deflated(Vec<u8>),
    /// In the WARC archive's record `stored`, whose payload digest is `digest`.
    Archived { stored: Stored, digest: String },
}

/// A new answer, its body already deflated on the task, or left to the archive.
#[derive(Debug)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(crate) struct Entry {
    pub(super) fingerprint: Fingerprint,
    pub(super) url: String,
    pub(super) status: u16,
    pub(super) headers: String,
    pub(super) body: EntryBody,
}

/// What an entry keeps of the body: the body deflated, or its payload digest, to be
/// found in the archive where the dispatcher writes it.
#[derive(Debug)]
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(super) enum EntryBody {
    Deflated(Vec<u8>),
    Archived(String),
}

/// Whether `request`'s answer is kept and reused: GET and HEAD only.
pub(super) fn keeps(request: &Request) -> bool {
    matches!(*request.method(), Method::GET | Method::HEAD)
}

impl Entry {
    /// The entry to store for `request`'s answer; `None` for a request whose answers are
    /// not kept, or when the answer cannot be encoded. With `archived`, the payload digest
    /// of the archive's record of the answer, the body is left to the archive.
    pub(crate) fn new(
        fingerprint: Fingerprint,
        request: &Request,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        archived: Option<&str>,
    ) -> Option<Self> {
        if !keeps(request) {
            return None;
        }
        let body = match archived {
            Some(digest) => EntryBody::Archived(digest.to_owned()),
            None => {
                let mut deflated =
                    DeflateEncoder::new(Vec::with_capacity(body.len() / 4), Compression::fast());
                deflated.write_all(body).ok()?;
                EntryBody::Deflated(deflated.finish().ok()?)
            }
        };
        Some(Entry {
            fingerprint,
            url: request.url().to_string(),
            status: status.as_u16(),
            headers: serde_json::to_string(&StoredHeaders::of(headers)).ok()?,
            body,
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

    /// The stored answer: status, headers and body (within the body cap), inflated or
    /// read from the archive's record.
    pub(crate) fn answer(self) -> Result<(StatusCode, HeaderMap, Bytes), String> {
        let body = match self.body {
            Body::Deflated(deflated) => {
                let mut body = Vec::new();
                let limit = u64::try_from(self.max_body).unwrap_or(u64::MAX).saturating_add(1);
                DeflateDecoder::new(&deflated[..])
                    .take(limit)
                    .read_to_end(&mut body)
                    .map_err(|e| format!("body: {e}"))?;
                if body.len() > self.max_body {
                    return Err(format!("body over the cap of {} bytes", self.max_body));
                }
                body
            }
            Body::Archived { stored, digest } => {
                let (payload, found) = read_payload(&stored, self.max_body)?;
                if found != digest {
                    return Err(format!(
                        "the archive's record at {} offset {} is no longer this answer's ({found}, not \
                            {digest})",
                        stored.file.display(),
                        stored.offset
                    ));
                }
                payload
            }
        };
        Ok((self.status, self.headers, Bytes::from(body)))
    }
}
