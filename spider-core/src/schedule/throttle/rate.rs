//! The global rate ceiling (`rpm`, `rps`): a GCRA token bucket from `governor` with a burst
//! of one.

use std::num::NonZeroU32;
use std::time::Duration;

use spider_settings::RateCeiling;

use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

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
