//! Per-host slots: each is one "person browsing" a host, who pauses between pages. Each
//! slot has a number, its lane, so that in sticky mode a lane can be one identity: one
//! request at a time, its cookies settled before the next, its pauses its own.

use tokio::time::Instant;

use super::pace::Pace;

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

/// Where one lane stands, for a request that must go out on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaneState {
    /// Idle, its pause over.
    Ready,
    /// Idle, pausing until then.
    ReadyAt(Instant),
    /// A request is in flight on it.
    Busy,
    /// The host has no such lane now (its limit was lowered).
    Gone,
}

/// The slots of one host: those in flight are counted, idle ones keep the instant their
/// politeness pause ends, and every slot its lane number. Of the slots ready, the lowest
/// lane goes first, so a crawl that needs few slots keeps to few identities; a slot added
/// takes the least lane free. A host has tens of slots, so a list is searched.
#[derive(Debug)]
pub(crate) struct HostSlots {
    /// Idle slots: when each is ready, and its lane.
    idle: Vec<(Instant, u32)>,
    /// The lanes of the slots idle or busy; `lanes[n]` for lane `n`.
    lanes: Vec<bool>,
    busy: usize,
    limit: usize,
    /// The host's pause (a 429) and adaptive mode's rate per host, whatever its slots.
    pace: Pace,
}

impl HostSlots {
    pub(crate) fn new(limit: usize, now: Instant) -> Self {
        let lanes = u32::try_from(limit).unwrap_or(u32::MAX);
        HostSlots {
            idle: (0..lanes).map(|lane| (now, lane)).collect(),
            lanes: vec![true; limit],
            busy: 0,
            limit,
            pace: Pace::new(now),
        }
    }

    pub(crate) fn state(&self, now: Instant) -> SlotState {
        if self.busy >= self.limit {
            return SlotState::Busy;
        }
        if let Some(until) = self.pace.held_until(now) {
            return SlotState::PausedUntil(until);
        }
        match self.idle.iter().map(|(ready, _)| *ready).min() {
            Some(ready) if ready <= now => SlotState::Free,
            Some(ready) => SlotState::PausedUntil(ready),
            None => SlotState::Busy,
        }
    }

    /// Until when the host as a whole holds its starts back (a 429's pause, or its pace),
    /// whatever its slots: `None` when it does not at `now`.
    #[cfg(feature = "render")]
    pub(crate) fn held_until(&self, now: Instant) -> Option<Instant> {
        self.pace.held_until(now)
    }

    /// A request started at `now`: the next waits for the host's pace. One started on a
    /// slot already taken (a rendered page's own resource, on the page's slot) counts
    /// here alone.
    pub(crate) fn count_start(&mut self, now: Instant) {
        self.pace.count_start(now);
    }

    /// Where `lane` stands at `now`.
    pub(crate) fn lane(&self, lane: u32, now: Instant) -> LaneState {
        match self.idle.iter().find(|(_, idle)| *idle == lane) {
            Some((ready, _)) if *ready <= now => LaneState::Ready,
            Some((ready, _)) => LaneState::ReadyAt(*ready),
            None if self.lanes.get(lane as usize).copied().unwrap_or(false) => LaneState::Busy,
            None => LaneState::Gone,
        }
    }

    /// Occupy `lane` when it is idle, else the lowest lane of the idle slots ready at
    /// `now` (or, when none is, the first to be), and say it; call only when
    /// [`SlotState::Free`].
    pub(crate) fn take(&mut self, lane: Option<u32>, now: Instant) -> u32 {
        let ready = self.idle.iter().enumerate().filter(|(_, (ready, _))| *ready <= now);
        let chosen = lane
            .and_then(|lane| self.idle.iter().position(|(_, idle)| *idle == lane))
            .or_else(|| ready.min_by_key(|(_, (_, lane))| *lane).map(|(at, _)| at))
            .or_else(|| self.idle.iter().enumerate().min_by_key(|(_, (ready, _))| *ready).map(|(at, _)| at));
        let lane = chosen.map_or(0, |at| self.idle.swap_remove(at).1);
        self.busy += 1;
        self.count_start(now);
        lane
    }

    /// The request on `lane` finished; its slot is ready again at `ready_at`, unless the
    /// limit was lowered meanwhile.
    pub(crate) fn release(&mut self, lane: u32, ready_at: Instant) {
        self.busy = self.busy.saturating_sub(1);
        if self.idle.len() + self.busy < self.limit {
            self.idle.push((ready_at, lane));
        } else if let Some(held) = self.lanes.get_mut(lane as usize) {
            *held = false;
        }
    }

    /// Start no request on this host before `until` (the later of this and any earlier
    /// pause wins).
    pub(crate) fn pause_until(&mut self, until: Instant) {
        self.pace.pause_until(until);
    }

    /// Change the number of slots; requests in flight over a lowered limit finish normally.
    /// Start requests at most `per_second` a second (`None`: no pace of its own).
    pub(crate) fn set_rate(&mut self, per_second: Option<f64>) {
        self.pace.set_rate(per_second);
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Slots with a request in flight.
    pub(crate) fn busy(&self) -> usize {
        self.busy
    }

    /// Whether nothing is in flight and every pause is over at `now`: the slots are as a
    /// host met anew would have them, so forgetting the host loses no politeness.
    pub(crate) fn at_rest(&self, now: Instant) -> bool {
        self.busy == 0
            && self.pace.held_until(now).is_none()
            && self.idle.iter().all(|(ready, _)| *ready <= now)
    }

    pub(crate) fn set_limit(&mut self, limit: usize, now: Instant) {
        self.limit = limit;
        while self.idle.len() + self.busy > limit {
            // The highest lanes go first, so the identities kept are the oldest.
            let highest = self.idle.iter().enumerate().max_by_key(|(_, (_, lane))| *lane).map(|(at, _)| at);
            let Some((_, lane)) = highest.map(|at| self.idle.swap_remove(at)) else { break };
            if let Some(held) = self.lanes.get_mut(lane as usize) {
                *held = false;
            }
        }
        while self.idle.len() + self.busy < limit {
            let lane = self.lanes.iter().position(|held| !held).unwrap_or(self.lanes.len());
            if lane == self.lanes.len() {
                self.lanes.push(true);
            } else {
                self.lanes[lane] = true;
            }
            self.idle.push((now, u32::try_from(lane).unwrap_or(u32::MAX)));
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
        let lane = slots.take(None, start);
        assert_eq!(slots.state(start), SlotState::Busy);
        let ready = start + Duration::from_secs(2);
        slots.release(lane, ready);
        assert_eq!(slots.state(start), SlotState::PausedUntil(ready));
        assert_eq!(slots.state(ready), SlotState::Free);
    }

    #[test]
    fn without_a_pace_free_slots_start_at_once_whatever_the_clock_reads() {
        let earlier = Instant::now();
        let later = earlier + Duration::from_micros(5);
        let mut slots = HostSlots::new(3, earlier);
        slots.take(None, later);
        assert_eq!(slots.state(earlier), SlotState::Free, "the second slot is not held back");
        slots.take(None, earlier);
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
        let lanes: Vec<u32> = (0..3).map(|_| slots.take(None, now)).collect();
        slots.set_limit(1, now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(lanes[0], now);
        slots.release(lanes[1], now);
        assert_eq!(slots.state(now), SlotState::Busy);
        slots.release(lanes[2], now);
        assert_eq!(slots.state(now), SlotState::Free);
        assert_eq!(slots.take(None, now), lanes[2], "the lane still held");
        assert_eq!(slots.state(now), SlotState::Busy);
    }

    #[test]
    fn each_slot_is_a_lane_of_its_own_and_lanes_are_reused_lowest_first() {
        let now = Instant::now();
        let mut slots = HostSlots::new(3, now);
        let mut lanes: Vec<u32> = (0..3).map(|_| slots.take(None, now)).collect();
        lanes.sort_unstable();
        assert_eq!(lanes, [0, 1, 2], "one request per lane");
        slots.release(1, now);
        assert_eq!(slots.take(None, now), 1, "a free slot keeps its lane");
        slots.release(2, now);
        slots.release(0, now + Duration::from_secs(1));
        assert_eq!(slots.take(None, now), 2, "only lane 2 is ready");
        slots.release(2, now);
        assert_eq!(slots.take(None, now + Duration::from_secs(1)), 0, "the lowest ready lane first");
        slots.set_limit(1, now);
        for lane in [0, 1] {
            slots.release(lane, now);
        }
        slots.set_limit(3, now);
        let mut lanes: Vec<u32> = (0..3).map(|_| slots.take(None, now)).collect();
        lanes.sort_unstable();
        assert_eq!(lanes, [0, 1, 2], "raised again, the least lanes come back");
    }

    #[test]
    fn a_request_bound_to_a_lane_takes_that_lane_and_no_other() {
        let now = Instant::now();
        let mut slots = HostSlots::new(3, now);
        assert_eq!(slots.lane(2, now), LaneState::Ready);
        assert_eq!(slots.take(Some(2), now), 2, "its own lane, not the lowest");
        assert_eq!(slots.lane(2, now), LaneState::Busy, "in flight: the next on it waits");
        let later = now + Duration::from_secs(1);
        slots.release(2, later);
        assert_eq!(slots.lane(2, now), LaneState::ReadyAt(later), "its pause is its own");
        assert_eq!(slots.lane(2, later), LaneState::Ready);
        slots.take(Some(2), later);
        slots.set_limit(1, later);
        assert_eq!(slots.lane(0, later), LaneState::Gone, "the limit was lowered under it");
        assert_eq!(slots.lane(2, later), LaneState::Busy);
    }

    #[test]
    fn a_rate_spaces_the_starts_whatever_the_free_slots() {
        let now = Instant::now();
        let mut slots = HostSlots::new(4, now);
        slots.set_rate(Some(4.0));
        slots.take(None, now);
        let next = now + Duration::from_millis(250);
        assert_eq!(slots.state(now), SlotState::PausedUntil(next));
        slots.take(None, next);
        assert_eq!(slots.state(next), SlotState::PausedUntil(next + Duration::from_millis(250)));
        slots.set_rate(None);
        slots.take(None, next + Duration::from_millis(250));
        assert_eq!(slots.state(next + Duration::from_millis(250)), SlotState::Free);
    }
}
