//! Per-host slots: each is one "person browsing" a host, who pauses between pages.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
}

impl HostSlots {
    pub(crate) fn new(limit: usize, now: Instant) -> Self {
        HostSlots { idle: (0..limit).map(|_| Reverse(now)).collect(), busy: 0, limit, paused_until: None }
    }

    pub(crate) fn state(&self, now: Instant) -> SlotState {
        if self.busy >= self.limit {
            return SlotState::Busy;
        }
        if let Some(until) = self.paused_until.filter(|until| *until > now) {
            return SlotState::PausedUntil(until);
        }
        match self.idle.peek() {
            Some(Reverse(ready)) if *ready <= now => SlotState::Free,
            Some(Reverse(ready)) => SlotState::PausedUntil(*ready),
            None => SlotState::Busy,
        }
    }

    /// Occupy the idle slot that has been ready longest; call only when [`SlotState::Free`].
    pub(crate) fn take(&mut self) {
        self.idle.pop();
        self.busy += 1;
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_slot_is_free_again_only_after_its_pause() {
        let start = Instant::now();
        let mut slots = HostSlots::new(1, start);
        assert_eq!(slots.state(start), SlotState::Free);
        slots.take();
        assert_eq!(slots.state(start), SlotState::Busy);
        let ready = start + Duration::from_secs(2);
        slots.release(ready);
        assert_eq!(slots.state(start), SlotState::PausedUntil(ready));
        assert_eq!(slots.state(ready), SlotState::Free);
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
            slots.take();
        }
        slots.set_limit(1, now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(now);
        slots.release(now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(now);
        assert_eq!(slots.state(now), SlotState::Free);
        slots.take();
        assert_eq!(slots.state(now), SlotState::Busy);
    }
}
