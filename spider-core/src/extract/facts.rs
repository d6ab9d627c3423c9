//! What is known of a fetched page besides its markup: its URLs, status, fetch time, the
//! request that led to it, its body, and how its links are read. `#[page(...)]` fields
//! read these facts, on either engine.

use std::sync::OnceLock;
use std::time::SystemTime;

use bytes::Bytes;
use encoding_rs::Encoding;
use reqwest::StatusCode;
use url::Url;

use crate::extract::hidden::HiddenLinks;
use crate::extract::main_content::{self, MainContent};
use crate::request::Request;

/// What is known of a page besides its HTML; a
/// [`Document`](crate::extract::document::Document) of the page sees it too, and so does a
/// streaming pass's [`Found`](crate::extract::stream::Found).
#[derive(Debug)]
pub(crate) struct Facts {
    pub(crate) url: Url,
    pub(crate) status: StatusCode,
    pub(crate) fetched_at: SystemTime,
    pub(crate) request: Request,
    /// Decompressed: what the streaming engine reads and `#[json]` fields parse.
    pub(crate) body: Bytes,
    /// What the body is decoded with (see [`Page::text`](crate::Page::text)).
    pub(crate) encoding: &'static Encoding,
    /// Read when a field first asks for it, then kept for the page's other fields.
    pub(crate) main_content: OnceLock<Option<MainContent>>,
    /// Whether [`Document::links`](crate::extract::document::Document::links) skips links
    /// a person cannot see, and how many it did.
    pub(crate) hidden: HiddenLinks,
    /// Whether the body is the DOM a browser rendered, not the answer as sent.
    pub(crate) rendered: bool,
}

/// A `#[page(...)]` field: which of the page's facts it reads.
#[derive(Debug, Clone, Copy)]
pub enum PageField {
    /// The URL the crawl asked for, before redirects.
    Url,
    /// The URL of the answer, after redirects.
    FinalUrl,
    /// The HTTP status, such as `200`.
    Status,
    /// When the answer arrived, RFC 3339 in UTC.
    FetchedAt,
    /// Links followed from a start URL.
    Depth,
    /// A key of the request's meta.
    Meta(&'static str),
    /// Whether a browser rendered the page before it was read, `true` or `false`.
    Rendered,
    /// The main content as Markdown: the article a reader's view shows, without the
    /// navigation, banners and footers around it.
    Markdown,
    /// The main content as text.
    Text,
    /// The page's title, as its metadata or its article's heading gives it.
    Title,
    /// Its author (a byline).
    Author,
    /// When it was published, as the page writes it.
    Published,
    /// Its language, such as `en`.
    Lang,
    /// Its description, or the article's first words.
    Description,
    /// The name of the site it is on.
    SiteName,
}

impl Facts {
    /// A `#[page(...)]` field's text: a meta string its text, another meta value its
    /// JSON; `None` for a meta key the request does not have, and for a page with no main
    /// content or without the metadata asked for.
    pub(crate) fn field(&self, field: PageField) -> Option<String> {
        Some(match field {
            PageField::Url => self.request.first_url().to_string(),
            PageField::FinalUrl => self.url.to_string(),
            PageField::Status => self.status.as_u16().to_string(),
            PageField::FetchedAt => spider_settings::rfc3339(self.fetched_at),
            PageField::Depth => self.request.depth().to_string(),
            PageField::Rendered => self.rendered.to_string(),
            PageField::Meta(key) => match self.request.meta().get(key)? {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            },
            PageField::Markdown => self.main_content()?.markdown.clone(),
            PageField::Text => self.main_content()?.text.clone(),
            PageField::Title => self.main_content()?.title.clone()?,
            PageField::Author => self.main_content()?.author.clone()?,
            PageField::Published => self.main_content()?.published.clone()?,
            PageField::Lang => self.main_content()?.lang.clone()?,
            PageField::Description => self.main_content()?.description.clone()?,
            PageField::SiteName => self.main_content()?.site_name.clone()?,
        })
    }

    fn main_content(&self) -> Option<&MainContent> {
        self.main_content
            .get_or_init(|| main_content::read(&self.encoding.decode(&self.body).0, &self.url))
            .as_ref()
    }
}
