//! Block detection: whether an answer means "this identity is blocked or throttled".
//!
//! 403 and 429 always are. A 503 is when its body carries an anti-bot challenge marker
//! (a plain 503 is trouble on the server, retried as such). Any answer is when its body
//! carries one of the spider's `block_markers`: captcha walls are often served with 200.
//! A spider's [`Spider::is_blocked`](crate::Spider::is_blocked) hook has the last word.
//!
//! A blocked answer is never parsed: it is retried, from a new exit when proxies allow.
//!
//! Without any marker, a derived spider still tells a soft block after the parse: a page
//! of a rule that parses and does not follow, answered 2xx with none of the item's fields
//! and with a form or a known challenge text instead ([`is_soft_block`]). It is then judged a block
//! after all (`Exchange::overturn`), or a wall when it set a cookie.

use memchr::memmem;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use spider_settings::Config;

/// Text that anti-bot challenge pages served with 503 carry.
const CHALLENGE_MARKERS: &[&str] = &["challenge-platform", "cf-chl-", "captcha"];

/// What a wall or a challenge carries in place of a page's content: a form (a captcha's,
/// a consent's, a login's) or words such pages are made of, compared without case.
const SOFT_BLOCK_MARKERS: &[&str] = &[
    "<form",
    "captcha",
    "challenge-platform",
    "cf-chl-",
    "cf-turnstile",
    "consent",
    "verify you are human",
    "are you a robot",
    "unusual traffic",
];

/// Whether a page that a rule expected an item on, and that has none of its fields, is a
/// wall or a challenge instead: it carries a form or one of the texts such pages do.
pub(crate) fn is_soft_block(body: &[u8]) -> bool {
    let lower = body.to_ascii_lowercase();
    SOFT_BLOCK_MARKERS.iter().any(|marker| memmem::find(&lower, marker.as_bytes()).is_some())
}

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

    #[test]
    fn a_page_without_its_item_is_a_soft_block_when_it_is_a_wall_or_a_challenge() {
        for wall in [
            "<FORM id=x method=post><input name=answer></FORM>",
            "<div class=\"g-reCAPTCHA\"></div>",
            "<div id=consent-wall>We use cookies</div>",
            "<p>Please verify you are human</p>",
        ] {
            assert!(is_soft_block(wall.as_bytes()), "{wall}");
        }
        assert!(!is_soft_block(b"<h1>Out of print</h1><p>Try the catalogue.</p>"));
    }
}
