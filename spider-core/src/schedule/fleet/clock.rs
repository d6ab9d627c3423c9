//! Redis's clock on this worker's: the instants the fleet's limits give, in Redis's time,
//! turned into instants here.
//!
//! A reply tells the moment Redis wrote it. Reading it as "now" would start each round's
//! leases as late as its reply was slow: a reply held up by a busy machine, then a quick
//! one, and two starts Redis spaced apart leave close together, so the site sees more in
//! a window than the rpm allows. The mapping instead follows the quickest reply seen
//! lately: with it, every start leaves at the time Redis gave it, however slow the
//! reply that carried it (unless it came after that time).

use std::time::Duration;

use tokio::time::Instant;

/// How long the quickest reply anchors the mapping before a newer one replaces it, so a
/// step of either clock is followed within this.
const ANCHOR_FOR: Duration = Duration::from_secs(10);

/// A moment of Redis's clock and the instant here it maps to.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RedisClock {
    anchor: Option<(i64, Instant)>,
}

impl RedisClock {
    /// A reply written at `redis_us` (Redis's clock, microseconds) arrived at `received`.
    pub(super) fn observe(&mut self, redis_us: i64, received: Instant) {
        let quicker = self.local(redis_us).is_none_or(|mapped| received < mapped);
        let stale = self.anchor.is_none_or(|(_, at)| received.saturating_duration_since(at) >= ANCHOR_FOR);
        if quicker || stale {
            self.anchor = Some((redis_us, received));
        }
    }

    /// The instant here of `redis_us`; `None` before any reply, or for a moment before
    /// the anchor's that this clock cannot reach.
    pub(super) fn local(&self, redis_us: i64) -> Option<Instant> {
        let (anchor_us, anchor) = self.anchor?;
        let after = u64::try_from(redis_us - anchor_us).ok()?;
        anchor.checked_add(Duration::from_micros(after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_reply_keeps_the_schedule_of_the_quickest() {
        let here = Instant::now();
        let mut clock = RedisClock::default();
        // Redis at 1,000,000 µs; the reply took 2 ms.
        clock.observe(1_000_000, here + Duration::from_millis(2));
        // Written 100 ms later by Redis, read 40 ms late: it maps where the first put it.
        clock.observe(1_100_000, here + Duration::from_millis(142));
        assert_eq!(clock.local(1_150_000), Some(here + Duration::from_millis(152)));
        // A quicker one (1 ms) moves the mapping 1 ms earlier.
        clock.observe(1_200_000, here + Duration::from_millis(201));
        assert_eq!(clock.local(1_250_000), Some(here + Duration::from_millis(251)));
    }

    #[test]
    fn an_old_anchor_gives_way_to_the_next_reply() {
        let here = Instant::now();
        let mut clock = RedisClock::default();
        clock.observe(0, here);
        let later = here + ANCHOR_FOR + Duration::from_millis(30);
        // Redis's clock stepped back a second: the mapping follows after ANCHOR_FOR.
        clock.observe(i64::try_from(ANCHOR_FOR.as_micros()).unwrap() - 1_000_000, later);
        assert_eq!(clock.local(i64::try_from(ANCHOR_FOR.as_micros()).unwrap() - 1_000_000), Some(later));
        assert_eq!(clock.local(-5), None, "before the anchor: unknown");
    }
}
