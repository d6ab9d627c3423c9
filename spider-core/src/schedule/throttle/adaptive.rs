//! Adaptive mode: each host's concurrency limit and request rate, found by the crawl
//! itself, the way the sizing guide tells a person to: raise them while the block rate
//! holds, cut both when it moves, hold after a cut instead of oscillating.
//!
//! The rate is controlled, not only the slots: a site that limits requests per minute is
//! not helped by fewer slots when its pages are fast. A host starts slow (4 requests/s, 2
//! slots); until its first block ("slow start") each round of clean answers, as many as
//! it has slots (a round trip at full use) and at least a quarter of a second long,
//! doubles the slots when they were all in use and the rate when it was used, so a fast
//! host reaches its speed in a second or two; then the rate grows by 5% and the slots by
//! one a second, while the block rate of the requests sent under its current limits stays
//! at or under the target. A block that lifts that rate above the target cuts at once (a
//! limiter that sees a client keep going bans it): by half when it ends slow start, whose
//! last doubling may have overshot by as much, by 20% after. A host whose answers are
//! mostly blocks trips a circuit breaker: it is paused, then one request probes it, and
//! each failed probe doubles the pause.
//!
//! Only the host's blocks reach it: a block an identity met after clean answers, when its
//! retry leaves from another exit, says the site limits each identity, and is met by
//! retiring it (`engine/gauges.rs` leaves it out); a fresh identity blocked at once, or a
//! block with no other exit to go to, is the host's.

use std::time::Duration;

use tokio::time::Instant;

use crate::observe::gauge::Window;

/// How often the controller considers raising a host.
pub(crate) const STEP: Duration = Duration::from_secs(1);
/// No raise for this long after a cut.
pub(crate) const HOLD: Duration = Duration::from_secs(5);
/// The cut: both limits times this.
const CUT: f64 = 0.8;
/// The cut that ends slow start: its last doubling may have overshot the site's limit
/// by as much, so both go back to what they were before it.
const SLOW_START_CUT: f64 = 0.5;
const START_RPS: f64 = 4.0;
const START_SLOTS: usize = 2;
/// The shortest round of slow start: a round of as many answers as the slots that came
/// back sooner would double a fast host's rate again and again within milliseconds,
/// before a block could answer back.
const ROUND: Duration = Duration::from_millis(250);
/// The least rate a cut leaves, in requests per second.
const MIN_RPS: f64 = 0.1;
/// The breaker trips at this block rate over at least `BREAKER_SAMPLE` answers in the window.
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
    /// The probe after a trip was answered: traffic resumes, slowly.
    Closed,
    /// The limits a fleet's other workers set, taken; `lower` when they cut.
    Adopted {
        lower: bool,
    },
}

/// How a controller's new limits for a host change a fleet's, which every worker shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proposal {
    /// A host's first limits: kept only when the fleet has none yet.
    First = 0,
    /// Higher limits: taken when the fleet is past the hold of its last cut.
    Raise = 1,
    /// Lower limits: taken at once, and the fleet holds them.
    Cut = 2,
}

#[derive(Debug, Clone, Copy)]
enum Breaker {
    Closed,
    /// Paused until `until`; the first answer to a request sent after it is the probe's.
    Open {
        until: Instant,
        pause: Duration,
    },
}

/// One host's controller.
///
/// Its verdicts count only answers to requests sent under the current limits (since the
/// last change, its "epoch"): the blocks of requests already in flight at a cut say
/// nothing about the new limits, and must not cut again.
#[derive(Debug)]
pub(crate) struct Controller {
    limit: usize,
    rps: f64,
    slow_start: bool,
    epoch: Instant,
    /// Blocks of requests sent before it are no verdict (see [`Controller::refused_at`]).
    judged_from: Instant,
    answered: usize,
    blocked: usize,
    hold_until: Instant,
    breaker: Breaker,
    /// Slow start's round: clean answers since it began, and when it began.
    round: usize,
    round_from: Instant,
}

impl Controller {
    pub(crate) fn new(target: &Target, now: Instant) -> Self {
        Controller {
            limit: START_SLOTS.min(target.ceiling).max(1),
            rps: START_RPS.min(target.max_rps),
            slow_start: true,
            epoch: now,
            judged_from: now,
            answered: 0,
            blocked: 0,
            hold_until: now,
            breaker: Breaker::Closed,
            round: 0,
            round_from: now,
        }
    }

    /// A controller for hosts a limiter refused at `now` after letting `got_through`
    /// requests a second through, as TCP takes a loss: a slow start from half that rate
    /// (or from [`Controller::new`]'s, if higher). The limiter still counts what it
    /// refused until `memory_until` (nginx's bucket drains, HAProxy's rate counts refused
    /// requests over its second): clean answers double the pace from now on, while blocks
    /// of what is sent before then are the burst's, no verdict on the pace. (Waiting out
    /// the memory before starting, at a fixed 4 requests a second, kept four hosts behind
    /// HAProxy at 0.78 of its rate in adaptive mode.)
    pub(crate) fn refused_at(target: &Target, now: Instant, memory_until: Instant, got_through: f64) -> Self {
        let fresh = Controller::new(target, now);
        let rps = (got_through * SLOW_START_CUT).max(fresh.rps).min(target.max_rps);
        Controller { rps, judged_from: memory_until, ..fresh }
    }

    /// From when its blocks are verdicts on its pace.
    pub(crate) fn judged_from(&self) -> Instant {
        self.judged_from
    }

    /// The slots the host may use.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The requests per second the host may start.
    pub(crate) fn rps(&self) -> f64 {
        self.rps
    }

    /// An answer came back to a request sent at `sent_at`, `blocked` its verdict, with
    /// `in_flight` requests of the host out when it came (itself among them); `recent` is
    /// the host's window, this answer in it.
    pub(crate) fn answer(
        &mut self,
        target: &Target,
        now: Instant,
        sent_at: Instant,
        blocked: bool,
        in_flight: usize,
        recent: &Window,
    ) -> Option<Change> {
        if let Breaker::Open { until, pause } = self.breaker {
            if sent_at < until {
                // Sent before the pause ended: not the probe.
                return None;
            }
            if blocked {
                return Some(self.trip(now, (pause * 2).min(LONGEST_TRIP)));
            }
            self.breaker = Breaker::Closed;
            self.hold_until = now + HOLD;
            self.new_epoch(now);
            return Some(Change::Closed);
        }
        if recent.answered() >= BREAKER_SAMPLE && recent.block_rate() >= BREAKER_RATE {
            return Some(self.trip(now, FIRST_TRIP));
        }
        if sent_at < self.epoch || (blocked && sent_at < self.judged_from) {
            return None;
        }
        self.answered += 1;
        self.blocked += usize::from(blocked);
        let rate = self.blocked as f64 / self.answered as f64;
        if blocked && rate > target.block_rate {
            let cut = if self.slow_start { SLOW_START_CUT } else { CUT };
            self.limit = ((self.limit as f64 * cut).floor() as usize).max(1);
            self.rps = (self.rps * cut).max(MIN_RPS);
            self.slow_start = false;
            self.hold_until = now + HOLD;
            self.new_epoch(now);
            return Some(Change::Cut { block_rate: rate });
        }
        if self.slow_start && !blocked {
            self.round += 1;
            let took = now.saturating_duration_since(self.round_from);
            if self.round >= self.limit && took >= ROUND {
                let used_rps = self.round as f64 / took.as_secs_f64();
                (self.round, self.round_from) = (0, now);
                return self.raise(target, now, used_rps, in_flight >= self.limit);
            }
        }
        None
    }

    /// Once a [`STEP`], past slow start: raise the limits when the requests sent under
    /// the current ones were answered with a block rate at or under the target, the host
    /// is past its hold, and it used what it had: `used_rps` good answers a second in the
    /// last step, `saturated` when it had requests waiting while all its slots were busy.
    pub(crate) fn tick(
        &mut self,
        target: &Target,
        now: Instant,
        used_rps: f64,
        saturated: bool,
    ) -> Option<Change> {
        if self.slow_start {
            return None;
        }
        self.raise(target, now, used_rps, saturated)
    }

    /// Raise what the host used, if its answers allow: the rate when it used at least 70%
    /// of it, the slots when they were all busy; twice in slow start, else a step.
    fn raise(&mut self, target: &Target, now: Instant, used_rps: f64, saturated: bool) -> Option<Change> {
        let open = matches!(self.breaker, Breaker::Open { .. });
        // No answers, no evidence: a host whose requests hang is not raised.
        let calm = self.answered > 0 && self.blocked as f64 / self.answered as f64 <= target.block_rate;
        if open || now < self.hold_until || !calm {
            return None;
        }
        let rate_bound = used_rps >= 0.7 * self.rps;
        if !rate_bound && !saturated {
            return None;
        }
        let (rps, limit) = if self.slow_start {
            (self.rps * 2.0, self.limit * 2)
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
        if (self.limit, self.rps) == before {
            return None;
        }
        self.new_epoch(now);
        Some(Change::Raised)
    }

    fn trip(&mut self, now: Instant, pause: Duration) -> Change {
        let until = now + pause;
        self.breaker = Breaker::Open { until, pause };
        self.limit = 1;
        self.rps = (self.rps * CUT).max(MIN_RPS);
        self.slow_start = false;
        Change::Tripped { until }
    }

    fn new_epoch(&mut self, now: Instant) {
        self.epoch = now;
        self.answered = 0;
        self.blocked = 0;
        (self.round, self.round_from) = (0, now);
    }

    /// Take the limits a fleet's other workers set for the host: its slots and rate are
    /// the fleet's, not this worker's. Lower ones are a cut (and its hold), higher ones a
    /// raise; `None` when they are this controller's already.
    pub(crate) fn adopt(&mut self, limit: usize, rps: f64, now: Instant) -> Option<Change> {
        let limit = limit.max(1);
        if limit == self.limit && (rps - self.rps).abs() < 1e-9 {
            return None;
        }
        let lower = rps < self.rps - 1e-9 || limit < self.limit;
        self.limit = limit;
        self.rps = rps.max(MIN_RPS);
        self.new_epoch(now);
        if lower {
            self.slow_start = false;
            self.hold_until = now + HOLD;
        }
        Some(Change::Adopted { lower })
    }

    /// Whether the breaker holds the host.
    pub(crate) fn tripped(&self) -> bool {
        matches!(self.breaker, Breaker::Open { .. })
    }
}

#[cfg(test)]
mod tests {
    use crate::observe::gauge::WINDOW;

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

        /// An answer to a request sent at `sent_at`, all the host's slots in use.
        fn answer_to(&mut self, sent_at: Instant, blocked: bool) -> Option<Change> {
            let now = Instant::now();
            self.recent.record(now, blocked);
            let in_flight = self.c.limit();
            self.c.answer(&TARGET, now, sent_at, blocked, in_flight, &self.recent)
        }

        fn answer(&mut self, blocked: bool) -> Option<Change> {
            self.answer_to(Instant::now(), blocked)
        }

        /// A second of traffic at the controller's own rate, spread over it, the first
        /// `blocks` blocked.
        async fn second(&mut self, blocks: usize) -> Vec<Change> {
            let n = self.c.rps().ceil() as usize;
            let mut changes = Vec::new();
            for i in 0..n {
                tokio::time::advance(STEP / n as u32).await;
                changes.extend(self.answer(i < blocks));
            }
            let rps = self.c.rps();
            changes.extend(self.c.tick(&TARGET, Instant::now(), rps, true));
            changes
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fleets_cut_is_taken_with_its_hold_and_a_raise_without() {
        let now = Instant::now();
        let mut c = Controller::new(&TARGET, now);
        assert_eq!(c.adopt(c.limit(), c.rps(), now), None, "its own limits are no news");
        assert_eq!(c.adopt(1, 2.0, now), Some(Change::Adopted { lower: true }));
        assert_eq!((c.limit(), c.rps()), (1, 2.0));
        // Held like a cut of its own: no raise before HOLD, however calm and busy.
        let later = now + HOLD / 2;
        c.answered = 10;
        assert_eq!(c.tick(&TARGET, later, 100.0, true), None);
        assert_eq!(c.adopt(3, 5.0, later), Some(Change::Adopted { lower: false }));
        assert_eq!((c.limit(), c.rps()), (3, 5.0));
    }

    #[tokio::test(start_paused = true)]
    async fn limits_rise_while_blocks_stay_low_and_never_pass_the_ceiling() {
        let mut host = Host::new();
        assert_eq!((host.c.limit(), host.c.rps()), (2, 4.0));
        assert_eq!(host.answer(false), None, "half a round");
        assert_eq!(host.answer(false), None, "as many answers as slots, but too soon");
        tokio::time::advance(ROUND).await;
        assert_eq!(
            host.answer(false),
            Some(Change::Raised),
            "a round: as many answers as slots, in a quarter second"
        );
        assert_eq!((host.c.limit(), host.c.rps()), (4, 8.0), "slow start: both doubled");
        for _ in 0..20 {
            host.second(0).await;
        }
        assert_eq!(host.c.limit(), 10, "the ceiling");
        assert_eq!(host.c.rps(), 100.0, "the rate ceiling");
        // No answers, no rise: a host whose requests hang keeps its limits.
        let mut host = Host::new();
        assert_eq!(host.c.tick(&TARGET, Instant::now() + HOLD, 0.0, true), None);
        // Unused room is not raised either: a round that took ten seconds on one slot.
        let (start, recent) = (Instant::now(), Window::new(WINDOW));
        assert_eq!(host.c.answer(&TARGET, start, start, false, 1, &recent), None);
        let later = start + Duration::from_secs(10);
        assert_eq!(host.c.answer(&TARGET, later, later, false, 1, &recent), None);
        assert_eq!((host.c.limit(), host.c.rps()), (2, 4.0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_block_above_the_target_cuts_both_by_half_in_slow_start_by_a_fifth_after_then_holds() {
        let mut host = Host::new();
        for _ in 0..6 {
            host.second(0).await;
        }
        assert_eq!((host.c.limit(), host.c.rps()), (10, 100.0), "slow start reached both ceilings");
        // Counted from here, as from a raise: at the ceilings a round raises nothing.
        host.c.new_epoch(Instant::now());
        let mut changes: Vec<Change> = (0..40).filter_map(|_| host.answer(false)).collect();
        changes.extend(host.answer(true));
        assert_eq!(changes, vec![], "one block in 41 answers is under 5%");
        let (limit, rps) = (host.c.limit(), host.c.rps());
        let sent_before_the_cut = Instant::now();
        assert_eq!(host.answer(true), None, "2 in 42 is still under 5%");
        tokio::time::advance(Duration::from_millis(20)).await;
        let cut = host.answer(true);
        assert!(matches!(cut, Some(Change::Cut { .. })), "3 in 43 is over: {cut:?}");
        assert_eq!(host.c.limit(), limit / 2, "slow start's last doubling undone");
        assert!((host.c.rps() - rps * 0.5).abs() < 1e-9);
        // Blocks of requests already in flight at the cut do not cut again.
        tokio::time::advance(STEP).await;
        assert_eq!(host.answer_to(sent_before_the_cut, true), None);
        assert_eq!(host.answer_to(sent_before_the_cut, true), None);
        // Held: clean seconds within the hold raise nothing; then 5% steps.
        for _ in 0..3 {
            assert_eq!(host.second(0).await, vec![], "held after the cut");
        }
        let rps = host.c.rps();
        assert_eq!(host.second(0).await, vec![Change::Raised]);
        assert!((host.c.rps() - (rps * 1.05).max(rps + 0.5)).abs() < 1e-9, "5% steps: {}", host.c.rps());
        // Past slow start, a cut takes a fifth.
        let (limit, rps) = (host.c.limit(), host.c.rps());
        tokio::time::advance(Duration::from_millis(20)).await;
        assert!(matches!(host.answer(true), Some(Change::Cut { .. })));
        assert_eq!(host.c.limit(), (limit as f64 * 0.8) as usize);
        assert!((host.c.rps() - rps * 0.8).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_limiters_refusal_the_pace_starts_at_half_what_it_let_through_and_its_memory_cuts_nothing(
    ) {
        let (now, memory) = (Instant::now(), Duration::from_millis(1500));
        let c = Controller::refused_at(&TARGET, now, now + memory, 20.0);
        assert_eq!((c.limit(), c.rps()), (2, 10.0));
        let trickle = Controller::refused_at(&TARGET, now, now + memory, 2.0);
        assert_eq!(trickle.rps(), 4.0, "never below a fresh host's start");
        let mut host = Host { c, recent: Window::new(WINDOW) };
        // Within the limiter's memory refusals cut nothing, and clean answers double.
        tokio::time::advance(ROUND).await;
        assert_eq!(host.answer(true), None, "the burst's refusal");
        assert_eq!(host.answer(false), None);
        assert_eq!(host.answer(false), Some(Change::Raised), "a round of clean answers");
        assert_eq!(host.c.rps(), 20.0);
        // Past it, a refusal of what was sent after is a verdict: slow start's cut.
        tokio::time::advance(memory).await;
        assert!(matches!(host.answer(true), Some(Change::Cut { .. })));
        assert_eq!(host.c.rps(), 10.0);
    }

    #[tokio::test(start_paused = true)]
    async fn cuts_never_go_below_one_slot() {
        let mut host = Host::new();
        for _ in 0..30 {
            tokio::time::advance(STEP).await;
            host.answer(false);
            host.answer(false);
            host.answer(true);
            assert!((1..=TARGET.ceiling).contains(&host.c.limit()));
            assert!(host.c.rps() >= MIN_RPS);
        }
        assert_eq!(host.c.limit(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn mostly_blocks_trip_the_breaker_and_only_a_probe_closes_it() {
        let mut host = Host::new();
        let now = Instant::now();
        let tripped = (0..BREAKER_SAMPLE)
            .find_map(|i| host.answer(i % 4 != 0).filter(|c| matches!(c, Change::Tripped { .. })));
        assert_eq!(tripped, Some(Change::Tripped { until: now + FIRST_TRIP }));
        assert!(host.c.tripped());
        assert_eq!(host.c.tick(&TARGET, now + FIRST_TRIP * 2, 100.0, true), None, "no rise while open");
        // Answers to requests sent before the pause ended are not the probe.
        assert_eq!(host.answer_to(now, false), None);
        assert_eq!(host.answer_to(now, true), None);
        // The probe is blocked: twice the pause.
        tokio::time::advance(FIRST_TRIP).await;
        let later = Instant::now();
        assert_eq!(host.answer_to(later, true), Some(Change::Tripped { until: later + FIRST_TRIP * 2 }));
        tokio::time::advance(FIRST_TRIP * 2).await;
        assert_eq!(host.answer(false), Some(Change::Closed));
        assert_eq!(host.c.limit(), 1);
        assert!(!host.c.tripped());
    }
}
