//! The settings of a crawl: [`Config`], the table of its keys, and the grammar of their
//! values.
//!
//! One table, used twice: `#[derive(Spider)]` checks `#[spider(key = value)]` against it
//! at compile time, and the runtime applies `--set key=value` and `SPIDERLING_KEY`
//! environment variables with it, so a key means the same everywhere. A [`Config`] is data
//! and the check of its own grammar: this crate knows no stage of a crawl.

use std::time::Duration;

mod config;
mod date;
mod error;
mod gateway;
mod pace;
mod proxy;
mod redis;
mod stream;

pub use config::{Config, RouteSpec, SeedCookies, DEFAULT_USER_AGENT};
pub use error::ConfigError;
pub use gateway::{resolve_proxy, Gateway};
pub use pace::{Backoff, DelayRange, RateCeiling};
pub use redis::RedisAddress;

pub use stream::{stream_selector, AttributeOp, Combinator, Complex, Compound, Condition, StreamSelector};

pub use date::{parse_date, Date};
pub use proxy::{
    check_user_template, parse_country, parse_decimal, parse_geo_rule, parse_proxy, redact_spec, redact_url,
    split_entries, ProxyEntry, DEFAULT_USER_TEMPLATE,
};

/// The statuses retried by default: 403 and 429 with their own reactions, and transient
/// server trouble. 501 is left out: "not implemented" does not change on a retry.
pub const DEFAULT_RETRY_STATUSES: &[u16] = &[403, 408, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524];

/// The shape of a key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A list of strings (comma-separated at run time).
    TextList,
    /// A whole number of at least one.
    Positive,
    /// A whole number, zero allowed.
    Count,
    /// `true` or `false`.
    Bool,
    /// A duration such as `500ms`, `2s`, `1m`.
    Duration,
    /// A fixed pause (`500ms`) or a range (`1s..3s`).
    Delay,
    /// A profile name: `polite`, `general`, `bulk`.
    Profile,
    /// A CSS selector (compile time only).
    Selector,
    /// A type (compile time only).
    Type,
    /// The engine reading a derived spider's pages, `dom` or `stream` (compile time only).
    Engine,
    /// A proxy route: `direct`, `env:VAR` or gateway URLs, pools by `,`, tiers by `>`.
    Proxy,
    /// A two-letter country code.
    Country,
    /// Per-host country rules, `*.de=de`.
    GeoRules,
    /// A gateway username template with `{user}`, `{geo}`, `{session}`.
    UserTemplate,
    /// A non-negative decimal number.
    Decimal,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
}

/// One key: its name, its value's shape, and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The name, as written in `#[spider(...)]`, `--set` and (uppercased) the environment.
    pub name: &'static str,
    /// The value's shape.
    pub kind: Kind,
    /// What it sets, and its default.
    pub doc: &'static str,
    /// Whether it can be changed at run time (selectors and types cannot).
    pub runtime: bool,
}

const fn key(name: &'static str, kind: Kind, doc: &'static str) -> Key {
    Key { name, kind, doc, runtime: true }
}

/// Every key, in the order the docs list them.
pub const KEYS: &[Key] = &[
    key("name", Kind::Text, "the spider's name (default: the struct's name in snake_case)"),
    key("start_urls", Kind::TextList, "URLs the crawl starts from (default: none)"),
    key("allowed_domains", Kind::TextList, "domains (and subdomains) the crawl stays in (default: any)"),
    key(
        "sitemaps",
        Kind::Bool,
        "read the sitemaps the robots.txt of each start URL's host lists in `Sitemap:` lines (default false)",
    ),
    key("sitemap_urls", Kind::TextList, "sitemaps (or sitemap indexes) read as the crawl starts (default: none)"),
    key(
        "sitemap_since",
        Kind::Date,
        "skip sitemap URLs whose <lastmod> is before this day, `YYYY-MM-DD` in UTC; those without one are kept (default: none skipped)",
    ),
    Key {
        name: "profile",
        kind: Kind::Profile,
        doc: "a preset of slots and pauses: polite, general, bulk (default: none); the lowest layer, so at run time set its keys instead",
        runtime: false,
    },
    key("concurrency", Kind::Positive, "requests in flight over all hosts (default 16)"),
    key("per_host", Kind::Positive, "requests in flight to one host (default 8)"),
    key("rpm", Kind::Positive, "hard ceiling of requests per minute, retries included (default: none)"),
    key("rps", Kind::Positive, "hard ceiling of requests per second (default: none)"),
    key("delay", Kind::Delay, "pause per host slot between requests, `500ms` or `1s..3s` (default: none)"),
    key("retries", Kind::Count, "attempts after the first (default 3)"),
    key("timeout", Kind::Duration, "time for one attempt (default 30s)"),
    key("max_depth", Kind::Count, "links followed from a start URL (default: no limit)"),
    key("max_pages", Kind::Positive, "pages to fetch, then the crawl stops admitting (default: no limit)"),
    key("max_items", Kind::Positive, "items to write, then the crawl stops admitting (default: no limit)"),
    key("user_agent", Kind::Text, "the User-Agent header (default spiderling/VERSION)"),
    key("headers", Kind::TextList, "headers sent with every request, as `Name: value` (default: none)"),
    key(
        "cookies",
        Kind::Bool,
        "keep the cookies sites set, one jar per identity, and send them back; a blocked identity is retired with its jar (default true)",
    ),
    key(
        "user_agents",
        Kind::TextList,
        "user agents each identity draws one of and keeps, with the Accept headers its browser sends; `headers` win; at run time separated by `|`, since agents hold commas (default: none, `user_agent` for all)",
    ),
    key("user_agents_file", Kind::Text, "a file of user agents, one a line, as `user_agents` (default: none)"),
    key(
        "follow_hidden",
        Kind::Bool,
        "follow links a person cannot see (inline display:none, visibility:hidden, `hidden`, aria-hidden off-screen): honeypots (default false)",
    ),
    key("obey_robots", Kind::Bool, "fetch and obey robots.txt (default true)"),
    key("parse_threads", Kind::Positive, "threads of the HTML parse pool (default: the number of CPUs)"),
    key("output", Kind::Text, "items file; .jsonl, .csv or .json (default: none)"),
    key(
        "state",
        Kind::Text,
        "a state file (SQLite) that keeps the crawl across Ctrl-C, crashes and kill -9; the same command goes on where it stopped (default: none)",
    ),
    key(
        "proxy",
        Kind::Proxy,
        "how requests leave: `direct`, `env:VAR` (a gateway URL held in VAR) or a gateway URL; `,` makes a pool, `>` tiers escalated from cheapest on blocks (default: direct)",
    ),
    key("geo", Kind::Country, "exit country of proxied requests, two letters (default: the gateway's choice)"),
    key("geo_rules", Kind::GeoRules, "exit country per host, as `*.de=de` (default: none)"),
    key(
        "sticky",
        Kind::Bool,
        "one exit identity per logical task, replaced when blocked; false gives every request a new one (default false)",
    ),
    key(
        "proxy_user_template",
        Kind::UserTemplate,
        "the gateway username (default `{user}-country-{geo}-session-{session}`; parts without a value are left out)",
    ),
    key("proxy_price_per_gb", Kind::Decimal, "price of a GB through a gateway, for the spend in stats (default 0)"),
    key(
        "proxy_budget",
        Kind::Decimal,
        "stop admitting once the proxy spend reaches this, finish what is in flight, exit 4 (default: none)",
    ),
    key(
        "adaptive",
        Kind::Bool,
        "find each host's concurrency and rate from its block rate, with concurrency and per_host as ceilings (default false)",
    ),
    key(
        "block_target",
        Kind::Decimal,
        "the block rate adaptive mode keeps under, a fraction such as 0.02 (default 0.02)",
    ),
    key("metrics", Kind::Text, "serve the gauges in the Prometheus text format at this address, such as 127.0.0.1:9898 (default: none)"),
    key(
        "dashboard",
        Kind::Text,
        "serve a live dashboard of the crawl at this address, such as 127.0.0.1:9898; no authentication, so keep it on loopback (default: none)",
    ),
    key(
        "report",
        Kind::Text,
        "write a self-contained HTML report of the crawl to this file when it ends (default: none)",
    ),
    key("progress", Kind::Bool, "a live status line on a terminal, else a log line every 5 s (default true)"),
    key(
        "block_markers",
        Kind::TextList,
        "text that marks an answer as a block even with 200, such as a captcha's `g-recaptcha` (default: none)",
    ),
    key("ca_cert", Kind::Text, "a PEM certificate file to trust besides the built-in roots (default: none)"),
    key(
        "cache",
        Kind::Text,
        "an HTTP cache file (SQLite): answers are kept and later runs are answered from it without the network (default: none)",
    ),
    key(
        "state_sync",
        Kind::Bool,
        "with a state file, sync the files to the disk at each checkpoint so the crawl survives a power loss (default false: survives a crash of the process)",
    ),
    key(
        "frontier",
        Kind::Text,
        "a Redis URL (`redis://[:PASSWORD@]HOST:PORT/DB`, or `env:VAR` holding one) whose crawl every worker started with it shares: one queue, seen-set and set of limits (default: none, the crawl lives in this process)",
    ),
    key("crawl_id", Kind::Text, "with a frontier, the name of the shared crawl workers join (default: the spider's name)"),
    key(
        "lease",
        Kind::Duration,
        "with a frontier, how long a worker that stops answering keeps its requests before another worker takes them (default 60s)",
    ),
    key("cache_ttl", Kind::Duration, "cached answers older than this are fetched again (default: never expire)"),
    key(
        "revalidate",
        Kind::Bool,
        "ask the server with If-None-Match / If-Modified-Since before using a cached answer; a 304 is parsed from the cache (default false)",
    ),
    Key {
        name: "follow",
        kind: Kind::Selector,
        doc: "links to follow on every page (default: none)",
        runtime: false,
    },
    Key {
        name: "item",
        kind: Kind::Type,
        doc: "the #[derive(Item)] type emitted when a page has one",
        runtime: false,
    },
    Key {
        name: "extract",
        kind: Kind::Engine,
        doc: "the engine reading pages: `dom` or `stream` (default: stream when every selector streams); at run time only `dom`",
        runtime: true,
    },
];

/// The key called `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}

/// The closest known key to a misspelt one, when it is close enough to be a typo.
pub fn suggest(unknown: &str) -> Option<&'static str> {
    let names: Vec<&'static str> = KEYS.iter().map(|key| key.name).collect();
    closest(unknown, &names)
}

/// The candidate closest to `unknown`, when it is close enough to be a typo.
pub fn closest<'a>(unknown: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|name| (strsim::damerau_levenshtein(unknown, name), *name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 3))
        .min()
        .map(|(_, name)| name)
}

/// A preset from the sizing guide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Slots, both in total and per host.
    pub concurrency: usize,
    /// The shortest pause.
    pub delay_min: Duration,
    /// The longest pause.
    pub delay_max: Duration,
}

/// The names of the profiles.
pub const PROFILES: &[&str] = &["polite", "general", "bulk"];

/// The profile called `name`: `polite` (4 slots, 2–5 s), `general` (20, 1–3 s), `bulk`
/// (40, 0.5–1.5 s).
pub fn profile(name: &str) -> Option<Profile> {
    let (concurrency, min, max) = match name {
        "polite" => (4, 2_000, 5_000),
        "general" => (20, 1_000, 3_000),
        "bulk" => (40, 500, 1_500),
        _ => return None,
    };
    Some(Profile {
        concurrency,
        delay_min: Duration::from_millis(min),
        delay_max: Duration::from_millis(max),
    })
}

/// Parse a duration: a whole number followed by `ms`, `s`, `m` or `h`.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(spider_settings::parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
/// assert!(spider_settings::parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        format!("`{text}` is not a duration; write a whole number and a unit, such as `500ms`, `2s` or `1m`")
    };
    let number: u64 = number.parse().map_err(|_| bad())?;
    let millis = match unit.trim() {
        "ms" => number,
        "s" => number.saturating_mul(1_000),
        "m" => number.saturating_mul(60_000),
        "h" => number.saturating_mul(3_600_000),
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(millis))
}

/// Parse a delay: one duration (`500ms`), or a range (`1s..3s`) whose bounds are in order.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let (min, max) = spider_settings::parse_delay("1s..3s").unwrap();
/// assert_eq!((min, max), (Duration::from_secs(1), Duration::from_secs(3)));
/// assert!(spider_settings::parse_delay("3s..1s").unwrap_err().contains("reversed"));
/// ```
pub fn parse_delay(text: &str) -> Result<(Duration, Duration), String> {
    match text.split_once("..") {
        None => parse_duration(text).map(|d| (d, d)),
        Some((low, high)) => {
            let (low, high) = (parse_duration(low)?, parse_duration(high.trim_start_matches('='))?);
            if low > high {
                return Err(format!("the range `{text}` is reversed; write the shorter pause first"));
            }
            Ok((low, high))
        }
    }
}

/// Parse `true` or `false`.
///
/// # Errors
///
/// A message saying what to write instead.
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("`{other}` is not a boolean; write `true` or `false`")),
    }
}

/// Parse a whole number, at least one when `positive`.
///
/// # Errors
///
/// A message saying what to write instead.
pub fn parse_count(text: &str, positive: bool) -> Result<u64, String> {
    let n: u64 = text.trim().parse().map_err(|_| format!("`{text}` is not a whole number"))?;
    if positive && n == 0 {
        return Err("0 admits nothing; write at least 1".to_owned());
    }
    Ok(n)
}

/// Explain a CSS selector error from `parse` (the runtime's parser, whose own message
/// says "please report this to the developer") in words a user can act on.
///
/// # Errors
///
/// What is wrong with the selector, in words.
///
/// # Examples
///
/// ```
/// let strict = |css: &str| if css.contains("..") { Err("ClassNeedsIdent".to_owned()) } else { Ok(()) };
/// assert!(spider_settings::check_selector("h3 > a", strict).is_ok());
/// assert!(spider_settings::check_selector("p..price", strict).unwrap_err().contains("class name"));
/// ```
pub fn check_selector(css: &str, parse: impl FnOnce(&str) -> Result<(), String>) -> Result<(), String> {
    let raw = match parse(css) {
        Ok(()) => return Ok(()),
        Err(raw) => raw,
    };
    let explained = [
        ("ClassNeedsIdent", "a `.` must be followed by a class name"),
        ("UnsupportedPseudoClassOrElement", "an unknown pseudo-class or pseudo-element"),
        ("EmptySelector", "an empty selector; look for a stray comma"),
        ("DanglingCombinator", "a combinator (`>`, `+`, `~`) with nothing after it"),
        ("NoQualifiedNameInAttributeSelector", "an attribute selector needs a name, as in `[href]`"),
        ("UnexpectedIdent", "an unexpected name"),
        ("EndOfLine", "the selector ends too early"),
        ("UnexpectedToken", "an unexpected character"),
    ];
    let why = explained
        .iter()
        .find(|(kind, _)| raw.contains(kind))
        .map_or_else(|| raw.split_whitespace().collect::<Vec<_>>().join(" "), |(_, why)| (*why).to_owned());
    Err(format!("invalid CSS selector `{css}`: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_a_suggestion_and_nonsense_does_not() {
        assert_eq!(suggest("concurency"), Some("concurrency"));
        assert_eq!(suggest("rmp"), Some("rpm"));
        assert_eq!(suggest("start_url"), Some("start_urls"));
        assert_eq!(suggest("banana"), None);
    }

    #[test]
    fn durations_and_delays() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("2").is_err());
        assert!(parse_duration("-1s").is_err());
        assert_eq!(parse_delay("500ms"), Ok((Duration::from_millis(500), Duration::from_millis(500))));
        assert!(parse_delay("1s..x").is_err());
    }

    #[test]
    fn profiles_follow_the_sizing_guide() {
        let polite = profile("polite").unwrap();
        assert!((3..=5).contains(&polite.concurrency));
        assert_eq!(polite.delay_min, Duration::from_secs(2));
        assert!(profile("turbo").is_none());
    }
}
