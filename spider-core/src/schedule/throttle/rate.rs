//! The global rate ceiling (`rpm`, `rps`): a GCRA token bucket from `governor` with a burst
//! of one, on tokio's clock, so a paused clock in a test paces it as it paces every timer.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use spider_settings::RateCeiling;
use tokio::time::Instant;

/// tokio's clock as governor reads one: the time since the gate was made.
#[derive(Debug, Clone, Copy)]
struct TokioClock {
    origin: Instant,
}

impl Clock for TokioClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// The bucket itself. A burst of one means no initial burst: the first request passes at
/// once and each later one waits a full spacing, so the ceiling holds in every window.
pub(crate) struct RateGate {
    limiter: RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Duration>>,
    clock: TokioClock,
}

impl RateGate {
    pub(crate) fn new(ceiling: RateCeiling) -> Option<Self> {
        let quota = Quota::with_period(ceiling.spacing())?.allow_burst(NonZeroU32::MIN);
        let clock = TokioClock { origin: Instant::now() };
        Some(RateGate { limiter: RateLimiter::direct_with_clock(quota, clock), clock })
    }

    /// Take a token now, or learn when the next one is free.
    pub(crate) fn try_pass(&self) -> Result<(), Instant> {
        self.limiter.check().map_err(|not_until| {
            let now = self.clock.now();
            self.clock.origin + now + not_until.wait_time_from(now)
        })
    }
}
