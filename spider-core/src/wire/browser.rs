//! The wire of a browser (the `impersonate` feature): wreq on BoringSSL, with the TLS
//! ClientHello and HTTP/2 preface of `wreq-util`'s Chrome and Firefox profiles, and the
//! headers in the order the identity's [`Profile`] gives. The header values are the
//! identity's (`request/identity/browsers.rs`); `wreq-util`'s own are left off, so one
//! table says what an identity sends.

use std::pin::Pin;
use std::sync::OnceLock;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Version};
use spider_settings::{Config, Gateway};
use wreq::header::OrigHeaderMap;
use wreq::tls::trust::CertStore;
use wreq_util::{Emulation, Platform as WirePlatform, Profile as WireProfile};

use crate::error::Error;
use crate::request::identity::{Browser, Platform, Profile};
use crate::request::Request;

/// What every browser client of a crawl shares.
pub(crate) struct BrowserRecipe {
    headers: HeaderMap,
    timeout: std::time::Duration,
    connect_timeout: std::time::Duration,
    idle_per_host: usize,
    /// `ca_cert`'s PEM, when there is one.
    extra_root: Option<Vec<u8>>,
    /// Mozilla's roots and `extra_root`, read when the first browser client is built: a
    /// crawl that impersonates nothing, the probe and a robots.txt fetch never read them.
    roots: OnceLock<CertStore>,
}

impl std::fmt::Debug for BrowserRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserRecipe").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl BrowserRecipe {
    pub(crate) fn new(
        config: &Config,
        headers: &HeaderMap,
        connect_timeout: std::time::Duration,
        extra_root: Option<&[u8]>,
    ) -> Self {
        BrowserRecipe {
            headers: headers.clone(),
            timeout: config.timeout,
            connect_timeout,
            idle_per_host: config.concurrency,
            extra_root: extra_root.map(<[u8]>::to_vec),
            roots: OnceLock::new(),
        }
    }

    fn roots(&self) -> Result<CertStore, Error> {
        if let Some(roots) = self.roots.get() {
            return Ok(roots.clone());
        }
        let mut roots = CertStore::builder().add_der_certs(webpki_root_certs::TLS_SERVER_ROOT_CERTS);
        if let Some(pem) = &self.extra_root {
            roots = roots.add_stack_pem_certs(pem);
        }
        let roots = roots.build().map_err(|e| Error::Config(format!("ca_cert: {e}")))?;
        Ok(self.roots.get_or_init(|| roots).clone())
    }

    /// A client with `profile`'s wire, going out through `gateway` as its username (or
    /// directly), kept alive or not as `ClientRecipe::build` says.
    pub(crate) fn build(
        &self,
        gateway: Option<(&Gateway, Option<&str>)>,
        keep_alive: bool,
        profile: Profile,
    ) -> Result<wreq::Client, Error> {
        let wire = match profile.browser {
            Browser::Chrome => WireProfile::Chrome149,
            Browser::Firefox => WireProfile::Firefox151,
        };
        let platform = match profile.platform {
            Platform::Windows => WirePlatform::Windows,
            Platform::MacOs => WirePlatform::MacOS,
            Platform::Linux => WirePlatform::Linux,
        };
        let mut order = OrigHeaderMap::new();
        for name in profile.order() {
            order.insert(*name);
        }
        let mut builder = wreq::Client::builder()
            .emulation(Emulation::builder().profile(wire).platform(platform).headers(false).build())
            .orig_headers(order)
            .default_headers(self.headers.clone())
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .redirect(wreq::redirect::Policy::none())
            .pool_max_idle_per_host(if keep_alive { self.idle_per_host } else { 0 })
            .tls_cert_store(self.roots()?);
        builder = match gateway {
            Some((gateway, username)) => {
                let proxy = wreq::Proxy::all(gateway.url().as_str())
                    .map_err(|e| Error::Config(format!("gateway {gateway}: {e}")))?;
                builder.proxy(match username {
                    Some(username) => proxy.basic_auth(username, gateway.password()),
                    None => proxy,
                })
            }
            None => builder.no_proxy(),
        };
        builder.build().map_err(|e| Error::Config(format!("cannot build the browser client: {e}")))
    }
}

/// An answer whose body is being read.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) version: Version,
    body: Pin<Box<dyn Stream<Item = wreq::Result<Bytes>> + Send>>,
}

impl Answer {
    pub(crate) async fn chunk(&mut self, url: &url::Url) -> Result<Option<Bytes>, Error> {
        self.body.next().await.transpose().map_err(|e| error(url, e))
    }
}

/// Send `request` with `identity`'s headers (the request's own win), as `send` in
/// `transport.rs` does on the crawl's own client.
pub(crate) async fn send(
    client: &wreq::Client,
    identity: &HeaderMap,
    request: &Request,
) -> Result<Answer, Error> {
    let url = request.url();
    let mut outgoing = client
        .request(request.method().clone(), url.as_str())
        .headers(identity.clone())
        .headers(request.headers().clone());
    if let Some(body) = &request.body {
        outgoing = outgoing.body(body.0.clone());
    }
    let response = outgoing.send().await.map_err(|e| error(url, e))?;
    Ok(Answer {
        status: response.status(),
        headers: response.headers().clone(),
        version: response.version(),
        body: Box::pin(response.bytes_stream()),
    })
}

fn error(url: &url::Url, source: wreq::Error) -> Error {
    if source.is_timeout() && !source.is_connect() {
        Error::Timeout { url: url.clone() }
    } else {
        // The error's message names the URL already.
        Error::Http { url: url.clone(), source: Box::new(source.without_uri()) }
    }
}
