//! The transport: clients built from one recipe (the router keeps one per route and wire),
//! and one request sent on one of them, its answer read within the caps (a sitemap's is
//! the protocol's 50 MB, not the page cap). A client is the crawl's own (reqwest and
//! rustls, HTTP/2 where the server offers it) or, for an identity that impersonates a
//! browser, one with that browser's wire (`browser.rs`, the `impersonate` feature).
//!
//! Redirects are not followed here: the engine turns each hop into a new request through
//! the frontier, so a redirect's target is deduplicated like any link, counts against the
//! rate ceiling, and a chain is bounded by `max_redirects`.

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH};
use reqwest::{StatusCode, Version};
use rustls::pki_types::{pem::PemObject, CertificateDer};
use spider_settings::{Config, Gateway};

use crate::error::Error;
use crate::request::identity::Profile;
use crate::request::{Request, SITEMAP_MAX_BYTES};

/// A client requests are sent on: the crawl's own, or one with a browser's wire.
#[derive(Clone)]
pub(crate) enum Client {
    Plain(reqwest::Client),
    #[cfg(feature = "impersonate")]
    Browser(wreq::Client),
}

/// The way out of a client: direct, or through a gateway as `username` (none to send
/// no credentials).
#[derive(Clone, Copy)]
pub(crate) struct Via<'a> {
    pub(crate) gateway: &'a Gateway,
    pub(crate) username: Option<&'a str>,
}

/// A response read in full, within the body cap. Not `Debug`: its headers hold the
/// cookies the site set.
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Bytes of the request and of the answer as they crossed HTTP (see `route::spend`).
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// The HTTP version it came in.
    pub(crate) version: Version,
    /// The address that answered, where the client knows it: the server's when sent
    /// directly, a gateway's through one.
    pub(crate) peer: Option<std::net::SocketAddr>,
}

/// What every client of a crawl shares: headers, timeouts, trusted roots. The router
/// builds one client per route from it.
#[derive(Debug)]
pub(crate) struct ClientRecipe {
    user_agent: String,
    headers: HeaderMap,
    timeout: std::time::Duration,
    idle_per_host: usize,
    http2: bool,
    /// The TLS configuration every plain client gets a copy of: the roots are read once,
    /// not at each build. (Left to reqwest, each build read them again, and the system's
    /// too where another dependency turned reqwest's native roots on: a broad crawl, whose
    /// router builds a client every few hundred hosts, spent half its CPU there.)
    tls: rustls::ClientConfig,
    #[cfg(feature = "impersonate")]
    browser: super::browser::BrowserRecipe,
}

impl ClientRecipe {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::Config(format!("header name {name:?}: {e}")))?;
            let value =
                HeaderValue::from_str(value).map_err(|e| Error::Config(format!("header {name}: {e}")))?;
            headers.append(name, value);
        }
        let pem = config.ca_cert.as_deref().map(read_pem).transpose()?;
        let extra_roots = pem.as_ref().map(|(pem, path)| read_certificates(pem, path)).transpose()?;
        let tls = tls_config(extra_roots.unwrap_or_default(), config.http2)?;
        if config.impersonate != spider_settings::Impersonate::None && !cfg!(feature = "impersonate") {
            let what = format!("impersonate = \"{}\"", config.impersonate.name());
            return Err(Error::left_out(&what, "impersonate"));
        }
        Ok(ClientRecipe {
            user_agent: config.user_agent.clone(),
            #[cfg(feature = "impersonate")]
            browser: super::browser::BrowserRecipe::new(
                config,
                &headers,
                config.timeout.min(CONNECT_TIMEOUT),
                pem.as_ref().map(|(pem, _)| pem.as_slice()),
            ),
            headers,
            timeout: config.timeout,
            idle_per_host: config.concurrency,
            http2: config.http2,
            tls,
        })
    }

    /// A client going out through `via`'s gateway, or directly (environment proxy variables
    /// are ignored: routes are configured, not inherited), on the crawl's own wire or
    /// `profile`'s. Without `keep_alive` every request opens a connection of its own, which
    /// is how a rotating gateway gives each request a new exit.
    pub(crate) fn build(
        &self,
        via: Option<Via<'_>>,
        keep_alive: bool,
        profile: Option<Profile>,
    ) -> Result<Client, Error> {
        #[cfg(feature = "impersonate")]
        if let Some(profile) = profile {
            let gateway = via.map(|via| (via.gateway, via.username));
            return self.browser.build(gateway, keep_alive, profile).map(Client::Browser);
        }
        #[cfg(not(feature = "impersonate"))]
        if profile.is_some() {
            return Err(Error::left_out("a rule's impersonate", "impersonate"));
        }
        let mut builder = reqwest::Client::builder()
            .user_agent(self.user_agent.as_str())
            .default_headers(self.headers.clone())
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(CONNECT_TIMEOUT))
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(std::sync::Arc::new(super::resolve::Resolver))
            .pool_max_idle_per_host(if keep_alive { self.idle_per_host } else { 0 });
        builder = match via {
            Some(via) => {
                let proxy = reqwest::Proxy::all(via.gateway.url().clone())
                    .map_err(|e| Error::Config(format!("gateway {}: {e}", via.gateway)))?;
                builder.proxy(match via.username {
                    Some(username) => proxy.basic_auth(username, via.gateway.password()),
                    None => proxy,
                })
            }
            None => builder.no_proxy(),
        };
        builder = builder.use_preconfigured_tls(self.tls.clone());
        if !self.http2 {
            builder = builder.http1_only();
        }
        builder
            .build()
            .map(Client::Plain)
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))
    }
}

/// The `ca_cert` file's bytes, with its path for messages.
fn read_pem(path: &std::path::Path) -> Result<(Vec<u8>, std::path::PathBuf), Error> {
    let pem = std::fs::read(path).map_err(|e| Error::Config(format!("ca_cert {}: {e}", path.display())))?;
    Ok((pem, path.to_owned()))
}

/// The `ca_cert` file's certificates, checked to be some.
fn read_certificates(pem: &[u8], path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let refuse =
        |why: String| Error::Config(format!("ca_cert {} is not a PEM certificate: {why}", path.display()));
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pem).collect::<Result<_, _>>().map_err(|e| refuse(e.to_string()))?;
    if certificates.is_empty() {
        return Err(refuse("it holds no BEGIN CERTIFICATE block".to_owned()));
    }
    Ok(certificates)
}

/// The plain clients' TLS: Mozilla's roots (`webpki-roots`) and `extra_roots`, TLS 1.2
/// and 1.3, and ALPN offering HTTP/2 when `http2` allows it.
fn tls_config(extra_roots: Vec<CertificateDer<'static>>, http2: bool) -> Result<rustls::ClientConfig, Error> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for root in extra_roots {
        roots.add(root).map_err(|e| Error::Config(format!("ca_cert: {e}")))?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols =
        if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
    Ok(tls)
}

/// Sends requests on a client and reads the answers within the cap.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    max_body: usize,
}

impl Transport {
    pub(crate) fn new(config: &Config) -> Self {
        Transport { max_body: config.max_body_bytes }
    }

    /// Send `request` on `client` with `identity`'s headers (its agent's set and its
    /// cookies; the request's own headers win), and read its body, decompressed, up to
    /// the cap.
    pub(crate) async fn send(
        &self,
        client: &Client,
        identity: &HeaderMap,
        request: &Request,
    ) -> Result<Fetched, Error> {
        let url = request.url();
        let mut response = match client {
            Client::Plain(client) => {
                let mut outgoing = client
                    .request(request.method().clone(), url.clone())
                    .headers(identity.clone())
                    .headers(request.headers().clone());
                if let Some(body) = &request.body {
                    outgoing = outgoing.body(body.0.clone());
                }
                Answer::Plain(outgoing.send().await.map_err(|e| plain_error(url, e))?)
            }
            #[cfg(feature = "impersonate")]
            Client::Browser(client) => {
                Answer::Browser(super::browser::send(client, identity, request).await?)
            }
        };
        // A sitemap is capped by the protocol's 50 MB, not the page cap. Of a larger one the
        // reader takes what the 50 MB hold: one byte more is read, to tell it was larger.
        // A robots.txt is read to at least 500 KiB (RFC 9309), and what the cap holds of a
        // larger one is used, not refused.
        let sitemap = request.is_sitemap();
        let robots = url.path() == "/robots.txt";
        let cap = if sitemap {
            SITEMAP_MAX_BYTES
        } else if robots {
            self.max_body.max(ROBOTS_MIN_BYTES)
        } else {
            self.max_body
        };
        let cut_short = sitemap || robots;
        let too_large = || Error::BodyTooLarge { url: url.clone(), limit: cap };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if !cut_short && declared.is_some_and(|len| len > cap) {
            return Err(too_large());
        }
        let mut body = BytesMut::with_capacity(declared.unwrap_or(0).min(cap));
        while let Some(chunk) = response.chunk(url).await? {
            if body.len() + chunk.len() > cap {
                if !cut_short {
                    return Err(too_large());
                }
                let keep = if sitemap { cap + 1 } else { cap };
                body.extend_from_slice(&chunk[..keep - body.len()]);
                if robots {
                    // A rule cut in two could read as another rule: the last whole line ends it.
                    let whole = body.iter().rposition(|&b| b == b'\n').map_or(0, |end| end + 1);
                    body.truncate(whole);
                }
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let headers = response.headers().clone();
        let sent = REQUEST_OVERHEAD
            + request.method().as_str().len()
            + url.as_str().len()
            + size(identity)
            + size(request.headers())
            + request.body().map_or(0, <[u8]>::len);
        let received = RESPONSE_OVERHEAD + size(&headers) + body.len();
        Ok(Fetched {
            status: response.status(),
            headers,
            body: body.freeze(),
            sent: sent as u64,
            received: received as u64,
            version: response.version(),
            peer: response.peer(),
        })
    }
}

/// A reqwest error as the crawl's: a timeout, or the transport's chain of causes.
fn plain_error(url: &url::Url, source: reqwest::Error) -> Error {
    // A connect timeout stays a connect error: a silent gateway gets benched.
    if source.is_timeout() && !source.is_connect() {
        Error::Timeout { url: url.clone() }
    } else {
        // The error's message names the URL already.
        Error::Http { url: url.clone(), source: Box::new(source.without_url()) }
    }
}

/// An answer whose body is being read, from either client.
enum Answer {
    Plain(reqwest::Response),
    #[cfg(feature = "impersonate")]
    Browser(super::browser::Answer),
}

impl Answer {
    fn status(&self) -> StatusCode {
        match self {
            Answer::Plain(response) => response.status(),
            #[cfg(feature = "impersonate")]
            Answer::Browser(answer) => answer.status,
        }
    }

    fn peer(&self) -> Option<std::net::SocketAddr> {
        match self {
            Answer::Plain(response) => response.remote_addr(),
            #[cfg(feature = "impersonate")]
            Answer::Browser(_) => None,
        }
    }

    fn headers(&self) -> &HeaderMap {
        match self {
            Answer::Plain(response) => response.headers(),
            #[cfg(feature = "impersonate")]
            Answer::Browser(answer) => &answer.headers,
        }
    }

    fn version(&self) -> Version {
        match self {
            Answer::Plain(response) => response.version(),
            #[cfg(feature = "impersonate")]
            Answer::Browser(answer) => answer.version,
        }
    }

    async fn chunk(&mut self, url: &url::Url) -> Result<Option<Bytes>, Error> {
        match self {
            Answer::Plain(response) => response.chunk().await.map_err(|e| plain_error(url, e)),
            #[cfg(feature = "impersonate")]
            Answer::Browser(answer) => answer.chunk(url).await,
        }
    }
}

/// How much of a robots.txt is read at least, whatever the page cap: RFC 9309's 500 KiB.
const ROBOTS_MIN_BYTES: usize = 500 * 1024;

/// The longest wait for a connection; a host or gateway that takes longer is unreachable.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a request carries beyond its method, URL and own headers: the protocol, Host,
/// User-Agent, Accept, Accept-Encoding and Proxy-Authorization lines, roughly.
const REQUEST_OVERHEAD: usize = 160;
/// The status line and the blank line after the headers.
const RESPONSE_OVERHEAD: usize = 19;

/// Header bytes as written on the wire: `name: value\r\n`.
fn size(headers: &HeaderMap) -> usize {
    headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum()
}
