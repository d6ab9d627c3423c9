//! How fast a crawl may go, as settings: the rate ceiling, the politeness pause and the
//! bounds of the backoff between retries. The runtime draws pauses and waits from them.

use std::num::NonZeroU32;
use std::time::Duration;

/// At most `count` requests per `per`, evenly paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCeiling {
    count: u32,
    per: Duration,
}

impl RateCeiling {
    /// `count` requests per `per`.
    pub fn new(count: u32, per: Duration) -> Self {
        RateCeiling { count, per }
    }

    /// Requests allowed per period; `None` when configured as zero.
    pub fn requests(&self) -> Option<NonZeroU32> {
        NonZeroU32::new(self.count)
    }

    /// The period the count is for: a minute for `rpm`, a second for `rps`.
    pub fn per(&self) -> Duration {
        self.per
    }

    /// The ceiling in requests per second; `None` when configured as zero.
    pub fn per_second(&self) -> Option<f64> {
        self.requests().map(|n| f64::from(n.get()) / self.per.as_secs_f64())
    }

    /// The spacing between two requests, rounded up so that no window of `per` ever holds
    /// more than `count`.
    pub fn spacing(&self) -> Duration {
        let nanos = self.per.as_nanos().div_ceil(u128::from(self.count.max(1)));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl std::fmt::Display for RateCeiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.per.as_secs() {
            60 => write!(f, "rpm = {}", self.count),
            1 => write!(f, "rps = {}", self.count),
            _ => write!(f, "{} requests per {:?}", self.count, self.per),
        }
    }
}

/// A pause drawn uniformly from `min..=max` each time, so a host sees irregular spacing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use spider_settings::DelayRange;
///
/// let delay = DelayRange::new(Duration::from_millis(500), Duration::from_millis(1500));
/// assert_eq!(delay.min(), Duration::from_millis(500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayRange {
    min: Duration,
    max: Duration,
}

impl DelayRange {
    /// No pause at all.
    pub const ZERO: DelayRange = DelayRange { min: Duration::ZERO, max: Duration::ZERO };

    /// A pause between `min` and `max`; a reversed range is reported by
    /// [`Config::validate`](crate::Config::validate).
    pub fn new(min: Duration, max: Duration) -> Self {
        DelayRange { min, max }
    }

    /// The shortest pause.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// The longest pause.
    pub fn max(&self) -> Duration {
        self.max
    }
}

/// The bounds of the wait before a retry: the first is drawn from `base..=3 × base`, each
/// later one from `base..=3 × previous`, never above `cap` ("decorrelated jitter").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The shortest wait.
    pub base: Duration,
    /// The longest wait.
    pub cap: Duration,
}
