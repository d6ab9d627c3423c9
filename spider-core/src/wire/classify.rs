//! Classify: what an answer means for the crawl.
//!
//! Four kinds of trouble call for four different reactions. "Slow down" (429, and a 503
//! that is a limiter's: one that says when to come back, or one to a retry, as nginx's
//! `limit_req` answers by default; a server in trouble answers a retry with the page)
//! backs off the whole host and keeps the identity; "switch identity" (403) retries the request as
//! someone else: through a gateway, a new exit (and a 429 there is met the same way, since
//! the new identity owes nothing to the old one's Retry-After); directly, later, after a
//! backoff. "Try again" (5xx, 408, timeouts, resets) retries after a jittered backoff;
//! "give up" (any other 4xx, or a status not configured as retryable) ends the request at
//! once.

use std::time::Duration;

use reqwest::StatusCode;

/// The reaction to a non-2xx, non-redirect answer or a transport error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trouble {
    /// Back off the host for at least `retry_after`; retry the request after it.
    SlowDown,
    /// Blocked: retry under another identity.
    SwitchIdentity,
    /// Transient: retry after a backoff, never sooner than a `Retry-After` asks.
    TryAgain,
    /// A wall that handed this identity a cookie (a consent page): sent again at once as
    /// the same identity, with the cookie. Not a failed attempt, so counted apart from the
    /// retries, and bounded on its own; not counted at all when it was the identity's
    /// first answer (`first`), the wall every new identity meets once.
    PassWall { first: bool },
    /// Not worth another attempt.
    GiveUp,
}

/// Classify an answer whose status is neither 2xx nor a redirect, by its status, whether
/// it carries a `Retry-After`, and whether it answers a retry.
pub(crate) fn classify_status(
    status: StatusCode,
    retry_after: bool,
    retried: bool,
    retry_statuses: &[u16],
) -> Trouble {
    let code = status.as_u16();
    if !retry_statuses.contains(&code) {
        return Trouble::GiveUp;
    }
    match code {
        429 => Trouble::SlowDown,
        503 if retry_after || retried => Trouble::SlowDown,
        403 => Trouble::SwitchIdentity,
        _ => Trouble::TryAgain,
    }
}

/// `Retry-After`, in seconds or as an HTTP date; capped at an hour, so a hostile value
/// cannot park a request for ever.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    };
    Some(wait.min(Duration::from_secs(3600)))
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    use spider_settings::DEFAULT_RETRY_STATUSES;

    use super::*;

    #[test]
    fn each_status_gets_its_reaction() {
        let classify =
            |code| classify_status(StatusCode::from_u16(code).unwrap(), false, false, DEFAULT_RETRY_STATUSES);
        assert_eq!(classify(429), Trouble::SlowDown);
        assert_eq!(classify(403), Trouble::SwitchIdentity);
        assert_eq!(classify(503), Trouble::TryAgain);
        assert_eq!(classify(404), Trouble::GiveUp);
        assert_eq!(classify(501), Trouble::GiveUp);
        let unavailable = |retry_after, retried, statuses| {
            classify_status(StatusCode::SERVICE_UNAVAILABLE, retry_after, retried, statuses)
        };
        assert_eq!(unavailable(true, false, DEFAULT_RETRY_STATUSES), Trouble::SlowDown, "it says when");
        assert_eq!(unavailable(false, true, DEFAULT_RETRY_STATUSES), Trouble::SlowDown, "to a retry");
        assert_eq!(unavailable(true, true, &[429]), Trouble::GiveUp);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        headers.insert(RETRY_AFTER, HeaderValue::from_str(&httpdate::fmt_http_date(later)).unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(wait > Duration::from_secs(110) && wait <= Duration::from_secs(120), "{wait:?}");
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }
}
