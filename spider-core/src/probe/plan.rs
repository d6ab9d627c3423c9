//! How long and how hard a probe may push: [`ProbePlan`], its consuming setters, and the
//! check of its values when the probe starts.

use std::time::Duration;

use super::tuning::FLOOR_RPS;
use crate::error::Error;

/// How long and how hard a [`probe`](fn@crate::probe) may push.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use spider_core::ProbePlan;
///
/// let plan = ProbePlan::default().max_duration(Duration::from_secs(30)).start_rps(2.0);
/// assert_eq!(plan.max_requests, 3000);
/// assert_eq!(plan.step, Duration::from_secs(3));
/// assert_eq!(plan.to_string(), "up to 30s or 3000 requests, from 2/s, 3s a step");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProbePlan {
    /// The whole probe's time, cool-downs included (default 60 s).
    pub max_duration: Duration,
    /// The whole probe's requests, robots.txt included (default 3000).
    pub max_requests: u64,
    /// How long each rate is held (default 3 s); at least as long as the window the site
    /// counts over.
    pub step: Duration,
    /// The first rate tried, in requests per second (default 1).
    pub start_rps: f64,
    /// The share of blocked or failed answers a step may have and still be clean
    /// (default 0.01).
    pub target_block_rate: f64,
}

impl Default for ProbePlan {
    fn default() -> Self {
        ProbePlan {
            max_duration: Duration::from_secs(60),
            max_requests: 3000,
            step: Duration::from_secs(3),
            start_rps: 1.0,
            target_block_rate: 0.01,
        }
    }
}

/// The plan in a line, for the start of a run: `up to 60s or 3000 requests, from 1/s, 3s a step`.
impl std::fmt::Display for ProbePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "up to {:?} or {} requests, from {}/s, {:?} a step",
            self.max_duration, self.max_requests, self.start_rps, self.step
        )
    }
}

impl ProbePlan {
    /// Set the whole probe's time (default 60 s).
    #[must_use]
    pub fn max_duration(mut self, limit: Duration) -> Self {
        self.max_duration = limit;
        self
    }

    /// Set the whole probe's requests (default 3000).
    #[must_use]
    pub fn max_requests(mut self, limit: u64) -> Self {
        self.max_requests = limit;
        self
    }

    /// Set how long each rate is held (default 3 s).
    #[must_use]
    pub fn step(mut self, length: Duration) -> Self {
        self.step = length;
        self
    }

    /// Set the first rate tried, per second (default 1).
    #[must_use]
    pub fn start_rps(mut self, rps: f64) -> Self {
        self.start_rps = rps;
        self
    }

    /// Set the share of blocked or failed answers a clean step may have (default 0.01).
    #[must_use]
    pub fn target_block_rate(mut self, share: f64) -> Self {
        self.target_block_rate = share;
        self
    }

    pub(super) fn check(&self) -> Result<(), Error> {
        let mut problems = Vec::new();
        if self.max_duration.is_zero() || self.step.is_zero() {
            problems.push("the probe's duration and step must be positive".to_owned());
        }
        if self.max_requests == 0 {
            problems.push("the probe's request budget must be at least 1".to_owned());
        }
        if !(self.start_rps.is_finite() && self.start_rps >= FLOOR_RPS) {
            problems.push(format!("the probe's start rate must be at least {FLOOR_RPS:.3} per second"));
        }
        if !(0.0..1.0).contains(&self.target_block_rate) {
            problems.push("the probe's target block rate must be in 0..1, such as 0.01".to_owned());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(problems.join("; ")))
        }
    }
}
