//! Per-host slots: each is one "person browsing" a host, who pauses between pages.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use tokio::time::Instant;

/// Whether a host can take one more request now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// A slot is idle and its pause is over.
    Free,
    /// Every idle slot is still pausing; the first is ready then.
    PausedUntil(Instant),
    /// Every slot has a request in flight.
    Busy,
}

/// The slots of one host: those in flight are counted, idle ones keep the instant their
/// politeness pause ends.
#[derive(Debug)]
pub(crate) struct HostSlots {
    idle: BinaryHeap<Reverse<Instant>>,
    busy: usize,
    limit: usize,
    /// The host asked us to slow down (429): no slot starts a request before this.
    paused_until: Option<Instant>,
    /// The least time between two starts (adaptive mode's rate per host), and the earliest
    /// the next may start.
    pace: Duration,
    next_start: Instant,
}

impl HostSlots {
    pub(crate) fn new(limit: usize, now: Instant) -> Self {
        HostSlots {
            idle: (0..limit).map(|_| Reverse(now)).collect(),
            busy: 0,
            limit,
            paused_until: None,
            pace: Duration::ZERO,
            next_start: now,
        }
    }

    pub(crate) fn state(&self, now: Instant) -> SlotState {
        if self.busy >= self.limit {
            return SlotState::Busy;
        }
        if let Some(until) = self.paused_until.filter(|until| *until > now) {
            return SlotState::PausedUntil(until);
        }
        if self.next_start > now {
            return SlotState::PausedUntil(self.next_start);
        }
        match self.idle.peek() {
            Some(Reverse(ready)) if *ready <= now => SlotState::Free,
            Some(Reverse(ready)) => SlotState::PausedUntil(*ready),
            None => SlotState::Busy,
        }
    }

    /// Occupy the idle slot that has been ready longest; call only when [`SlotState::Free`].
    pub(crate) fn take(&mut self, now: Instant) {
        self.idle.pop();
        self.busy += 1;
        // Without a pace there is no gate to move: a start stamped a little later than the
        // dispatcher's `now` must not hold back the next one until a timer fires.
        if !self.pace.is_zero() {
            self.next_start = self.next_start.max(now) + self.pace;
        }
    }

    /// A request finished; its slot is ready again at `ready_at`.
    pub(crate) fn release(&mut self, ready_at: Instant) {
        self.busy = self.busy.saturating_sub(1);
        if self.idle.len() + self.busy < self.limit {
            self.idle.push(Reverse(ready_at));
        }
    }

    /// Start no request on this host before `until` (the later of this and any earlier
    /// pause wins).
    pub(crate) fn pause_until(&mut self, until: Instant) {
        self.paused_until = Some(self.paused_until.map_or(until, |earlier| earlier.max(until)));
    }

    /// Change the number of slots; requests in flight over a lowered limit finish normally.
    /// Start requests at most `per_second` a second (`None`: no pace of its own).
    pub(crate) fn set_rate(&mut self, per_second: Option<f64>) {
        self.pace =
            per_second.filter(|r| *r > 0.0).map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn set_limit(&mut self, limit: usize, now: Instant) {
        self.limit = limit;
        while self.idle.len() + self.busy > limit && self.idle.pop().is_some() {}
        while self.idle.len() + self.busy < limit {
            self.idle.push(Reverse(now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_free_again_only_after_its_pause() {
        let start = Instant::now();
        let mut slots = HostSlots::new(1, start);
        assert_eq!(slots.state(start), SlotState::Free);
        slots.take(start);
        assert_eq!(slots.state(start), SlotState::Busy);
        let ready = start + Duration::from_secs(2);
        slots.release(ready);
        assert_eq!(slots.state(start), SlotState::PausedUntil(ready));
        assert_eq!(slots.state(ready), SlotState::Free);
    }

    #[test]
    fn without_a_pace_free_slots_start_at_once_whatever_the_clock_reads() {
        let earlier = Instant::now();
        let later = earlier + Duration::from_micros(5);
        let mut slots = HostSlots::new(3, earlier);
        slots.take(later);
        assert_eq!(slots.state(earlier), SlotState::Free, "the second slot is not held back");
        slots.take(earlier);
        assert_eq!(slots.state(earlier), SlotState::Free);
    }

    #[test]
    fn a_host_pause_holds_every_slot() {
        let now = Instant::now();
        let mut slots = HostSlots::new(4, now);
        let until = now + Duration::from_secs(3);
        slots.pause_until(until);
        slots.pause_until(now + Duration::from_secs(1));
        assert_eq!(slots.state(now), SlotState::PausedUntil(until));
        assert_eq!(slots.state(until), SlotState::Free);
    }

    #[test]
    fn lowering_the_limit_lets_in_flight_requests_drain() {
        let now = Instant::now();
        let mut slots = HostSlots::new(4, now);
        for _ in 0..3 {
            slots.take(now);
        }
        slots.set_limit(1, now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(now);
        slots.release(now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(now);
        assert_eq!(slots.state(now), SlotState::Free);
        slots.take(now);
        assert_eq!(slots.state(now), SlotState::Busy);
    }

    #[test]
    fn a_rate_spaces_the_starts_whatever_the_free_slots() {
        let now = Instant::now();
        let mut slots = HostSlots::new(4, now);
        slots.set_rate(Some(4.0));
        slots.take(now);
        let next = now + Duration::from_millis(250);
        assert_eq!(slots.state(now), SlotState::PausedUntil(next));
        slots.take(next);
        assert_eq!(slots.state(next), SlotState::PausedUntil(next + Duration::from_millis(250)));
        slots.set_rate(None);
        slots.take(next + Duration::from_millis(250));
        assert_eq!(slots.state(next + Duration::from_millis(250)), SlotState::Free);
    }
}
