//! The crawl's rate ceiling as the fleet keeps it: the least time between two starts in
//! its GCRA bucket, with room for a start that leaves a little after the time Redis gave.

use std::time::Duration;

use spider_settings::RateCeiling;

/// The least time between two starts of the fleet under `ceiling`, 0 for none. Starts
/// leave from several machines, each some milliseconds after the time Redis gave it; the
/// spacing has room for [`START_JITTER`] of such delay in each window of the ceiling, so
/// no window holds more than it allows.
pub(super) fn spacing_ms(ceiling: RateCeiling) -> f64 {
    let Some(count) = ceiling.requests() else { return 0.0 };
    (ceiling.per() + START_JITTER).as_secs_f64() * 1000.0 / f64::from(count.get())
}

/// How much later than the time Redis gave it a start may leave, on one worker against
/// another. A leased request that would leave later takes a fresh start (`SpareStarts`).
pub(super) const START_JITTER: Duration = Duration::from_millis(25);
