//! Adaptive mode: each host's concurrency limit and request rate, found by the crawl
//! itself, the way the sizing guide tells a person to: raise them while the block rate
//! holds, cut both by 20% when it moves, hold after a cut instead of oscillating.
//!
//! The rate is controlled, not only the slots: a site that limits requests per minute is
//! not helped by fewer slots when its pages are fast. A host starts slow (4 requests/s, 2
//! slots); each clean second its rate grows by half and its slots double, until its first
//! block ("slow start"); then the rate grows by 5% and the slots by one a second, while its block rate over the gauge's window stays at or under the
//! target. A block that lifts that rate above the target cuts at once: a limiter that sees
//! a client keep going bans it. A host whose answers are mostly blocks trips a circuit
//! breaker: it is paused, then one request probes it, and each failed probe doubles the
//! pause.

use std::time::Duration;

use tokio::time::Instant;

use crate::gauge::Window;

/// How often the controller considers raising a host.
pub(crate) const STEP: Duration = Duration::from_secs(1);
/// No raise for this long after a cut.
const HOLD: Duration = Duration::from_secs(5);
/// Two cuts are at least this far apart, so the blocks of requests already in flight at a
/// cut do not cut again (paced requests to one host are few in flight at once).
const CUT_GAP: Duration = Duration::from_secs(1);
/// The cut: both limits times this.
const CUT: f64 = 0.8;
const START_RPS: f64 = 4.0;
const START_SLOTS: usize = 2;
/// The least rate a cut leaves, in requests per second.
const MIN_RPS: f64 = 0.1;
/// The breaker trips at this block rate over at least `BREAKER_SAMPLE` answers.
const BREAKER_RATE: f64 = 0.5;
const BREAKER_SAMPLE: usize = 10;
const FIRST_TRIP: Duration = Duration::from_secs(10);
const LONGEST_TRIP: Duration = Duration::from_secs(300);

/// What adaptive mode aims for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    /// The block rate not to exceed.
    pub(crate) block_rate: f64,
    /// The most slots a host may get.
    pub(crate) ceiling: usize,
    /// The most requests per second a host may get.
    pub(crate) max_rps: f64,
}

/// A change of a host's limits, for the engine to apply and log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Change {
    Raised,
    Cut {
        block_rate: f64,
    },
    /// Paused until then; one probe request follows.
    Tripped {
        until: Instant,
    },
    /// The probe after a trip was answered: traffic resumes from the bottom.
    Closed,
}

#[derive(Debug)]
enum Breaker {
    Closed,
    /// Paused; the next answer is the probe's.
    Open {
        pause: Duration,
    },
}

/// One host's controller.
#[derive(Debug)]
pub(crate) struct Controller {
    limit: usize,
    rps: f64,
    slow_start: bool,
    /// Good answers a second in the last step: what the host really carried.
    carried: f64,
    last_cut: Option<Instant>,
    hold_until: Instant,
    breaker: Breaker,
}

impl Controller {
    pub(crate) fn new(target: &Target, now: Instant) -> Self {
        Controller {
            limit: START_SLOTS.min(target.ceiling).max(1),
            rps: START_RPS.min(target.max_rps),
            slow_start: true,
            carried: 0.0,
            last_cut: None,
            hold_until: now,
            breaker: Breaker::Closed,
        }
    }

    /// The slots the host may use.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The requests per second the host may start.
    pub(crate) fn rps(&self) -> f64 {
        self.rps
    }

    /// An answer came back, `blocked` its verdict; `recent` is the host's window, this
    /// answer in it.
    pub(crate) fn answer(
        &mut self,
        target: &Target,
        now: Instant,
        blocked: bool,
        recent: &Window,
    ) -> Option<Change> {
        if let Breaker::Open { pause } = self.breaker {
            if blocked {
                return Some(self.trip(now, (pause * 2).min(LONGEST_TRIP)));
            }
            self.breaker = Breaker::Closed;
            self.hold_until = now + HOLD;
            return Some(Change::Closed);
        }
        let rate = recent.block_rate();
        if recent.answered() >= BREAKER_SAMPLE && rate >= BREAKER_RATE {
            return Some(self.trip(now, FIRST_TRIP));
        }
        let cut_allowed = self.last_cut.map_or(true, |at| at + CUT_GAP <= now);
        if blocked && rate > target.block_rate && cut_allowed {
            self.limit = ((self.limit as f64 * CUT).floor() as usize).max(1);
            // A fifth off an allowance the host never used would change nothing: cut
            // from what it carried when that was less.
            let from = if self.carried > 0.0 { self.rps.min(self.carried * 1.1) } else { self.rps };
            self.rps = (from * CUT).max(MIN_RPS);
            self.slow_start = false;
            self.last_cut = Some(now);
            self.hold_until = now + HOLD;
            return Some(Change::Cut { block_rate: rate });
        }
        None
    }

    /// Once a [`STEP`]: raise the limits when the host's block rate over `recent` is at or
    /// under the target, it is past its hold, and it used what it had: `used_rps` good
    /// answers a second in the last step, `saturated` when all its slots were busy at some
    /// point.
    pub(crate) fn tick(
        &mut self,
        target: &Target,
        now: Instant,
        used_rps: f64,
        saturated: bool,
        recent: &Window,
    ) -> Option<Change> {
        self.carried = used_rps;
        let calm = recent.block_rate() <= target.block_rate;
        if matches!(self.breaker, Breaker::Open { .. }) || now < self.hold_until || !calm {
            return None;
        }
        let rate_bound = used_rps >= 0.7 * self.rps;
        if !rate_bound && !saturated {
            return None;
        }
        let (rps, limit) = if self.slow_start {
            (self.rps * 1.5, self.limit * 2)
        } else {
            (self.rps + (self.rps * 0.05).max(0.5), self.limit + 1)
        };
        let before = (self.limit, self.rps);
        if rate_bound {
            self.rps = rps.min(target.max_rps);
        }
        if saturated {
            self.limit = limit.min(target.ceiling);
        }
        ((self.limit, self.rps) != before).then_some(Change::Raised)
    }

    fn trip(&mut self, now: Instant, pause: Duration) -> Change {
        self.breaker = Breaker::Open { pause };
        self.limit = 1;
        self.rps = (self.rps * CUT).max(MIN_RPS);
        self.slow_start = false;
        Change::Tripped { until: now + pause }
    }

    /// Whether the breaker holds the host.
    pub(crate) fn tripped(&self) -> bool {
        matches!(self.breaker, Breaker::Open { .. })
    }
}

#[cfg(test)]
mod tests {
    use crate::gauge::WINDOW;

    use super::*;

    const TARGET: Target = Target { block_rate: 0.05, ceiling: 10, max_rps: 100.0 };

    /// A controller and its host's window.
    struct Host {
        c: Controller,
        recent: Window,
    }

    impl Host {
        fn new() -> Self {
            Host { c: Controller::new(&TARGET, Instant::now()), recent: Window::new(WINDOW) }
        }

        fn answer(&mut self, blocked: bool) -> Option<Change> {
            let now = Instant::now();
            self.recent.record(now, blocked);
            self.c.answer(&TARGET, now, blocked, &self.recent)
        }

        /// A second of traffic at the controller's own rate, the first `blocks` blocked.
        async fn second(&mut self, blocks: usize) -> Vec<Change> {
            tokio::time::advance(STEP).await;
            let n = self.c.rps().ceil() as usize;
            let mut changes: Vec<Change> = (0..n).filter_map(|i| self.answer(i < blocks)).collect();
            let (now, rps) = (Instant::now(), self.c.rps());
            self.recent.expire(now);
            changes.extend(self.c.tick(&TARGET, now, rps, true, &self.recent));
            changes
        }
    }

    #[tokio::test(start_paused = true)]
    async fn limits_rise_while_blocks_stay_low_and_never_pass_the_ceiling() {
        let mut host = Host::new();
        assert_eq!((host.c.limit(), host.c.rps()), (2, 4.0));
        assert_eq!(host.second(0).await, vec![Change::Raised]);
        assert_eq!((host.c.limit(), host.c.rps()), (4, 6.0), "slow start: slots double, the rate × 1.5");
        for _ in 0..20 {
            host.second(0).await;
        }
        assert_eq!(host.c.limit(), 10, "the ceiling");
        assert_eq!(host.c.rps(), 100.0, "the rate ceiling");
        // Unused room is not raised: a host that does not use its rate keeps it.
        let mut host = Host::new();
        let now = Instant::now();
        assert_eq!(host.c.tick(&TARGET, now + HOLD, 0.5, false, &host.recent), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_block_above_the_target_cuts_both_by_a_fifth_then_holds() {
        let mut host = Host::new();
        for _ in 0..4 {
            host.second(0).await;
        }
        assert_eq!((host.c.limit(), host.c.rps()), (10, 20.25));
        // One block in 55 answers is under 5%: no cut, and the rise goes on.
        assert_eq!(host.second(1).await, vec![Change::Raised]);
        let (limit, rps, carried) = (host.c.limit(), host.c.rps(), 20.25);
        let cut = host.second(8).await;
        assert!(matches!(cut[..], [Change::Cut { .. }]), "{cut:?}");
        assert_eq!(host.c.limit(), (limit as f64 * 0.8) as usize);
        // From what it carried in the last step (the rate before the rise), not its allowance.
        assert!((host.c.rps() - rps.min(carried * 1.1) * 0.8).abs() < 1e-9, "{}", host.c.rps());
        // Blocks of requests already in flight at the cut do not cut again at once.
        assert_eq!(host.answer(true), None);
        // Held: clean seconds within the hold raise nothing; after it, once the window is
        // back under the target, small steps.
        for _ in 0..4 {
            assert_eq!(host.second(0).await, vec![], "held after the cut");
        }
        let rps = host.c.rps();
        let mut waited = 4;
        while host.second(0).await.is_empty() {
            waited += 1;
            assert!(waited < 12, "never raised again");
        }
        assert!((host.c.rps() - (rps * 1.05).max(rps + 0.5)).abs() < 1e-9, "then 5% steps: {}", host.c.rps());
    }

    #[tokio::test(start_paused = true)]
    async fn cuts_never_go_below_one_slot() {
        let mut host = Host::new();
        for _ in 0..30 {
            tokio::time::advance(CUT_GAP).await;
            host.answer(false);
            host.answer(false);
            host.answer(true);
            assert!((1..=TARGET.ceiling).contains(&host.c.limit()));
            assert!(host.c.rps() >= MIN_RPS);
        }
        assert_eq!(host.c.limit(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn mostly_blocks_trip_the_breaker_and_a_good_probe_closes_it() {
        let mut host = Host::new();
        let now = Instant::now();
        let tripped = (0..BREAKER_SAMPLE)
            .find_map(|i| host.answer(i % 4 != 0).filter(|c| matches!(c, Change::Tripped { .. })));
        assert_eq!(tripped, Some(Change::Tripped { until: now + FIRST_TRIP }));
        assert!(host.c.tripped());
        assert_eq!(host.c.tick(&TARGET, now + FIRST_TRIP * 2, 100.0, true, &Window::new(WINDOW)), None);
        // The probe is blocked: twice the pause.
        let later = now + FIRST_TRIP;
        assert_eq!(
            host.c.answer(&TARGET, later, true, &host.recent),
            Some(Change::Tripped { until: later + FIRST_TRIP * 2 })
        );
        assert_eq!(host.c.answer(&TARGET, later, false, &host.recent), Some(Change::Closed));
        assert_eq!(host.c.limit(), 1);
        assert!(!host.c.tripped());
    }
}
