//! A fetched page, and the parsed document the parse pool hands to closures.

use std::borrow::Cow;

use bytes::Bytes;
use encoding_rs::{Encoding, UTF_8};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::StatusCode;
use scraper::{Html, Selector};
use url::Url;

use crate::error::Error;
use crate::parse::ParsePool;
use crate::request::Request;

/// A response with a 2xx status, handed to [`Spider::parse`](crate::Spider::parse).
///
/// The body is parsed as HTML only inside the parse pool: [`Page::html`] runs a closure
/// over the parsed [`Document`] there and brings back what it returns. Do all the work on
/// one page in one closure and the page is parsed once.
#[derive(Debug)]
pub struct Page {
    url: Url,
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
    request: Request,
    pool: ParsePool,
}

impl Page {
    pub(crate) fn new(
        url: Url,
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        request: Request,
        pool: ParsePool,
    ) -> Self {
        Page {
            url,
            status,
            headers,
            body,
            request,
            pool,
        }
    }

    /// The URL of the response (after redirects, the last hop).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body, decompressed.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as text, decoded with the charset the Content-Type names (UTF-8 when it
    /// names none); bytes invalid in that charset are replaced, never an error.
    pub fn text(&self) -> Cow<'_, str> {
        self.encoding().decode(&self.body).0
    }

    /// The body's encoding, from the Content-Type's `charset`.
    fn encoding(&self) -> &'static Encoding {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                value.split(';').find_map(|part| {
                    let (key, label) = part.split_once('=')?;
                    key.trim()
                        .eq_ignore_ascii_case("charset")
                        .then(|| label.trim().trim_matches('"'))
                })
            })
            .and_then(|label| Encoding::for_label(label.as_bytes()))
            .unwrap_or(UTF_8)
    }

    /// The request that led here (its meta, depth and session).
    pub fn request(&self) -> &Request {
        &self.request
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
        let body = self.body.clone();
        let url = self.url.clone();
        let encoding = self.encoding();
        self.pool
            .run(move || {
                let html = Html::parse_document(&encoding.decode(&body).0);
                work(&Document {
                    html: &html,
                    url: &url,
                })
            })
            .await
            .map_err(|_| Error::ParsePanicked {
                url: self.url.clone(),
            })
    }

    /// The absolute URLs of the `href`s of the elements matching `css`, in page order.
    ///
    /// # Errors
    ///
    /// [`Error::Selector`] when `css` does not parse; [`Error::ParsePanicked`] as for
    /// [`html`](Self::html).
    pub async fn links(&self, css: &str) -> Result<Vec<Url>, Error> {
        let selector = Selector::parse(css).map_err(|e| Error::Selector {
            selector: css.to_owned(),
            message: e.to_string(),
        })?;
        self.html(move |doc| doc.links(&selector)).await
    }
}

/// A parsed page, alive only inside a parse-pool job.
#[derive(Debug)]
pub struct Document<'a> {
    html: &'a Html,
    url: &'a Url,
}

impl Document<'_> {
    /// The parsed HTML, for anything beyond the helpers below.
    pub fn html(&self) -> &Html {
        self.html
    }

    /// The page's URL, the base of relative links.
    pub fn url(&self) -> &Url {
        self.url
    }

    /// The text of the first element matching `selector`, trimmed, if any.
    pub fn text(&self, selector: &Selector) -> Option<String> {
        let element = self.html.select(selector).next()?;
        Some(element.text().collect::<String>().trim().to_owned())
    }

    /// The `href`s of the elements matching `selector`, resolved against the page URL;
    /// ones that do not resolve are skipped.
    pub fn links(&self, selector: &Selector) -> Vec<Url> {
        self.html
            .select(selector)
            .filter_map(|element| element.value().attr("href"))
            .filter_map(|href| self.url.join(href.trim()).ok())
            .collect()
    }
}
