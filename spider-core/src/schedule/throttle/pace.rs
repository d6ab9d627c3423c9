//! When the next request of a host, or of hosts sharing a budget, may start whatever
//! their slots: a limiter's pause (a 429, a Retry-After) and a pace (a controller's
//! requests a second), each start moving the next one a pace later.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug)]
pub(crate) struct Pace {
    /// No start before this (the later of two pauses wins).
    paused_until: Option<Instant>,
    /// The least time between two starts, and the earliest the next may go.
    every: Duration,
    next_start: Instant,
}

impl Pace {
    pub(crate) fn new(now: Instant) -> Self {
        Pace { paused_until: None, every: Duration::ZERO, next_start: now }
    }

    /// Until when the pause or the pace holds starts back; `None` when neither does at
    /// `now`.
    pub(crate) fn held_until(&self, now: Instant) -> Option<Instant> {
        let paused = self.paused_until.filter(|until| *until > now);
        let paced = (self.next_start > now).then_some(self.next_start);
        paused.max(paced)
    }

    /// A request started at `now`: the next waits for the pace.
    pub(crate) fn count_start(&mut self, now: Instant) {
        // Without a pace there is no gate to move: a start stamped a little later than the
        // dispatcher's `now` must not hold back the next one until a timer fires.
        if !self.every.is_zero() {
            self.next_start = self.next_start.max(now) + self.every;
        }
    }

    /// No start before `until`, nor before any later pause already set.
    pub(crate) fn pause_until(&mut self, until: Instant) {
        self.paused_until = Some(self.paused_until.map_or(until, |earlier| earlier.max(until)));
    }

    /// At most `per_second` starts a second (`None`: no pace).
    pub(crate) fn set_rate(&mut self, per_second: Option<f64>) {
        self.every =
            per_second.filter(|r| *r > 0.0).map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
    }

    /// The later pause and the later next start of the two, `other`'s rate aside.
    pub(crate) fn join(&mut self, other: &Pace) {
        self.paused_until = self.paused_until.max(other.paused_until);
        self.next_start = self.next_start.max(other.next_start);
    }
}
