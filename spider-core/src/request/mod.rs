//! What the crawler is asked to fetch.

pub(crate) mod canonical;
pub(crate) mod headers;
pub(crate) mod host;
pub(crate) mod identity;
pub(crate) mod rendering;
#[cfg(any(feature = "state", feature = "fleet"))]
pub(crate) mod stored;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE,
    PROXY_AUTHORIZATION,
};
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use url::Url;

use spider_settings::Config;

use crate::error::Error;
use crate::request::canonical::{fingerprint, fingerprint_with_body, Fingerprint};
use crate::request::host::host_key;

/// A request handed out by a durable frontier's `next`, until it is finished or deferred:
/// what the frontier knows it by when told its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket(pub(crate) i64);

/// The start URLs and the sitemaps of `sitemap_urls` of `config` as requests; call after
/// [`Config::validate`].
pub(crate) fn start_requests(config: &Config) -> Result<Vec<Request>, Error> {
    let pages = config.start_urls.iter().map(|url| Request::get(url));
    let sitemaps = config.sitemap_urls.iter().map(|url| Request::get(url).map(|r| Request::sitemap(r.url)));
    pages.chain(sitemaps).collect()
}

/// How many bytes a sitemap may hold uncompressed, as the protocol has it: "50MB
/// (52,428,800 bytes)". A sitemap's answer is read up to this, not to the page cap.
pub(crate) const SITEMAP_MAX_BYTES: usize = 52_428_800;

/// The largest request body a [`Request`] takes: 1 MiB. A form or a JSON query is a few
/// kilobytes; a body this size is a mistake, and it would be stored with the request in
/// a state file or a fleet's Redis until it is sent.
pub const MAX_REQUEST_BODY: usize = 1 << 20;

/// The Content-Type of a form's fields.
const FORM_URLENCODED: &str = "application/x-www-form-urlencoded";

/// A request's body. Its `Debug` shows only its size: a login's body holds a password,
/// and a request printed in a log must not give it away.
#[derive(Clone)]
pub(crate) struct Body(pub(crate) Bytes);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.0.len())
    }
}

/// The meta key of a request reached by a derived spider's rule: the rule's number,
/// counted from 0 in the order the rules are written (see [`Request::rule`]). The `:`
/// keeps it apart from any key a spider would name (a key of the user's that happens to
/// be spelled the same would be overwritten).
pub(crate) const RULE_META_KEY: &str = "spiderling:rule";

/// One request: a URL plus everything that travels with it through the frontier.
///
/// Follow-up requests made with [`Cx::follow`](crate::Cx::follow) inherit their parent's
/// session key and sit one level deeper.
///
/// # Examples
///
/// ```
/// use spider_core::Request;
///
/// let request = Request::get("https://books.example/catalogue/page-2.html")?
///     .with_priority(10)
///     .with_meta("category", "poetry")
///     .with_session("shopper-7");
/// assert_eq!(request.depth(), 0);
/// assert_eq!(request.session(), Some("shopper-7"));
/// # Ok::<(), spider_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Request {
    pub(crate) url: Url,
    pub(crate) method: Method,
    pub(crate) headers: HeaderMap,
    /// Sent as it is; part of the fingerprint (see [`Request::fingerprint`]).
    pub(crate) body: Option<Body>,
    pub(crate) meta: Map<String, Value>,
    pub(crate) depth: u32,
    pub(crate) priority: i32,
    pub(crate) session: Option<Arc<str>>,
    pub(crate) attempts: u32,
    /// Walls passed so far (consent pages that handed the identity a cookie), which are
    /// not attempts: bounded apart from them.
    pub(crate) walls: u8,
    pub(crate) last_backoff: Duration,
    pub(crate) redirects: u8,
    /// Whether the answer is a sitemap to read, not a page to parse (see
    /// [`Request::sitemap`]).
    pub(crate) sitemap: bool,
    /// On a redirect hop, the URLs of the chain before it, the first request's first;
    /// empty on any other. A hop back to one of them is a loop.
    pub(crate) chain: Vec<Url>,
    /// Set by a durable frontier's `next`, until the request is finished or deferred.
    pub(crate) ticket: Option<Ticket>,
    /// The lane of the host slot it went out on, kept through its redirect hops and the
    /// consent walls it passes (so the cookie a hop or a wall sets goes with the next),
    /// not through a retry: in sticky mode, a request without a session wears its lane's
    /// identity.
    pub(crate) lane: Option<u32>,
    /// Set by a fleet's frontier on a request it hands out later than the start its lease
    /// reserved under the crawl's rate (it waited for a slot of the worker's): the start
    /// is spent, and the request waits for a fresh one before it is sent.
    #[cfg(feature = "fleet")]
    pub(crate) start_lapsed: bool,
}

impl Request {
    /// A GET request for `url`, without its fragment: the fragment is never sent, so the
    /// URL a request reports (in logs, the failures file, a page's URL) is the one asked
    /// of the server.
    ///
    /// # Examples
    ///
    /// ```
    /// let url = url::Url::parse("https://books.example/changelog.html#v2")?;
    /// assert_eq!(spider_core::Request::new(url).url().as_str(), "https://books.example/changelog.html");
    /// # Ok::<(), url::ParseError>(())
    /// ```
    pub fn new(mut url: Url) -> Self {
        url.set_fragment(None);
        Request {
            url,
            method: Method::GET,
            headers: HeaderMap::new(),
            body: None,
            meta: Map::new(),
            depth: 0,
            priority: 0,
            session: None,
            attempts: 0,
            walls: 0,
            last_backoff: Duration::ZERO,
            redirects: 0,
            sitemap: false,
            chain: Vec::new(),
            lane: None,
            ticket: None,
            #[cfg(feature = "fleet")]
            start_lapsed: false,
        }
    }

    /// A GET request for a sitemap (or a sitemap index): its answer is read as a sitemap,
    /// not handed to `parse`. The URLs a sitemap lists go to
    /// [`Spider::sitemap_request`](crate::Spider::sitemap_request), and the sitemaps an index
    /// lists are read in turn; both one level deeper than the sitemap that listed them.
    /// The `sitemap_urls` setting and the `Sitemap:` lines of robots.txt (`sitemaps = true`)
    /// make these; a spider that finds a sitemap on a page can follow it with one.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::Request;
    ///
    /// let url = url::Url::parse("https://books.example/sitemap.xml")?;
    /// assert!(Request::sitemap(url.clone()).is_sitemap());
    /// assert!(!Request::new(url).is_sitemap());
    /// # Ok::<(), url::ParseError>(())
    /// ```
    pub fn sitemap(url: Url) -> Self {
        Request { sitemap: true, ..Request::new(url) }
    }

    /// A GET request for a URL given as text.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when `url` is not an absolute URL.
    pub fn get(url: &str) -> Result<Self, Error> {
        Url::parse(url).map(Request::new).map_err(|source| Error::InvalidUrl { url: url.to_owned(), source })
    }

    /// A POST of an HTML form's fields, `application/x-www-form-urlencoded` as a browser
    /// sends them, in the order given. To fill in a form the page carries (its hidden
    /// fields kept), use [`Page::form`](crate::Page::form) instead.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when `url` is not an absolute URL;
    /// [`Error::RequestBodyTooLarge`] when the fields pass [`MAX_REQUEST_BODY`].
    ///
    /// # Examples
    ///
    /// ```
    /// let search = spider_core::Request::post_form("https://books.example/search", [("q", "rust & go")])?;
    /// assert_eq!(search.method(), reqwest::Method::POST);
    /// assert_eq!(search.body(), Some(&b"q=rust+%26+go"[..]));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn post_form<K, V>(url: &str, fields: impl IntoIterator<Item = (K, V)>) -> Result<Self, Error>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        Request::get(url)?.with_method(Method::POST).with_body(FORM_URLENCODED, body)
    }

    /// A POST of `value` as JSON (`Content-Type: application/json`), as an API's search
    /// or GraphQL endpoint takes it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when `url` is not an absolute URL; [`Error::Config`] when
    /// `value` cannot be written as JSON (a map with keys that are not strings);
    /// [`Error::RequestBodyTooLarge`] when the JSON passes [`MAX_REQUEST_BODY`].
    ///
    /// # Examples
    ///
    /// ```
    /// let query = serde_json::json!({ "category": "poetry", "page": 2 });
    /// let request = spider_core::Request::post_json("https://books.example/api/search", &query)?;
    /// assert_eq!(request.headers()["content-type"], "application/json");
    /// assert_eq!(request.body(), Some(&br#"{"category":"poetry","page":2}"#[..]));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn post_json(url: &str, value: &impl Serialize) -> Result<Self, Error> {
        let request = Request::get(url)?.with_method(Method::POST);
        let body = serde_json::to_vec(value)
            .map_err(|e| Error::Config(format!("the JSON body for {}: {e}", request.url)))?;
        request.with_body("application/json", body)
    }

    /// Send `body` with this request, labelled `content_type` (which replaces any
    /// `Content-Type` given before). Set the method too: a body is for POST, PUT, PATCH
    /// and the like. The body is part of the request's [`fingerprint`](Self::fingerprint),
    /// so two requests that differ only in their bodies are both fetched, and two with the
    /// same body once.
    ///
    /// # Errors
    ///
    /// [`Error::RequestBodyTooLarge`] when `body` passes [`MAX_REQUEST_BODY`];
    /// [`Error::Config`] when `content_type` is no header value.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::Request;
    ///
    /// let put = |body: &'static str| {
    ///     Request::get("https://books.example/api/basket/7")?
    ///         .with_method(reqwest::Method::PUT)
    ///         .with_body("text/plain", body)
    /// };
    /// assert_ne!(put("one")?.fingerprint(), put("two")?.fingerprint());
    /// assert_eq!(put("one")?.fingerprint(), put("one")?.fingerprint());
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn with_body(mut self, content_type: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        let body = body.into();
        if body.len() > MAX_REQUEST_BODY {
            return Err(Error::RequestBodyTooLarge {
                url: self.url,
                size: body.len(),
                limit: MAX_REQUEST_BODY,
            });
        }
        let value = HeaderValue::from_str(content_type)
            .map_err(|e| Error::Config(format!("the content type {content_type:?} for {}: {e}", self.url)))?;
        self.headers.insert(CONTENT_TYPE, value);
        self.body = Some(Body(body));
        Ok(self)
    }

    /// Use another HTTP method (default GET).
    #[must_use]
    pub fn with_method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// Add a header sent with this request only (default: none beyond the config's).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Attach a value the spider reads back from the page (default: empty).
    #[must_use]
    pub fn with_meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// Higher is fetched sooner among requests to the same host (default 0).
    #[must_use]
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Pin this request, and the follow-ups it leads to, to one logical session
    /// (default: none, or the parent's).
    #[must_use]
    pub fn with_session(mut self, key: impl Into<Arc<str>>) -> Self {
        self.session = Some(key.into());
        self
    }

    /// The URL as requested (without a fragment).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The URL the crawl asked for before any redirect: on a redirect hop, the first
    /// request's URL; on any other request, [`url`](Self::url). A page keeps the URL it
    /// was linked as, so an item can name the page the way the site links it.
    ///
    /// # Examples
    ///
    /// ```
    /// let request = spider_core::Request::get("https://books.example/latest")?;
    /// assert_eq!(request.first_url(), request.url());
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn first_url(&self) -> &Url {
        self.chain.first().unwrap_or(&self.url)
    }

    /// Whether `to` is a URL this request's redirect chain already passed, itself
    /// included: a redirect there would go round for ever.
    pub(crate) fn passed(&self, to: &Url) -> bool {
        let seen = fingerprint(&self.method, to);
        self.chain.iter().chain([&self.url]).any(|url| fingerprint(&self.method, url) == seen)
    }

    /// The chain so far and `to`, as `a → b → a`.
    pub(crate) fn chain_to(&self, to: &Url) -> String {
        let hops: Vec<&str> = self.chain.iter().chain([&self.url, to]).map(Url::as_str).collect();
        hops.join(" → ")
    }

    /// The HTTP method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Headers of this request alone.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body sent with this request, if any.
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_ref().map(|body| &body.0[..])
    }

    /// What the frontier dedupes this request on: its method, its canonical URL and, when
    /// it has one, its body. A request without a body has the fingerprint
    /// [`fingerprint`](crate::fingerprint) gives its method and URL, so the seen-sets of
    /// state files and fleets written before bodies existed still hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::Request;
    ///
    /// let login = |user: &str| Request::post_form("https://shop.example/login", [("user", user)]);
    /// assert_ne!(login("ann")?.fingerprint(), login("bob")?.fingerprint());
    /// assert_eq!(login("ann")?.fingerprint(), login("ann")?.fingerprint());
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn fingerprint(&self) -> Fingerprint {
        fingerprint_with_body(&self.method, &self.url, self.body())
    }

    /// Values attached with [`with_meta`](Self::with_meta).
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The derived spider's `rule(...)` that took this request's link, counted from 1 as
    /// the attribute lists them; `None` for a request no rule made (a start URL, one a
    /// hand-written `parse` followed).
    ///
    /// # Examples
    ///
    /// ```
    /// let request = spider_core::Request::get("https://shop.example/p/1")?;
    /// assert_eq!(request.rule(), None);
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn rule(&self) -> Option<usize> {
        let index = self.meta.get(RULE_META_KEY)?.as_u64()?;
        usize::try_from(index).ok().map(|index| index + 1)
    }

    /// Links followed from a start URL to reach this request (start URLs are depth 0).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Priority among requests to the same host.
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// The session key, if any.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Whether the answer is read as a sitemap (see [`Request::sitemap`]).
    pub fn is_sitemap(&self) -> bool {
        self.sitemap
    }

    /// What a durable frontier's [`next`](crate::Frontier::next) knows this request by,
    /// to be given back to [`finish`](crate::Frontier::finish); `None` for a request no
    /// durable frontier handed out (the in-memory frontier sets none).
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::{Config, Frontier, Request, StateFrontier};
    ///
    /// let dir = std::env::temp_dir().join(format!("ticket-doc-{}", std::process::id()));
    /// let mut frontier = StateFrontier::open(&dir.join("books.state"), &Config::new("books"))?;
    /// assert_eq!(Request::get("https://books.example/a")?.ticket(), None);
    /// frontier.enqueue(Request::get("https://books.example/a")?)?;
    /// let taken = frontier.next("https://books.example:443")?;
    /// let Some(ticket) = taken.and_then(|request| request.ticket()) else { panic!("no ticket") };
    /// frontier.finish(ticket)?;
    /// assert!(frontier.is_empty());
    /// # drop(frontier);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn ticket(&self) -> Option<Ticket> {
        self.ticket
    }

    pub(crate) fn session_key(&self) -> Option<&Arc<str>> {
        self.session.as_ref()
    }

    /// The task whose identity this request wears in sticky mode: its session, or else
    /// its lane on its host, so that a crawl from one start URL still spreads over as many
    /// identities as it has slots, each with one request at a time.
    pub(crate) fn sticky_task(&self) -> Option<Arc<str>> {
        if let Some(session) = &self.session {
            return Some(session.clone());
        }
        let lane = self.lane?;
        let host = host_key(&self.url).map(|host| host.to_string()).unwrap_or_default();
        Some(Arc::from(format!("lane-{lane}@{host}")))
    }

    /// `request`, made by the browser rendering this request's page, as this request's
    /// own: its session and its lane, so it wears the same identity where it goes to the
    /// same host.
    #[cfg(feature = "render")]
    pub(crate) fn subrequest(&self, mut request: Request) -> Request {
        request.session = self.session.clone();
        request.lane = self.lane;
        request.depth = self.depth;
        request
    }

    /// Make `self` a follow-up of `parent`: one level deeper, same session unless set.
    pub(crate) fn child_of(mut self, depth: u32, session: Option<&Arc<str>>) -> Self {
        self.depth = depth + 1;
        if self.session.is_none() {
            self.session = session.cloned();
        }
        self
    }

    /// The next hop of a redirect (its fragment dropped, as in [`Request::new`]): same
    /// depth, priority, meta, session and kind (a sitemap stays a sitemap), the chain one
    /// hop longer; a 303, or a
    /// 301/302 answer to a POST, turns into a GET without the body as browsers do (a 307
    /// or 308 sends the body again); credentials are dropped
    /// when the hop leaves the origin.
    pub(crate) fn redirected(&self, mut to: Url, status: u16) -> Self {
        to.set_fragment(None);
        let method = if status == 303 || (matches!(status, 301 | 302) && self.method == Method::POST) {
            Method::GET
        } else {
            self.method.clone()
        };
        let mut headers = self.headers.clone();
        // A hop that turns into a GET leaves the body, and what describes it, behind.
        let body = if method == self.method { self.body.clone() } else { None };
        if body.is_none() {
            headers.remove(CONTENT_TYPE);
            headers.remove(CONTENT_LENGTH);
        }
        if to.origin() != self.url.origin() {
            // Credentials meant for one site never travel to another.
            for secret in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
                headers.remove(secret);
            }
        }
        Request {
            url: to,
            method,
            headers,
            body,
            meta: self.meta.clone(),
            depth: self.depth,
            priority: self.priority,
            session: self.session.clone(),
            attempts: 0,
            walls: 0,
            last_backoff: Duration::ZERO,
            redirects: self.redirects + 1,
            sitemap: self.sitemap,
            chain: self.chain.iter().chain([&self.url]).cloned().collect(),
            ticket: None,
            lane: self.lane,
            #[cfg(feature = "fleet")]
            start_lapsed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_stay_with_their_origin_on_redirect() {
        let secret = HeaderValue::from_static("Bearer s3cret");
        let request = Request::get("https://a.example/login").unwrap().with_header(AUTHORIZATION, secret);
        let same = request.redirected(Url::parse("https://a.example/home").unwrap(), 302);
        assert!(same.headers().contains_key(AUTHORIZATION));
        let other = request.redirected(Url::parse("https://b.example/home").unwrap(), 302);
        assert!(!other.headers().contains_key(AUTHORIZATION));
    }

    #[test]
    fn a_post_redirected_with_303_becomes_a_get_without_its_body_and_307_sends_it_again() {
        let login = Request::post_form("https://a.example/login", [("user", "ann")]).unwrap();
        let after = login.redirected(Url::parse("https://a.example/home").unwrap(), 303);
        assert_eq!((after.method(), after.body()), (&Method::GET, None));
        assert!(!after.headers().contains_key(CONTENT_TYPE));
        let again = login.redirected(Url::parse("https://a.example/login2").unwrap(), 307);
        assert_eq!((again.method(), again.body()), (&Method::POST, login.body()));
        assert_eq!(again.headers()[CONTENT_TYPE], "application/x-www-form-urlencoded");
    }

    #[test]
    fn a_body_over_the_cap_is_refused_where_it_is_made() {
        let big = vec![b'x'; MAX_REQUEST_BODY + 1];
        let error =
            Request::get("https://a.example/upload").unwrap().with_body("text/plain", big).unwrap_err();
        assert!(error.to_string().contains("over the cap of 1048576 bytes"), "{error}");
    }

    #[test]
    fn a_request_printed_for_a_log_shows_the_size_of_its_body_not_the_password_in_it() {
        let login = Request::post_form("https://a.example/login", [("password", "s3cret")]).unwrap();
        let printed = format!("{login:?}");
        assert!(printed.contains("body: Some(15 bytes)") && !printed.contains("s3cret"), "{printed}");
    }

    #[test]
    fn every_hop_of_a_redirect_chain_knows_the_first_url() {
        let first = Request::get("https://a.example/latest").unwrap();
        let second = first.redirected(Url::parse("https://a.example/moved").unwrap(), 301);
        let third = second.redirected(Url::parse("https://b.example/book").unwrap(), 302);
        assert_eq!(first.first_url(), first.url());
        assert_eq!((second.first_url(), third.first_url()), (first.url(), first.url()));
        assert_eq!(third.url().as_str(), "https://b.example/book");
    }

    #[test]
    fn a_hop_back_to_a_url_the_chain_passed_is_seen() {
        let first = Request::get("https://a.example/a").unwrap();
        let second = first.redirected(Url::parse("https://a.example/b#top").unwrap(), 302);
        assert_eq!(second.url().as_str(), "https://a.example/b");
        let back = Url::parse("https://a.example/a").unwrap();
        assert!(second.passed(&back) && second.passed(second.url()));
        assert!(!second.passed(&Url::parse("https://a.example/c").unwrap()));
        assert_eq!(
            second.chain_to(&back),
            "https://a.example/a → https://a.example/b → \
            https://a.example/a"
        );
    }
}
