//! The global rate ceiling: a GCRA token bucket from `governor` with a burst of one.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// At most `count` requests per `per`, evenly paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCeiling {
    count: u32,
    per: Duration,
}

impl RateCeiling {
    pub(crate) fn new(count: u32, per: Duration) -> Self {
        RateCeiling { count, per }
    }

    /// Requests allowed per period; `None` when configured as zero.
    pub(crate) fn requests(&self) -> Option<NonZeroU32> {
        NonZeroU32::new(self.count)
    }

    /// The period the count is for: a minute for `rpm`, a second for `rps`.
    pub(crate) fn per(&self) -> Duration {
        self.per
    }

    /// The ceiling in requests per second; `None` when configured as zero.
    pub(crate) fn per_second(&self) -> Option<f64> {
        self.requests().map(|n| f64::from(n.get()) / self.per.as_secs_f64())
    }

    /// The spacing between two requests, rounded up so that no window of `per` ever holds
    /// more than `count`.
    fn spacing(&self) -> Duration {
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

/// The bucket itself. A burst of one means no initial burst: the first request passes at
/// once and each later one waits a full spacing, so the ceiling holds in every window.
pub(crate) struct RateGate {
    limiter: DefaultDirectRateLimiter,
}

impl RateGate {
    pub(crate) fn new(ceiling: RateCeiling) -> Option<Self> {
        let quota = Quota::with_period(ceiling.spacing())?.allow_burst(NonZeroU32::MIN);
        Some(RateGate { limiter: RateLimiter::direct(quota) })
    }

    /// Take a token now, or learn how long until one is free.
    pub(crate) fn try_pass(&self) -> Result<(), Duration> {
        self.limiter.check().map_err(|not_until| not_until.wait_time_from(self.limiter.clock().now()))
    }
}
