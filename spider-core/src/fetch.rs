//! Fetch: one reqwest client, reused for connection pooling, with a timeout and caps.
//!
//! Redirects are not followed here: the engine turns each hop into a new request through
//! the frontier, so a redirect's target is deduplicated like any link, counts against the
//! rate ceiling, and a chain is bounded by `max_redirects`.

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH};
use reqwest::{Client, StatusCode};

use crate::config::Config;
use crate::error::Error;
use crate::request::Request;

/// A response read in full, within the body cap.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// The HTTP client of a crawl.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: Client,
    max_body: usize,
}

impl Fetcher {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::Config(format!("header name {name:?}: {e}")))?;
            let value =
                HeaderValue::from_str(value).map_err(|e| Error::Config(format!("header {name}: {e}")))?;
            headers.append(name, value);
        }
        let client = Client::builder()
            .user_agent(config.user_agent.as_str())
            .default_headers(headers)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(config.concurrency)
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Fetcher { client, max_body: config.max_body_bytes })
    }

    /// Send `request` and read its body, decompressed, up to the cap.
    pub(crate) async fn fetch(&self, request: &Request) -> Result<Fetched, Error> {
        let url = request.url();
        let transport = |source: reqwest::Error| {
            if source.is_timeout() {
                Error::Timeout { url: url.clone() }
            } else {
                Error::Http { url: url.clone(), source }
            }
        };
        let mut response = self
            .client
            .request(request.method().clone(), url.clone())
            .headers(request.headers().clone())
            .send()
            .await
            .map_err(transport)?;
        let too_large = || Error::BodyTooLarge { url: url.clone(), limit: self.max_body };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|len| len > self.max_body) {
            return Err(too_large());
        }
        let mut body = BytesMut::with_capacity(declared.unwrap_or(0).min(self.max_body));
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > self.max_body {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { status: response.status(), headers: response.headers().clone(), body: body.freeze() })
    }
}
