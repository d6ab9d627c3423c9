//! What a stored request carries beyond its URL, method, priority, depth and attempts:
//! headers, its body (base64, as a body need not be text), meta, session, the last backoff, the redirects and walls so far, whether it is a
//! sitemap and, on a redirect hop, the chain before it (its first URL, and the hops
//! between that and this one, `via`, so a loop is told after a resume or on another
//! worker). The state file keeps it in a
//! row's `extra` column, the fleet in Redis beside those fields; both as this one JSON
//! object, absent for the common request that has none of it.
//!
//! Every key is optional, so an object written before a key existed reads back with its
//! default (`sitemap`, `first_url`, `via` and `body` came later: a request stored before
//! bodies existed has none; a hop stored without
//! `first_url` reads as its own first URL, one without `via` as a chain of its first URL
//! alone), and unknown keys are ignored; the state file's schema version
//! stays the same.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::Url;

use crate::request::headers::StoredHeaders;
use crate::request::{Body, Request};

/// A request's extras as stored.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Extra {
    #[serde(default, skip_serializing_if = "StoredHeaders::is_empty")]
    headers: StoredHeaders,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    meta: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    backoff_ms: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    redirects: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    walls: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    sitemap: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    via: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Extra {
    /// The extras of `request`, `None` when it has none.
    pub(crate) fn of(request: &Request) -> Option<Extra> {
        let extra = Extra {
            headers: StoredHeaders::of(&request.headers),
            body: request.body().map(|body| BASE64.encode(body)),
            meta: request.meta.clone(),
            session: request.session.as_deref().map(str::to_owned),
            backoff_ms: u64::try_from(request.last_backoff.as_millis()).unwrap_or(u64::MAX),
            redirects: u64::from(request.redirects),
            walls: u64::from(request.walls),
            sitemap: request.sitemap,
            first_url: request.chain.first().map(Url::to_string),
            via: request.chain.iter().skip(1).map(Url::to_string).collect(),
        };
        let empty = extra.headers.is_empty()
            && extra.body.is_none()
            && extra.meta.is_empty()
            && extra.session.is_none()
            && extra.backoff_ms == 0
            && extra.redirects == 0
            && extra.walls == 0
            && !extra.sitemap
            && extra.first_url.is_none();
        (!empty).then_some(extra)
    }

    /// Give `request` these extras again; what does not read back (a header's name, the
    /// body, the first URL), if something does not.
    pub(crate) fn apply(self, request: &mut Request) -> Result<(), String> {
        request.headers = self.headers.into_map().map_err(|name| format!("header {name:?}"))?;
        request.body = match self.body {
            Some(text) => Some(Body(BASE64.decode(text).map_err(|e| format!("body: {e}"))?.into())),
            None => None,
        };
        let read = |url: String| Url::parse(&url).map_err(|e| format!("redirect chain URL {url:?}: {e}"));
        request.chain = self.first_url.into_iter().chain(self.via).map(read).collect::<Result<_, _>>()?;
        request.meta = self.meta;
        request.session = self.session.map(Into::into);
        request.last_backoff = Duration::from_millis(self.backoff_ms);
        request.redirects = u8::try_from(self.redirects).unwrap_or(u8::MAX);
        request.walls = u8::try_from(self.walls).unwrap_or(u8::MAX);
        request.sitemap = self.sitemap;
        Ok(())
    }
}
