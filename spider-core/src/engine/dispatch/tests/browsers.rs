//! The browsers' requests (`subrequests.rs`), asked as a page's task asks and admitted on
//! the same paused clock: scope, robots.txt, `per_host` with a page's own slot, and the
//! rate ceiling hold for them as for any request.

use tokio::sync::oneshot;
use url::Url;

use super::*;
use crate::engine::protocol::{Ask, Heard, PageSlot, Pass};

/// Ask for `url` on behalf of the page on `page`: what the dispatcher answers comes on
/// the receiver.
fn ask(dispatcher: &mut Dispatcher<Unparsed>, url: &str, page: Option<PageSlot>) -> oneshot::Receiver<Pass> {
    let (reply, answer) = oneshot::channel();
    let url = Url::parse(url).unwrap_or_else(|e| panic!("{e}"));
    dispatcher.hear(Heard::Ask(Ask { url, page, reply }), Instant::now());
    answer
}

/// What the dispatcher answered so far: `None` while the ask waits.
fn answered(answer: &mut oneshot::Receiver<Pass>) -> Option<Pass> {
    match answer.try_recv() {
        Ok(pass) => Some(pass),
        Err(oneshot::error::TryRecvError::Empty) => None,
        Err(oneshot::error::TryRecvError::Closed) => panic!("the ask was dropped unanswered"),
    }
}

fn granted(pass: Option<Pass>) -> crate::engine::protocol::Permit {
    match pass {
        Some(Pass::Go(permit)) => permit,
        Some(Pass::Refused) => panic!("refused"),
        None => panic!("still waiting"),
    }
}

/// A host whose robots.txt `body` is known, met as the crawl meets hosts.
fn known_host(dispatcher: &mut Dispatcher<Unparsed>, key: &str, body: &'static str) -> HostId {
    let now = Instant::now();
    let id = dispatcher.meet_host(HostKey::from(key), now);
    let token = dispatcher.shared.robots_token.clone();
    dispatcher.hosts.learn_robots(id, RobotsRules::from_answer(200, body.as_bytes(), &token), now);
    id
}

#[tokio::test(start_paused = true)]
async fn a_browsers_request_outside_the_scope_or_disallowed_by_robots_txt_is_refused() {
    let mut dispatcher = dispatcher(Config::new("scope").allowed_domain("a.example"));
    known_host(&mut dispatcher, "http://a.example:80", "User-agent: *\nDisallow: /private/\n");
    let mut elsewhere = ask(&mut dispatcher, "http://tracker.example/pixel.gif", None);
    assert!(matches!(answered(&mut elsewhere), Some(Pass::Refused)), "refused as it is heard");
    let mut disallowed = ask(&mut dispatcher, "http://a.example/private/data.json", None);
    let mut allowed = ask(&mut dispatcher, "http://a.example/app.js", None);
    assert_eq!(dispatcher.admit_asks(Instant::now()), None);
    assert!(matches!(answered(&mut disallowed), Some(Pass::Refused)));
    let permit = granted(answered(&mut allowed));
    assert!(!permit.riding, "on a slot of its own");
}

#[tokio::test(start_paused = true)]
async fn the_robots_txt_of_a_host_met_through_the_browser_goes_before_its_request() {
    let mut dispatcher = dispatcher(Config::new("robots-first"));
    // Nothing listens on the discard port: the robots.txt task, were it run, fails locally.
    let mut script = ask(&mut dispatcher, "http://127.0.0.1:9/app.js", None);
    dispatcher.admit_asks(Instant::now());
    let id = dispatcher.hosts.id_of("http://127.0.0.1:9").unwrap_or_else(|| panic!("the host is met"));
    assert!(matches!(dispatcher.hosts[id].robots, RobotsState::Fetching));
    assert_eq!(dispatcher.in_flight, 1, "its robots.txt is in flight");
    assert!(answered(&mut script).is_none(), "the request waits for robots.txt");
}

#[tokio::test(start_paused = true)]
async fn with_per_host_one_a_page_lends_its_slot_to_one_of_its_requests_at_a_time() {
    let mut dispatcher = dispatcher(Config::new("per-host").per_host(1).obey_robots(false));
    let id = known_host(&mut dispatcher, "http://a.example:80", "");
    let now = Instant::now();
    let page = PageSlot { host: id, lane: dispatcher.hosts.take(id, None, now) };
    let mut first = ask(&mut dispatcher, "http://a.example/app.js", Some(page));
    let mut second = ask(&mut dispatcher, "http://a.example/app.css", Some(page));
    let mut other_page = ask(&mut dispatcher, "http://a.example/other.js", None);
    dispatcher.admit_asks(now);
    let permit = granted(answered(&mut first));
    assert!(permit.riding, "on the page's own slot");
    assert!(answered(&mut second).is_none(), "one request on the page's slot at a time");
    assert!(answered(&mut other_page).is_none(), "the host's one slot is the page's");
    drop(permit);
    let freed = dispatcher.asking.next().await;
    dispatcher.hear(freed, now);
    dispatcher.admit_asks(now);
    let permit = granted(answered(&mut second));
    assert!(permit.riding);
    assert!(answered(&mut other_page).is_none());
}

#[tokio::test(start_paused = true)]
async fn the_browsers_requests_wait_for_the_crawls_rate_ceiling() {
    let mut dispatcher = dispatcher(Config::new("rate").rpm(60).per_host(4).obey_robots(false));
    known_host(&mut dispatcher, "http://a.example:80", "");
    let now = Instant::now();
    let mut first = ask(&mut dispatcher, "http://a.example/1.js", None);
    let mut second = ask(&mut dispatcher, "http://a.example/2.js", None);
    let due = dispatcher.admit_asks(now).unwrap_or_else(|| panic!("the second waits for a token"));
    let _first = granted(answered(&mut first));
    assert!(answered(&mut second).is_none());
    assert!(due > now && due <= now + Duration::from_secs(1), "a token a second: {:?}", due - now);
    tokio::time::advance(due - now).await;
    assert_eq!(dispatcher.admit_asks(Instant::now()), None);
    granted(answered(&mut second));
}
