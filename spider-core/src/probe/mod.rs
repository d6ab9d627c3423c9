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

// The rest of probe mode, a file per concern, in the order a probe uses them.

// `ProbePlan`: the bounds, the first rate, the share of trouble a clean step may have
mod plan;
// one request on the crawl's route and its fate: answered, blocked or failed
mod send;
// one step: its requests paced and bounded, stopped at the first trouble, then judged
mod step;
// the rate search: ramp ×1.5 while clean, then bisect
mod search;
// the steps the search asks for, within the plan's bounds, and the safe rate
mod ramp;
// the arithmetic: step lengths, slots, percentiles, rates
mod sizes;
// `ProbeReport` and `ProbeStep`, and the report as a table
mod report;
mod tuning;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;
use crate::request::Request;
use crate::schedule::robots::Robots;
use crate::wire::{Exchange, Judge};
use spider_settings::Config;

pub use plan::ProbePlan;
use ramp::{ramp, Start};
pub use report::{ProbeReport, ProbeStep};
use search::Search;
use send::{Sample, Target};

/// Find the fastest rate the config's start URLs take without blocking, and the
/// `#[spider(...)]` line for it: a ramp ×1.5 a step while the steps stay clean, then a
/// bisection to 5 % between the last clean rate and the first blocked one, each step
/// ended at its first block, all of it bounded by [`ProbePlan`]'s duration and requests.
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
    let mut requests = crate::request::start_requests(config)?;
    let mut spent = 0;
    let mut ceiling = None;
    let exchange = Exchange::new(config)?;
    if config.obey_robots {
        let seen = robots_of(&exchange, config, &requests).await?;
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
    let target = Arc::new(Target { exchange, requests, turn: AtomicUsize::new(0) });
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

/// The robots.txt of each origin of the start URLs.
struct RobotsSeen {
    robots: Vec<Robots>,
    fetched: u64,
    unavailable: Option<String>,
}

/// Read the robots.txt of each origin of `requests` once.
async fn robots_of(exchange: &Exchange, config: &Config, requests: &[Request]) -> Result<RobotsSeen, Error> {
    let mut seen = RobotsSeen { robots: Vec::new(), fetched: 0, unavailable: None };
    for request in requests {
        let origin = request.url().origin();
        if seen.robots.iter().any(|r| r.url().origin() == origin) {
            continue;
        }
        let (robots, sent) = Robots::fetch_through(exchange, Judge::Measure, config, request.url()).await?;
        seen.fetched += sent;
        if let Some(reason) = robots.unavailable() {
            seen.unavailable =
                Some(format!("{} could not be had ({reason}): a crawl fetches nothing there", robots.url()));
        }
        seen.robots.push(robots);
    }
    Ok(seen)
}
