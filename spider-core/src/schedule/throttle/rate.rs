//! The global rate ceiling (`rpm`, `rps`): requests evenly spaced. A pure state machine
//! over the instants it is given (tokio's, so a paused clock in a test paces it as it
//! paces every timer): the dispatcher owns it and passes its `now`.
//!
//! Written here rather than taken from `governor`: a token bucket cannot tell a gate that
//! sat idle from one whose waiter woke late. With a burst of one, every late wake-up is a
//! slot lost for good (on a loaded machine a crawl at `rps = 20` ran at 10), and with a
//! larger burst an idle gate lets a burst go at once. This gate gives back the slots a
//! waiter missed by waking late, up to [`CATCH_UP`] of them, and none an idle gate did not
//! use; and whatever it gives back, no window of the ceiling's length (a minute for `rpm`,
//! a second for `rps`) ever holds more requests than the ceiling.

use std::collections::VecDeque;
use std::time::Duration;

use spider_settings::RateCeiling;
use tokio::time::Instant;

/// The longest lateness made good: slots missed beyond it are lost, so a wait that ran
/// far over (a suspended process) does not end in a burst.
const CATCH_UP: Duration = Duration::from_millis(250);

/// The gate. Each pass takes the next slot of an even schedule; a pass after a refusal
/// (someone was waiting for the slot) keeps the schedule even when it comes late.
pub(crate) struct RateGate {
    spacing: Duration,
    /// How many requests any window of `per` may hold, and the window.
    count: usize,
    per: Duration,
    /// Slots a late waiter may make good at once.
    catch_up: u32,
    /// The earliest instant of the next pass; none before the first.
    next: Option<Instant>,
    /// A request was refused and none has passed since: the next pass answers a waiter,
    /// and whatever it is late by was lateness, not idleness.
    awaited: bool,
    /// The instants of the last `count` passes, oldest first.
    recent: VecDeque<Instant>,
}

impl RateGate {
    pub(crate) fn new(ceiling: RateCeiling) -> Option<Self> {
        let count = ceiling.requests()?.get();
        let spacing = ceiling.spacing();
        let catch_up = u32::try_from(CATCH_UP.as_nanos().div_ceil(spacing.as_nanos().max(1)))
            .unwrap_or(u32::MAX)
            .clamp(1, count);
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        Some(RateGate {
            spacing,
            count,
            per: ceiling.per(),
            catch_up,
            next: None,
            awaited: false,
            recent: VecDeque::with_capacity(count.min(4096)),
        })
    }

    /// Take a slot at `now`, or learn when the next one is free.
    pub(crate) fn try_pass(&mut self, now: Instant) -> Result<(), Instant> {
        // A waiter is given its slot, and the window checked when it comes: a late
        // waiter finds it open, where one sent to the window's opening would come later
        // still, and lose its lateness again at every window.
        let window_full = self.recent.len() >= self.count;
        let window_opens = self.recent.front().map(|oldest| *oldest + self.per).filter(|_| window_full);
        if let Some(refused_until) = [self.next, window_opens].into_iter().flatten().find(|at| now < *at) {
            self.awaited = true;
            return Err(refused_until);
        }
        let slot = if self.awaited {
            // Late for a waiter: this pass takes the slot it missed, so the ones after it
            // follow at once until the schedule is caught up, as far back as `catch_up`.
            let earliest = now.checked_sub(self.spacing * (self.catch_up - 1)).unwrap_or(now);
            self.next.map_or(now, |next| next.max(earliest))
        } else {
            now
        };
        let next = slot + self.spacing;
        self.next = Some(next);
        self.awaited = next <= now;
        if window_full {
            self.recent.pop_front();
        }
        self.recent.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Passes over `span` for a caller that always wants the next slot and wakes `late`
    /// after the instant it was given, as a busy machine wakes a timer.
    async fn passes(gate: &mut RateGate, span: Duration, late: impl Fn(usize) -> Duration) -> Vec<Duration> {
        let start = Instant::now();
        let mut sent = Vec::new();
        let mut wake_ups = 0;
        while start.elapsed() < span {
            match gate.try_pass(Instant::now()) {
                Ok(()) => sent.push(start.elapsed()),
                Err(at) => {
                    wake_ups += 1;
                    tokio::time::sleep_until(at + late(wake_ups)).await;
                }
            }
        }
        sent
    }

    fn most_in(sent: &[Duration], window: Duration) -> usize {
        (0..sent.len())
            .map(|i| sent[i..].iter().take_while(|at| **at < sent[i] + window).count())
            .max()
            .unwrap_or(0)
    }

    #[tokio::test(start_paused = true)]
    async fn late_wake_ups_are_caught_up_and_no_second_holds_more_than_the_ceiling() {
        for late in [Duration::from_millis(5), Duration::from_millis(20), Duration::from_millis(45)] {
            let mut gate = RateGate::new(RateCeiling::new(20, Duration::from_secs(1))).unwrap();
            let sent = passes(&mut gate, Duration::from_secs(60), |_| late).await;
            // 1,200 slots in the minute; a burst of one would lose a slot at every wake-up
            // and send 60 s / (50 ms + late).
            assert!(sent.len() >= 1_190, "{} sent, waking {late:?} late", sent.len());
            assert!(sent.len() <= 1_200, "{} sent", sent.len());
            let most = most_in(&sent, Duration::from_secs(1));
            assert!(most <= 20, "{most} in one second, waking {late:?} late");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn wake_ups_late_by_uneven_amounts_still_use_nearly_all_of_the_ceiling() {
        let mut gate = RateGate::new(RateCeiling::new(100, Duration::from_secs(1))).unwrap();
        // 0 to 30 ms late, three spacings at most, in an uneven pattern.
        let sent =
            passes(&mut gate, Duration::from_secs(60), |n| Duration::from_millis((n * 7919 % 31) as u64))
                .await;
        assert!(sent.len() >= 5_700, "{} of 6,000 sent", sent.len());
        let most = most_in(&sent, Duration::from_secs(1));
        assert!(most <= 100, "{most} in one second");
    }

    #[tokio::test(start_paused = true)]
    async fn on_time_the_spacing_is_exact_and_after_idling_nothing_bursts() {
        let mut gate = RateGate::new(RateCeiling::new(120, Duration::from_secs(60))).unwrap();
        let sent = passes(&mut gate, Duration::from_secs(10), |_| Duration::ZERO).await;
        assert_eq!(sent.len(), 20);
        assert!(sent.windows(2).all(|pair| pair[1] - pair[0] == Duration::from_millis(500)), "{sent:?}");
        // A gate that may make good five slots, idle for a minute after a pass, then a
        // rush: the first goes at once, the next a spacing later.
        let mut gate = RateGate::new(RateCeiling::new(20, Duration::from_secs(1))).unwrap();
        assert!(gate.try_pass(Instant::now()).is_ok());
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(gate.try_pass(Instant::now()).is_ok());
        let due = gate.try_pass(Instant::now()).unwrap_err();
        assert_eq!(due - Instant::now(), Duration::from_millis(50));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_far_past_its_slot_makes_good_only_what_catch_up_allows() {
        let mut gate = RateGate::new(RateCeiling::new(100, Duration::from_secs(1))).unwrap();
        assert!(gate.try_pass(Instant::now()).is_ok());
        let due = gate.try_pass(Instant::now()).unwrap_err();
        // The waiter wakes two seconds late: 25 slots (250 ms) are made good, not 200.
        tokio::time::sleep_until(due + Duration::from_secs(2)).await;
        let mut at_once = 0;
        while gate.try_pass(Instant::now()).is_ok() {
            at_once += 1;
        }
        assert_eq!(at_once, 25);
    }
}
