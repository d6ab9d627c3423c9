//! What goes between a worker and `round.lua`: a request as the fleet stores it, the
//! round a worker sends, and the reply it gets.

use std::collections::{BTreeMap, HashMap};

use reqwest::Method;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use url::Url;

use crate::request::stored::Extra;
use crate::request::Request;
use crate::request::Ticket;
use crate::schedule::frontier::RobotsMemo;

/// A request in Redis: its URL, method, priority, depth and attempts, and the rest when
/// it has any.
#[derive(Serialize, Deserialize)]
struct Stored {
    u: String,
    m: String,
    #[serde(default)]
    p: i32,
    #[serde(default)]
    d: u32,
    #[serde(default)]
    a: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<Extra>,
}

/// The fleet's priorities sort as numbers of 53 bits (`round.lua`); wider ones are clamped.
pub(super) const PRIORITY_RANGE: i32 = 1 << 20;

pub(super) fn priority(request: &Request) -> i32 {
    request.priority().clamp(-PRIORITY_RANGE, PRIORITY_RANGE)
}

/// What a round carries to enqueue `request` of `host`: its entry in `Round::enqueue`
/// (the first 80 bits of its fingerprint, which the fleet's seen-set keeps, in hex; its
/// host; its priority) and the request itself, for `Round::requests`.
pub(super) fn enqueued(request: &Request, host: &str) -> ((String, String, i32), String) {
    let print = format!("{:020x}", request.fingerprint().0 >> 48);
    ((print, host.to_owned(), priority(request)), encode(request))
}

/// A request as the fleet stores it: the common one (a GET of priority 0, never tried,
/// with nothing beyond its URL) as `DEPTH URL`, a third of its JSON; any other as JSON.
pub(super) fn encode(request: &Request) -> String {
    let extra = Extra::of(request);
    if request.method() == Method::GET && request.priority() == 0 && request.attempts == 0 && extra.is_none()
    {
        return format!("{} {}", request.depth(), request.url());
    }
    let stored = Stored {
        u: request.url().to_string(),
        m: request.method().to_string(),
        p: request.priority(),
        d: request.depth(),
        a: request.attempts,
        x: extra,
    };
    serde_json::to_string(&stored).unwrap_or_default()
}

/// The request leased as `id`, with its ticket; a message when it does not read back.
pub(super) fn decode(id: i64, json: &str) -> Result<Request, String> {
    if let Some((depth, url)) = json.split_once(' ').filter(|_| !json.starts_with('{')) {
        let url = Url::parse(url).map_err(|e| format!("request {id}: URL {url:?}: {e}"))?;
        let mut request = Request::new(url);
        request.depth = depth.parse().map_err(|_| format!("request {id}: depth {depth:?}"))?;
        request.ticket = Some(Ticket(id));
        return Ok(request);
    }
    let stored: Stored = serde_json::from_str(json).map_err(|e| format!("request {id}: {e}"))?;
    let url = Url::parse(&stored.u).map_err(|e| format!("request {id}: URL {:?}: {e}", stored.u))?;
    let method = Method::from_bytes(stored.m.as_bytes())
        .map_err(|_| format!("request {id}: method {:?}", stored.m))?;
    let mut request = Request::new(url).with_method(method);
    request.priority = stored.p;
    request.depth = stored.d;
    request.attempts = stored.a;
    if let Some(extra) = stored.x {
        extra.apply(&mut request).map_err(|problem| format!("request {id}: {problem}"))?;
    }
    request.ticket = Some(Ticket(id));
    Ok(request)
}

/// A robots.txt answer as the fleet keeps it.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StoredRobots {
    Answer { status: u16, body: String },
    Unavailable { unavailable: String },
}

pub(super) fn encode_robots(memo: &RobotsMemo) -> String {
    let stored = match memo {
        RobotsMemo::Answer { status, body } => {
            StoredRobots::Answer { status: *status, body: String::from_utf8_lossy(body).into_owned() }
        }
        RobotsMemo::Unavailable(reason) => StoredRobots::Unavailable { unavailable: reason.clone() },
    };
    serde_json::to_string(&stored).unwrap_or_default()
}

pub(super) fn decode_robots(json: &str) -> Option<RobotsMemo> {
    Some(match serde_json::from_str(json).ok()? {
        StoredRobots::Answer { status, body } => RobotsMemo::Answer { status, body: body.into() },
        StoredRobots::Unavailable { unavailable } => RobotsMemo::Unavailable(unavailable),
    })
}

/// What a worker did since its last round, and what it asks for; `round.lua` reads it.
#[derive(Debug, Default, Serialize)]
pub(super) struct Round {
    /// The worker's count of its rounds: a round sent again after a lost reply carries
    /// the same number, and gets the reply Redis kept.
    pub(super) number: u64,
    pub(super) lease_ms: u64,
    /// How long a worker may go unheard before it is taken for dead.
    pub(super) dead_ms: u64,
    /// Requests it can take.
    pub(super) want: usize,
    /// The crawl's least time between two starts (rpm/rps), 0 for none.
    pub(super) spacing_ms: f64,
    /// Slots per host, for hosts without a limit of their own.
    pub(super) per_host: usize,
    /// How far ahead a start may be granted.
    pub(super) horizon_ms: u64,
    pub(super) obey_robots: bool,
    /// Renew every lease the worker holds.
    pub(super) renew: bool,
    /// The worker is stopping: if nothing is left anywhere, the crawl is done.
    pub(super) ending: bool,
    /// `[id, pause ms, host]`: fetched, given up or dropped; its host's slot rests for
    /// the pause.
    pub(super) finish: Vec<(i64, u64, String)>,
    /// `[id, due in ms, request, pause ms]`: a retry.
    pub(super) defer: Vec<(i64, u64, String, u64)>,
    /// `[id]`: leased and never sent, back to its queue.
    pub(super) give_back: Vec<(i64,)>,
    /// `[file, bytes, items, from bytes, from items]`: this worker's output file
    /// (`HOST:PATH`), how much of it holds the items of the requests this round finishes
    /// and those before, committed with them, and where the round's own stretch of it
    /// starts (the worker's commit before), for `round.lua` to leave out when the round
    /// is void.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output: Option<(String, u64, u64, u64, u64)>,
    /// `[file, from, to, items]`: the stretch of a void round that Redis left for this
    /// worker to cut out of its file, which it could not (it stopped first): a gap for
    /// the fleet's count and merge to leave out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) gap: Option<(String, u64, u64, u64)>,
    /// `[fingerprint, host, priority]`; the requests themselves are in `requests`.
    pub(super) enqueue: Vec<(String, String, i32)>,
    /// The request of each of `enqueue`, as `encode` wrote it: sent as arguments of their
    /// own after the round's JSON, so that neither side escapes nor reads them there.
    #[serde(skip)]
    pub(super) requests: Vec<String>,
    /// `[host, answer, slots (1 under a Crawl-delay, else 0)]`.
    pub(super) robots: Vec<(String, String, usize)>,
    /// `[host, ms]`: hold the host back (a 429, adaptive mode's breaker).
    pub(super) pause: Vec<(String, u64)>,
    /// Hosts that refused this worker's own client (`impersonate = "auto"`): every worker
    /// sends them a browser's wire from then on.
    pub(super) refusing: Vec<String>,
    /// `[host, slots, requests a second, proposal]`: adaptive mode's limits of the host for
    /// the fleet (`Proposal` as a number: 0 first, 1 raise, 2 cut).
    pub(super) adapt: Vec<(String, usize, f64, u8)>,
    /// How long the fleet holds a host's cut limits before a raise, in ms.
    pub(super) adapt_hold_ms: u64,
    /// `[host, answered, blocked]`: answers since they were last sent, for the fleet's
    /// gauge.
    pub(super) answers: Vec<(String, u64, u64)>,
    /// Hosts whose block rate the worker shows, answered with the heartbeat.
    pub(super) gauge_hosts: Vec<String>,
    /// The gauges' window, in whole seconds.
    pub(super) window_s: u64,
    /// JSON lines of requests given up.
    pub(super) failures: Vec<String>,
    /// Counters to add to the fleet's totals, by the names of the counter table (and
    /// `failure:REASON`, `status:CODE`, `proxy_bytes`).
    pub(super) stats: BTreeMap<String, u64>,
    /// The worker's heartbeat (JSON), about once a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) beat: Option<String>,
    /// Changes to the hosts of a part the worker does not lease from (`parts.rs`), and
    /// nothing else.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) visit: bool,
    /// The crawl is split in parts: its rate bucket is in the crawl's slot, and a part
    /// found empty is not the crawl done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) parted: bool,
    /// With `parted` under a rate ceiling: the starts reserved in the crawl's slot, in ms
    /// from then, for this round's leases and claims in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tokens: Option<Vec<f64>>,
}

impl Round {
    /// Whether it changes the crawl in Redis besides leasing; the counts aside, which wait
    /// for the heartbeat.
    pub(super) fn has_changes(&self) -> bool {
        !(self.finish.is_empty()
            && self.defer.is_empty()
            && self.give_back.is_empty()
            && self.output.is_none()
            && self.gap.is_none()
            && self.enqueue.is_empty()
            && self.robots.is_empty()
            && self.pause.is_empty()
            && self.refusing.is_empty()
            && self.adapt.is_empty()
            && self.failures.is_empty())
    }

    /// Take the changes, leaving the settings; the counts (answers for the gauge, the
    /// totals) only `with_counts`: they go with the heartbeat, about once a second, not
    /// with every round.
    pub(super) fn take_changes(&mut self, with_counts: bool) -> Round {
        let (answers, stats) = if with_counts {
            (std::mem::take(&mut self.answers), std::mem::take(&mut self.stats))
        } else {
            Default::default()
        };
        Round {
            finish: std::mem::take(&mut self.finish),
            defer: std::mem::take(&mut self.defer),
            give_back: std::mem::take(&mut self.give_back),
            output: self.output.take(),
            gap: self.gap.take(),
            enqueue: std::mem::take(&mut self.enqueue),
            requests: std::mem::take(&mut self.requests),
            robots: std::mem::take(&mut self.robots),
            pause: std::mem::take(&mut self.pause),
            refusing: std::mem::take(&mut self.refusing),
            adapt: std::mem::take(&mut self.adapt),
            answers,
            failures: std::mem::take(&mut self.failures),
            stats,
            ..Round::default()
        }
    }

    /// Add `later`'s changes after these.
    pub(super) fn append(&mut self, mut later: Round) {
        self.finish.append(&mut later.finish);
        self.defer.append(&mut later.defer);
        self.give_back.append(&mut later.give_back);
        if let Some(mut output) = later.output {
            // One stretch from the first of the two commits' start to the later's end.
            if let Some(earlier) = &self.output {
                (output.3, output.4) = (earlier.3, earlier.4);
            }
            self.output = Some(output);
        }
        if later.gap.is_some() {
            self.gap = later.gap;
        }
        self.enqueue.append(&mut later.enqueue);
        self.requests.append(&mut later.requests);
        self.robots.append(&mut later.robots);
        self.pause.append(&mut later.pause);
        self.refusing.append(&mut later.refusing);
        self.adapt.append(&mut later.adapt);
        for (host, answered, blocked) in later.answers {
            match self.answers.iter_mut().find(|(known, _, _)| *known == host) {
                Some((_, a, b)) => {
                    *a += answered;
                    *b += blocked;
                }
                None => self.answers.push((host, answered, blocked)),
            }
        }
        self.failures.append(&mut later.failures);
        for (name, n) in later.stats {
            *self.stats.entry(name).or_default() += n;
        }
    }
}

/// What `round.lua` answers: JSON, then a line for each request leased.
#[derive(Debug, Deserialize)]
pub(super) struct Reply {
    /// `[host, start in ms, id]`.
    #[serde(deserialize_with = "list")]
    pub(super) leased: Vec<(String, f64, i64)>,
    /// The request of each of `leased`, as `encode` wrote it.
    #[serde(skip)]
    pub(super) requests: Vec<String>,
    /// `[host, start in ms]`: hosts whose robots.txt this worker fetches for the fleet.
    #[serde(deserialize_with = "list")]
    pub(super) claims: Vec<(String, f64)>,
    /// robots.txt answers of hosts it is leased requests of, the first time.
    #[serde(default, deserialize_with = "map")]
    pub(super) answers: HashMap<String, String>,
    /// The fleet's queues, given when the round leased nothing, with the heartbeat and
    /// in the last round: a worker busy with what it leased has no use for them.
    #[serde(default)]
    pub(super) queues: Option<Queues>,
    /// With the heartbeat: the fleet's answers and blocks in the gauges' window, in all
    /// and for the hosts asked about (`{host: [answered, blocked]}`).
    #[serde(default)]
    pub(super) gauge: Option<Gauge>,
    /// Requests of workers not heard from, queued again.
    pub(super) reaped: u64,
    /// When Redis wrote it, by its clock: `[seconds, microseconds]`.
    pub(super) clock: (i64, i64),
    /// The crawl's count of rounds, this one included.
    pub(super) epoch: u64,
    /// Why a worker found that Redis lost part of the crawl, once one has.
    #[serde(default)]
    pub(super) broken: Option<String>,
    /// How many of the round's `tokens` its leases and claims took.
    #[serde(default)]
    pub(super) used: usize,
    /// The requests of a void round, queued again: one of them was no longer this
    /// worker's, so the stretch of output holding their items is left out.
    #[serde(default)]
    pub(super) void: u64,
    /// The void round's stretch of output is not committed: this worker is to cut it out
    /// of its file before it commits more (`round.lua`).
    #[serde(default)]
    pub(super) cut: bool,
}

/// The fleet's queues as a round saw them.
#[derive(Debug, Default, Deserialize, Clone, Copy)]
pub(super) struct Queues {
    pub(super) queued: u64,
    pub(super) deferred: u64,
    pub(super) leases: u64,
    pub(super) mine: u64,
    /// When something may be leased next, in ms; negative for nothing known.
    pub(super) wake_ms: f64,
    /// Of a crawl in parts: its parts were not yet seen empty twice in a row with nothing
    /// queued between, so they may still hold work.
    #[serde(skip)]
    pub(super) unsettled: bool,
}

impl Reply {
    /// Read the script's answer; a message when it does not read.
    pub(super) fn read(text: &str) -> Result<Reply, String> {
        let mut lines = text.split('\n');
        let head = lines.next().unwrap_or_default();
        let mut reply: Reply =
            serde_json::from_str(head).map_err(|e| format!("a reply that does not read: {e}"))?;
        reply.requests = lines.map(str::to_owned).collect();
        if reply.requests.len() != reply.leased.len() {
            return Err(format!(
                "a reply that does not read: {} requests leased, {} sent",
                reply.leased.len(),
                reply.requests.len()
            ));
        }
        Ok(reply)
    }
}

/// The fleet's answers in the gauges' window.
#[derive(Debug, Deserialize)]
pub(super) struct Gauge {
    pub(super) answered: u64,
    pub(super) blocked: u64,
    /// Every worker's bytes through the proxy gateways, as reported so far.
    #[serde(default)]
    pub(super) proxy_bytes: u64,
    /// Adaptive mode's limits of the hosts asked about, for the fleet: `{host: [slots,
    /// requests a second]}`.
    #[serde(default, deserialize_with = "limits")]
    pub(super) limits: HashMap<String, (usize, f64)>,
    #[serde(default, deserialize_with = "counts")]
    pub(super) hosts: HashMap<String, (u64, u64)>,
    /// Every host that refused a worker's own client.
    #[serde(default, deserialize_with = "list")]
    pub(super) refusing: Vec<String>,
}

fn counts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<HashMap<String, (u64, u64)>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Array(list) if list.is_empty() => Ok(HashMap::new()),
        value => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

fn limits<'de, D: Deserializer<'de>>(deserializer: D) -> Result<HashMap<String, (usize, f64)>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Array(list) if list.is_empty() => Ok(HashMap::new()),
        value => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

/// Lua's JSON writes an empty list as `{}`.
fn list<'de, D: Deserializer<'de>, T: DeserializeOwned>(deserializer: D) -> Result<Vec<T>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Object(map) if map.is_empty() => Ok(Vec::new()),
        value => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

/// And an empty map as `[]`, when it comes to that.
fn map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<HashMap<String, String>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Array(list) if list.is_empty() => Ok(HashMap::new()),
        value => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_request_comes_back_whole_with_its_lease_as_ticket() {
        let mut request = Request::get("https://shop.example/p?id=3")
            .unwrap()
            .with_priority(4)
            .with_meta("category", "tea")
            .with_meta("note", "two\nlines")
            .with_session("s1");
        request.attempts = 2;
        request.last_backoff = Duration::from_millis(700);
        request.sitemap = true;
        request.chain = vec![
            Url::parse("https://shop.example/latest").unwrap(),
            Url::parse("https://shop.example/moved").unwrap(),
        ];
        let encoded = encode(&request);
        assert!(!encoded.contains('\n'), "a request is one line of the script's reply");
        let back = decode(42, &encoded).unwrap();
        assert_eq!(back.url(), request.url());
        assert_eq!((back.priority(), back.attempts, back.ticket), (4, 2, Some(Ticket(42))));
        assert_eq!((back.meta(), back.session()), (request.meta(), Some("s1")));
        assert_eq!(back.last_backoff, Duration::from_millis(700));
        assert!(back.is_sitemap(), "a sitemap is read as one by whichever worker leases it");
        assert_eq!(back.chain, request.chain, "a loop is told across workers");
        assert!(decode(1, "{\"u\":\"not a url\",\"m\":\"GET\"}").is_err_and(|e| e.contains("request 1")));
    }

    #[test]
    fn a_plain_get_is_stored_as_its_depth_and_url_and_any_other_as_json() {
        let mut plain = Request::get("https://shop.example/p/7?page=2").unwrap();
        plain.depth = 3;
        assert_eq!(encode(&plain), "3 https://shop.example/p/7?page=2");
        let back = decode(9, &encode(&plain)).unwrap();
        assert_eq!((back.url(), back.depth(), back.priority(), back.attempts), (plain.url(), 3, 0, 0));
        assert_eq!((back.fingerprint(), back.ticket()), (plain.fingerprint(), Some(Ticket(9))));

        let urgent = plain.clone().with_priority(2);
        assert!(encode(&urgent).starts_with('{'), "{}", encode(&urgent));
        assert_eq!(decode(9, &encode(&urgent)).unwrap().priority(), 2);
        let mut retried = plain;
        retried.attempts = 1;
        assert_eq!(decode(9, &encode(&retried)).unwrap().attempts, 1);
        assert!(decode(9, "x https://shop.example/").unwrap_err().contains("depth"));
    }

    #[test]
    fn a_post_comes_back_with_its_body_and_fingerprint() {
        let request =
            Request::post_json("https://shop.example/api/search", &serde_json::json!({"q": "tea"})).unwrap();
        let back = decode(7, &encode(&request)).unwrap();
        assert_eq!((back.method(), back.body()), (request.method(), request.body()));
        assert_eq!(back.headers()["content-type"], "application/json");
        assert_eq!(back.fingerprint(), request.fingerprint());
    }

    #[test]
    fn empty_lists_from_lua_read_as_empty() {
        let reply = Reply::read(
            r#"{"leased":{},"claims":{},"answers":{},"queues":{"queued":3,"deferred":0,"leases":1,"mine":0,"wake_ms":-1},"reaped":0,"clock":[1,2],"epoch":1}"#,
        )
        .unwrap();
        assert!(reply.leased.is_empty() && reply.claims.is_empty() && reply.answers.is_empty());
        assert_eq!(reply.queues.map(|queues| queues.queued), Some(3));
        // A round that leased: no counts.
        let head = r#"{"leased":[["http://a:80",12.5,7],["http://a:80",13,8]],"claims":[["http://b:80",0]],"answers":{"http://a:80":"x"},"reaped":0,"clock":[1,2],"epoch":1}"#;
        let reply = Reply::read(&format!("{head}\n{{\"u\":\"a\"}}\n{{}}")).unwrap();
        assert!(reply.queues.is_none());
        assert_eq!(reply.leased[1].2, 8);
        assert_eq!(reply.requests, ["{\"u\":\"a\"}", "{}"]);
        assert_eq!(reply.claims, [("http://b:80".to_owned(), 0.0)]);
        assert!(Reply::read(head).is_err_and(|e| e.contains("2 requests leased, 0 sent")));
    }

    #[test]
    fn counts_wait_for_the_heartbeat_and_answers_add_up_per_host() {
        let mut outbox = Round::default();
        for _ in 0..3 {
            let mut checkpoint = Round::default();
            checkpoint.answers.push(("https://a.example".into(), 2, 1));
            checkpoint.stats.insert("pages".to_owned(), 2);
            outbox.append(checkpoint);
        }
        assert!(!outbox.has_changes(), "counts alone are no reason for a round");
        let round = outbox.take_changes(false);
        assert!(round.answers.is_empty() && round.stats.is_empty());
        let beat = outbox.take_changes(true);
        assert_eq!(beat.answers, vec![("https://a.example".to_owned(), 6, 3)]);
        assert_eq!(beat.stats.get("pages"), Some(&6));
    }

    #[test]
    fn robots_answers_round_trip() {
        let memo = RobotsMemo::Answer { status: 200, body: "User-agent: *\nDisallow: /x".into() };
        assert_eq!(decode_robots(&encode_robots(&memo)), Some(memo));
        let gone = RobotsMemo::Unavailable("503".into());
        assert_eq!(decode_robots(&encode_robots(&gone)), Some(gone));
    }
}
