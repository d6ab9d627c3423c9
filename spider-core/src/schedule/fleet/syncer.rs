//! The worker's side of the conversation with Redis: a task that sends the dispatcher's
//! changes and asks for leases in one script call per round, renews the worker's leases,
//! and rides out a lost connection.
//!
//! A busy worker sends a round every [`ROUND_PACE`], sooner when its buffer of leased
//! requests runs low, so the changes of several requests travel together: the dispatcher
//! never waits for Redis, and Redis sees one call per batch.

use std::time::Duration;

use redis::Script;
use tokio::time::Instant;

use super::clock::RedisClock;
use super::connection::{Connection, Redis};
use super::frontier::Link;
use super::wire::{self, Reply, Round};
use spider_settings::RedisAddress as Address;

use super::{round_call, ROUND};
use crate::error::Error;
use crate::request::host::HostKey;
use crate::schedule::frontier::FleetAnswers;

/// How often a busy worker sends a round: a round costs Redis some twenty commands besides
/// its pages' own, so a round of four pages (every 10 ms at 600 pages/s) cost 12 commands a
/// page where one of ten costs 8. The lookahead (half the concurrency) covers the wait.
const ROUND_PACE: Duration = Duration::from_millis(25);
/// Rounds with nothing to send and no room for requests: the heartbeat.
const IDLE_ROUND: Duration = Duration::from_secs(1);
/// The longest wait between rounds while the worker has room for requests and the fleet
/// has nothing to lease: links other workers queue are found this soon.
const HUNGRY_ROUND: Duration = Duration::from_millis(50);
/// How far ahead of its start a request may be leased: covers a round's trip, so a worker
/// under a rate ceiling has its next start in hand when the current one goes. Short,
/// since a request leased holds a slot of its host while it waits.
pub(super) const HORIZON: Duration = Duration::from_millis(50);

/// How long a worker may go unheard by Redis before the fleet takes it for dead and its
/// requests back: ten idle rounds.
pub(super) const DEAD_AFTER: Duration = Duration::from_secs(10);
/// Reconnection backoff: doubled from the first to the last.
const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// When the round after this one goes.
enum Next {
    /// Changes to send or requests coming: at the pace, or at once when urgent.
    Paced,
    /// After this wait, or when the dispatcher has something to send.
    After(Duration),
    /// The fleet had nothing this worker could lease: after this wait, or when the
    /// dispatcher has something to send, but not when it only has more room (a request
    /// finished): the fleet is asked again at the wait's end, not once a request.
    Hungry(Duration),
}

/// A round on its way, kept until Redis answers it.
struct Sent {
    /// When it was first sent: Redis applied it then or later.
    at: Instant,
    json: String,
    /// The requests it enqueues, each an argument after the JSON.
    requests: Vec<String>,
    closing: bool,
    renew: bool,
    beat: bool,
}

/// What the syncer needs to talk for this worker.
pub(super) struct Syncer {
    pub(super) link: std::sync::Arc<Link>,
    pub(super) redis: Redis,
    pub(super) connection: Connection,
    pub(super) address: Address,
    pub(super) prefix: String,
    pub(super) worker: String,
    pub(super) lease: Duration,
    pub(super) clock: RedisClock,
    /// The crawl's count of rounds in the last reply (0 before the first).
    pub(super) epoch: u64,
}

impl Syncer {
    /// One call of the round script; its reply, once it may be acted on (on a cluster,
    /// copied to a replica).
    async fn send(&mut self, script: &Script, sent: &Sent) -> redis::RedisResult<String> {
        let call = round_call(script, &self.prefix, &self.worker, &sent.json, &sent.requests);
        let text = call.invoke_async::<String>(&mut self.connection).await?;
        self.connection.replicated(&format!("{}:meta", self.prefix)).await?;
        Ok(text)
    }

    /// Run rounds until the dispatcher has ended and the last round, which gives back
    /// what the worker still held, has reached Redis.
    pub(super) async fn run(mut self) {
        let script = Script::new(ROUND);
        let mut last_renew = Instant::now();
        let mut last_beat: Option<Instant> = None;
        let mut reconnect_wait = RECONNECT_FIRST;
        let mut lost_since: Option<Instant> = None;
        // A round whose reply was lost is sent again as it was, under the same number:
        // Redis answers a number it has seen with the reply it kept, so a round that was
        // applied is not applied twice, and its leases are not lost.
        let mut number: u64 = 0;
        let mut unanswered: Option<Sent> = None;
        loop {
            let now = Instant::now();
            let sent = match unanswered.take() {
                Some(sent) => sent,
                None => {
                    number += 1;
                    let renew = now.duration_since(last_renew) >= self.lease / 4;
                    let beat = last_beat.is_none_or(|at| now.duration_since(at) >= IDLE_ROUND);
                    let (mut round, closing) = self.next_round(renew, beat);
                    round.number = number;
                    let json = serde_json::to_string(&round).unwrap_or_default();
                    Sent { at: now, json, requests: round.requests, closing, renew, beat }
                }
            };
            let reply = match self.send(&script, &sent).await {
                Ok(text) => Reply::read(&text),
                Err(error) => Err(error.to_string()),
            };
            match reply {
                Ok(reply) => {
                    if let Some(problem) = self.lost_writes(&reply) {
                        self.stop_the_fleet(problem, reply.broken.is_none()).await;
                        return;
                    }
                    if let Some(since) = lost_since.take() {
                        tracing::warn!(target: "spiderling", redis = %self.address, down = ?since.elapsed(), "Redis is back: admitting again");
                    }
                    reconnect_wait = RECONNECT_FIRST;
                    if sent.renew {
                        last_renew = sent.at;
                    }
                    self.hold_until(last_renew, sent.at);
                    if sent.beat {
                        last_beat = Some(now);
                    }
                    let next = self.absorb(reply);
                    if sent.closing {
                        return;
                    }
                    self.wait(next, now).await;
                }
                Err(problem) => {
                    let closing = sent.closing;
                    unanswered = Some(sent);
                    self.lost(&problem, &mut lost_since);
                    if closing && lost_since.is_some_and(|since| since.elapsed() > self.lease) {
                        // Its leases have run out by now: the fleet has them back anyway.
                        return;
                    }
                    tokio::time::sleep(reconnect_wait).await;
                    reconnect_wait = (reconnect_wait * 2).min(RECONNECT_MAX);
                    if !self.reconnect().await {
                        return;
                    }
                }
            }
        }
    }

    /// Until when every lease this worker holds is surely still its own, after an
    /// answered round: its last renewal's lease, and no later than the fleet would take
    /// it for dead. Both counted from when the rounds were sent, which Redis applied then
    /// or later. A reply that comes after the last such moment may follow a time in which
    /// the fleet took the worker's requests back (it was paused, or cut off): what it held
    /// is then lapsed, for the dispatcher's side to drop.
    fn hold_until(&self, renewed: Instant, heard: Instant) {
        let until = (renewed + self.lease).min(heard + DEAD_AFTER);
        let mut exchange = self.link.lock();
        if exchange.held_until.is_some_and(|held| Instant::now() > held) {
            exchange.lapsed = true;
            // Leased before the gap, and not yet taken by the dispatcher's side.
            let back: Vec<(i64,)> = exchange
                .arrived
                .drain(..)
                .filter_map(|(_, _, request)| request.ticket)
                .map(|t| (t.0,))
                .collect();
            exchange.outbox.give_back.extend(back);
        }
        exchange.held_until = Some(until);
    }

    /// Why the crawl cannot go on, when Redis has lost writes: its count of rounds went
    /// back, or another worker found so.
    fn lost_writes(&mut self, reply: &Reply) -> Option<String> {
        if let Some(why) = &reply.broken {
            return Some(why.clone());
        }
        if reply.epoch <= self.epoch {
            return Some(format!(
                "Redis lost part of this crawl: it answered round {} of the crawl after round {} (restored from an \
                 older snapshot, restarted empty and seeded again, or a replica promoted without the last \
                 writes), so what it holds no longer matches what the workers wrote, and every worker stops; \
                 the outputs keep the items written so far; crawl again under another crawl_id",
                reply.epoch, self.epoch
            ));
        }
        self.epoch = reply.epoch;
        None
    }

    /// End the crawl for this worker with `problem`, and, when it found it first
    /// (`tell`), for every worker: the next round of each, and each worker that joins,
    /// reads it from the crawl's record.
    async fn stop_the_fleet(&mut self, problem: String, tell: bool) {
        if tell {
            let told: redis::RedisResult<()> = redis::cmd("HSETNX")
                .arg(format!("{}:meta", self.prefix))
                .arg("broken")
                .arg(&problem)
                .query_async(&mut self.connection)
                .await;
            if let Err(error) = told {
                tracing::warn!(target: "spiderling", redis = %self.address, %error, "could not tell the other workers that Redis lost writes");
            }
        }
        let mut exchange = self.link.lock();
        exchange.fatal.get_or_insert(Error::Fleet { address: self.address.to_string(), message: problem });
        drop(exchange);
        self.link.to_dispatcher.notify_one();
    }

    /// The changes to send with this round's settings, and whether it is the last.
    fn next_round(&self, renew: bool, beat: bool) -> (Round, bool) {
        let mut exchange = self.link.lock();
        let closing = exchange.closing;
        let mut round = exchange.outbox.take_changes(beat || closing);
        let settings = &exchange.outbox;
        round.lease_ms = settings.lease_ms;
        round.dead_ms = settings.dead_ms;
        round.spacing_ms = settings.spacing_ms;
        round.per_host = settings.per_host;
        round.horizon_ms = settings.horizon_ms;
        round.obey_robots = settings.obey_robots;
        round.window_s = settings.window_s;
        round.adapt_hold_ms = settings.adapt_hold_ms;
        round.renew = renew;
        round.ending = closing;
        round.want = if closing { 0 } else { exchange.want };
        if beat {
            round.gauge_hosts = exchange.gauge_hosts.clone();
        }
        if beat || closing {
            let counts = &exchange.counts;
            round.beat = Some(
                serde_json::json!({
                    "pid": std::process::id(),
                    "at_ms": crate::observe::tables::unix_ms(std::time::SystemTime::now()),
                    "requests": counts.requests,
                    "pages": counts.pages,
                    "items": counts.items,
                    "blocked": counts.blocked,
                    "failures": counts.failures(),
                    "elapsed_secs": counts.elapsed_secs,
                    "connected": exchange.connected,
                    "ended": closing,
                })
                .to_string(),
            );
        }
        exchange.sending = round.has_changes();
        (round, closing)
    }

    /// Take in a reply: leases, robots.txt answers and claims to the dispatcher; the
    /// fleet's view. Returns when the next round is due.
    fn absorb(&mut self, reply: Reply) -> Next {
        let received = Instant::now();
        let (seconds, micros) = reply.clock;
        let written = seconds.saturating_mul(1_000_000).saturating_add(micros);
        self.clock.observe(written, received);
        // Redis's offsets from the moment it wrote the reply, as instants here.
        let start_of = |start_ms: f64| {
            let start_us = written.saturating_add((start_ms * 1000.0) as i64);
            self.clock.local(start_us).unwrap_or(received + millis(start_ms))
        };
        let leased_any = !reply.leased.is_empty();
        let mut arrived = Vec::with_capacity(reply.leased.len());
        for ((host, start_ms, id), json) in reply.leased.into_iter().zip(&reply.requests) {
            match wire::decode(id, json) {
                Ok(request) => {
                    let start = start_of(start_ms);
                    arrived.push((HostKey::from(host), start, request));
                }
                Err(problem) => {
                    tracing::error!(target: "spiderling", %problem, "a request in Redis does not read back; skipped")
                }
            }
        }
        if reply.reaped > 0 {
            tracing::info!(target: "spiderling", requests = reply.reaped, "took back the requests of workers not heard from");
        }
        let mut exchange = self.link.lock();
        let taken = arrived.len() + reply.claims.len();
        exchange.want = exchange.want.saturating_sub(taken);
        exchange.arrived.extend(arrived);
        let claims =
            reply.claims.into_iter().map(|(host, start_ms)| (HostKey::from(host), start_of(start_ms)));
        exchange.claims.extend(claims);
        for (host, json) in reply.answers {
            match wire::decode_robots(&json) {
                Some(memo) => exchange.answers.push((HostKey::from(host), memo)),
                None => {
                    tracing::error!(target: "spiderling", %host, "a robots.txt answer in Redis does not read back")
                }
            }
        }
        if let Some(gauge) = reply.gauge {
            exchange.fleet_proxy_bytes = Some(gauge.proxy_bytes);
            exchange.fleet_limits = gauge.limits;
            exchange.refusing = gauge.refusing;
            exchange.gauge =
                Some(FleetAnswers { answered: gauge.answered, blocked: gauge.blocked, hosts: gauge.hosts });
        }
        if reply.queues.is_some() {
            exchange.view = reply.queues;
        }
        exchange.sending = false;
        exchange.connected = true;
        let busy = exchange.outbox.has_changes() || exchange.closing;
        let hungry = exchange.want > 0;
        drop(exchange);
        self.link.to_dispatcher.notify_one();
        if busy || (hungry && leased_any) {
            Next::Paced
        } else if hungry {
            let wake_ms = reply.queues.map_or(-1.0, |queues| queues.wake_ms);
            let wake = if wake_ms < 0.0 { HUNGRY_ROUND } else { millis(wake_ms) };
            // Not sooner: a host may be ready for the fleet and not for this worker, whose
            // share of its slots is taken.
            Next::Hungry(wake.clamp(Duration::from_millis(5), HUNGRY_ROUND))
        } else {
            Next::After(IDLE_ROUND)
        }
    }

    /// Sleep until the next round is due: a paced one [`ROUND_PACE`] after the last was
    /// sent, or when it turns urgent; a hungry one when the dispatcher has changes for it;
    /// any other when the dispatcher has anything for it.
    async fn wait(&self, next: Next, sent_at: Instant) {
        match next {
            Next::Paced => {
                let due = sent_at + ROUND_PACE;
                while !self.link.lock().urgent() {
                    tokio::select! {
                        () = self.link.to_syncer.notified() => {}
                        () = tokio::time::sleep_until(due) => return,
                    }
                }
            }
            Next::After(wait) => {
                tokio::select! {
                    () = self.link.to_syncer.notified() => {}
                    () = tokio::time::sleep(wait) => {}
                }
            }
            Next::Hungry(wait) => {
                let due = Instant::now() + wait;
                loop {
                    tokio::select! {
                        () = self.link.to_syncer.notified() => {
                            let exchange = self.link.lock();
                            if exchange.outbox.has_changes() || exchange.closing {
                                return;
                            }
                        }
                        () = tokio::time::sleep_until(due) => return,
                    }
                }
            }
        }
    }

    fn lost(&self, problem: &str, lost_since: &mut Option<Instant>) {
        let mut exchange = self.link.lock();
        exchange.connected = false;
        drop(exchange);
        self.link.to_dispatcher.notify_one();
        if lost_since.is_none() {
            *lost_since = Some(Instant::now());
            tracing::warn!(target: "spiderling", redis = %self.address, %problem, "lost Redis: admitting nothing until it is back; retrying");
        } else {
            tracing::debug!(target: "spiderling", redis = %self.address, %problem, "Redis still unreachable");
        }
    }

    /// Connect again if Redis answers; `false` when it answers without the crawl.
    async fn reconnect(&mut self) -> bool {
        let Ok(mut connection) = self.redis.connect().await else { return true };
        // A Redis that lost the crawl's keys (restarted without persistence, flushed)
        // cannot be worked on: the crawl would end at once as if done.
        let meta: redis::RedisResult<bool> =
            redis::cmd("EXISTS").arg(format!("{}:meta", self.prefix)).query_async(&mut connection).await;
        match meta {
            Ok(true) => {
                self.connection = connection;
                true
            }
            Ok(false) => {
                let mut exchange = self.link.lock();
                exchange.fatal.get_or_insert(Error::Fleet {
                    address: self.address.to_string(),
                    message: "Redis came back without this crawl's data (restarted without persistence, or flushed); what was queued is lost, so the crawl stops".to_owned(),
                });
                drop(exchange);
                self.link.to_dispatcher.notify_one();
                false
            }
            Err(_) => true,
        }
    }
}

/// A duration in milliseconds from Redis; anything that is not one reads as none.
fn millis(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()
}
