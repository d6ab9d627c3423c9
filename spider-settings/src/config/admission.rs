//! Setters for admission: slots in total and per host, the rate ceiling, politeness
//! pauses, the sizing profiles and adaptive mode.

use std::time::Duration;

use super::Config;
use crate::{DelayRange, RateCeiling};

impl Config {
    /// Apply a preset from the sizing guide: `polite` (4 slots in total and per host,
    /// 2–5 s pauses), `general` (20, 1–3 s) or `bulk` (40, 0.5–1.5 s). Settings made after
    /// it win (default: no profile).
    #[must_use]
    pub fn profile(mut self, name: &str) -> Self {
        match crate::profile(name) {
            Some(profile) => {
                self.concurrency = profile.concurrency;
                self.per_host = profile.concurrency;
                self.delay = DelayRange::new(profile.delay_min, profile.delay_max);
            }
            None => self.invalid.push(format!(
                "profile {name:?} does not exist; write one of {}",
                crate::PROFILES.join(", ")
            )),
        }
        self
    }

    /// Most requests in flight at once, over all hosts (default 16).
    #[must_use]
    pub fn concurrency(mut self, slots: usize) -> Self {
        self.concurrency = slots;
        self
    }

    /// Most requests in flight at once to one host, `host:port` (default 8).
    #[must_use]
    pub fn per_host(mut self, slots: usize) -> Self {
        self.per_host = slots;
        self
    }

    /// Which hosts share one budget of `per_host` slots and a limiter's pace (default
    /// [`Politeness::Server`](crate::Politeness::Server): those of one registrable domain
    /// and those on one server address).
    #[must_use]
    pub fn politeness(mut self, politeness: crate::Politeness) -> Self {
        self.politeness = politeness;
        self
    }

    /// A hard ceiling of `requests` per minute over the whole crawl, retries and
    /// robots.txt included, paced evenly with no initial burst (default: none).
    #[must_use]
    pub fn rpm(mut self, requests: u32) -> Self {
        self.rate = Some(RateCeiling::new(requests, Duration::from_secs(60)));
        self
    }

    /// As [`rpm`](Self::rpm), per second (default: none).
    #[must_use]
    pub fn rps(mut self, requests: u32) -> Self {
        self.rate = Some(RateCeiling::new(requests, Duration::from_secs(1)));
        self
    }

    /// A fixed pause each per-host slot takes after a response before its next request
    /// (default: none).
    #[must_use]
    pub fn delay(mut self, pause: Duration) -> Self {
        self.delay = DelayRange::new(pause, pause);
        self
    }

    /// A pause drawn uniformly from `min..=max` for every request, so a host sees
    /// irregular, human-like spacing (default: none).
    #[must_use]
    pub fn delay_range(mut self, min: Duration, max: Duration) -> Self {
        self.delay = DelayRange::new(min, max);
        self
    }

    /// Adaptive mode: each host starts slow and its slots and request rate grow while its
    /// block rate stays under [`block_target`](Self::block_target); both are cut by 20%
    /// when it moves above, and held there a while. `concurrency` and `per_host` become
    /// ceilings; `rpm`/`rps` stay a hard ceiling over everything. A host whose answers are
    /// mostly blocks is paused by a circuit breaker, then probed (default false).
    #[must_use]
    pub fn adaptive(mut self, adaptive: bool) -> Self {
        self.adaptive = adaptive;
        self
    }

    /// The block rate adaptive mode keeps each host under, as a fraction (default 0.02).
    #[must_use]
    pub fn block_target(mut self, fraction: f64) -> Self {
        self.block_target = fraction;
        self
    }
}
