//! What a probe found: [`ProbeReport`] and its [`ProbeStep`]s, the line to paste, and the
//! report as a table.

use std::time::Duration;

use tokio::time::Instant;

use super::sizes::rpm_of;
use super::tuning::MARGIN;

/// One rate held for one step of a [`probe`](fn@crate::probe), and what the site made of it.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(config: spider_core::Config) -> Result<(), spider_core::Error> {
/// let report = spider_core::probe(&config, &spider_core::ProbePlan::default()).await?;
/// for step in report.steps.iter().filter(|s| !s.clean) {
///     println!("{:.1}/s: {} of {} blocked", step.rps, step.blocked, step.requests);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProbeStep {
    /// The rate asked, per second.
    pub rps: f64,
    /// The requests allowed in flight at once.
    pub concurrency: usize,
    /// Requests sent.
    pub requests: u64,
    /// Answers judged blocked (403, 429, challenge pages, block markers).
    pub blocked: u64,
    /// Failed requests: transport errors, 5xx answers, requests cut off at the probe's end.
    pub errors: u64,
    /// The rate the requests actually left at, per second.
    pub achieved_rps: f64,
    /// The median latency, in milliseconds.
    pub p50_ms: f64,
    /// The 90th-percentile latency, in milliseconds.
    pub p90_ms: f64,
    /// Whether blocked and failed answers stayed within the target share.
    pub clean: bool,
    /// What ended the step early, such as `429` or `timeout`.
    pub first_trouble: Option<String>,
}

/// What a [`probe`](fn@crate::probe) found: its steps, the safe rate, and why it stopped.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(config: spider_core::Config) -> Result<(), spider_core::Error> {
/// let report = spider_core::probe(&config, &spider_core::ProbePlan::default()).await?;
/// println!("{report}"); // the ramp as a table, then the line to paste
/// if let Some(line) = report.attribute() {
///     assert!(line.starts_with("#[spider(concurrency = "));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProbeReport {
    /// The steps, in the order they ran.
    pub steps: Vec<ProbeStep>,
    /// The highest rate seen clean: the lower of the rate asked and the rate achieved.
    pub clean_rps: Option<f64>,
    /// The lowest rate asked that was blocked.
    pub blocked_rps: Option<f64>,
    /// 90 % of `clean_rps`: the rate to crawl at.
    pub safe_rps: Option<f64>,
    /// Slots enough for `safe_rps` at the latency seen, within the config's `concurrency`.
    pub safe_concurrency: usize,
    /// Every request sent, robots.txt included.
    pub requests: u64,
    /// How long the probe took.
    pub elapsed: Duration,
    /// Why the probe stopped.
    pub ended: String,
}

impl ProbeReport {
    /// The attribute to paste on the spider, such as `#[spider(concurrency = 6, rps = 17)]`;
    /// `None` when no rate was clean (or the safe rate is under one request a minute).
    ///
    /// A rate of one a second or more is given by the second (`rps`, rounded down), under
    /// one as `rpm`: limiters often count a second's requests, and a ceiling by the minute
    /// lets a late wake-up's catch-up put more than a second's share into one second (the
    /// gate holds every window of its own length, `throttle/rate.rs`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(config: spider_core::Config) -> Result<(), spider_core::Error> {
    /// let report = spider_core::probe(&config, &spider_core::ProbePlan::default()).await?;
    /// match report.attribute() {
    ///     Some(line) => println!("paste: {line}"),
    ///     None => println!("no safe rate: {}", report.ended),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn attribute(&self) -> Option<String> {
        let safe = self.safe_rps?;
        let pace = if safe >= 1.0 {
            format!("rps = {}", safe.floor() as u64)
        } else {
            let rpm = rpm_of(safe);
            if rpm == 0 {
                return None;
            }
            format!("rpm = {rpm}")
        };
        Some(format!("#[spider(concurrency = {}, {pace})]", self.safe_concurrency))
    }

    /// The exit code for a command that ran this probe: 0 when it found a line to paste,
    /// 1 when it did not.
    pub fn exit_code(&self) -> std::process::ExitCode {
        match self.attribute() {
            Some(_) => std::process::ExitCode::SUCCESS,
            None => std::process::ExitCode::FAILURE,
        }
    }
}

/// The ramp as an aligned table, the line to paste, and the margin it keeps.
impl std::fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "  rate/s  slots  sent  blocked  errors  got/s  p50 ms  verdict")?;
        for step in &self.steps {
            let verdict = match (&step.first_trouble, step.clean) {
                (None, _) => "clean".to_owned(),
                (Some(trouble), true) => format!("clean despite {trouble}"),
                (Some(trouble), false) => format!("blocked: {trouble}"),
            };
            writeln!(
                f,
                "{:>8.1} {:>6} {:>5} {:>8} {:>7} {:>6.1} {:>7.1}  {verdict}",
                step.rps,
                step.concurrency,
                step.requests,
                step.blocked,
                step.errors,
                step.achieved_rps,
                step.p50_ms
            )?;
        }
        writeln!(
            f,
            "{} requests in {:.1} s; ended: {}",
            self.requests,
            self.elapsed.as_secs_f64(),
            self.ended
        )?;
        match (self.attribute(), self.clean_rps) {
            (Some(line), Some(clean)) => {
                writeln!(f, "{line}")?;
                let limit = match self.blocked_rps {
                    Some(blocked) => format!("the limit lies between {clean:.1}/s and {blocked:.1}/s"),
                    None => "the site never pushed back, so its limit, if any, is higher".to_owned(),
                };
                write!(
                    f,
                    "margin: {:.0} % of {clean:.1}/s, the highest rate without a block; {limit}",
                    MARGIN * 100.0
                )
            }
            _ => write!(f, "no safe rate found: nothing to paste"),
        }
    }
}

impl ProbeReport {
    pub(super) fn empty(begun: Instant, requests: u64, ended: String) -> Self {
        ProbeReport {
            steps: Vec::new(),
            clean_rps: None,
            blocked_rps: None,
            safe_rps: None,
            safe_concurrency: 1,
            requests,
            elapsed: begun.elapsed(),
            ended,
        }
    }
}
