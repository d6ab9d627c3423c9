//! What the [`Spider::start`](crate::Spider::start) hook is given: the crawl's client, to
//! log in before the crawl, and a list of the requests to start from.

use std::time::SystemTime;

use reqwest::header::{LOCATION, SET_COOKIE};

use crate::error::Error;
use crate::extract::hidden::HiddenLinks;
use crate::extract::page::Page;
use crate::extract::pool::ParsePool;
use crate::request::Request;
use crate::wire::route::{Route, Router, Verdict};
use crate::wire::transport::Fetcher;

/// The crawl as the start hook sees it, before it begins.
///
/// Requests sent with [`fetch`](Self::fetch) take the route the crawl would give them
/// (the spider's [`route`](crate::Spider::route), proxies, geo), with its headers,
/// timeout and body cap, and as the crawl's identities, with their cookies. This is where
/// a login's session reaches the crawl: the cookies its answers set are every identity's,
/// those made later included (unless `cookies = false`).
///
/// # Examples
///
/// See [`Spider::start`](crate::Spider::start).
pub struct Start<'a> {
    router: &'a Router,
    fetcher: &'a Fetcher,
    pool: &'a ParsePool,
    route: &'a (dyn Fn(&Request) -> Route + Send + Sync),
    max_redirects: u8,
    /// Whether the pages' links a person cannot see are read (`follow_hidden`).
    follow_hidden: bool,
    queued: Vec<Request>,
}

impl std::fmt::Debug for Start<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Start").field("queued", &self.queued.len()).finish_non_exhaustive()
    }
}

impl<'a> Start<'a> {
    pub(crate) fn new(
        router: &'a Router,
        fetcher: &'a Fetcher,
        pool: &'a ParsePool,
        route: &'a (dyn Fn(&Request) -> Route + Send + Sync),
        max_redirects: u8,
        follow_hidden: bool,
    ) -> Self {
        Start { router, fetcher, pool, route, max_redirects, follow_hidden, queued: Vec::new() }
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
    /// [`Error::BodyTooLarge`]; [`Error::TooManyRedirects`] past `max_redirects`.
    pub async fn fetch(&self, request: Request) -> Result<Page, Error> {
        let mut request = request;
        loop {
            let routed = self.router.route(&request, (self.route)(&request))?;
            let fetched = match self.fetcher.fetch(&routed, &request).await {
                Ok(fetched) => fetched,
                Err(error) => {
                    self.router.settle(&routed, Verdict::Unreachable, 0, 0);
                    return Err(error);
                }
            };
            self.router.settle(&routed, Verdict::Answered, fetched.sent, fetched.received);
            // What the hook signs in with is every identity's: the crawl starts with it.
            for line in fetched.headers.get_all(SET_COOKIE).iter().filter_map(|value| value.to_str().ok()) {
                if let Err(error) = self.router.identities().seed(request.url(), line) {
                    tracing::debug!(url = %request.url(), %error, "a cookie the start hook was given is not kept");
                }
            }
            let target = fetched
                .status
                .is_redirection()
                .then(|| fetched.headers.get(LOCATION))
                .flatten()
                .and_then(|location| location.to_str().ok())
                .and_then(|location| request.url().join(location).ok());
            if let Some(target) = target {
                if request.redirects >= self.max_redirects || request.passed(&target) {
                    return Err(Error::TooManyRedirects {
                        url: request.url().clone(),
                        limit: self.max_redirects,
                    });
                }
                request = request.redirected(target, fetched.status.as_u16());
                continue;
            }
            let url = request.url().clone();
            let page = Page::new(
                url,
                fetched.status,
                fetched.headers,
                fetched.body,
                request,
                SystemTime::now(),
                self.pool.clone(),
                HiddenLinks { follow: self.follow_hidden, ..HiddenLinks::default() },
            );
            return Ok(page);
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
