//! The dispatcher's decisions, taken on a paused clock with a `MemoryFrontier` and no
//! network: requests are taken as `next_job` hands them out and their tasks' reports are
//! made up, so each test says what the dispatcher does with one kind of answer.

use bytes::Bytes;

use super::*;
use crate::engine::protocol::Sample;
use crate::engine::test_crawl::{shared, Unparsed};
use crate::schedule::frontier::MemoryFrontier;
use crate::schedule::throttle::RateGate;

/// A dispatcher of a crawl under `config`, writing no file.
fn dispatcher(config: Config) -> Dispatcher<Unparsed> {
    let shared = shared(&config);
    let (_stop, stop_rx) = mpsc::unbounded_channel();
    #[cfg(feature = "render")]
    let inputs = Inputs { stop_rx, start_list: None, asks: tokio::sync::mpsc::unbounded_channel().1 };
    #[cfg(not(feature = "render"))]
    let inputs = Inputs { stop_rx, start_list: None };
    let watchers = Watchers { live: watch::Sender::new(Live::default()), timeline: None };
    let limits = super::super::limits::Limits::new(&config, None);
    let admission = Admission::new(&config, limits, config.rate.and_then(RateGate::new));
    let frontier = Box::new(MemoryFrontier::new(&config));
    Dispatcher::new(
        &config,
        frontier,
        shared,
        Commit::new(super::super::commit::Files::none(), false, false),
        inputs,
        watchers,
        admission,
    )
}

fn get(url: &str) -> Request {
    Request::get(url).unwrap_or_else(|e| panic!("{e}"))
}

/// What a task reports for the job it was given, launched at `launched`; the
/// dispatcher counts it in flight as `launch` would have.
fn report(
    dispatcher: &mut Dispatcher<Unparsed>,
    (id, launched): (HostId, Instant),
    outcome: Outcome,
) -> Done {
    dispatcher.in_flight += 1;
    Done { host: id, slot: None, ticket: None, launched, outcome, notes: Byproducts::default() }
}

/// robots.txt of `body`, answered with 200.
fn robots(body: &'static str, token: &str) -> Outcome {
    let rules = RobotsRules::from_answer(200, body.as_bytes(), token);
    Outcome::Robots(rules, RobotsMemo::Answer { status: 200, body: Bytes::from_static(body.as_bytes()) })
}

/// A host's robots.txt goes first; once it is known, its pages follow and what it
/// disallows is finished unfetched and counted.
#[tokio::test(start_paused = true)]
async fn a_hosts_pages_wait_for_its_robots_txt_which_turns_away_what_it_disallows() {
    let mut dispatcher = dispatcher(Config::new("robots").per_host(2));
    let now = Instant::now();
    dispatcher.enqueue(get("http://a.example/private/1"), now);
    dispatcher.enqueue(get("http://a.example/public/1"), now);
    let (id, job) = dispatcher.next_job(now).unwrap_or_else(|| panic!("robots.txt first"));
    assert!(job.robots);
    assert_eq!(job.request.url().as_str(), "http://a.example/robots.txt");
    assert!(dispatcher.next_job(now).is_none(), "nothing else of the host before its robots.txt");
    let token = dispatcher.shared.robots_token.clone();
    let done = report(&mut dispatcher, (id, now), robots("User-agent: *\nDisallow: /private/\n", &token));
    dispatcher.on_done(done, now);
    let (next, job) = dispatcher.next_job(now).unwrap_or_else(|| panic!("the allowed page"));
    assert_eq!((next, job.robots), (id, false));
    assert_eq!(job.request.url().as_str(), "http://a.example/public/1");
    assert!(dispatcher.next_job(now).is_none());
    assert_eq!(dispatcher.shared.tally.robots_disallowed.get(), 1);
    // Known now: a link it disallows is only remembered as seen, never queued.
    dispatcher.enqueue(get("http://a.example/private/2"), now);
    assert_eq!(dispatcher.shared.tally.robots_disallowed.get(), 2);
    assert!(dispatcher.next_job(now).is_none());
}

/// A limiter's refusal pauses the host (with its group) for a backoff and paces it from
/// then on; the request comes back after its own wait, as a retry.
#[tokio::test(start_paused = true)]
async fn a_limiters_refusal_pauses_the_host_paces_its_group_and_retries_the_request_after_a_backoff() {
    let config = Config::new("refused").per_host(2).obey_robots(false);
    let base = config.backoff.base;
    let mut dispatcher = dispatcher(config);
    let now = Instant::now();
    dispatcher.enqueue(get("http://a.example/1"), now);
    let (id, job) = dispatcher.next_job(now).unwrap_or_else(|| panic!("the page"));
    let failure = Failure::status(Reason::of_status(429), 429);
    let trouble =
        Outcome::Trouble { request: job.request, trouble: Trouble::SlowDown, retry_after: None, failure };
    let done = report(&mut dispatcher, (id, now), trouble);
    dispatcher.on_done(done, now);
    let SlotState::PausedUntil(until) = dispatcher.hosts.state(id, now) else { panic!("the host pauses") };
    assert!((base..=3 * base).contains(&(until - now)), "a first backoff: {:?}", until - now);
    assert!(dispatcher.hosts.group(id).controller.is_some(), "paced from now on");
    assert!(dispatcher.next_job(now).is_none(), "nothing goes while it pauses");
    assert_eq!(dispatcher.shared.tally.retries.get(), 1);
    // Past the longest first wait, the request is there again, its attempt counted.
    tokio::time::advance(3 * base).await;
    let later = Instant::now();
    dispatcher.wake_due(later);
    let (_, retry) = dispatcher.next_job(later).unwrap_or_else(|| panic!("the retry"));
    assert_eq!((retry.request.url().as_str(), retry.request.attempts), ("http://a.example/1", 1));
}

/// A request whose attempts are spent is given up: counted by reason, the frontier done
/// with it, nothing retried.
#[tokio::test(start_paused = true)]
async fn trouble_after_the_last_attempt_gives_the_request_up() {
    let mut dispatcher = dispatcher(Config::new("spent").retries(1).obey_robots(false));
    let now = Instant::now();
    dispatcher.enqueue(get("http://a.example/1"), now);
    let (id, job) = dispatcher.next_job(now).unwrap_or_else(|| panic!("the page"));
    let mut request = job.request;
    request.attempts = 1;
    let failure = Failure::status(Reason::of_status(503), 503);
    let trouble = Outcome::Trouble { request, trouble: Trouble::TryAgain, retry_after: None, failure };
    let done = report(&mut dispatcher, (id, now), trouble);
    dispatcher.on_done(done, now);
    let failures = dispatcher.shared.tally.failures_by_reason();
    assert_eq!(failures.values().sum::<u64>(), 1, "{failures:?}");
    assert_eq!(dispatcher.shared.tally.retries.get(), 0);
    tokio::time::advance(Duration::from_secs(60)).await;
    dispatcher.wake_due(Instant::now());
    assert!(dispatcher.next_job(Instant::now()).is_none(), "not retried");
    assert!(dispatcher.is_idle());
}

/// Each answer reaches the gauges, which a tick publishes; in adaptive mode a block that
/// lifts a host's block rate above the target cuts its pace at once (`gauges.rs`).
#[tokio::test(start_paused = true)]
async fn each_tick_publishes_what_the_answers_said_and_adaptive_mode_cuts_a_blocked_host() {
    let mut dispatcher = dispatcher(Config::new("gauges").adaptive(true).obey_robots(false));
    let mut live = dispatcher.live.subscribe();
    let now = Instant::now();
    let id = dispatcher.meet_host(HostKey::from("http://a.example:80"), now);
    let pace = |dispatcher: &Dispatcher<Unparsed>| dispatcher.hosts[id].controller.as_ref().map(|c| c.rps());
    assert_eq!(pace(&dispatcher), Some(4.0), "adaptive mode's slow start");
    let latency = Duration::from_millis(20);
    for blocked in [false, false, false, true] {
        let sample = Sample { blocked, follows_identity: false, sent_at: now, latency, server: None };
        dispatcher.record(id, sample, now, now);
    }
    assert_eq!(pace(&dispatcher), Some(2.0), "a block in four is over the 2% aimed for: halved");
    tokio::time::advance(adaptive::STEP).await;
    dispatcher.tick(Instant::now());
    let published = live.borrow_and_update().clone();
    assert_eq!((published.block_rate, published.pages_per_sec), (0.25, 0.3));
    let host = published.hosts.first().unwrap_or_else(|| panic!("the host is listed"));
    assert_eq!((host.host.as_str(), host.answered, host.rate_per_sec), ("http://a.example:80", 4, Some(2.0)));
}

#[cfg(feature = "render")]
mod browsers;
