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
mod impersonate;
mod keys;
mod pace;
mod politeness;
mod proxy;
mod redis;
mod render;
mod rfc3339;
mod store;
mod stream;

pub use config::{Config, RouteSpec, SeedCookies, DEFAULT_USER_AGENT};
pub use error::ConfigError;
pub use gateway::{resolve_proxy, Gateway};
pub use impersonate::Impersonate;
pub use keys::{closest, explain, find, markdown, suggest, Key, Kind, Stage, Where, CODE_ONLY, KEYS};
pub use pace::{Backoff, DelayRange, RateCeiling};
pub use politeness::Politeness;
pub use redis::{RedisAddress, RedisTls};
pub use render::Render;
pub use store::{is_store, ItemsFile, S3Bucket, StoreKind, StoreUri};

pub use stream::{stream_selector, AttributeOp, Combinator, Complex, Compound, Condition, StreamSelector};

pub use date::{parse_date, Date};
pub use proxy::{
    check_user_template, parse_country, parse_decimal, parse_geo_rule, parse_proxy, redact_spec, redact_url,
    split_entries, ProxyEntry, DEFAULT_USER_TEMPLATE,
};
pub use rfc3339::{rfc3339, utc_date};

/// The statuses retried by default: 403 and 429 with their own reactions, and transient
/// server trouble. 501 is left out: "not implemented" does not change on a retry.
pub const DEFAULT_RETRY_STATUSES: &[u16] = &[403, 408, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524];

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

/// Parse a duration as jiff's friendly format has it: a number and a unit (`500ms`,
/// `1.5s`, `2m`, `1h`), or several (`1h 30m`).
///
/// # Errors
///
/// A message saying what to write instead: for anything else, a negative duration
/// included.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(spider_settings::parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
/// assert_eq!(spider_settings::parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
/// assert!(spider_settings::parse_duration("soon").is_err());
/// assert!(spider_settings::parse_duration("-2s").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad =
        || format!("`{text}` is not a duration; write a number and a unit, such as `500ms`, `2s` or `1m`");
    let parsed: jiff::SignedDuration = text.parse().map_err(|_| bad())?;
    // A negative one is no wait.
    Duration::try_from(parsed).map_err(|_| bad())
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
    match parse(css) {
        Ok(()) => Ok(()),
        Err(raw) => Err(format!("invalid CSS selector `{css}`: {}", selector_problem(&raw))),
    }
}

/// What the runtime's CSS parser means by `raw` (its error's debug form: its own message
/// says "please report this to the developer"), in words a user can act on.
///
/// # Examples
///
/// ```
/// let raw = "NoQualifiedNameInAttributeSelector(Token::Ident(\"x\"))";
/// assert_eq!(spider_settings::selector_problem(raw), "an attribute selector needs a name, as in `[href]`");
/// ```
pub fn selector_problem(raw: &str) -> String {
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
    explained
        .iter()
        .find(|(kind, _)| raw.contains(kind))
        .map_or_else(|| raw.split_whitespace().collect::<Vec<_>>().join(" "), |(_, why)| (*why).to_owned())
}

/// Parse headers written `Name: value`, separated by commas. A comma starts the next
/// header only where `Name:` follows it, so a value that lists things (`Accept: text/html,
/// application/json`) stays whole.
///
/// # Errors
///
/// Which header is not `Name: value`, by its place; no value is ever repeated, since
/// headers carry tokens.
///
/// # Examples
///
/// ```
/// let text = "Accept: text/html, application/json, Referer: https://a.example/, https://b.example/, X-Key: k";
/// let headers = spider_settings::parse_headers(text).unwrap();
/// assert_eq!(headers[0], ("Accept".to_owned(), "text/html, application/json".to_owned()));
/// assert_eq!(headers[1].1, "https://a.example/, https://b.example/");
/// assert_eq!(headers[2], ("X-Key".to_owned(), "k".to_owned()));
/// assert!(!spider_settings::parse_headers("Bearer secret").unwrap_err().contains("secret"));
/// ```
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for part in text.split(',') {
        // `https://…` after a comma is part of a value, not a header called `https`.
        let named = part
            .split_once(':')
            .filter(|(name, value)| is_header_name(name.trim()) && !value.starts_with("//"));
        match (named, headers.last_mut()) {
            (Some((name, value)), _) => headers.push((name.trim().to_owned(), value.trim().to_owned())),
            (None, Some((_, value))) if !part.trim().is_empty() => {
                value.push_str(", ");
                value.push_str(part.trim());
            }
            (None, Some(_)) => {}
            (None, None) if part.trim().is_empty() => {}
            (None, None) => return Err("the first header is not `Name: value`".to_owned()),
        }
    }
    Ok(headers)
}

/// Whether `name` is an HTTP header name: a token (RFC 9110), not a number, so a time's
/// `12:` is not taken for one.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && !name.bytes().all(|b| b.is_ascii_digit())
}

/// Parse per-host country rules, `*.de=de`, separated by commas.
///
/// # Errors
///
/// What is wrong with the first rule that does not parse.
pub fn parse_geo_rules(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',').map(str::trim).filter(|r| !r.is_empty()).map(parse_geo_rule).collect()
}

/// Parse HTTP statuses separated by commas, each from 100 to 599.
///
/// # Errors
///
/// The first one that is not a status.
///
/// # Examples
///
/// ```
/// assert_eq!(spider_settings::parse_statuses("429, 503"), Ok(vec![429, 503]));
/// assert!(spider_settings::parse_statuses("429, 999").is_err());
/// ```
pub fn parse_statuses(text: &str) -> Result<Vec<u16>, String> {
    let status = |code: &str| {
        code.parse::<u16>()
            .ok()
            .filter(|n| (100..=599).contains(n))
            .ok_or_else(|| format!("`{code}` is not an HTTP status; write one from 100 to 599"))
    };
    text.split(',').map(str::trim).filter(|c| !c.is_empty()).map(status).collect()
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
