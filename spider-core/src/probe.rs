//! Probe: how fast a target takes requests before it pushes back, measured instead of
//! guessed, so the `rpm` and `concurrency` a spider declares come with evidence.
//!
//! The probe sends GETs to the config's start URLs in turn, again and again (a load test
//! of the target's limits, not a crawl), on the config's route (proxy, headers, timeout,
//! block markers), evenly paced like the rate ceiling: never two requests closer than
//! `1 / rate`. Each step holds one rate for [`ProbePlan::step`], with just enough slots for
//! it (the rate times the latency seen so far, plus one; at most `concurrency`).
//!
//! - **Ramp.** The rate starts at [`ProbePlan::start_rps`] and grows ×1.5 a step while the
//!   steps stay clean: their share of blocked or failed answers at or under
//!   [`ProbePlan::target_block_rate`].
//! - **Bisect.** The first step over it brackets the limit between the last clean rate and
//!   that one; steps at their geometric middle narrow it to 5 %. A first step already
//!   blocked halves the rate until one is clean.
//! - **Never a ban.** Sites ban an identity that keeps going while throttled, so a step
//!   ends at its first blocked or failed answer: nothing more is sent, the requests in
//!   flight finish. The next step waits out the site's window first: the longest
//!   Retry-After seen, and at least one step's length.
//! - **Bounded.** It ends at [`ProbePlan::max_duration`] or [`ProbePlan::max_requests`],
//!   whichever comes first: a step that would not fit is not begun. robots.txt is obeyed
//!   (when `obey_robots`): disallowed start URLs are left out, and a Crawl-delay caps the
//!   rate, since the site has said how fast it wants to be read.
//!
//! The safe rate is 90 % of the highest clean rate, counted as the lower of the rate
//! asked and the rate achieved. The limit lies somewhere between that clean rate and the
//! lowest blocked one; a crawl's traffic is burstier than the probe's even pacing (tasks
//! finishing together, retries, robots.txt, redirects), and a site's window may count a
//! little differently than ours, so the margin keeps the paste-able line below the limit,
//! never on it. `rpm` is that rate times 60, rounded down.
//!
//! # Reading the table
//!
//! ```text
//!   rate/s  slots  sent  blocked  errors  got/s  p50 ms  verdict
//!      4.0      2     7        0       0    4.0     1.2  clean
//!     20.2      2    21        1       0   20.0     1.0  blocked: 429
//! ```
//!
//! One line per step, in the order they ran: the rate asked (`rate/s`), the slots allowed,
//! the requests sent, how many were blocked or failed, the rate the site actually got
//! (below the rate asked when the slots or the latency held it back), the median latency,
//! and the verdict with the first trouble met. The rates of the clean lines climb until
//! the first blocked one; the lines after it close in on the limit from both sides. A
//! step blocked at a rate below an earlier clean one means the limit is not a steady
//! rate (a burst allowance, a longer window): probe again with a longer `step`.
//!
//! A limit counted over a window longer than a step (say 100 requests a minute) shows
//! only once the steps add up to it; give such a site `step` = its window.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};

use crate::block::{Answer, BlockRules};
use crate::classify::retry_after;
use crate::config::Config;
use crate::error::Error;
use crate::fetch::Fetcher;
use crate::proxy::{Route, Router, Verdict};
use crate::request::Request;
use crate::robots::Robots;

/// The share of the highest clean rate reported as safe.
const MARGIN: f64 = 0.9;
/// How much faster each ramp step goes than the last clean one.
const GROWTH: f64 = 1.5;
/// The bisection stops when the blocked rate is within this factor of the clean one.
const PRECISION: f64 = 1.05;
/// A step lasts long enough for at least this many requests, whatever its `step`.
const MIN_STEP_REQUESTS: f64 = 3.0;
/// A clean step that got less than this share of the rate asked could not go faster:
/// the ramp ends there rather than asking for rates it cannot send.
const SATURATED: f64 = 0.8;
/// The slowest rate tried when even the start rate is blocked: one request a minute.
const FLOOR_RPS: f64 = 1.0 / 60.0;

/// How long and how hard a [`probe`] may push.
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

    fn check(&self) -> Result<(), Error> {
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

/// One rate held for one step of a [`probe`], and what the site made of it.
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

/// What a [`probe`] found: its steps, the safe rate, and why it stopped.
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
    /// The attribute to paste on the spider, such as `#[spider(concurrency = 6, rpm = 1020)]`;
    /// `None` when no rate was clean (or the safe rate is under one request a minute).
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
        let rpm = rpm_of(self.safe_rps?);
        (rpm > 0).then(|| format!("#[spider(concurrency = {}, rpm = {rpm})]", self.safe_concurrency))
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

/// Find the fastest rate the config's start URLs take without blocking, and the
/// `#[spider(...)]` line for it. See the [module docs](self) for the algorithm.
///
/// The rate ceiling, delays and retries of the config are not used: the probe paces
/// itself. A block does not move the host up a proxy tier: the probe measures one route.
///
/// # Errors
///
/// [`Error::Config`] for a config that does not validate, no start URL, or a bad plan;
/// the error of the first request when it fails in transport (the target is unreachable);
/// [`Error::ProxyAuth`] when the gateway refuses the credentials.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use spider_core::{probe, Config, ProbePlan};
///
/// # async fn demo() -> Result<(), spider_core::Error> {
/// let config = Config::new("shop").start_url("https://shop.example/").concurrency(8);
/// let report = probe(&config, &ProbePlan::default().max_duration(Duration::from_secs(30))).await?;
/// println!("{report}");
/// # Ok(()) }
/// ```
pub async fn probe(config: &Config, plan: &ProbePlan) -> Result<ProbeReport, Error> {
    config.validate()?;
    plan.check()?;
    if config.start_urls.is_empty() {
        return Err(Error::Config("the probe needs a start URL (start_urls)".to_owned()));
    }
    let begun = Instant::now();
    let mut requests = config.start_requests()?;
    let mut spent = 0;
    let mut ceiling = None;
    if config.obey_robots {
        let seen = robots_of(config, &requests).await?;
        spent += seen.fetched;
        if let Some(why) = seen.unavailable {
            return Ok(ProbeReport::empty(begun, spent, why));
        }
        requests.retain(|request| seen.robots.iter().all(|robots| robots.allows(request.url())));
        if requests.is_empty() {
            return Ok(ProbeReport::empty(begun, spent, "robots.txt disallows every start URL".to_owned()));
        }
        ceiling = seen.robots.iter().filter_map(Robots::crawl_delay).max().map(|d| 1.0 / d.as_secs_f64());
    }
    let target = Arc::new(Target {
        router: Router::new(config)?,
        fetcher: Fetcher::new(config),
        rules: BlockRules::new(config),
        requests,
        turn: AtomicUsize::new(0),
    });
    // One request per URL first: a target that does not answer is an error, not a ramp.
    let mut latency = Duration::ZERO;
    for _ in 0..target.requests.len() {
        let sample = target.clone().send().await?;
        spent += 1;
        latency = latency.max(sample.latency);
        if let Some(trouble) = sample.outcome.trouble() {
            let why = format!("the first request was already refused ({trouble}); nothing to ramp from");
            return Ok(ProbeReport::empty(begun, spent, why));
        }
    }
    let search = Search::new(plan.start_rps, ceiling);
    let send = move || {
        let target = target.clone();
        async move { target.send().await.unwrap_or_else(Sample::failed) }
    };
    let start = Start { begun, spent, latency, slots: config.concurrency };
    Ok(ramp(plan, search, start, send).await)
}

impl ProbeReport {
    fn empty(begun: Instant, requests: u64, ended: String) -> Self {
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

/// The robots.txt of each origin of the start URLs.
struct RobotsSeen {
    robots: Vec<Robots>,
    fetched: u64,
    unavailable: Option<String>,
}

/// Read the robots.txt of each origin of `requests` once.
async fn robots_of(config: &Config, requests: &[Request]) -> Result<RobotsSeen, Error> {
    let mut seen = RobotsSeen { robots: Vec::new(), fetched: 0, unavailable: None };
    for request in requests {
        let origin = request.url().origin();
        if seen.robots.iter().any(|r| r.url().origin() == origin) {
            continue;
        }
        let robots = Robots::fetch(config, request.url()).await?;
        seen.fetched += 1;
        if let Some(reason) = robots.unavailable() {
            seen.unavailable =
                Some(format!("{} could not be had ({reason}): a crawl fetches nothing there", robots.url()));
        }
        seen.robots.push(robots);
    }
    Ok(seen)
}

/// What the probe sends on: the crawl's own route, fetcher and block rules.
struct Target {
    router: Router,
    fetcher: Fetcher,
    rules: BlockRules,
    requests: Vec<Request>,
    /// The next start URL to send, in turn.
    turn: AtomicUsize,
}

impl Target {
    /// Send the next start URL once and judge the answer.
    async fn send(self: Arc<Self>) -> Result<Sample, Error> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) % self.requests.len();
        let request = &self.requests[turn];
        let routed = self.router.route(request, Route::Auto)?;
        let refused = || Error::ProxyAuth { gateway: self.router.gateway_of(&routed).unwrap_or_default() };
        let sent = Instant::now();
        let fetched = self.fetcher.fetch(&routed.client, request).await;
        let latency = sent.elapsed();
        let outcome = match fetched {
            Ok(answer) if answer.status.as_u16() == 407 && routed.proxied() => return Err(refused()),
            Ok(answer) => {
                let status = answer.status;
                let seen = Answer { status, headers: &answer.headers, body: &answer.body };
                if self.rules.blocked(&seen) {
                    // Not settled: a block would move the host up a tier, and the probe
                    // measures one route.
                    Outcome::Blocked { status: status.as_u16(), retry_after: retry_after(&answer.headers) }
                } else {
                    self.router.settle(&routed, Verdict::Answered, answer.sent, answer.received);
                    match status.is_server_error() {
                        true => Outcome::Failed(status.as_u16().to_string()),
                        false => Outcome::Answered,
                    }
                }
            }
            Err(error) if routed.proxied() && error.is_proxy_auth() => return Err(refused()),
            Err(error) => {
                if error.is_connect() {
                    self.router.settle(&routed, Verdict::Unreachable, 0, 0);
                }
                return Err(error);
            }
        };
        Ok(Sample { latency, outcome })
    }
}

/// One request's fate.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    latency: Duration,
    outcome: Outcome,
}

impl Sample {
    /// A request that failed in transport, described in a word for the table.
    fn failed(error: Error) -> Sample {
        let word = match &error {
            Error::Timeout { .. } => "timeout",
            error if error.is_connect() => "connect error",
            _ => "transport error",
        };
        tracing::debug!(%error, "probe request failed");
        Sample { latency: Duration::ZERO, outcome: Outcome::Failed(word.to_owned()) }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Answered,
    Blocked {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// A 5xx or a transport error, in a word.
    Failed(String),
}

impl Outcome {
    /// What went wrong, for the table; `None` for an answer.
    fn trouble(&self) -> Option<String> {
        match self {
            Outcome::Answered => None,
            Outcome::Blocked { status, .. } => Some(status.to_string()),
            Outcome::Failed(word) => Some(word.clone()),
        }
    }
}

/// Where the ramp starts from: the clock, what was spent before it, the latency seen.
struct Start {
    begun: Instant,
    spent: u64,
    latency: Duration,
    /// The most slots a step may have: the config's `concurrency`.
    slots: usize,
}

/// Run the steps the search asks for until it converges or the plan's bounds are met.
/// `send` sends one request; it is all the I/O there is, so tests can hand in a model.
async fn ramp<F, Fut>(plan: &ProbePlan, mut search: Search, start: Start, send: F) -> ProbeReport
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
            if best.map_or(true, |(seen, _)| rate > seen) {
                best = Some((rate, latency));
            }
        }
        steps.push(step);
        if saturated {
            let got = steps.last().map_or(0.0, |s| s.achieved_rps);
            let p90 = latency.as_millis();
            break match (slot_bound, slots >= cap) {
                (true, true) => format!(
                    "{rps:.1}/s was asked but the {slots} slots of concurrency sent {got:.1}/s (p90 {p90} ms); \
                     raise concurrency to probe further"
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

/// What one step sent and got back.
struct StepRun {
    samples: Vec<Sample>,
    /// When each request left, for the rate achieved.
    sent_at: Vec<Instant>,
    /// Requests still in flight at the probe's end, cut off.
    abandoned: u64,
    /// Times the pace waited for a slot: the slots, not the pace, held the rate back.
    slot_waits: u64,
}

/// How one step sends.
#[derive(Debug, Clone, Copy)]
struct Pace {
    rps: f64,
    /// Requests in flight at most.
    slots: usize,
    /// When the last request of the step before left.
    after: Option<Instant>,
}

/// Hold a pace for `length`; stop sending at the first trouble, and let what is in
/// flight finish (until `end`, the probe's own end).
async fn run_step<F, Fut>(pace: Pace, length: Duration, end: Instant, send: &F) -> StepRun
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

    fn step(&self, rps: f64, concurrency: usize, target_block_rate: f64) -> ProbeStep {
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
    fn cooldown(&self, step: Duration) -> Duration {
        if self.abandoned == 0 && self.samples.iter().all(|s| s.outcome == Outcome::Answered) {
            return Duration::ZERO;
        }
        let asked = self.samples.iter().filter_map(|s| match s.outcome {
            Outcome::Blocked { retry_after, .. } => retry_after,
            _ => None,
        });
        asked.fold(step, Duration::max)
    }

    fn p90(&self) -> Option<Duration> {
        let mut latencies: Vec<Duration> = self.samples.iter().map(|s| s.latency).collect();
        latencies.sort_unstable();
        percentile(&latencies, 0.9)
    }
}

/// The rate search: ramp up while clean, then bisect between the highest clean rate and
/// the lowest blocked one.
#[derive(Debug, Clone)]
struct Search {
    start: f64,
    /// The most the site allows (robots.txt's Crawl-delay), if it says.
    ceiling: Option<f64>,
    clean: Option<f64>,
    blocked: Option<f64>,
}

/// The search's next move.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Next {
    /// Hold this rate for a step.
    Try(f64),
    /// The limit is within [`PRECISION`].
    Converged,
    /// The ceiling itself was clean.
    AtCeiling(f64),
    /// Every rate down to [`FLOOR_RPS`] was blocked.
    Floor,
}

impl Search {
    fn new(start: f64, ceiling: Option<f64>) -> Self {
        Search { start, ceiling, clean: None, blocked: None }
    }

    fn next(&self) -> Next {
        let capped = |rps: f64| self.ceiling.map_or(rps, |cap| rps.min(cap));
        match (self.clean, self.blocked) {
            (None, None) => Next::Try(capped(self.start)),
            (Some(clean), None) => match self.ceiling {
                Some(cap) if clean >= cap => Next::AtCeiling(cap),
                _ => Next::Try(capped(clean * GROWTH)),
            },
            (None, Some(blocked)) if blocked / 2.0 < FLOOR_RPS => Next::Floor,
            (None, Some(blocked)) => Next::Try(blocked / 2.0),
            (Some(clean), Some(blocked)) if blocked <= clean * PRECISION => Next::Converged,
            (Some(clean), Some(blocked)) => Next::Try((clean * blocked).sqrt()),
        }
    }

    fn record(&mut self, rps: f64, clean: bool) {
        if clean {
            self.clean = Some(self.clean.map_or(rps, |seen| seen.max(rps)));
        } else {
            self.blocked = Some(self.blocked.map_or(rps, |seen| seen.min(rps)));
        }
    }
}

/// How long a step at `rps` lasts: `step`, or long enough for a few requests.
fn step_length(step: Duration, rps: f64) -> Duration {
    step.max(Duration::from_secs_f64(MIN_STEP_REQUESTS / rps))
}

/// The most requests a step of `length` at `rps` sends: one at its start, then one a
/// spacing.
fn planned_requests(rps: f64, length: Duration) -> u64 {
    (rps * length.as_secs_f64()).floor() as u64 + 1
}

/// Slots enough for `rps` when each request takes `latency` (Little's law), plus one so
/// a slow answer does not hold the pace back; within `cap`.
fn slots_for(rps: f64, latency: Duration, cap: usize) -> usize {
    let needed = (rps * latency.as_secs_f64()).ceil() as usize + 1;
    needed.clamp(1, cap.max(1))
}

/// Whether `troubled` answers of `requests` stay within the target share.
fn is_clean(troubled: u64, requests: u64, target: f64) -> bool {
    troubled as f64 <= target * requests as f64
}

/// The nearest-rank percentile `q` of sorted `values`.
fn percentile(sorted: &[Duration], q: f64) -> Option<Duration> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// The rate requests left at: intervals over the time they spanned.
fn achieved(sent_at: &[Instant]) -> Option<f64> {
    let span = sent_at.last()?.duration_since(*sent_at.first()?).as_secs_f64();
    (span > 0.0).then(|| (sent_at.len() - 1) as f64 / span)
}

/// Requests per minute for `rps`, rounded down: never above the rate found.
fn rpm_of(rps: f64) -> u64 {
    (rps * 60.0).floor() as u64
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn the_search_ramps_then_bisects_to_five_percent() {
        let limit = 20.0;
        let mut search = Search::new(4.0, None);
        let mut tried = Vec::new();
        let (clean, blocked) = loop {
            match search.next() {
                Next::Try(rps) => {
                    tried.push(rps);
                    search.record(rps, rps < limit);
                }
                Next::Converged => break (search.clean.unwrap(), search.blocked.unwrap()),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(&tried[..5], &[4.0, 6.0, 9.0, 13.5, 20.25], "×1.5 until the first block");
        assert!(tried[5..].iter().all(|r| *r > 13.5 && *r < 20.25), "then inside the bracket: {tried:?}");
        assert!(clean < limit && blocked >= limit && blocked / clean <= PRECISION, "{clean} {blocked}");
        assert!(tried.len() <= 10, "a handful of steps: {tried:?}");
    }

    #[test]
    fn a_blocked_start_halves_down_to_the_floor() {
        let mut search = Search::new(1.0, None);
        let mut tried = Vec::new();
        while let Next::Try(rps) = search.next() {
            tried.push(rps);
            search.record(rps, false);
        }
        assert_eq!(search.next(), Next::Floor);
        assert_eq!(&tried[..3], &[1.0, 0.5, 0.25]);
        assert!(tried.iter().all(|r| *r >= FLOOR_RPS), "{tried:?}");
        let mut search = Search::new(4.0, None);
        search.record(4.0, false);
        search.record(2.0, true);
        assert_eq!(search.next(), Next::Try((8.0f64).sqrt()), "a clean rate under a blocked start bisects");
    }

    #[test]
    fn a_crawl_delay_caps_the_ramp() {
        let mut search = Search::new(1.0, Some(2.0));
        assert_eq!(search.next(), Next::Try(1.0));
        search.record(1.0, true);
        assert_eq!(search.next(), Next::Try(1.5));
        search.record(1.5, true);
        assert_eq!(search.next(), Next::Try(2.0));
        search.record(2.0, true);
        assert_eq!(search.next(), Next::AtCeiling(2.0));
    }

    #[test]
    fn sizes_and_rates() {
        assert_eq!(slots_for(20.0, Duration::from_millis(1), 16), 2);
        assert_eq!(slots_for(20.0, Duration::from_millis(300), 16), 7);
        assert_eq!(slots_for(200.0, Duration::from_secs(1), 16), 16, "within the cap");
        assert_eq!(slots_for(1.0, Duration::ZERO, 0), 1);
        assert_eq!(step_length(Duration::from_secs(3), 20.0), Duration::from_secs(3));
        assert_eq!(step_length(Duration::from_secs(3), 0.5), Duration::from_secs(6), "at least 3 requests");
        assert_eq!(planned_requests(20.0, Duration::from_millis(1500)), 31);
        assert_eq!(rpm_of(17.9999), 1079, "rounded down, never up");
        let ms = |n| Duration::from_millis(n);
        assert_eq!(percentile(&[ms(1), ms(2), ms(3), ms(4)], 0.5), Some(ms(2)));
        assert_eq!(percentile(&[ms(1), ms(2), ms(3), ms(4)], 0.9), Some(ms(4)));
        assert_eq!(percentile(&[], 0.9), None);
        let start = Instant::now();
        assert_eq!(achieved(&[start, start + ms(500), start + ms(1000)]), Some(2.0));
        assert_eq!(achieved(&[start]), None);
        assert!(is_clean(0, 5, 0.01) && !is_clean(1, 50, 0.01) && is_clean(1, 100, 0.01));
    }

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
        assert_eq!(line, format!("#[spider(concurrency = 2, rpm = {})]", rpm_of(safe)), "{report}");
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
