//! A parsed page (or a part of it) inside a parse-pool job: the DOM and the page's facts,
//! and what a derived item's fields read from them on the DOM engine.

use std::time::{Duration, Instant, SystemTime};

use html5ever::tendril::TendrilSink;

use reqwest::StatusCode;
use scraper::element_ref::Select;
use scraper::{ElementRef, Html, HtmlTreeSink, Selector, StrTendril};
use url::Url;

use crate::extract::facts::{Facts, PageField};
use crate::extract::field::{attribute_value, Reader, Source};
use crate::extract::json_ld::JsonLd;
use crate::request::Request;

/// `css` as a selector for [`Document`]'s and [`Page`](crate::Page)'s searches, or what is
/// wrong with it in words (the parser's own message asks to be reported to its developer).
///
/// # Errors
///
/// [`Error::Selector`](crate::error::Error::Selector) with the selector and the problem.
///
/// # Examples
///
/// ```
/// assert!(spider_core::selector("h3 > a").is_ok());
/// let error = spider_core::selector("a[=x]").unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "invalid CSS selector \"a[=x]\": an attribute selector needs a name, as in `[href]`"
/// );
/// ```
pub fn selector(css: &str) -> Result<Selector, crate::error::Error> {
    Selector::parse(css).map_err(|error| crate::error::Error::Selector {
        selector: css.to_owned(),
        message: spider_settings::selector_problem(&format!("{error:?}")),
    })
}

/// The most a page's DOM may take to build: html5ever has no bound of its own, and a page
/// of 100,000 nested elements (1 MB) takes it most of a minute, holding a parse thread.
/// An ordinary page of a few MB takes well under a second.
pub(crate) const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// How much of a page html5ever is given at a time, between two looks at the clock.
const PIECE: usize = 16 * 1024;

/// `work` over the DOM of `text`, the page's decoded body: the DOM engine, and where the
/// stream falls back. `None` when building the DOM passes [`PARSE_BUDGET`].
pub(crate) fn over_dom<R>(text: &str, facts: &Facts, work: impl FnOnce(&Document<'_>) -> R) -> Option<R> {
    let html = parse_within(text, PARSE_BUDGET)?;
    Some(work(&Document { html: &html, root: html.root_element(), page: facts }))
}

/// The DOM of `text`, fed to the parser a piece at a time; `None` once `budget` is spent.
fn parse_within(text: &str, budget: Duration) -> Option<Html> {
    let started = Instant::now();
    let mut parser =
        html5ever::driver::parse_document(HtmlTreeSink::new(Html::new_document()), Default::default());
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = PIECE.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, after) = rest.split_at(end);
        parser.process(StrTendril::from(piece));
        rest = after;
        if started.elapsed() > budget {
            return None;
        }
    }
    Some(parser.finish())
}

/// A parsed page, or a part of one, alive only inside a parse-pool job.
///
/// Besides the HTML it knows the page's facts (its URLs, status, fetch time and request),
/// which `#[page(...)]` fields of a derived item read; a part made by
/// [`within`](Self::within) knows the same.
#[derive(Debug)]
pub struct Document<'a> {
    html: &'a Html,
    root: ElementRef<'a>,
    page: &'a Facts,
}

impl<'a> Document<'a> {
    /// The parsed HTML, for anything beyond the helpers below.
    pub fn html(&self) -> &'a Html {
        self.html
    }

    /// The page's URL (after redirects, the last hop), the base of relative links.
    pub fn url(&self) -> &'a Url {
        &self.page.url
    }

    /// The HTTP status the page was answered with.
    pub fn status(&self) -> StatusCode {
        self.page.status
    }

    /// When the page's answer arrived.
    pub fn fetched_at(&self) -> SystemTime {
        self.page.fetched_at
    }

    /// The request that led to the page: its meta, depth and
    /// [`first_url`](Request::first_url) (the URL asked for before redirects).
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::testing::PageFixture;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), spider_core::Error> {
    /// let page = PageFixture::new("https://books.example/book_9.html", "<h1>Atlas</h1>")
    ///     .redirected_from("https://books.example/latest")
    ///     .meta("category", "maps")
    ///     .build()?;
    /// let (asked, answered, category) = page
    ///     .html(|doc| {
    ///         let request = doc.request();
    ///         (request.first_url().path().to_owned(), doc.url().path().to_owned(), request.meta()["category"].clone())
    ///     })
    ///     .await?;
    /// assert_eq!((asked.as_str(), answered.as_str()), ("/latest", "/book_9.html"));
    /// assert_eq!(category, "maps");
    /// # Ok(()) }
    /// ```
    pub fn request(&self) -> &'a Request {
        &self.page.request
    }

    /// The page's body as fetched (decompressed, not decoded): what the `#[json("...")]`
    /// fields of a derived item read.
    pub fn body(&self) -> &'a [u8] {
        &self.page.body
    }

    /// The page's facts, which `#[page(...)]` fields read.
    pub(crate) fn facts(&self) -> &'a Facts {
        self.page
    }

    /// The same page seen from `element`: selectors match only inside it. Use it to
    /// extract one item per repeated block of a page.
    pub fn within(&self, element: ElementRef<'a>) -> Document<'a> {
        Document { html: self.html, root: element, page: self.page }
    }

    /// The elements matching `selector` inside this document (or part).
    pub fn select<'b>(&self, selector: &'b Selector) -> Select<'a, 'b> {
        self.root.select(selector)
    }

    /// The text of the first element matching `selector`, trimmed, if any.
    pub fn text(&self, selector: &Selector) -> Option<String> {
        let element = self.select(selector).next()?;
        Some(element.text().collect::<String>().trim().to_owned())
    }

    /// The `href`s of the elements matching `selector`, resolved against the page URL;
    /// ones that do not resolve are skipped, and so are links a person cannot see (a
    /// honeypot: see [`Config::follow_hidden`](spider_settings::Config::follow_hidden)), which the
    /// crawl's stats count.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), spider_core::Error> {
    /// let html = r#"<a href="/next">next</a> <div style="display:none"><a href="/trap">trap</a></div>"#;
    /// let page = spider_core::Page::fixture("https://books.example/", html)?;
    /// assert_eq!(page.links("a").await?.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn links(&self, selector: &Selector) -> Vec<Url> {
        self.select(selector)
            .filter(|element| self.page.hidden.admits(*element))
            .filter_map(|element| element.value().attr("href"))
            .filter_map(|href| self.url().join(href.trim()).ok())
            .collect()
    }
}

impl Reader for Document<'_> {
    fn first(&self, _: usize, selector: &Selector, source: Source) -> Option<String> {
        self.select(selector).find_map(|element| read(element, source, self.url()))
    }

    fn all(&self, _: usize, selector: &Selector, source: Source) -> Vec<String> {
        self.select(selector).filter_map(|element| read(element, source, self.url())).collect()
    }

    fn page_field(&self, field: PageField) -> Option<String> {
        self.facts().field(field)
    }

    fn json_ld(&self, _: usize) -> JsonLd {
        JsonLd::read(self.root)
    }

    fn body(&self) -> &[u8] {
        Document::body(self)
    }
}

fn read(element: ElementRef<'_>, source: Source, base: &Url) -> Option<String> {
    match source {
        Source::Text => Some(element.text().collect::<String>().trim().to_owned()),
        Source::Html => Some(element.inner_html()),
        Source::Attr(name) => attribute_value(name, element.value().attr(name)?, base),
    }
}
