//! A fetched page: its facts, headers and body, read on the parse pool.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use encoding_rs::Encoding;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::StatusCode;
use url::Url;

use crate::error::Error;
use crate::extract::charset;
use crate::extract::content_type::{self, ContentType};
use crate::extract::document::{over_dom, Document, PARSE_BUDGET};

/// Pages up to this size are read by the streaming pass on the task that fetched them;
/// larger ones, and every DOM, on the parse pool.
const INLINE_STREAM: usize = 256 * 1024;
use crate::extract::facts::Facts;
use crate::extract::form::Form;
use crate::extract::hidden::HiddenLinks;
use crate::extract::item::Item;
use crate::extract::parse_pool::ParsePool;
use crate::extract::stream::{Found, Plan};
use crate::request::Request;

/// A response with a 2xx status, handed to [`Spider::parse`](crate::Spider::parse).
///
/// The body is parsed as HTML only inside the parse pool: [`Page::html`] runs a closure
/// over the parsed [`Document`] there and brings back what it returns. Do all the work on
/// one page in one closure and the page is parsed once. Cloning is cheap: the body and
/// the facts are shared.
#[derive(Debug, Clone)]
pub struct Page {
    facts: Arc<Facts>,
    headers: HeaderMap,
    pool: ParsePool,
}

impl Page {
    /// A page answering `request` with `status` from `url` (the request's URL: the last
    /// hop of a redirect chain), its answer having arrived at `fetched_at`; its links are
    /// read under `hidden`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        url: Url,
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        request: Request,
        fetched_at: SystemTime,
        pool: ParsePool,
        hidden: HiddenLinks,
    ) -> Self {
        let charset = ContentType::of(&headers).and_then(|known| known.charset());
        let encoding = charset::sniff(&body, charset, content_type::is_html(&headers, &body));
        let main_content = OnceLock::new();
        let facts =
            Facts { url, status, fetched_at, request, body, encoding, main_content, hidden, rendered: false };
        Page { facts: Arc::new(facts), headers, pool }
    }

    /// The page as a browser rendered it: `#[page(rendered)]` reads `true`.
    pub(crate) fn rendered(mut self) -> Self {
        if let Some(facts) = Arc::get_mut(&mut self.facts) {
            facts.rendered = true;
        }
        self
    }

    /// A saved page answering `request` with `status` and a `content_type` body, fetched
    /// at `fetched_at`: what [`PageFixture`](crate::extract::fixture::PageFixture) builds.
    pub(crate) fn saved(
        request: Request,
        status: StatusCode,
        fetched_at: SystemTime,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<Page, Error> {
        let value = HeaderValue::from_str(content_type)
            .map_err(|e| Error::Config(format!("the fixture's content type {content_type:?}: {e}")))?;
        let headers = HeaderMap::from_iter([(CONTENT_TYPE, value)]);
        let url = request.url().clone();
        let (body, pool) = (Bytes::from(body), ParsePool::new(1)?);
        Ok(Page::new(url, status, headers, body, request, fetched_at, pool, HiddenLinks::default()))
    }

    /// The URL of the response (after redirects, the last hop); the URL the crawl asked
    /// for before them is [`Request::first_url`] of [`request`](Self::request).
    pub fn url(&self) -> &Url {
        &self.facts.url
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.facts.status
    }

    /// When the answer arrived (for an answer from the HTTP cache, when it was taken
    /// from the cache).
    pub fn fetched_at(&self) -> SystemTime {
        self.facts.fetched_at
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body, decompressed.
    pub fn body(&self) -> &[u8] {
        &self.facts.body
    }

    /// The body as text, decoded as a browser would decode it: by its byte order mark,
    /// else the charset its Content-Type names, else (for HTML) the `<meta charset>` or
    /// `<meta http-equiv="Content-Type">` in its first 1024 bytes, else as UTF-8. Bytes
    /// invalid in that encoding are replaced, never an error. [`html`](Self::html)
    /// parses the same text.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), spider_core::Error> {
    /// // "Привет" in windows-1251, declared only by the page itself.
    /// let mut body = b"<meta charset=\"windows-1251\"><h1>".to_vec();
    /// body.extend([0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2]);
    /// let page = spider_core::testing::PageFixture::new("https://news.example/", body)
    ///     .content_type("text/html")
    ///     .build()?;
    /// assert!(page.text().ends_with("<h1>Привет"));
    /// # Ok(()) }
    /// ```
    pub fn text(&self) -> Cow<'_, str> {
        self.encoding().decode(&self.facts.body).0
    }

    /// Whether the answer is HTML: its Content-Type is `text/html` or
    /// `application/xhtml+xml`, or it has none and its body starts like HTML (a doctype,
    /// `<html>`, `<p>`, … after whitespace). The link rules of a derived spider parse only
    /// HTML answers; a hand-written `parse` can ask the same before parsing a download
    /// that a link led to.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> Result<(), spider_core::Error> {
    /// use spider_core::testing::PageFixture;
    ///
    /// let script = PageFixture::new("https://docs.example/setup.py", "print('<h1>')")
    ///     .content_type("text/x-python")
    ///     .build()?;
    /// assert!(!script.is_html());
    /// assert!(PageFixture::new("https://docs.example/", "<p>Docs</p>").build()?.is_html());
    /// # Ok(()) }
    /// ```
    pub fn is_html(&self) -> bool {
        content_type::is_html(&self.headers, &self.facts.body)
    }

    /// The body's encoding (see [`text`](Self::text)).
    fn encoding(&self) -> &'static Encoding {
        self.facts.encoding
    }

    /// The request that led here (its meta, depth, session and first URL).
    pub fn request(&self) -> &Request {
        &self.facts.request
    }

    /// What the page knows of itself, kept by the engine past the parse that takes the
    /// page, to send its request again when the parse found the page a wall.
    pub(crate) fn shared_facts(&self) -> Arc<Facts> {
        self.facts.clone()
    }

    /// Parse the body once on the parse pool and run `work` over the document there.
    ///
    /// `scraper::Html` is not `Send`, so it never leaves the pool: return owned data.
    ///
    /// # Errors
    ///
    /// [`Error::ParsePanicked`] when `work` panics.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(page: spider_core::Page) -> spider_core::Result {
    /// use scraper::Selector;
    ///
    /// let title = Selector::parse("h1").map_err(|e| e.to_string())?;
    /// let next = Selector::parse("a.next").map_err(|e| e.to_string())?;
    /// let (heading, links) = page
    ///     .html(move |doc| (doc.text(&title), doc.links(&next)))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn html<R, F>(&self, work: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Document<'_>) -> R + Send + 'static,
    {
        let built = self.on_pool(move |text, facts, _| over_dom(text, facts, work)).await?;
        built.ok_or_else(|| self.too_long())
    }

    /// The error of a page whose DOM took longer than the parse budget to build.
    fn too_long(&self) -> Error {
        Error::ParseTooLong { url: self.url().clone(), budget: PARSE_BUDGET }
    }

    /// Read the answer as JSON into `T`, on the parse pool (a large API answer is as
    /// much CPU work as a page of HTML). `T` is any `Deserialize` type: a struct of the
    /// fields you need, or [`serde_json::Value`] for all of it. A UTF-8 byte order mark
    /// is skipped; JSON is UTF-8 (RFC 8259), so no other encoding is guessed.
    ///
    /// # Errors
    ///
    /// [`Error::Json`] naming the page's URL, the line and column and what is wrong when
    /// the body is not JSON or not a `T`; returned from `parse` with `?`, it fails this
    /// page alone, counted and filed in the failures file, and the crawl goes on.
    /// [`Error::ParsePanicked`] as for [`html`](Self::html).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), spider_core::Error> {
    /// use spider_core::testing::PageFixture;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Products {
    ///     products: Vec<Product>,
    ///     next: Option<String>,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct Product {
    ///     name: String,
    ///     price: f64,
    /// }
    ///
    /// let page = PageFixture::new("https://shop.example/api/products", r#"{"products": [{"name": "Tea", "price": 4.5}], "next": null}"#)
    ///     .content_type("application/json")
    ///     .build()?;
    /// let answer: Products = page.json().await?;
    /// assert_eq!((answer.products[0].name.as_str(), answer.products[0].price, answer.next), ("Tea", 4.5, None));
    ///
    /// let broken = PageFixture::new("https://shop.example/api/products", "{\"products\": [,]}").build()?;
    /// let Err(error) = broken.json::<Products>().await else { panic!("not JSON") };
    /// assert_eq!(
    ///     error.to_string(),
    ///     "the answer from https://shop.example/api/products is not the JSON asked for (line 1, column 15): expected value"
    /// );
    /// # Ok(()) }
    /// ```
    pub async fn json<T>(&self) -> Result<T, Error>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let facts = Arc::clone(&self.facts);
        self.pool
            .run(move || {
                let body = facts.body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&facts.body);
                serde_json::from_slice::<T>(body).map_err(|error| json_error(&facts.url, &error))
            })
            .await
            .map_err(|_| Error::ParsePanicked { url: self.url().clone() })?
    }

    /// The form `css` selects, read on the parse pool, to be filled in and sent: its
    /// action resolved against the page's URL, its method, and the fields a browser would
    /// send as the page stands (hidden ones such as a CSRF token included). See [`Form`]
    /// for what is read, and [`Document::form`] to read it in the same parse as other
    /// things of the page.
    ///
    /// # Errors
    ///
    /// [`Error::Selector`] when `css` does not parse; [`Error::Form`] when it matches
    /// nothing or no `<form>`, or the form uploads files (`multipart/form-data`) or sends
    /// `text/plain`; [`Error::ParsePanicked`] as for [`html`](Self::html).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), spider_core::Error> {
    /// let page = spider_core::Page::fixture(
    ///     "https://shop.example/account/login",
    ///     r#"<form id="login" action="/session" method="post">
    ///          <input type="hidden" name="csrf" value="k7Qz">
    ///          <input name="user"> <input name="password" type="password">
    ///          <button>Log in</button>
    ///        </form>"#,
    /// )?;
    /// let login = page.form("form#login").await?.set("user", "ann").set("password", "s3cret").into_request()?;
    /// assert_eq!(login.url().as_str(), "https://shop.example/session");
    /// assert_eq!(login.body(), Some(&b"csrf=k7Qz&user=ann&password=s3cret"[..]));
    /// # Ok(()) }
    /// ```
    pub async fn form(&self, css: &str) -> Result<Form, Error> {
        let selector = crate::extract::document::selector(css)?;
        let css = css.to_owned();
        self.html(move |doc| Form::read(doc, &selector, &css)).await?
    }

    /// Read the page in one streaming pass of `plan` and run `streamed` over what it
    /// found; a page whose markup the DOM would nest differently from its tokens (see
    /// `stream/shape.rs`), or every page when the crawl reads only DOMs
    /// (`Config::dom_only`), is parsed into the DOM on the pool instead and `dom` runs over
    /// it, so both closures must give the same answers. A page up to [`INLINE_STREAM`] is
    /// read on the calling task: under CPU load the hops to the pool and back cost more
    /// than the pass (`BENCHMARKS.md`, "The spider users write now"); larger pages go to
    /// the pool, which keeps long work off the runtime.
    pub(crate) async fn stream<R, S, D>(&self, plan: &'static Plan, streamed: S, dom: D) -> Result<R, Error>
    where
        R: Send + 'static,
        S: FnOnce(&Found<'_>) -> R + Send + 'static,
        D: FnOnce(&Document<'_>) -> R + Send + 'static,
    {
        if !self.pool.dom_only() && self.facts.body.len() <= INLINE_STREAM {
            // A small page's pass is a few tens of microseconds: cheaper here than the two
            // hops to the pool and back, which a busy machine makes cost milliseconds.
            let text = self.encoding().decode(&self.facts.body).0;
            if let Ok(found) = plan.run(&text, !self.facts.hidden.follow) {
                self.pool.parsed_html();
                self.pool.streamed_page();
                // A field's parser panicking fails the page as it would on the pool.
                let read = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    streamed(&Found::new(plan, found, &self.facts))
                }));
                return read.map_err(|_| Error::ParsePanicked { url: self.url().clone() });
            }
            let built = self.on_pool(move |text, facts, _| over_dom(text, facts, dom)).await?;
            return built.ok_or_else(|| self.too_long());
        }
        self.on_pool(move |text, facts, pool| {
            if pool.dom_only() {
                return over_dom(text, facts, dom);
            }
            match plan.run(text, !facts.hidden.follow) {
                Ok(found) => {
                    pool.streamed_page();
                    Some(streamed(&Found::new(plan, found, facts)))
                }
                Err(_) => over_dom(text, facts, dom),
            }
        })
        .await?
        .ok_or_else(|| self.too_long())
    }

    /// `work` over the page's decoded text and facts in a job on the parse pool, counted
    /// as one parse of the page.
    async fn on_pool<R, W>(&self, work: W) -> Result<R, Error>
    where
        R: Send + 'static,
        W: FnOnce(&str, &Facts, &ParsePool) -> R + Send + 'static,
    {
        let facts = Arc::clone(&self.facts);
        let encoding = self.encoding();
        let pool = self.pool.clone();
        self.pool
            .run(move || {
                pool.parsed_html();
                work(&encoding.decode(&facts.body).0, &facts, &pool)
            })
            .await
            .map_err(|_| Error::ParsePanicked { url: self.url().clone() })
    }

    /// Extract an item on the parse pool: `Ok(None)` when the page has none of its fields.
    ///
    /// To extract an item and the links in one parse, use [`html`](Self::html) with
    /// [`Document::extract`] and [`Document::links`].
    ///
    /// # Errors
    ///
    /// [`Error::Extract`] naming the field and where it reads when the page has the item only
    /// in part; [`Error::ParsePanicked`] as for [`html`](Self::html).
    pub async fn extract<T: Item>(&self) -> Result<Option<T>, Error> {
        let url = self.url().clone();
        self.html(|doc| T::extract(doc))
            .await?
            .map_err(|source| Error::Extract { url, source: Box::new(source) })
    }

    /// The absolute URLs of the `href`s of the elements matching `css`, in page order.
    ///
    /// # Errors
    ///
    /// [`Error::Selector`] when `css` does not parse; [`Error::ParsePanicked`] as for
    /// [`html`](Self::html).
    pub async fn links(&self, css: &str) -> Result<Vec<Url>, Error> {
        let selector = crate::extract::document::selector(css)?;
        self.html(move |doc| doc.links(&selector)).await
    }
}

/// A JSON parse error as [`Error::Json`]: its position apart from its message.
fn json_error(url: &Url, error: &serde_json::Error) -> Error {
    let (line, column) = (error.line(), error.column());
    let text = error.to_string();
    let message = text.strip_suffix(&format!(" at line {line} column {column}")).unwrap_or(&text).into();
    let (line, column) = (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX));
    Error::Json { url: url.clone(), line, column, message }
}
