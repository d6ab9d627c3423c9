//! Saved pages for tests: a page with the facts a crawl would give it, without a server.

use std::time::SystemTime;

use reqwest::StatusCode;
use serde_json::Value;
use url::Url;

use crate::error::Error;
use crate::extract::page::Page;
use crate::request::Request;

/// A saved page with the facts a crawl would give it: its status, its request's meta and
/// depth, the URL it was redirected from, the time it was fetched. For testing what an
/// item's `#[page(...)]` fields read, or a `parse` that looks at them;
/// [`Page::fixture`] is the plain case (status 200, depth 0, no meta, no redirect, now).
///
/// Setters never fail; [`build`](Self::build) reports a URL that does not parse.
///
/// # Examples
///
/// ```
/// use spider_core::reqwest::StatusCode;
/// use spider_core::testing::PageFixture;
///
/// let page = PageFixture::new("https://books.example/book_9.html", "<h1>Atlas</h1>")
///     .status(StatusCode::NON_AUTHORITATIVE_INFORMATION)
///     .meta("category", "maps")
///     .depth(2)
///     .redirected_from("https://books.example/latest")
///     .build()?;
/// assert_eq!((page.status().as_u16(), page.request().depth()), (203, 2));
/// assert_eq!(page.request().first_url().as_str(), "https://books.example/latest");
/// # Ok::<(), spider_core::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PageFixture {
    url: String,
    body: Vec<u8>,
    content_type: String,
    status: StatusCode,
    meta: Vec<(String, Value)>,
    depth: u32,
    redirected_from: Option<String>,
    fetched_at: Option<SystemTime>,
}

impl PageFixture {
    /// The page at `url` with this body: HTML text, or bytes in any encoding (see
    /// [`content_type`](Self::content_type)).
    pub fn new(url: &str, body: impl Into<Vec<u8>>) -> Self {
        PageFixture {
            url: url.to_owned(),
            body: body.into(),
            content_type: "text/html; charset=utf-8".to_owned(),
            status: StatusCode::OK,
            meta: Vec::new(),
            depth: 0,
            redirected_from: None,
            fetched_at: None,
        }
    }

    /// Its `Content-Type` header (default `text/html; charset=utf-8`). Give one without a
    /// charset (`text/html`) to test a page that declares its encoding in a `<meta>`, or
    /// another type to test an answer that is not HTML (see [`Page::is_html`]).
    pub fn content_type(mut self, value: &str) -> Self {
        self.content_type = value.to_owned();
        self
    }

    /// The status it was answered with (default 200).
    pub fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// A value in its request's meta (default: none), as
    /// [`Request::with_meta`] attaches it.
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta.push((key.into(), value.into()));
        self
    }

    /// Links followed from a start URL to reach it (default 0).
    pub fn depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// The page is the last hop of a redirect chain that started at `url` (default: no
    /// redirect), which becomes its request's [`first_url`](Request::first_url).
    pub fn redirected_from(mut self, url: &str) -> Self {
        self.redirected_from = Some(url.to_owned());
        self
    }

    /// When its answer arrived (default: when it is built).
    pub fn fetched_at(mut self, at: SystemTime) -> Self {
        self.fetched_at = Some(at);
        self
    }

    /// The page.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when the URL or the one it was redirected from does not
    /// parse or the content type is not a valid header value; [`Error::Config`] when the
    /// page's parse pool cannot start.
    pub fn build(self) -> Result<Page, Error> {
        let mut request = Request::get(&self.url)?;
        for (key, value) in self.meta {
            request = request.with_meta(key, value);
        }
        request.depth = self.depth;
        if let Some(from) = &self.redirected_from {
            let from = Url::parse(from).map_err(|source| Error::InvalidUrl { url: from.clone(), source })?;
            request.chain = vec![from];
            request.redirects = 1;
        }
        let fetched_at = self.fetched_at.unwrap_or_else(SystemTime::now);
        Page::saved(request, self.status, fetched_at, &self.content_type, self.body)
    }
}

impl Page {
    /// A page made from saved HTML, for testing a spider's `parse` or an item's selectors
    /// without a server. It has status 200, was fetched now, and has its own one-thread
    /// parse pool; [`PageFixture`](crate::extract::fixture::PageFixture) makes one with another
    /// status, meta, depth or redirect.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when `url` does not parse; [`Error::Config`] when the parse
    /// pool's thread cannot start.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), spider_core::Error> {
    /// let page = spider_core::Page::fixture("https://books.example/", "<a href='/next'>next</a>")?;
    /// assert_eq!(page.links("a").await?[0].as_str(), "https://books.example/next");
    /// # Ok(()) }
    /// ```
    pub fn fixture(url: &str, html: impl Into<String>) -> Result<Page, Error> {
        let html: String = html.into();
        PageFixture::new(url, html).build()
    }
}
