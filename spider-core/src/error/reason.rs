//! Why a request was given up. The words are a public contract: the failures file's
//! `reason`, the summary's and the stats file's `failures_by_reason`, the state file's and
//! the fleet's failures, the dashboard's and the metrics' labels, and README's list, which a
//! test checks against [`Reason::all`].

use std::fmt;

use crate::error::cause::Cause;

/// Why a request was given up.
///
/// # Examples
///
/// ```
/// use spider_core::{Cause, Reason};
///
/// assert_eq!(Reason::Transport(Cause::Refused).as_str(), "connection refused");
/// assert_eq!(Reason::of_status(404).as_str(), "http 404");
/// assert_eq!(Reason::of_status(410).as_str(), "http 4xx");
/// assert!(Reason::all().any(|reason| reason.as_str() == "redirect loop"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Reason {
    /// An answer whose status is not retried, or was retried as long as `retries` allows
    /// (see [`Reason::of_status`]).
    Status(StatusClass),
    /// An answer judged a block that is neither 403 nor 429: a challenge page, a block
    /// marker, the spider's `is_blocked`.
    Blocked,
    /// A wall that handed out a cookie, still there after the retries.
    ConsentWall,
    /// No answer: the transport's root cause.
    Transport(Cause),
    /// The host's robots.txt could not be had (RFC 9309: nothing of the host is fetched),
    /// by the transport's root cause when it failed in transport.
    RobotsUnavailable(Option<Cause>),
    /// The proxy gateway the request was routed through could not be reached, by the
    /// root cause: the route's trouble, not the site's (robots.txt's fetch included).
    ProxyUnreachable(Cause),
    /// The body grew past `max_body_bytes`.
    BodyTooLarge,
    /// Any other failure to fetch, such as a cached answer that no longer reads.
    Fetch,
    /// A redirect without a `Location` the crawl can follow.
    BadRedirect,
    /// A redirect back to a URL its chain already passed, itself included.
    RedirectLoop,
    /// A chain of redirects longer than `max_redirects`.
    TooManyRedirects,
    /// The browser rendering the page went away (crashed, killed or hung) or refused it.
    Render,
    /// The page had an item only in part.
    Item,
    /// An answer read as JSON that is not the JSON asked for.
    Json,
    /// The spider's `parse` returned another error.
    Parse,
    /// The page's DOM took longer than the parse budget to build.
    ParseTooLong,
    /// A sitemap listing more than 50,000 URLs: the first 50,000 were taken.
    SitemapTooManyUrls,
    /// A sitemap over 50 MB once inflated: the URLs within them were taken.
    SitemapTooLarge,
    /// A sitemap whose XML (or gzip) is broken: the URLs before the mistake were taken.
    SitemapMalformed,
    /// An answer read as a sitemap that is none.
    NotASitemap,
    /// Cut short by the end of the crawl (a second Ctrl-C, or the grace running out).
    Interrupted,
    /// The spider's code panicked on it.
    Panic,
}

/// A status as failures count it: one of those with a reason of their own (403, 404,
/// 408, 429, 500, 502, 503, 504), or else its class, any other 4xx or any other status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StatusClass(u16);

/// The statuses that have a reason of their own.
const OWN_STATUSES: [u16; 8] = [403, 404, 408, 429, 500, 502, 503, 504];
/// What [`StatusClass`] holds for any other 4xx, and for any other status.
const OTHER_4XX: u16 = 400;
const OTHER: u16 = 599;

impl Reason {
    /// The reason an answer of `status` is given up for: its own, or its class's.
    pub fn of_status(status: u16) -> Reason {
        Reason::Status(StatusClass(match status {
            status if OWN_STATUSES.contains(&status) => status,
            400..=499 => OTHER_4XX,
            _ => OTHER,
        }))
    }

    /// The reason as it is written and counted.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Status(StatusClass(status)) => match status {
                403 => "http 403",
                404 => "http 404",
                408 => "http 408",
                429 => "http 429",
                500 => "http 500",
                502 => "http 502",
                503 => "http 503",
                504 => "http 504",
                OTHER_4XX => "http 4xx",
                _ => "http 5xx",
            },
            Reason::Blocked => "blocked",
            Reason::ConsentWall => "consent wall",
            Reason::Transport(cause) => cause.phrase(),
            Reason::RobotsUnavailable(None) => "robots.txt unavailable",
            Reason::RobotsUnavailable(Some(cause)) => cause.behind_robots(),
            Reason::ProxyUnreachable(cause) => cause.behind_proxy(),
            Reason::BodyTooLarge => "body too large",
            Reason::Fetch => "fetch",
            Reason::BadRedirect => "bad redirect",
            Reason::RedirectLoop => "redirect loop",
            Reason::TooManyRedirects => "too many redirects",
            Reason::Render => "render",
            Reason::Item => "item",
            Reason::Json => "json",
            Reason::Parse => "parse",
            Reason::ParseTooLong => "parse too long",
            Reason::SitemapTooManyUrls => "sitemap over 50,000 URLs",
            Reason::SitemapTooLarge => "sitemap over 50 MB",
            Reason::SitemapMalformed => "sitemap malformed",
            Reason::NotASitemap => "not a sitemap",
            Reason::Interrupted => "interrupted",
            Reason::Panic => "panic",
        }
    }

    /// Every reason, each once.
    pub fn all() -> impl Iterator<Item = Reason> {
        let statuses = OWN_STATUSES.into_iter().chain([OTHER_4XX, OTHER]).map(Reason::of_status);
        let transport = Cause::ALL.into_iter().map(Reason::Transport);
        let robots = std::iter::once(None).chain(Cause::ALL.map(Some)).map(Reason::RobotsUnavailable);
        let proxy = Cause::ALL.into_iter().map(Reason::ProxyUnreachable);
        let others = [
            Reason::Blocked,
            Reason::ConsentWall,
            Reason::BodyTooLarge,
            Reason::Fetch,
            Reason::BadRedirect,
            Reason::RedirectLoop,
            Reason::Render,
            Reason::TooManyRedirects,
            Reason::Item,
            Reason::Json,
            Reason::Parse,
            Reason::ParseTooLong,
            Reason::SitemapTooManyUrls,
            Reason::SitemapTooLarge,
            Reason::SitemapMalformed,
            Reason::NotASitemap,
            Reason::Interrupted,
            Reason::Panic,
        ];
        statuses.chain(transport).chain(robots).chain(proxy).chain(others)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_words_of_its_own() {
        let words: Vec<&str> = Reason::all().map(Reason::as_str).collect();
        let mut distinct = words.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), words.len(), "{words:?}");
        assert_eq!(Reason::of_status(503).as_str(), "http 503");
        assert_eq!(Reason::of_status(501).as_str(), "http 5xx");
        assert_eq!(Reason::of_status(418).as_str(), "http 4xx");
    }
}
