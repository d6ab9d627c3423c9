//! What the [`Spider::start`](crate::Spider::start) hook is given: the crawl's client, to
//! log in before the crawl, and a list of the requests to start from.

use std::time::SystemTime;

use reqwest::header::SET_COOKIE;

use crate::error::Error;
use crate::extract::hidden::HiddenLinks;
use crate::extract::page::Page;
use crate::extract::parse_pool::ParsePool;
use crate::request::Request;
use crate::wire::redirect::{next_hop, Hop};
use crate::wire::route::Route;
use crate::wire::{Exchange, Exchanged, Judge};
use spider_settings::Config;

/// The crawl as the start hook sees it, before it begins.
///
/// Requests sent with [`fetch`](Self::fetch) take the route the crawl would give them
/// (the spider's [`route`](crate::Spider::route), proxies, geo), with its headers,
/// timeout and body cap, and as the crawl's identities, with their cookies. This is where
/// a login's session reaches the crawl: the cookies its answers set are every identity's,
/// those made later included (unless `cookies = false`). They keep to the crawl's scope as
/// every request does: each, and each redirect's hop, within `allowed_domains` and allowed
/// by its host's robots.txt (unless `obey_robots = false`), or not sent; and each waits
/// its turn as the crawl's would, at most `per_host` of a host at once, `delay` (or its
/// robots.txt's Crawl-delay) apart, under the crawl's rate ceiling, which they spend first.
///
/// # Examples
///
/// See [`Spider::start`](crate::Spider::start).
pub struct Start<'a> {
    exchange: &'a Exchange,
    pool: &'a ParsePool,
    route: &'a (dyn Fn(&Request) -> Route + Send + Sync),
    admission: &'a dyn StartAdmission,
    config: &'a Config,
    queued: Vec<Request>,
}

/// Whether and when the crawl may send a request of the start hook: the engine's answer,
/// which knows the crawl's scope, robots.txt and politeness.
#[async_trait::async_trait]
pub(crate) trait StartAdmission: Send + Sync {
    /// Wait for `request`'s turn and take it: held while it is sent and answered. Else
    /// [`Error::NotAllowed`], or what kept robots.txt's answer from being had.
    async fn admit(&self, request: &Request) -> Result<Turn, Error>;
}

/// A start hook's request's turn at its host, held until its answer is in.
pub(crate) type Turn = Option<tokio::sync::OwnedSemaphorePermit>;

impl std::fmt::Debug for Start<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Start").field("queued", &self.queued.len()).finish_non_exhaustive()
    }
}

impl<'a> Start<'a> {
    pub(crate) fn new(
        exchange: &'a Exchange,
        pool: &'a ParsePool,
        route: &'a (dyn Fn(&Request) -> Route + Send + Sync),
        admission: &'a dyn StartAdmission,
        config: &'a Config,
    ) -> Self {
        Start { exchange, pool, route, admission, config, queued: Vec::new() }
    }

    /// Send `request` now and return its answer, whatever its status: redirects are
    /// followed (up to `max_redirects`; a 303, or a 302 to a POST, turns into a GET as
    /// after a login form), and the page is the last hop's, so
    /// [`Page::url`] is where the site sent the login. Check
    /// [`Page::status`]: a refused login is an answer, not an error.
    ///
    /// # Errors
    ///
    /// What fetching a page can fail with: [`Error::Http`], [`Error::Timeout`],
    /// [`Error::BodyTooLarge`]; [`Error::TooManyRedirects`] past `max_redirects`;
    /// [`Error::ProxyAuth`] when the gateway refuses the credentials;
    /// [`Error::NotAllowed`], unsent, outside `allowed_domains` or disallowed by robots.txt.
    pub async fn fetch(&self, request: Request) -> Result<Page, Error> {
        let mut request = request;
        loop {
            let turn = self.admission.admit(&request).await?;
            let fetched =
                match self.exchange.send(&request, (self.route)(&request), None, Judge::Nobody).await? {
                    Exchanged::Answer(answered) => answered.fetched,
                    Exchanged::Failed(error) => return Err(error),
                };
            drop(turn);
            // What the hook signs in with is every identity's: the crawl starts with it.
            for line in fetched.headers.get_all(SET_COOKIE).iter().filter_map(|value| value.to_str().ok()) {
                if let Err(error) = self.exchange.identities().seed(request.url(), line) {
                    tracing::debug!(target: "spiderling", url = %request.url(), %error, "a cookie the start \
                        hook was given is not kept");
                }
            }
            match next_hop(&request, fetched.status, &fetched.headers, self.config.max_redirects) {
                Hop::To(next) => request = *next,
                Hop::Loop(_) | Hop::TooMany => {
                    return Err(Error::TooManyRedirects {
                        url: request.url().clone(),
                        limit: self.config.max_redirects,
                    })
                }
                Hop::NotRedirect | Hop::NoTarget => {
                    let url = request.url().clone();
                    let hidden = HiddenLinks::new(self.config.follow_hidden);
                    let (status, headers, body) = (fetched.status, fetched.headers, fetched.body);
                    let fetched_at = SystemTime::now();
                    return Ok(Page::new(
                        url,
                        status,
                        headers,
                        body,
                        request,
                        fetched_at,
                        self.pool.clone(),
                        hidden,
                    ));
                }
            }
        }
    }

    /// Start the crawl from `request` too, beside the `start_urls` (at depth 0, unless it
    /// was made deeper). It goes through the frontier like any start URL: out of scope or
    /// seen before, it is dropped and counted.
    pub fn queue(&mut self, request: Request) {
        self.queued.push(request);
    }

    /// The requests the hook queued.
    pub(crate) fn into_queued(self) -> Vec<Request> {
        self.queued
    }
}
