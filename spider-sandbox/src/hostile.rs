//! The hostile site: every way a target fights back or breaks.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;

/// A per-identity rate limit, enforced the way a real anti-bot layer does it.
///
/// An identity — the peer IP of the connection, which behind a
/// [`MockGateway`](crate::MockGateway) is the gateway's exit address — that sends more than `requests` within `per` is answered 429 with a Retry-After saying
/// when its window frees up. One that keeps going while throttled — more than
/// `ban_after` answers of 429 within `per` — is banned: every request gets 403 for
/// `ban_for`.
#[derive(Debug, Clone, Copy)]
pub struct IdentityLimit {
    /// Requests allowed per window.
    pub requests: usize,
    /// The window.
    pub per: Duration,
    /// 429s tolerated within one window before the ban.
    pub ban_after: usize,
    /// How long a ban lasts.
    pub ban_for: Duration,
}

/// The hostile site. Its home page links every trap it has:
///
/// - `/page/I`: an ordinary item page (`h1.title`, `p.price`, `p.availability`).
/// - `/flaky/I`: 503 for the first `flaky_failures` attempts, then an item page.
/// - `/captcha/I`: a captcha wall served with 200 (its marker `g-recaptcha`, its title
///   "Are you a robot?") on the first attempt, then an item page.
/// - `/throttled/I`: 429 with `Retry-After: retry_after` (seconds) once, then an item page.
/// - `/slow/I`: an item page after `slow_for`, past any sensible timeout.
/// - `/gone/I`: 404, not worth a retry.
/// - `/reset/I`: the connection is closed without an answer, every time.
/// - with `traps`: `/latin1` (an ISO-8859-1 page, its title `Café Müller`), `/huge`
///   (`huge_bytes` of HTML), `/bomb` (gzip that inflates to `bomb_bytes`), `/chain/0`
///   (a redirect chain that never ends), `/cycle` (a redirect to itself), `/loop/a` and
///   `/loop/b` (redirects to each other; the home page links `/loop/a#start`, a
///   fragment a crawler must not send or report).
///
/// With `limit`, every request but robots.txt goes through the [`IdentityLimit`].
#[derive(Debug, Clone)]
pub struct HostileSite {
    /// Ordinary item pages.
    pub pages: usize,
    /// Pages that fail before they work.
    pub flaky: usize,
    /// Attempts a flaky page fails with 503.
    pub flaky_failures: u32,
    /// Pages behind a captcha wall on their first attempt.
    pub captcha: usize,
    /// Pages that answer 429 with Retry-After once.
    pub throttled: usize,
    /// The Retry-After of a throttled page.
    pub retry_after: Duration,
    /// Pages slower than `slow_for`.
    pub slow: usize,
    /// How long a slow page takes.
    pub slow_for: Duration,
    /// Pages answering 404.
    pub gone: usize,
    /// Pages whose connection is reset.
    pub resets: usize,
    /// The bad-input pages: non-UTF-8, huge, gzip bomb, redirect chain and cycle.
    pub traps: bool,
    /// Size of `/huge`.
    pub huge_bytes: usize,
    /// What `/bomb` inflates to.
    pub bomb_bytes: usize,
    /// The per-identity limit, if any.
    pub limit: Option<IdentityLimit>,
    /// The limit's 429s carry no Retry-After, as many real limiters' do not.
    pub silent_limit: bool,
}

impl Default for HostileSite {
    /// One of everything, no limit.
    fn default() -> Self {
        HostileSite {
            pages: 10,
            flaky: 5,
            flaky_failures: 1,
            captcha: 0,
            throttled: 2,
            retry_after: Duration::from_secs(1),
            slow: 2,
            slow_for: Duration::from_secs(3),
            gone: 2,
            resets: 1,
            traps: true,
            huge_bytes: 16 << 20,
            bomb_bytes: 256 << 20,
            limit: None,
            silent_limit: false,
        }
    }
}

impl HostileSite {
    /// A site with nothing on it but its home page; set the fields a test needs.
    pub fn empty() -> Self {
        HostileSite {
            pages: 0,
            flaky: 0,
            throttled: 0,
            slow: 0,
            gone: 0,
            resets: 0,
            traps: false,
            ..HostileSite::default()
        }
    }

    /// Item pages a complete, correct crawl recovers: ordinary, flaky, captcha, throttled
    /// and (with traps) the Latin-1 page.
    pub fn recoverable_items(&self) -> usize {
        self.pages + self.flaky + self.captcha + self.throttled + usize::from(self.traps)
    }
}

/// What the hostile site says to one request.
pub(crate) enum Reply {
    Page { status: u16, headers: Vec<(&'static str, String)>, body: Bytes },
    Reset,
}

impl Reply {
    fn html(body: String) -> Self {
        Reply::Page {
            status: 200,
            headers: vec![("content-type", "text/html; charset=utf-8".to_owned())],
            body: Bytes::from(body),
        }
    }

    fn status(status: u16, headers: Vec<(&'static str, String)>) -> Self {
        Reply::Page { status, headers, body: Bytes::new() }
    }
}

#[derive(Default)]
struct Identity {
    requests: VecDeque<Instant>,
    throttled: VecDeque<Instant>,
    banned_until: Option<Instant>,
}

/// The site and what it remembers: attempts per page, and each identity's history.
pub(crate) struct Hostile {
    site: HostileSite,
    attempts: Mutex<HashMap<String, u32>>,
    identities: Mutex<HashMap<IpAddr, Identity>>,
    bomb: OnceLock<Bytes>,
}

impl Hostile {
    pub(crate) fn new(site: HostileSite) -> Self {
        Hostile { site, attempts: Mutex::default(), identities: Mutex::default(), bomb: OnceLock::new() }
    }

    /// The slow pages' delay, for the server to sleep before answering.
    pub(crate) fn delay_for(&self, path: &str) -> Option<Duration> {
        path.starts_with("/slow/").then_some(self.site.slow_for)
    }

    pub(crate) fn answer(&self, path: &str, identity: IpAddr) -> Reply {
        if path == "/robots.txt" {
            return Reply::Page {
                status: 200,
                headers: vec![("content-type", "text/plain".to_owned())],
                body: Bytes::from_static(b"User-agent: *\nAllow: /\n"),
            };
        }
        if let Some(refusal) = self.site.limit.and_then(|limit| self.police(identity, limit)) {
            return refusal;
        }
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
            let n = attempts.entry(path.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        let (kind, number) = match path.rsplit_once('/') {
            Some((kind, number)) => (kind, number.parse::<usize>().ok()),
            None => (path, None),
        };
        let within = |count: usize| number.filter(|i| (1..=count).contains(i));
        match (kind, number) {
            ("", _) if path == "/" => Reply::html(self.home()),
            ("/page", _) if within(self.site.pages).is_some() => Reply::html(item(path)),
            ("/flaky", _) if within(self.site.flaky).is_some() => {
                if attempt <= self.site.flaky_failures {
                    Reply::status(503, vec![])
                } else {
                    Reply::html(item(path))
                }
            }
            ("/captcha", _) if within(self.site.captcha).is_some() => {
                if attempt == 1 {
                    Reply::html(CAPTCHA.to_owned())
                } else {
                    Reply::html(item(path))
                }
            }
            ("/throttled", _) if within(self.site.throttled).is_some() => {
                if attempt == 1 {
                    Reply::status(429, vec![("retry-after", self.site.retry_after.as_secs().to_string())])
                } else {
                    Reply::html(item(path))
                }
            }
            ("/slow", _) if within(self.site.slow).is_some() => Reply::html(item(path)),
            ("/reset", _) if within(self.site.resets).is_some() => Reply::Reset,
            ("/chain", Some(n)) if self.site.traps => {
                Reply::status(302, vec![("location", format!("/chain/{}", n + 1))])
            }
            _ if self.site.traps => self.trap(path),
            _ => Reply::status(404, vec![]),
        }
    }

    fn trap(&self, path: &str) -> Reply {
        match path {
            "/latin1" => {
                // "Café Müller" in ISO-8859-1: é is 0xE9, ü is 0xFC, neither valid UTF-8.
                let mut body = b"<html><body><h1 class=\"title\">Caf\xe9 M\xfcller</h1>".to_vec();
                body.extend_from_slice(
                    b"<p class=\"price\">\xa312.00</p><p class=\"availability\">In stock</p></body></html>",
                );
                Reply::Page {
                    status: 200,
                    headers: vec![("content-type", "text/html; charset=iso-8859-1".to_owned())],
                    body: Bytes::from(body),
                }
            }
            "/huge" => {
                let mut body = String::with_capacity(self.site.huge_bytes + 64);
                body.push_str("<html><body><h1 class=\"title\">Huge</h1>");
                while body.len() < self.site.huge_bytes {
                    body.push_str("<p>filler filler filler filler filler filler filler filler</p>\n");
                }
                Reply::html(body)
            }
            "/bomb" => Reply::Page {
                status: 200,
                headers: vec![
                    ("content-type", "text/html".to_owned()),
                    ("content-encoding", "gzip".to_owned()),
                ],
                body: self.bomb.get_or_init(|| gzip_of_zeros(self.site.bomb_bytes)).clone(),
            },
            "/cycle" => Reply::status(302, vec![("location", "/cycle".to_owned())]),
            "/loop/a" => Reply::status(302, vec![("location", "/loop/b".to_owned())]),
            "/loop/b" => Reply::status(301, vec![("location", "/loop/a".to_owned())]),
            _ => Reply::status(404, vec![]),
        }
    }

    /// Apply the identity limit; `Some` is the refusal.
    fn police(&self, identity: IpAddr, limit: IdentityLimit) -> Option<Reply> {
        let now = Instant::now();
        let mut identities = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        let state = identities.entry(identity).or_default();
        if let Some(until) = state.banned_until {
            if now < until {
                return Some(Reply::status(403, vec![]));
            }
            *state = Identity::default();
        }
        let window_start = now.checked_sub(limit.per).unwrap_or(now);
        while state.requests.front().is_some_and(|t| *t < window_start) {
            state.requests.pop_front();
        }
        while state.throttled.front().is_some_and(|t| *t < window_start) {
            state.throttled.pop_front();
        }
        state.requests.push_back(now);
        if state.requests.len() <= limit.requests {
            return None;
        }
        state.throttled.push_back(now);
        if state.throttled.len() > limit.ban_after {
            state.banned_until = Some(now + limit.ban_for);
            return Some(Reply::status(403, vec![]));
        }
        if self.site.silent_limit {
            return Some(Reply::status(429, vec![]));
        }
        let frees_at = state.requests[state.requests.len() - limit.requests] + limit.per;
        let wait = frees_at.saturating_duration_since(now).as_secs_f64().ceil().max(1.0);
        Some(Reply::status(429, vec![("retry-after", format!("{wait}"))]))
    }

    fn home(&self) -> String {
        let site = &self.site;
        let mut links = String::new();
        for (kind, count) in [
            ("page", site.pages),
            ("flaky", site.flaky),
            ("captcha", site.captcha),
            ("throttled", site.throttled),
            ("slow", site.slow),
            ("gone", site.gone),
            ("reset", site.resets),
        ] {
            for i in 1..=count {
                let _ = writeln!(links, r#"<li><a href="/{kind}/{i}">{kind} {i}</a></li>"#);
            }
        }
        if site.traps {
            for trap in ["/latin1", "/huge", "/bomb", "/chain/0", "/cycle", "/loop/a#start"] {
                let _ = writeln!(links, r#"<li><a href="{trap}">{trap}</a></li>"#);
            }
        }
        format!("<!doctype html>\n<html><body><h2>Hostile site</h2><ul>\n{links}</ul></body></html>\n")
    }
}

/// A soft block: a 200 page that looks like an item to a careless spider.
const CAPTCHA: &str = "<html><body><h1 class=\"title\">Are you a robot?</h1>\
<div class=\"g-recaptcha\" data-sitekey=\"sandbox\"></div></body></html>";

fn item(path: &str) -> String {
    format!(
        "<!doctype html>\n<html><body><h1 class=\"title\">Item {path}</h1><p class=\"price\">£1.00</p><p \
            class=\"availability\">In stock</p></body></html>\n"
    )
}

fn gzip_of_zeros(bytes: usize) -> Bytes {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(zeros.len());
        if encoder.write_all(&zeros[..n]).is_err() {
            break;
        }
        left -= n;
    }
    Bytes::from(encoder.finish().unwrap_or_default())
}
