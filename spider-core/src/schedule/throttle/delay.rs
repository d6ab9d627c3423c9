//! The politeness pause of a per-host slot, drawn from the `delay` setting.

use std::time::Duration;

use rand::Rng;
use spider_settings::DelayRange;

/// One pause from `range`, uniform over `min..=max`, never shorter than `floor` (a host's
/// Crawl-delay).
pub(crate) fn pause(range: &DelayRange, floor: Duration, rng: &mut impl Rng) -> Duration {
    let (min, max) = (range.min(), range.max());
    let pause = if max > min { rng.random_range(min..=max) } else { min };
    pause.max(floor)
}
