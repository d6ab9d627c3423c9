//! What a render is asked and what it answers: the [`Job`] (a page's answer to open as its
//! identity), what came of it ([`Rendered`], [`Waited`], [`RenderError`]), and the crawl's
//! side of the browser's own requests ([`Subrequests`]).

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use url::Url;

use crate::request::rendering::Rendering;
use crate::request::Request;
use crate::wire::transport::Fetched;

/// What a render is given: the page's answer as the crawl fetched it, and how to render it.
pub(crate) struct Job<'a> {
    pub(crate) url: &'a Url,
    pub(crate) status: StatusCode,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a Bytes,
    pub(crate) rendering: &'a Rendering,
    /// The identity the page was fetched as (its key and generation), whose browser
    /// context it renders in; `None` for an answer from the cache.
    pub(crate) identity: Option<&'a str>,
    /// The identity's agent, so the page's script sees the agent its requests carry.
    pub(crate) agent: &'a str,
    /// The `Accept-Language` its requests carry, for the browser's locale.
    pub(crate) language: Option<&'a str>,
    /// The identity's cookies for the page, as a `Cookie` header, for the page's script.
    pub(crate) cookies: Option<&'a str>,
    /// Take a screenshot when the awaited selectors never matched.
    pub(crate) screenshot: bool,
}

/// How a render's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Every awaited selector matched.
    Matched,
    /// Nothing awaited: the page's network went quiet.
    Quiet,
    /// `render_timeout` ran out first: the page is read as it stands.
    TimedOut,
}

/// A rendered page.
pub(crate) struct Rendered {
    /// The DOM after the render, serialised.
    pub(crate) html: String,
    pub(crate) waited: Waited,
    /// Requests the browser made that were fetched through the crawl.
    pub(crate) subrequests: u64,
    /// Requests refused: images, fonts and media (unless `render_resources`), and those
    /// that would leave the allowed domains.
    pub(crate) refused: u64,
    /// Clicks and scrolls done.
    pub(crate) actions: u64,
    /// The actions ran out of time (or hit their bound) before the button was gone or the
    /// links stopped coming: the page is read as it stands.
    pub(crate) cut_short: bool,
    /// The page's cookies when it was read, as `Set-Cookie` lines for the identity's jar.
    pub(crate) cookies: Vec<String>,
    /// A PNG of the page, when asked and the awaited selectors never matched.
    pub(crate) screenshot: Option<Vec<u8>>,
}

/// Why a page could not be rendered.
#[derive(Debug)]
pub(crate) enum RenderError {
    /// The browser went away (crashed, killed) or stopped answering: it is replaced, and
    /// the page worth another attempt.
    Browser(String),
    /// No browser could be started: the crawl cannot render.
    Launch(String),
}

/// The crawl's side of a render: each request the browser makes, sent on the page's
/// identity and route under the crawl's admission.
#[async_trait]
pub(crate) trait Subrequests: Send + Sync {
    /// The answer to `request`, or `None` when the crawl refuses it or it got no answer
    /// (the browser is told it failed).
    async fn fetch(&self, request: Request) -> Option<Fetched>;
}
