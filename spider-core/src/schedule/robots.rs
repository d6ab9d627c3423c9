//! robots.txt, read with `texting_robots` and applied per host.
//!
//! What an answer means follows RFC 9309: a 2xx body holds the rules; a 4xx means there
//! are none (crawl everything), except 429, which like a 5xx or an unreachable host means
//! "assume everything is disallowed" (after retries), since the site may be unwell.
//! Crawl-delay is honoured as a floor of the host's politeness pause (Scrapy ignores it;
//! we do not).

use std::time::Duration;

use reqwest::StatusCode;
use spider_settings::Config;
use texting_robots::Robot;
use url::Url;

use crate::error::Error;
use crate::request::Request;
use crate::schedule::frontier::RobotsMemo;
use crate::schedule::frontier::Scope;
use crate::wire::redirect::{next_hop, Hop};
use crate::wire::route::Route;
use crate::wire::transport::Fetched;
use crate::wire::{Exchange, Exchanged, Judge};

/// The rules of one host for our user agent.
#[derive(Debug)]
pub(crate) enum RobotsRules {
    /// Everything allowed: no robots.txt (4xx), or an empty one.
    AllowAll,
    /// robots.txt could not be had (5xx, network error): nothing is fetched, and each
    /// request of the host is given up with this reason.
    Unavailable(String),
    /// Parsed rules.
    Rules(Box<Robot>),
}

/// Why robots.txt could not be fetched: a transport error with its root cause first (see
/// [`Cause::robots_message`](crate::error::cause::Cause::robots_message)), so the host's requests
/// are given up grouped by it.
pub(crate) fn unreachable(error: &Error) -> String {
    if matches!(error, Error::ProxyUnreachable { .. }) {
        error.to_string()
    } else if error.is_transport() {
        error.cause().robots_message(error)
    } else {
        error.to_string()
    }
}

impl RobotsRules {
    /// Read a robots.txt answer for `token`, the product token of our user agent.
    pub(crate) fn from_answer(status: u16, body: &[u8], token: &str) -> Self {
        match status {
            200..=299 => match Robot::new(token, body) {
                Ok(robot) => RobotsRules::Rules(Box::new(robot)),
                Err(e) => {
                    tracing::warn!(target: "spiderling", error = %e, "robots.txt does not parse; treating it \
                        as empty");
                    RobotsRules::AllowAll
                }
            },
            400..=499 => RobotsRules::AllowAll,
            _ => RobotsRules::Unavailable(format!("robots.txt answered {status}")),
        }
    }

    pub(crate) fn allows(&self, url: &Url) -> bool {
        match self {
            RobotsRules::AllowAll => true,
            RobotsRules::Unavailable(_) => false,
            RobotsRules::Rules(robot) => robot.allowed(url.as_str()),
        }
    }

    /// The sitemaps the file lists in `Sitemap:` lines, which hold for every user agent.
    pub(crate) fn sitemaps(&self) -> &[String] {
        match self {
            RobotsRules::Rules(robot) => &robot.sitemaps,
            _ => &[],
        }
    }

    /// The Crawl-delay for our agent, if the file sets one.
    pub(crate) fn crawl_delay(&self) -> Option<Duration> {
        match self {
            RobotsRules::Rules(robot) => robot
                .delay
                .filter(|secs| secs.is_finite() && *secs > 0.0)
                .map(|secs| Duration::from_secs_f32(secs.min(3600.0))),
            _ => None,
        }
    }
}

/// The robots.txt URL of the host of `url`.
pub(crate) fn robots_url(url: &Url) -> Option<Url> {
    let mut robots = url.clone();
    robots.set_query(None);
    robots.set_fragment(None);
    robots.set_path("/robots.txt");
    robots.set_username("").ok()?;
    robots.set_password(None).ok()?;
    Some(robots)
}

/// What a robots.txt answer means for its host (RFC 9309).
#[derive(Debug)]
pub(crate) enum RobotsAnswer {
    /// Rules to obey, and the answer they were read from, for a durable frontier to keep.
    Rules(RobotsRules, RobotsMemo),
    /// The request for the next hop of a redirect: RFC 9309 follows five.
    Redirect(Box<Request>),
    /// robots.txt cannot be had: why.
    Unavailable(String),
}

/// The most redirects a robots.txt is followed through (RFC 9309).
const REDIRECTS: u8 = 5;

/// Read `fetched`, the answer to `request` for a robots.txt, for the product token
/// `token`. A 429 is "slow down", not "no rules": unavailable, as Google has it.
pub(crate) fn read_answer(request: &Request, fetched: &Fetched, token: &str, scope: &Scope) -> RobotsAnswer {
    let status = fetched.status;
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        return RobotsAnswer::Unavailable(format!("robots.txt answered {status}"));
    }
    match next_hop(request, status, &fetched.headers, REDIRECTS) {
        // A hop is a request like any other: never outside the crawl's domains.
        Hop::To(next) if !scope.allows(next.url()) => RobotsAnswer::Unavailable(format!(
            "robots.txt redirects to {}, outside the allowed domains, so it is not read",
            next.url().origin().ascii_serialization()
        )),
        Hop::NotRedirect => {
            let rules = RobotsRules::from_answer(status.as_u16(), &fetched.body, token);
            RobotsAnswer::Rules(
                rules,
                RobotsMemo::Answer { status: status.as_u16(), body: fetched.body.clone() },
            )
        }
        Hop::To(next) => RobotsAnswer::Redirect(next),
        Hop::NoTarget | Hop::Loop(_) | Hop::TooMany => {
            RobotsAnswer::Unavailable(format!("robots.txt answered {status} without a usable redirect"))
        }
    }
}

/// What a host's robots.txt says to a crawl's user agent, for looking before crawling.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> Result<(), spider_core::Error> {
/// let config = spider_core::Config::new("books");
/// let url = url::Url::parse("https://books.example/catalogue/").unwrap();
/// let robots = spider_core::Robots::fetch(&config, &url).await?;
/// println!("allowed: {}, crawl-delay: {:?}", robots.allows(&url), robots.crawl_delay());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Robots {
    rules: RobotsRules,
    url: Url,
}

impl Robots {
    /// Fetch the robots.txt of `url`'s origin as a crawl with `config` would: through its
    /// exchange (user agent, headers, timeout, route: proxy and geo), following up to five
    /// redirects, and read it as the crawl reads it (a 5xx, a 429 or an unreachable host
    /// disallows everything).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the config cannot build its exchange (a bad proxy setting
    /// included), or `url` has no host; [`Error::ProxyAuth`] when the gateway refuses
    /// the credentials.
    pub async fn fetch(config: &Config, url: &Url) -> Result<Robots, Error> {
        Robots::fetch_through(&Exchange::new(config)?, Judge::Rules, config, url)
            .await
            .map(|(robots, _)| robots)
    }

    /// [`fetch`](Self::fetch), through an exchange already built, its answers judged as
    /// `judge` says (the probe's teach its router nothing); also says how many requests it
    /// sent, redirects included.
    pub(crate) async fn fetch_through(
        exchange: &Exchange,
        judge: Judge<'_>,
        config: &Config,
        url: &Url,
    ) -> Result<(Robots, u64), Error> {
        let robots_url = robots_url(url)
            .filter(|_| url.has_host())
            .ok_or_else(|| Error::Config(format!("{url} has no host, so no robots.txt")))?;
        let mut request = Request::new(robots_url.clone());
        let scope = Scope::new(&config.allowed_domains);
        let mut sent = 0;
        let rules = loop {
            sent += 1;
            let fetched = match exchange.send(&request, Route::Auto, None, judge).await? {
                Exchanged::Answer(answered) => answered.fetched,
                Exchanged::Failed(error) => break RobotsRules::Unavailable(unreachable(&error)),
            };
            match read_answer(&request, &fetched, config.robots_token(), &scope) {
                RobotsAnswer::Rules(rules, _) => break rules,
                RobotsAnswer::Redirect(next) => request = *next,
                RobotsAnswer::Unavailable(reason) => break RobotsRules::Unavailable(reason),
            }
        };
        Ok((Robots { rules, url: robots_url }, sent))
    }

    /// Its rules, for a crawl that read it before it began (the start hook's).
    pub(crate) fn into_rules(self) -> RobotsRules {
        self.rules
    }

    /// The robots.txt URL read.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Whether a crawl may fetch `url`.
    pub fn allows(&self, url: &Url) -> bool {
        self.rules.allows(url)
    }

    /// The Crawl-delay for our user agent, if any.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.rules.crawl_delay()
    }

    /// Why nothing may be fetched, when robots.txt could not be had.
    pub fn unavailable(&self) -> Option<&str> {
        match &self.rules {
            RobotsRules::Unavailable(reason) => Some(reason),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TXT: &[u8] = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: \
        spiderling\nDisallow: /no-bots/\n";

    fn url(path: &str) -> Url {
        Url::parse("http://h.example/").and_then(|u| u.join(path)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn our_group_wins_over_the_wildcard() {
        let rules = RobotsRules::from_answer(200, TXT, "spiderling");
        assert!(!rules.allows(&url("/no-bots/x")));
        assert!(rules.allows(&url("/private/x")));
        let others = RobotsRules::from_answer(200, TXT, "otherbot");
        assert!(!others.allows(&url("/private/x")));
        assert_eq!(others.crawl_delay(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn sitemap_lines_are_read_whichever_group_they_sit_in() {
        let txt = b"Sitemap: https://h.example/a.xml\nUser-agent: otherbot\nDisallow: /\nSitemap: \
            https://h.example/b.xml.gz\n";
        let rules = RobotsRules::from_answer(200, txt, "spiderling");
        assert_eq!(rules.sitemaps(), ["https://h.example/a.xml", "https://h.example/b.xml.gz"]);
        assert!(RobotsRules::from_answer(404, txt, "spiderling").sitemaps().is_empty());
        assert!(RobotsRules::from_answer(200, b"User-agent: *\nDisallow:\n", "spiderling")
            .sitemaps()
            .is_empty());
    }

    #[test]
    fn missing_file_allows_and_an_unusable_answer_disallows() {
        assert!(RobotsRules::from_answer(404, b"", "spiderling").allows(&url("/a")));
        assert!(!RobotsRules::from_answer(503, b"", "spiderling").allows(&url("/a")));
        assert!(!RobotsRules::from_answer(302, b"", "spiderling").allows(&url("/a")));
    }
}
