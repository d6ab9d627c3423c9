//! Header maps written to disk as JSON, by the state file (a request's own headers) and
//! the HTTP cache (an answer's): each header a `[name, value]` pair, the value as text when
//! it is text and as its bytes otherwise, so nothing is lost either way.

use reqwest::header::HeaderMap;
#[cfg(any(feature = "state", feature = "fleet"))]
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

/// A header map as stored.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct StoredHeaders(Vec<(String, HeaderText)>);

/// A header value: text when it is, its bytes otherwise.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum HeaderText {
    Text(String),
    Bytes(Vec<u8>),
}

impl StoredHeaders {
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let pairs = headers.iter().map(|(name, value)| {
            let text = match value.to_str() {
                Ok(text) => HeaderText::Text(text.to_owned()),
                Err(_) => HeaderText::Bytes(value.as_bytes().to_vec()),
            };
            (name.as_str().to_owned(), text)
        });
        StoredHeaders(pairs.collect())
    }
}

/// Reading back what a state file, a fleet or the HTTP cache keeps.
#[cfg(any(feature = "state", feature = "fleet"))]
impl StoredHeaders {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The header map again; the name of a header that does not read back, if one does not.
    pub(crate) fn into_map(self) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::with_capacity(self.0.len());
        for (name, value) in self.0 {
            let value = match value {
                HeaderText::Text(text) => HeaderValue::from_str(&text).ok(),
                HeaderText::Bytes(bytes) => HeaderValue::from_bytes(&bytes).ok(),
            };
            match (HeaderName::from_bytes(name.as_bytes()), value) {
                (Ok(name), Some(value)) => {
                    headers.append(name, value);
                }
                _ => return Err(name),
            }
        }
        Ok(headers)
    }
}
