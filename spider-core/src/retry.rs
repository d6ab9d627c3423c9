//! When to retry, and how long to wait first.
//!
//! Waits follow "decorrelated jitter": each is drawn from `base..=3 × previous`, capped,
//! so requests that failed together come back spread out instead of in a synchronised
//! burst. A `Retry-After` in seconds is a floor under the draw.

use std::time::Duration;

use rand::Rng;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

/// Backoff bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub(crate) base: Duration,
    pub(crate) cap: Duration,
}

impl Backoff {
    /// The next wait after a failed attempt whose previous wait was `previous`
    /// (zero for the first retry).
    pub(crate) fn next(&self, previous: Duration, floor: Duration, rng: &mut impl Rng) -> Duration {
        let high = (previous * 3).max(self.base);
        let draw = if high > self.base {
            rng.random_range(self.base..=high)
        } else {
            self.base
        };
        draw.min(self.cap).max(floor)
    }
}

/// Statuses worth another attempt: throttling (429), bans that a later attempt may pass
/// (403), timeouts (408) and server trouble (5xx but 501, which will not change).
pub(crate) fn is_retryable(status: StatusCode) -> bool {
    matches!(
        status.as_u16(),
        403 | 408 | 429 | 500 | 502 | 503 | 504 | 520..=524
    )
}

/// `Retry-After` given in seconds; an HTTP-date is ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(Duration::from_secs(seconds.min(3600)))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    const BACKOFF: Backoff = Backoff {
        base: Duration::from_millis(500),
        cap: Duration::from_secs(30),
    };

    #[test]
    fn waits_stay_between_base_and_three_times_the_previous() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut previous = Duration::ZERO;
        for _ in 0..100 {
            let wait = BACKOFF.next(previous, Duration::ZERO, &mut rng);
            assert!(wait >= BACKOFF.base && wait <= BACKOFF.cap);
            assert!(wait <= (previous * 3).max(BACKOFF.base));
            previous = wait;
        }
    }

    #[test]
    fn retry_after_is_a_floor() {
        let mut rng = StdRng::seed_from_u64(7);
        let floor = Duration::from_secs(45);
        assert_eq!(BACKOFF.next(Duration::ZERO, floor, &mut rng), floor);
    }
}
