//! Block detection: whether an answer means "this identity is blocked or throttled".
//!
//! 403 and 429 always are. A 503 is when its body carries an anti-bot challenge marker
//! (a plain 503 is trouble on the server, retried as such). Any answer is when its body
//! carries one of the spider's `block_markers`: captcha walls are often served with 200.
//! A spider's [`Spider::is_blocked`](crate::Spider::is_blocked) hook has the last word.
//!
//! A blocked answer is never parsed: it is retried, from a new exit when proxies allow.
//!
//! Without any marker, a page that gave no item is still judged after the parse: an
//! interstitial standing in for it (`interstitial.rs`) is a block after all
//! (`Exchange::overturn`), or a wall to pass when it set a cookie.

use memchr::memmem;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use spider_settings::Config;

/// Text that anti-bot challenge pages served with 503 carry.
const CHALLENGE_MARKERS: &[&str] = &["challenge-platform", "cf-chl-", "captcha"];

/// An answer as block detection sees it, for [`Spider::is_blocked`](crate::Spider::is_blocked).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Answer<'a> {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: &'a HeaderMap,
    /// The body, decompressed.
    pub body: &'a [u8],
}

/// The markers in force.
#[derive(Debug)]
pub(crate) struct BlockRules {
    markers: Vec<memmem::Finder<'static>>,
    challenges: Vec<memmem::Finder<'static>>,
}

impl BlockRules {
    pub(crate) fn new(config: &Config) -> Self {
        let finders = |texts: &mut dyn Iterator<Item = &str>| {
            texts.map(|t| memmem::Finder::new(t).into_owned()).collect()
        };
        BlockRules {
            markers: finders(&mut config.block_markers.iter().map(String::as_str)),
            challenges: finders(&mut CHALLENGE_MARKERS.iter().copied()),
        }
    }

    /// The default verdict on `answer`.
    pub(crate) fn blocked(&self, answer: &Answer<'_>) -> bool {
        let carries =
            |finders: &[memmem::Finder<'static>]| finders.iter().any(|f| f.find(answer.body).is_some());
        match answer.status.as_u16() {
            403 | 429 => true,
            503 => carries(&self.challenges) || carries(&self.markers),
            _ => carries(&self.markers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &'static str, headers: &'static HeaderMap) -> Answer<'static> {
        Answer { status: StatusCode::from_u16(status).unwrap(), headers, body: body.as_bytes() }
    }

    #[test]
    fn statuses_challenges_and_markers() {
        static HEADERS: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
        let headers = HEADERS.get_or_init(HeaderMap::new);
        let plain = BlockRules::new(&Config::new("x"));
        assert!(plain.blocked(&answer(403, "", headers)));
        assert!(plain.blocked(&answer(429, "", headers)));
        assert!(!plain.blocked(&answer(503, "down for maintenance", headers)));
        assert!(plain.blocked(&answer(503, "<div id=challenge-platform>", headers)));
        assert!(!plain.blocked(&answer(200, "<div class=g-recaptcha>", headers)), "no markers set");
        let marked = BlockRules::new(&Config::new("x").block_marker("g-recaptcha"));
        assert!(marked.blocked(&answer(200, "<div class=g-recaptcha>", headers)));
        assert!(!marked.blocked(&answer(200, "<h1>A book</h1>", headers)));
    }
}
