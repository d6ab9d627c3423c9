//! The ramp: the steps the search asks for, one after another with their cool-downs,
//! until the search converges or the plan's time or requests run out; then the safe rate.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::plan::ProbePlan;
use super::report::{ProbeReport, ProbeStep};
use super::search::{Next, Search};
use super::send::Sample;
use super::sizes::{planned_requests, slots_for, step_length};
use super::step::{run_step, Pace};
use super::tuning::{MARGIN, SATURATED};

/// Where the ramp starts from: the clock, what was spent before it, the latency seen.
pub(super) struct Start {
    pub(super) begun: Instant,
    pub(super) spent: u64,
    pub(super) latency: Duration,
    /// The most slots a step may have: the config's `concurrency`.
    pub(super) slots: usize,
}

/// Run the steps the search asks for until it converges or the plan's bounds are met.
/// `send` sends one request; it is all the I/O there is, so tests can hand in a model.
pub(super) async fn ramp<F, Fut>(plan: &ProbePlan, mut search: Search, start: Start, send: F) -> ProbeReport
where
    F: Fn() -> Fut,
    Fut: Future<Output = Sample> + Send + 'static,
{
    let Start { begun, mut spent, mut latency, slots: cap } = start;
    let end = begun + plan.max_duration;
    let mut steps: Vec<ProbeStep> = Vec::new();
    let mut cooldown = Duration::ZERO;
    let mut last_sent = None;
    // The highest clean rate and the latency at it.
    let mut best: Option<(f64, Duration)> = None;
    let ended = loop {
        let rps = match search.next() {
            Next::Try(rps) => rps,
            Next::Converged => break "the limit is bracketed within 5 %".to_owned(),
            Next::AtCeiling(rps) => break format!("robots.txt's Crawl-delay caps the rate at {rps:.2}/s"),
            Next::Floor => break "blocked even at one request a minute".to_owned(),
        };
        let length = step_length(plan.step, rps);
        if Instant::now() + cooldown + length > end {
            break format!("the time limit ({:?}) leaves no room for another step", plan.max_duration);
        }
        if spent + planned_requests(rps, length) > plan.max_requests {
            break format!("the request budget ({}) leaves no room for another step", plan.max_requests);
        }
        tokio::time::sleep(cooldown).await;
        let slots = slots_for(rps, latency, cap);
        let run = run_step(Pace { rps, slots, after: last_sent }, length, end, &send).await;
        last_sent = run.sent_at.last().copied().or(last_sent);
        spent += run.samples.len() as u64;
        let step = run.step(rps, slots, plan.target_block_rate);
        cooldown = run.cooldown(plan.step);
        if let Some(p90) = run.p90() {
            latency = p90;
        }
        tracing::info!(
            target: "spiderling",
            rps = step.rps,
            slots,
            sent = step.requests,
            blocked = step.blocked,
            errors = step.errors,
            clean = step.clean,
            "probe step"
        );
        search.record(rps, step.clean);
        let saturated = step.clean && step.achieved_rps < SATURATED * rps;
        let slot_bound = run.slot_waits * 10 > run.sent_at.len() as u64;
        if step.clean {
            let rate = rps.min(step.achieved_rps);
            if best.is_none_or(|(seen, _)| rate > seen) {
                best = Some((rate, latency));
            }
        }
        steps.push(step);
        if saturated {
            let got = steps.last().map_or(0.0, |s| s.achieved_rps);
            let p90 = latency.as_millis();
            break match (slot_bound, slots >= cap) {
                (true, true) => format!(
                    "{rps:.1}/s was asked but the {slots} slots of concurrency sent {got:.1}/s (p90 {p90} \
                     ms); raise concurrency to probe further"
                ),
                (true, false) => format!(
                    "{rps:.1}/s was asked but {got:.1}/s sent: the site slowed down (p90 {p90} ms) \
                     before it pushed back"
                ),
                (false, _) => format!(
                    "{rps:.1}/s was asked but {got:.1}/s sent: as fast as the probe paces on this machine, \
                     and the site did not push back up to there"
                ),
            };
        }
    };
    let safe_rps = best.map(|(rate, _)| rate * MARGIN);
    let safe_concurrency = match best {
        Some((rate, latency)) => slots_for(rate * MARGIN, latency, cap),
        None => 1,
    };
    ProbeReport {
        steps,
        clean_rps: best.map(|(rate, _)| rate),
        blocked_rps: search.blocked,
        safe_rps,
        safe_concurrency,
        requests: spent,
        elapsed: begun.elapsed(),
        ended,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::probe::send::Outcome;

    /// The hostile site's limit, in the test's clock: more than `requests` within `per`
    /// is a 429 with Retry-After; more than `ban_after` 429s within `per` is a ban.
    struct Window {
        requests: usize,
        per: Duration,
        ban_after: usize,
        seen: VecDeque<Instant>,
        throttled: VecDeque<Instant>,
        banned: bool,
    }

    impl Window {
        fn hit(&mut self) -> Outcome {
            let now = Instant::now();
            let start = now - self.per;
            self.seen.retain(|t| *t >= start);
            self.throttled.retain(|t| *t >= start);
            self.seen.push_back(now);
            if self.seen.len() <= self.requests && !self.banned {
                return Outcome::Answered;
            }
            self.throttled.push_back(now);
            self.banned |= self.throttled.len() > self.ban_after;
            Outcome::Blocked { status: 429, retry_after: Some(Duration::from_secs(1)) }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_ramp_lands_below_a_sliding_window_limit_without_a_ban() {
        let site = Arc::new(Mutex::new(Window {
            requests: 20,
            per: Duration::from_secs(1),
            ban_after: 10,
            seen: VecDeque::new(),
            throttled: VecDeque::new(),
            banned: false,
        }));
        let send = {
            let site = site.clone();
            move || {
                let site = site.clone();
                async move {
                    let latency = Duration::from_millis(5);
                    tokio::time::sleep(latency).await;
                    let outcome = site.lock().unwrap().hit();
                    Sample { latency, outcome }
                }
            }
        };
        let plan = ProbePlan::default().start_rps(4.0).step(Duration::from_millis(1500));
        let start = Start { begun: Instant::now(), spent: 0, latency: Duration::from_millis(5), slots: 16 };
        let report = ramp(&plan, Search::new(4.0, None), start, send).await;
        assert!(!site.lock().unwrap().banned, "{report}");
        let safe = report.safe_rps.unwrap();
        assert!((16.0..20.0).contains(&safe), "{report}");
        assert!(report.ended.contains("bracketed"), "{report}");
        assert!(report.elapsed < Duration::from_secs(30), "{report}");
        let line = report.attribute().unwrap();
        assert_eq!(line, format!("#[spider(concurrency = 2, rps = {})]", safe.floor()), "{report}");
        let text = report.to_string();
        assert!(text.starts_with("  rate/s  slots  sent  blocked"), "{text}");
        assert!(text.contains("blocked: 429") && text.contains("margin: 90 % of"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_budget_and_the_clock_bound_the_ramp() {
        let send = || async { Sample { latency: Duration::from_millis(2), outcome: Outcome::Answered } };
        let start = || Start { begun: Instant::now(), spent: 0, latency: Duration::ZERO, slots: 4 };
        let plan = ProbePlan::default().max_requests(40).step(Duration::from_secs(1));
        let report = ramp(&plan, Search::new(4.0, None), start(), send).await;
        assert!(report.requests <= 40 && report.ended.contains("request budget"), "{report}");
        assert!(report.blocked_rps.is_none() && report.to_string().contains("never pushed back"), "{report}");
        let plan = ProbePlan::default().max_duration(Duration::from_secs(5)).step(Duration::from_secs(1));
        let report = ramp(&plan, Search::new(4.0, None), start(), send).await;
        assert!(report.elapsed <= Duration::from_secs(5) && report.ended.contains("time limit"), "{report}");
    }

    #[tokio::test(start_paused = true)]
    async fn too_few_slots_end_the_ramp_and_say_so() {
        let send = || async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Sample { latency: Duration::from_millis(200), outcome: Outcome::Answered }
        };
        let start = Start { begun: Instant::now(), spent: 0, latency: Duration::from_millis(200), slots: 2 };
        let plan = ProbePlan::default().step(Duration::from_secs(1));
        let report = ramp(&plan, Search::new(8.0, None), start, send).await;
        assert!(report.ended.contains("raise concurrency"), "{report}");
        let step = report.steps.last().unwrap();
        assert!(step.achieved_rps < 0.8 * step.rps && step.clean, "{report}");
        assert!(report.clean_rps.unwrap() < 11.0, "the rate achieved counts, not the one asked: {report}");
    }
}
