//! The politeness pause of a per-host slot.

use std::time::Duration;

use rand::Rng;

/// A pause drawn uniformly from `min..=max` each time, so a host sees irregular spacing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use spider_core::DelayRange;
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

    /// One pause, never shorter than `floor` (a host's Crawl-delay).
    pub(crate) fn sample(&self, floor: Duration, rng: &mut impl Rng) -> Duration {
        let pause = if self.max > self.min { rng.random_range(self.min..=self.max) } else { self.min };
        pause.max(floor)
    }
}
