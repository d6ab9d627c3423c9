//! One step of the probe: its requests sent at an even pace within its slots, stopped at
//! the first trouble, then judged as a [`ProbeStep`] with the cool-down it calls for.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};

use super::report::ProbeStep;
use super::send::{Outcome, Sample};
use super::sizes::{achieved, is_clean, percentile};

/// What one step sent and got back.
pub(super) struct StepRun {
    pub(super) samples: Vec<Sample>,
    /// When each request left, for the rate achieved.
    pub(super) sent_at: Vec<Instant>,
    /// Requests still in flight at the probe's end, cut off.
    abandoned: u64,
    /// Times the pace waited for a slot: the slots, not the pace, held the rate back.
    pub(super) slot_waits: u64,
}

/// How one step sends.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pace {
    pub(super) rps: f64,
    /// Requests in flight at most.
    pub(super) slots: usize,
    /// When the last request of the step before left.
    pub(super) after: Option<Instant>,
}

/// Hold a pace for `length`; stop sending at the first trouble, and let what is in
/// flight finish (until `end`, the probe's own end).
pub(super) async fn run_step<F, Fut>(pace: Pace, length: Duration, end: Instant, send: &F) -> StepRun
where
    F: Fn() -> Fut,
    Fut: Future<Output = Sample> + Send + 'static,
{
    let Pace { rps, slots, after } = pace;
    let spacing = Duration::from_secs_f64(1.0 / rps);
    let deadline = Instant::now() + length;
    let mut run = StepRun { samples: Vec::new(), sent_at: Vec::new(), abandoned: 0, slot_waits: 0 };
    let mut tasks = JoinSet::new();
    // The pace holds across steps too: no request follows the last one of the step
    // before sooner than a spacing.
    let mut next = after.map_or_else(Instant::now, |last| last + spacing);
    let mut troubled = false;
    while !troubled {
        let now = Instant::now();
        if next.max(now) >= deadline {
            break;
        }
        if now < next {
            tokio::select! {
                biased;
                Some(joined) = tasks.join_next(), if !tasks.is_empty() => troubled = run.keep(joined),
                () = sleep_until(next) => {}
            }
        } else if tasks.len() >= slots {
            run.slot_waits += 1;
            if let Some(joined) = tasks.join_next().await {
                troubled = run.keep(joined);
            }
        } else {
            tasks.spawn(send());
            run.sent_at.push(now);
            // Burst one: the next leaves a full spacing after this one, however late
            // this one was, so no window ever holds more than the rate.
            next = now + spacing;
        }
    }
    loop {
        match tokio::time::timeout_at(end, tasks.join_next()).await {
            Ok(Some(joined)) => {
                run.keep(joined);
            }
            Ok(None) => break,
            Err(_) => {
                run.abandoned = tasks.len() as u64;
                tasks.abort_all();
                break;
            }
        }
    }
    run
}

impl StepRun {
    /// Keep a finished request; `true` when it was trouble.
    fn keep(&mut self, joined: Result<Sample, tokio::task::JoinError>) -> bool {
        let sample = joined.unwrap_or_else(|_| Sample {
            latency: Duration::ZERO,
            outcome: Outcome::Failed("request task failed".to_owned()),
        });
        let trouble = sample.outcome != Outcome::Answered;
        self.samples.push(sample);
        trouble
    }

    pub(super) fn step(&self, rps: f64, concurrency: usize, target_block_rate: f64) -> ProbeStep {
        let blocked = self.samples.iter().filter(|s| matches!(s.outcome, Outcome::Blocked { .. })).count();
        let failed = self.samples.iter().filter(|s| matches!(s.outcome, Outcome::Failed(_))).count();
        let requests = self.samples.len() as u64 + self.abandoned;
        let errors = failed as u64 + self.abandoned;
        let mut latencies: Vec<Duration> = self.samples.iter().map(|s| s.latency).collect();
        latencies.sort_unstable();
        let ms = |q| percentile(&latencies, q).map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        let abandoned = (self.abandoned > 0).then(|| "cut off at the probe's end".to_owned());
        ProbeStep {
            rps,
            concurrency,
            requests,
            blocked: blocked as u64,
            errors,
            achieved_rps: achieved(&self.sent_at).unwrap_or(rps),
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            clean: is_clean(blocked as u64 + errors, requests, target_block_rate),
            first_trouble: self.samples.iter().find_map(|s| s.outcome.trouble()).or(abandoned),
        }
    }

    /// The wait before the next step: none after a clean run; after any trouble, long
    /// enough for the site's window to empty: the longest Retry-After, and at least a step.
    pub(super) fn cooldown(&self, step: Duration) -> Duration {
        if self.abandoned == 0 && self.samples.iter().all(|s| s.outcome == Outcome::Answered) {
            return Duration::ZERO;
        }
        let asked = self.samples.iter().filter_map(|s| match s.outcome {
            Outcome::Blocked { retry_after, .. } => retry_after,
            _ => None,
        });
        asked.fold(step, Duration::max)
    }

    pub(super) fn p90(&self) -> Option<Duration> {
        let mut latencies: Vec<Duration> = self.samples.iter().map(|s| s.latency).collect();
        latencies.sort_unstable();
        percentile(&latencies, 0.9)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_block_cools_down_for_its_retry_after_and_at_least_a_step() {
        let step = Duration::from_secs(3);
        let blocked = |wait| Sample {
            latency: Duration::ZERO,
            outcome: Outcome::Blocked { status: 429, retry_after: wait },
        };
        let answered = Sample { latency: Duration::ZERO, outcome: Outcome::Answered };
        let run = |samples| StepRun { samples, sent_at: Vec::new(), abandoned: 0, slot_waits: 0 };
        assert_eq!(run(vec![answered.clone()]).cooldown(step), Duration::ZERO);
        assert_eq!(run(vec![answered, blocked(Some(Duration::from_secs(1)))]).cooldown(step), step);
        assert_eq!(
            run(vec![blocked(None), blocked(Some(Duration::from_secs(9)))]).cooldown(step),
            Duration::from_secs(9)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_ends_at_its_first_block() {
        let sent = Arc::new(AtomicUsize::new(0));
        let send = {
            let sent = sent.clone();
            move || {
                let n = sent.fetch_add(1, Ordering::Relaxed);
                async move {
                    let outcome = match n {
                        5 => Outcome::Blocked { status: 429, retry_after: None },
                        _ => Outcome::Answered,
                    };
                    Sample { latency: Duration::from_millis(1), outcome }
                }
            }
        };
        let end = Instant::now() + Duration::from_secs(60);
        let pace = Pace { rps: 10.0, slots: 2, after: None };
        let run = run_step(pace, Duration::from_secs(3), end, &send).await;
        assert_eq!(run.samples.len(), 6, "nothing sent after the block");
        let step = run.step(10.0, 2, 0.01);
        assert!(!step.clean && step.blocked == 1 && step.first_trouble.as_deref() == Some("429"), "{step:?}");
        assert!((step.achieved_rps - 10.0).abs() < 0.5, "{step:?}");
    }
}
