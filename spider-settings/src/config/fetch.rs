//! Setters for the fetch and its verdict: the client's recipe (timeout, user agent,
//! headers, extra root certificate), robots.txt, redirects, the body cap, block markers,
//! and the HTTP cache answered from before the network.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;
#[cfg(doc)]
use super::DEFAULT_USER_AGENT;

impl Config {
    /// Time for one attempt, connect to last body byte (default 30 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Look like a browser on the wire (default [`Impersonate::None`](crate::Impersonate)):
    /// Chrome's or Firefox's TLS ClientHello, HTTP/2 preface and header order, and the
    /// headers that browser sends with its User-Agent. Each identity draws an agent of the
    /// profile's browser (its platform among Windows, macOS and Linux) and keeps it, so the
    /// agent, its client hints and the wire agree; [`user_agents`](Self::user_agents) are
    /// not drawn from then. [`Impersonate::Auto`](crate::Impersonate::Auto) sends plain
    /// requests until a host refuses one (a block), then Chrome's, for that host from then
    /// on. Needs spiderling's `impersonate` feature (BoringSSL, built with cmake and clang).
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_settings::{Config, Impersonate};
    ///
    /// let config = Config::new("shop").impersonate(Impersonate::Chrome);
    /// assert_eq!(config.impersonate, Impersonate::Chrome);
    /// ```
    #[must_use]
    pub fn impersonate(mut self, profile: crate::Impersonate) -> Self {
        self.impersonate = profile;
        self
    }

    /// Offer HTTP/2 to TLS servers (default true): ALPN `h2`, then `http/1.1`, so a server
    /// that speaks it answers many requests on one connection, each still counted as a
    /// request in flight against [`per_host`](Self::per_host). `false` speaks HTTP/1.1
    /// only, on the crawl's own client; an [`impersonate`](Self::impersonate)d browser
    /// offers HTTP/2 whatever this says, as the browser does.
    #[must_use]
    pub fn http2(mut self, offer: bool) -> Self {
        self.http2 = offer;
        self
    }

    /// The User-Agent header; its first word is the robots.txt token
    /// (default [`DEFAULT_USER_AGENT`]).
    #[must_use]
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }

    /// A header sent with every request (default: none).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Fetch each host's robots.txt first and obey it, Crawl-delay included
    /// (default true).
    #[must_use]
    pub fn obey_robots(mut self, obey: bool) -> Self {
        self.obey_robots = obey;
        self
    }

    /// Longest chain of redirects followed (default 10).
    #[must_use]
    pub fn max_redirects(mut self, hops: u8) -> Self {
        self.max_redirects = hops;
        self
    }

    /// Largest body read, after decompression; a larger one fails the request, and a
    /// decompression bomb stops inflating here (default 8 MiB).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Trust this PEM certificate besides the built-in roots, for a private or test
    /// server such as the sandbox's TLS mode (default: built-in roots only). TLS
    /// verification stays on.
    #[must_use]
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_cert = Some(path.into());
        self
    }

    /// Text that marks an answer as a block whatever its status: a captcha wall served with
    /// 200, say. A blocked answer is not parsed; it is retried, from a new exit when proxies
    /// allow (default: none; 403, 429 and 503 challenge pages are blocks anyway).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").block_marker("g-recaptcha").block_marker("Access denied");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn block_marker(mut self, text: impl Into<String>) -> Self {
        self.block_markers.push(text.into());
        self
    }

    /// Keep every answer (status, headers, body) in this cache file (one SQLite file,
    /// bodies compressed), keyed by the request's fingerprint, and answer later runs from
    /// it without touching the network: a spider's `parse` can be reworked against a site
    /// fetched once. Blocked answers and failures are never cached (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let config = spider_settings::Config::new("shop")
    ///     .cache(".spiderling/cache")
    ///     .cache_ttl(Duration::from_secs(24 * 3600));
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn cache(mut self, path: impl Into<PathBuf>) -> Self {
        self.cache = Some(path.into());
        self
    }

    /// Answers older than this are not taken from the [`cache`](Self::cache): they are
    /// fetched again and replace the old ones (default: none, cached answers never expire).
    #[must_use]
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = Some(ttl);
        self
    }

    /// Ask the server whether each cached answer still holds before using it, for
    /// recrawls: an answer with an `ETag` or `Last-Modified` is asked for with
    /// `If-None-Match` / `If-Modified-Since`, and a `304 Not Modified` is parsed from the
    /// cache; one without them is fetched again (default false).
    #[must_use]
    pub fn revalidate(mut self, revalidate: bool) -> Self {
        self.revalidate = revalidate;
        self
    }
}
