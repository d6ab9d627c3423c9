//! Admission: whether the next request may go out now.
//!
//! A decision is a function of what the dispatcher tells it, `now` included (the rate
//! ceiling's tokens are counted at the instants it is given): it waits for nothing and
//! reads no clock, so the dispatcher can sleep until the earliest instant any decision
//! names, and the tests give it the instants they choose.
//!
//! The crawl first ([`Admission::crawl`]): nothing more once it is stopping or the proxy
//! budget is spent, no more than `concurrency` global slots, and no more pages than
//! `max_pages` (those in flight count) or items than `max_items`; the spend is read last,
//! only when all else would admit, since in a fleet reading it takes the link's lock.
//! Then one request of a host ([`Admission::request`]): the host must have a free slot
//! past its politeness pause (and past any 429 pause), and the crawl's rate ceiling a
//! token. A request waiting for its token holds no slot of any kind.

use spider_settings::Config;
use tokio::time::Instant;

use super::limits::Limits;
use crate::observe::counters::Tally;
use crate::schedule::throttle::{RateGate, SlotState};

/// Why the crawl admits nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// A stop signal, or an error the crawl cannot go on after.
    Stopping,
    /// The proxy spend reached `proxy_budget`.
    Budget,
}

/// The crawl's gate for the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// A request may go, if a host can take one.
    Open,
    /// Every global slot is taken, or `max_pages`/`max_items` is reached counting what is
    /// in flight: wait for a request to finish (one that fails makes room for another).
    Full,
    /// Nothing more is admitted.
    Closed(Stop),
}

/// What admission says of one request of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admit {
    /// Send it now; its rate token is taken.
    Launch,
    /// Not before this instant, the rate ceiling's next token: the dispatcher holds the
    /// request (no slot taken) until then.
    WaitUntil(Instant),
    /// Its host cannot take it now: every slot is busy (`None`: until one finishes) or
    /// pausing until the instant given. It goes back to its host.
    Hold(Option<Instant>),
}

/// What the crawl stands at, as admission reads it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Standing {
    /// Global slots taken: requests in flight, and with a state file those finished but
    /// not committed yet.
    pub(super) slots_taken: usize,
    /// Requests in flight, which count as pages to come against `max_pages`.
    pub(super) in_flight: usize,
    /// A stop signal or an error the crawl cannot go on after.
    pub(super) stopping: bool,
    /// The proxy spend was found at `proxy_budget` before: the crawl stays closed.
    pub(super) budget_reached: bool,
}

/// The crawl's admission: its global slots, its rate ceiling and its page and item limits.
pub(super) struct Admission {
    concurrency: usize,
    /// `None` without a ceiling, and in a fleet, whose frontier admits under the fleet's.
    rate: Option<RateGate>,
    limits: Limits,
}

impl Admission {
    /// The admission of `config`, under the rate ceiling `rate` (none in a fleet, whose
    /// frontier holds the rate).
    pub(super) fn new(config: &Config, limits: Limits, rate: Option<RateGate>) -> Self {
        Admission { concurrency: config.concurrency, rate, limits }
    }

    /// Whether the crawl admits another request, standing where `standing` says;
    /// `budget_spent` is asked only when nothing else keeps the gate shut.
    pub(super) fn crawl(
        &self,
        standing: Standing,
        tally: &Tally,
        budget_spent: impl FnOnce() -> bool,
    ) -> Gate {
        if standing.stopping {
            Gate::Closed(Stop::Stopping)
        } else if standing.budget_reached {
            Gate::Closed(Stop::Budget)
        } else if standing.slots_taken >= self.concurrency || !self.limits.admit(tally, standing.in_flight) {
            Gate::Full
        } else if budget_spent() {
            Gate::Closed(Stop::Budget)
        } else {
            Gate::Open
        }
    }

    /// Whether a request of a host whose slots stand at `state` may go at `now`. One
    /// answered from the cache (`offline`) sends nothing: it needs no slot and no token.
    pub(super) fn request(&mut self, state: SlotState, offline: bool, now: Instant) -> Admit {
        if offline {
            return Admit::Launch;
        }
        match state {
            SlotState::Busy => Admit::Hold(None),
            SlotState::PausedUntil(until) => Admit::Hold(Some(until)),
            SlotState::Free => match self.rate.as_mut().map(|rate| rate.try_pass(now)) {
                Some(Err(at)) => Admit::WaitUntil(at),
                Some(Ok(())) | None => Admit::Launch,
            },
        }
    }

    /// Whether a request that rides on a slot its page holds (a rendered page's own
    /// resources) may go, its host held back until `held` (a pause or its pace).
    #[cfg(feature = "render")]
    pub(super) fn ride(&mut self, held: Option<Instant>, now: Instant) -> Admit {
        if let Some(until) = held {
            return Admit::Hold(Some(until));
        }
        match self.rate.as_mut().map(|rate| rate.try_pass(now)) {
            Some(Err(at)) => Admit::WaitUntil(at),
            Some(Ok(())) | None => Admit::Launch,
        }
    }

    /// Whether `max_pages` or `max_items` is reached: nothing more will be admitted.
    pub(super) fn limit_reached(&self, tally: &Tally) -> bool {
        self.limits.reached(tally)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use spider_settings::Config;

    use super::*;
    use crate::schedule::throttle::HostSlots;

    fn standing(slots_taken: usize) -> Standing {
        Standing { slots_taken, in_flight: slots_taken, stopping: false, budget_reached: false }
    }

    fn admission(config: &Config) -> Admission {
        let rate = config.rate.and_then(RateGate::new);
        Admission::new(config, Limits::new(config, None), rate)
    }

    /// Launch whatever admission lets go, one request at a time to a host that is always
    /// free, for `span`, and say when each went.
    async fn launches(admission: &mut Admission, span: Duration) -> Vec<Duration> {
        let start = Instant::now();
        let slots = HostSlots::new(1_000, start);
        let mut sent = Vec::new();
        while start.elapsed() <= span {
            match admission.request(slots.state(Instant::now()), false, Instant::now()) {
                Admit::Launch => sent.push(start.elapsed()),
                Admit::WaitUntil(at) => tokio::time::sleep_until(at).await,
                Admit::Hold(_) => panic!("the host is always free"),
            }
        }
        sent
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_ceiling_lets_exactly_rpm_go_in_any_minute() {
        let mut admission = admission(&Config::new("t").rpm(120));
        let sent = launches(&mut admission, Duration::from_secs(300)).await;
        // One every half second, the first at once: 601 in 300 s, and never 121 in 60 s.
        assert_eq!(sent.len(), 601);
        assert!(sent.windows(2).all(|pair| pair[1] - pair[0] == Duration::from_millis(500)), "{sent:?}");
        for (i, at) in sent.iter().enumerate() {
            let in_minute =
                sent[i..].iter().take_while(|later| **later < *at + Duration::from_secs(60)).count();
            assert!(in_minute <= 120, "{in_minute} requests in the minute from {at:?}");
        }
    }

    #[test]
    fn the_rate_ceiling_answers_for_the_instant_it_is_given_whatever_the_clock_says() {
        let mut admission = admission(&Config::new("t").rps(2));
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(admission.request(SlotState::Free, false, at(0)), Admit::Launch);
        assert_eq!(admission.request(SlotState::Free, false, at(100)), Admit::WaitUntil(at(500)));
        // Asked for an instant to come, it answers for that instant: no clock is read.
        assert_eq!(admission.request(SlotState::Free, false, at(500)), Admit::Launch);
        assert_eq!(admission.request(SlotState::Free, false, at(600)), Admit::WaitUntil(at(1000)));
        assert_eq!(admission.request(SlotState::Free, false, at(1000)), Admit::Launch);
    }

    #[tokio::test(start_paused = true)]
    async fn a_host_takes_as_many_as_its_slots_then_waits_for_one_and_its_pause() {
        let config = Config::new("t").per_host(2);
        let mut admission = admission(&config);
        let start = Instant::now();
        let mut slots = HostSlots::new(config.per_host, start);
        let mut lanes = Vec::new();
        for _ in 0..2 {
            assert_eq!(admission.request(slots.state(start), false, start), Admit::Launch);
            lanes.push(slots.take(None, start));
        }
        assert_eq!(admission.request(slots.state(start), false, start), Admit::Hold(None), "both slots busy");
        assert_eq!(
            admission.request(slots.state(start), true, start),
            Admit::Launch,
            "a cached answer takes no slot"
        );
        let rested = start + Duration::from_secs(2);
        slots.release(lanes[0], rested);
        assert_eq!(
            admission.request(slots.state(start), false, start),
            Admit::Hold(Some(rested)),
            "the slot's pause"
        );
        tokio::time::sleep_until(rested).await;
        assert_eq!(admission.request(slots.state(Instant::now()), false, Instant::now()), Admit::Launch);
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_every_slot_of_its_host_until_its_retry_after() {
        let mut admission = admission(&Config::new("t").per_host(4));
        let start = Instant::now();
        let mut slots = HostSlots::new(4, start);
        let lane = slots.take(None, start);
        // The dispatcher's reaction to a 429 with `Retry-After: 30`.
        let retry_after = start + Duration::from_secs(30);
        slots.pause_until(retry_after);
        slots.release(lane, start);
        assert_eq!(admission.request(slots.state(start), false, start), Admit::Hold(Some(retry_after)));
        tokio::time::sleep(Duration::from_secs(29)).await;
        assert_eq!(
            admission.request(slots.state(Instant::now()), false, Instant::now()),
            Admit::Hold(Some(retry_after))
        );
        tokio::time::sleep_until(retry_after).await;
        assert_eq!(admission.request(slots.state(Instant::now()), false, Instant::now()), Admit::Launch);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_waiting_for_its_token_holds_no_slot_and_goes_when_it_is_due() {
        let mut admission = admission(&Config::new("t").rps(2));
        let start = Instant::now();
        let slots = HostSlots::new(8, start);
        assert_eq!(admission.request(slots.state(start), false, start), Admit::Launch);
        let due = start + Duration::from_millis(500);
        assert_eq!(admission.request(slots.state(start), false, start), Admit::WaitUntil(due));
        assert_eq!(slots.state(start), SlotState::Free, "nothing taken while waiting");
        tokio::time::sleep_until(due).await;
        assert_eq!(admission.request(slots.state(Instant::now()), false, Instant::now()), Admit::Launch);
    }

    #[test]
    fn the_crawl_closes_at_the_budget_and_a_stop_and_fills_at_concurrency_and_the_page_limit() {
        let config = Config::new("t").concurrency(3).max_pages(10);
        let admission = admission(&config);
        let tally = Tally::new();
        let unspent = || false;
        assert_eq!(admission.crawl(standing(2), &tally, unspent), Gate::Open);
        assert_eq!(admission.crawl(Standing { in_flight: 0, ..standing(3) }, &tally, unspent), Gate::Full);
        assert_eq!(admission.crawl(standing(0), &tally, || true), Gate::Closed(Stop::Budget));
        let reached = Standing { budget_reached: true, ..standing(0) };
        assert_eq!(admission.crawl(reached, &tally, unspent), Gate::Closed(Stop::Budget));
        let stopping = Standing { stopping: true, budget_reached: true, ..standing(0) };
        assert_eq!(admission.crawl(stopping, &tally, unspent), Gate::Closed(Stop::Stopping));
        tally.pages.add(8);
        assert_eq!(admission.crawl(standing(2), &tally, unspent), Gate::Full, "8 done and 2 in flight");
        let asked = std::cell::Cell::new(false);
        let spent = || {
            asked.set(true);
            true
        };
        assert_eq!(admission.crawl(standing(2), &tally, spent), Gate::Full, "a full crawl ends at its limit");
        assert!(!asked.get(), "the spend is not read while the crawl is full");
        assert_eq!(admission.crawl(standing(1), &tally, unspent), Gate::Open, "one of them failed");
        tally.pages.add(2);
        assert!(admission.limit_reached(&tally));
    }
}
