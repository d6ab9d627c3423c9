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
use super::frontier::{Cut, Link};
use super::messages::{self, Queues, Reply, Round};
use super::parts::Parts;
use spider_settings::RedisAddress as Address;

use super::scripts::{round_call, COUNT, RESERVE, ROUND};
use crate::error::Error;
use crate::request::host::HostKey;
use crate::schedule::frontier::{FleetAnswers, Stretch};

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
const RECONNECT_MAX: Duration = Duration::from_secs(2);
/// How long a crawl just made in Redis is kept from ending. Redis restarted empty, a
/// worker joining at once makes the crawl anew, and would crawl it all and end before the
/// workers of the crawl Redis lost, waiting out their reconnection backoff, come back to
/// find another crawl under its name and stop every worker (`Syncer::reconnect`).
pub(super) const SETTLING: Duration = Duration::from_secs(5);

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
    /// The round, for the home part; the requests it enqueues go as arguments after its
    /// JSON.
    round: Round,
    /// Changes to other parts' hosts, each part's sent before the round (`parts.rs`), and
    /// dropped from here once that part has them.
    visits: Vec<(usize, Round)>,
    /// It carries changes: a count of the parts made before it says nothing of after.
    changes: bool,
    /// The round itself went to the home part at least once: until then, a failure was a
    /// visit's or the reservation's, and the home part can still be told the worker lives.
    reached_home: bool,
    closing: bool,
    renew: bool,
    beat: bool,
}

/// One part's queues, as a count of the crawl's parts saw them.
#[derive(Clone, Copy, Default)]
struct PartCount {
    queued: u64,
    deferred: u64,
    leases: u64,
    seq: u64,
    /// Workers heard from there in the last 5 s.
    live: u64,
    proxy_bytes: u64,
}

impl PartCount {
    fn empty(&self) -> bool {
        self.queued + self.deferred + self.leases == 0
    }

    /// What a worker moving there could do: its queue, and the leases of workers no longer
    /// heard from, which only a worker of the part takes back.
    fn work(&self) -> u64 {
        self.queued + self.deferred + if self.live == 0 { self.leases } else { 0 }
    }
}

/// What the syncer needs to talk for this worker.
pub(super) struct Syncer {
    pub(super) link: std::sync::Arc<Link>,
    pub(super) redis: Redis,
    pub(super) connection: Connection,
    pub(super) address: Address,
    pub(super) parts: Parts,
    /// The part this worker leases from.
    pub(super) home: usize,
    pub(super) worker: String,
    /// The crawl's own mark in Redis, made with it: a crawl of the same name with another
    /// was made anew after Redis lost this one.
    pub(super) made: String,
    pub(super) lease: Duration,
    pub(super) clock: RedisClock,
    /// Each part's count of rounds in the last reply from it (0 before the first).
    pub(super) epochs: Vec<u64>,
    /// The worker's count of its rounds.
    pub(super) number: u64,
    /// Starts reserved in the crawl's rate bucket that no lease took: the first of them
    /// and the bucket's end after them, by Redis's clock, given back with the next
    /// reservation if nothing was reserved since.
    pub(super) unused: Option<(i64, i64)>,
    /// The last count of the crawl's parts: each one's last request id, and whether it
    /// was empty.
    pub(super) last_count: Option<Vec<(u64, bool)>>,
    /// A part with work and no worker this one leaves its home for: it leases nothing
    /// more until it holds nothing, then moves there.
    pub(super) draining: Option<usize>,
}

impl Syncer {
    /// Send a round: first its visits to other parts, then, under a rate ceiling in a
    /// crawl split in parts, its starts reserved, then the round itself to the home part.
    /// Its reply, once it may be acted on (on a cluster, copied to a replica).
    async fn send(&mut self, script: &Script, sent: &mut Sent) -> redis::RedisResult<String> {
        while let Some((part, visit)) = sent.visits.first() {
            let prefix = self.parts.prefix(*part).to_owned();
            let json = serde_json::to_string(visit).unwrap_or_default();
            let call = round_call(script, &prefix, &self.worker, &json, &visit.requests);
            bounded(call.invoke_async::<String>(&mut self.connection)).await?;
            self.connection.replicated(&format!("{prefix}:meta")).await?;
            sent.visits.remove(0);
        }
        let reserved = self.reserve(&mut sent.round).await?;
        sent.reached_home = true;
        let prefix = self.parts.prefix(self.home).to_owned();
        let json = serde_json::to_string(&sent.round).unwrap_or_default();
        let call = round_call(script, &prefix, &self.worker, &json, &sent.round.requests);
        let text = bounded(call.invoke_async::<String>(&mut self.connection)).await?;
        self.connection.replicated(&format!("{prefix}:meta")).await?;
        if let Some((now, starts, end)) = reserved {
            // The starts no lease took, given back at once: the bucket takes them back
            // unless another worker reserved after them.
            let used = Reply::read(&text).map_or(starts.len(), |reply| reply.used);
            if let Some(first) = starts.get(used) {
                self.unused = Some((now + first, end));
                if let Err(error) = self.give_back_starts().await {
                    tracing::debug!(target: "spiderling", %error, "could not give back the crawl's unused \
                        starts");
                }
            }
        }
        Ok(text)
    }

    /// Under a rate ceiling in a crawl split in parts: reserve the starts `round` may
    /// lease, from the crawl's bucket, as offsets in its `tokens`. The bucket's clock, the
    /// starts (µs from it) and its end after them.
    async fn reserve(&mut self, round: &mut Round) -> redis::RedisResult<Option<(i64, Vec<i64>, i64)>> {
        let spacing = self.link.lock().outbox.spacing_ms;
        if !self.parts.split() || spacing <= 0.0 {
            return Ok(None);
        }
        let (now, starts, end) = self.reservation(spacing, round.want).await?;
        round.tokens = Some(starts.iter().map(|us| *us as f64 / 1000.0).collect());
        Ok(Some((now, starts, end)))
    }

    /// Give back the starts the last round did not use, reserving none.
    async fn give_back_starts(&mut self) -> redis::RedisResult<()> {
        let spacing = self.link.lock().outbox.spacing_ms;
        self.reservation(spacing, 0).await.map(|_| ())
    }

    /// One call of the reservation script: starts given back first, then `want` reserved.
    async fn reservation(
        &mut self,
        spacing_ms: f64,
        want: usize,
    ) -> redis::RedisResult<(i64, Vec<i64>, i64)> {
        let (back_from, back_end) = self.unused.take().unwrap_or((0, 0));
        let script = Script::new(RESERVE);
        let mut call = script.key(format!("{}:tat", self.parts.crawl()));
        call.arg((spacing_ms * 1000.0).ceil() as i64)
            .arg(u64::try_from(HORIZON.as_micros()).unwrap_or(u64::MAX))
            .arg(want)
            .arg(back_from)
            .arg(back_end);
        let reply: Vec<i64> = bounded(call.invoke_async(&mut self.connection)).await?;
        let (now, end) = (reply.first().copied().unwrap_or(0), reply.get(1).copied().unwrap_or(0));
        Ok((now, reply.get(2..).unwrap_or_default().to_vec(), end))
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
        let mut unanswered: Option<Sent> = None;
        loop {
            let now = Instant::now();
            let mut sent = match unanswered.take() {
                Some(sent) => sent,
                None => {
                    self.number += 1;
                    let renew = now.duration_since(last_renew) >= self.lease / 4;
                    let beat = last_beat.is_none_or(|at| now.duration_since(at) >= IDLE_ROUND);
                    let (mut round, closing) = self.next_round(renew, beat);
                    round.number = self.number;
                    let changes = round.has_changes();
                    let visits = self.parts.visits(self.home, &mut round);
                    Sent { at: now, round, visits, changes, reached_home: false, closing, renew, beat }
                }
            };
            let reply = match self.send(&script, &mut sent).await {
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
                        tracing::warn!(
                            target: "spiderling",
                            redis = %self.address,
                            down = ?since.elapsed(),
                            "Redis is back: admitting again"
                        );
                    }
                    reconnect_wait = RECONNECT_FIRST;
                    if sent.renew {
                        last_renew = sent.at;
                    }
                    self.hold_until(last_renew, sent.at);
                    if sent.beat {
                        last_beat = Some(now);
                    }
                    let counted = reply.queues;
                    if self.parts.split() && sent.changes {
                        // Two fresh counts before the crawl may be taken for done: the
                        // last ones may predate what this round queued.
                        self.last_count = None;
                        if let Some(view) = self.link.lock().view.as_mut() {
                            view.unsettled = true;
                        }
                    }
                    let next = self.absorb(reply, &sent.round);
                    if sent.closing {
                        self.end_of_the_crawl().await;
                        return;
                    }
                    if let Some(home) = counted.filter(|_| self.parts.split()) {
                        self.count_parts(home, &script).await;
                    }
                    self.wait(next, now).await;
                }
                Err(problem) => {
                    let closing = sent.closing;
                    let alive_at = Instant::now();
                    let kept = !sent.reached_home && self.keep_alive(&script).await;
                    if kept {
                        // Another part, or the crawl's rate bucket, is out of reach: the
                        // requests held here stay this worker's meanwhile, renewed as
                        // often as a lease wants.
                        last_renew = alive_at;
                        self.hold_until(alive_at, alive_at);
                    }
                    unanswered = Some(sent);
                    self.lost(&problem, &mut lost_since);
                    if closing && lost_since.is_some_and(|since| since.elapsed() > self.lease) {
                        // Its leases have run out by now: the fleet has them back anyway.
                        return;
                    }
                    tokio::time::sleep(if kept {
                        reconnect_wait.min(self.lease / 4)
                    } else {
                        reconnect_wait
                    })
                    .await;
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
        let last = self.epochs.get(self.home).copied().unwrap_or(0);
        if reply.epoch <= last {
            return Some(format!(
                "Redis lost part of this crawl: it answered round {} of the crawl after round {last} \
                 (restored from an older snapshot, restarted empty and seeded again, or a replica promoted \
                 without the last writes), so what it holds no longer matches what the workers wrote, and \
                 every worker stops; the outputs keep the items written so far; crawl again under another \
                     crawl_id",
                reply.epoch
            ));
        }
        if let Some(epoch) = self.epochs.get_mut(self.home) {
            *epoch = reply.epoch;
        }
        None
    }

    /// End the crawl for this worker with `problem`, and, when it found it first
    /// (`tell`), for every worker: the next round of each, and each worker that joins,
    /// reads it from the crawl's record.
    async fn stop_the_fleet(&mut self, problem: String, tell: bool) {
        if tell {
            // In the crawl's record, for workers that join, and in each part's, which its
            // rounds read.
            let crawl = self.parts.crawl().to_owned();
            let prefixes: Vec<String> =
                std::iter::once(crawl).chain(self.parts.prefixes().iter().cloned()).collect();
            for prefix in prefixes {
                let told: redis::RedisResult<()> = redis::cmd("HSETNX")
                    .arg(format!("{prefix}:meta"))
                    .arg("broken")
                    .arg(&problem)
                    .query_async(&mut self.connection)
                    .await;
                if let Err(error) = told {
                    tracing::warn!(target: "spiderling", redis = %self.address, %error, "could not tell the \
                        other workers that Redis lost writes");
                }
            }
        }
        let mut exchange = self.link.lock();
        exchange.fatal.get_or_insert(Error::Fleet { address: self.address.to_string(), message: problem });
        drop(exchange);
        self.link.to_dispatcher.notify_one();
    }

    /// A round with nothing in it but the crawl's settings.
    fn settings(&self, settings: &Round) -> Round {
        Round {
            lease_ms: settings.lease_ms,
            dead_ms: settings.dead_ms,
            // A crawl in parts keeps its rate bucket in the crawl's slot: the round takes
            // the starts reserved there instead.
            spacing_ms: if self.parts.split() { 0.0 } else { settings.spacing_ms },
            parted: self.parts.split(),
            per_host: settings.per_host,
            horizon_ms: settings.horizon_ms,
            obey_robots: settings.obey_robots,
            window_s: settings.window_s,
            adapt_hold_ms: settings.adapt_hold_ms,
            ..Round::default()
        }
    }

    /// The changes to send with this round's settings, and whether it is the last.
    fn next_round(&self, renew: bool, beat: bool) -> (Round, bool) {
        let mut exchange = self.link.lock();
        let closing = exchange.closing;
        if closing {
            // The dispatcher has ended: no one is left to cut the stretch.
            exchange.cut_as_gap();
        }
        // Nothing is committed while a stretch waits to be cut (see `Exchange::cut`).
        let changes = if exchange.cut.is_some() {
            Round::default()
        } else {
            exchange.outbox.take_changes(beat || closing)
        };
        let mut round = self.settings(&exchange.outbox);
        round.append(changes);
        round.renew = renew;
        round.ending = closing;
        round.want = if closing || self.draining.is_some() { 0 } else { exchange.want };
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

    /// Count the queues of every part: each part's in one script call (`count.lua`), the
    /// parts one after another.
    async fn count(&mut self) -> redis::RedisResult<Vec<PartCount>> {
        let script = Script::new(COUNT);
        let mut counts = Vec::with_capacity(self.parts.len());
        for prefix in self.parts.prefixes() {
            let mut call = script.key(format!("{prefix}:meta"));
            call.arg(prefix);
            let read: Vec<i64> = bounded(call.invoke_async(&mut self.connection)).await?;
            let at = |i: usize| read.get(i).and_then(|n| u64::try_from(*n).ok()).unwrap_or(0);
            let (queued, deferred, leases, seq, live, proxy_bytes) =
                (at(0), at(1), at(2), at(3), at(4), at(5));
            counts.push(PartCount { queued, deferred, leases, seq, live, proxy_bytes });
        }
        Ok(counts)
    }

    /// Whether every part is empty and was so at the last count too, with no request
    /// queued between: then no lease was held anywhere in between, so nothing can bring
    /// work any more. (One count reads the parts one after another: a link queued in a
    /// part already read, by a request finished in a part not yet read, slips through
    /// one count, never two.)
    fn settled(&mut self, counts: &[PartCount]) -> bool {
        let now: Vec<(u64, bool)> = counts.iter().map(|c| (c.seq, c.empty())).collect();
        let settled = now.iter().all(|(_, empty)| *empty) && self.last_count.as_ref() == Some(&now);
        self.last_count = Some(now);
        settled
    }

    /// In a crawl split in parts, after a round that counted its home's queues: count
    /// every part's for the dispatcher's view, and move to another part when home has
    /// nothing left to lease and this worker holds nothing there.
    async fn count_parts(&mut self, home: Queues, script: &Script) {
        let counts = match self.count().await {
            Ok(counts) => counts,
            Err(error) => {
                // A part out of reach: the view stays as it was until a count succeeds.
                tracing::debug!(target: "spiderling", redis = %self.address, %error, "could not count the \
                    crawl's parts");
                return;
            }
        };
        let settled = self.settled(&counts);
        let sum = |f: fn(&PartCount) -> u64| counts.iter().map(f).sum::<u64>();
        let view = Queues {
            queued: sum(|c| c.queued),
            deferred: sum(|c| c.deferred),
            leases: sum(|c| c.leases),
            mine: home.mine,
            wake_ms: home.wake_ms,
            unsettled: !settled,
        };
        let holds = {
            let mut exchange = self.link.lock();
            exchange.view = Some(view);
            exchange.fleet_proxy_bytes = Some(sum(|c| c.proxy_bytes));
            home.mine > 0 || !exchange.arrived.is_empty() || !exchange.claims.is_empty() || exchange.closing
        };
        self.link.to_dispatcher.notify_one();
        let here = counts.get(self.home).copied().unwrap_or_default();
        // A part with work and no worker (its workers killed, or all moved on) while home
        // has others: one of home's workers, on average, leaves for it.
        if self.draining.is_none() && here.live >= 2 && rand::random::<f64>() < 1.0 / here.live as f64 {
            self.draining = (0..counts.len())
                .find(|&part| part != self.home && counts[part].live == 0 && counts[part].work() > 0);
        }
        if holds {
            return;
        }
        if let Some(part) = self.draining.take() {
            self.move_home(part, script).await;
            return;
        }
        if here.queued + here.deferred > 0 {
            return;
        }
        // The part with the most work for each worker there, this one counted in.
        let best = counts
            .iter()
            .enumerate()
            .filter(|(part, count)| *part != self.home && count.work() > 0)
            .max_by(|(_, a), (_, b)| {
                let share = |c: &PartCount| c.work() as f64 / (c.live + 1) as f64;
                share(a).total_cmp(&share(b)).then_with(|| rand::random::<bool>().cmp(&false))
            })
            .map(|(part, _)| part);
        if let Some(part) = best {
            self.move_home(part, script).await;
        }
    }

    /// A round to the home part that only renews this worker's leases and says it lives,
    /// while a round with changes waits on another part. Whether it was answered.
    async fn keep_alive(&mut self, script: &Script) -> bool {
        let prefix = self.parts.prefix(self.home).to_owned();
        let Ok(text) = self.bare_round(script, |round| round.renew = true).await else { return false };
        if self.connection.replicated(&format!("{prefix}:meta")).await.is_err() {
            return false;
        }
        match Reply::read(&text) {
            Ok(reply) => self.lost_writes(&reply).is_none(),
            Err(_) => false,
        }
    }

    /// A round to the home part with no changes, only the worker's settings and what
    /// `mark` sets: its reply.
    async fn bare_round(
        &mut self,
        script: &Script,
        mark: impl FnOnce(&mut Round),
    ) -> redis::RedisResult<String> {
        let prefix = self.parts.prefix(self.home).to_owned();
        self.number += 1;
        let mut round = {
            let exchange = self.link.lock();
            Round { number: self.number, ..self.settings(&exchange.outbox) }
        };
        mark(&mut round);
        let json = serde_json::to_string(&round).unwrap_or_default();
        bounded(
            round_call(script, &prefix, &self.worker, &json, &[])
                .invoke_async::<String>(&mut self.connection),
        )
        .await
    }

    /// Leave the home part for `part`: a last round there, holding nothing, so that its
    /// hosts' slots are no longer shared with this worker.
    async fn move_home(&mut self, part: usize, script: &Script) {
        let left = self.bare_round(script, |round| round.ending = true).await;
        if let Err(error) = left {
            // Its part stops counting it once it is not heard from: it holds nothing there.
            tracing::debug!(target: "spiderling", redis = %self.address, %error, "could not say goodbye to \
                the part left");
        }
        tracing::info!(target: "spiderling", from = self.home, to = part, "moved to another part of the \
            crawl");
        self.home = part;
    }

    /// After the last round of a crawl split in parts: if every part is empty twice over,
    /// the crawl is done.
    async fn end_of_the_crawl(&mut self) {
        if !self.parts.split() {
            return;
        }
        self.last_count = None;
        for _ in 0..2 {
            match self.count().await {
                Ok(counts) if self.settled(&counts) => {
                    let done = format!("{}:done", self.parts.crawl());
                    let at = crate::observe::tables::unix_ms(std::time::SystemTime::now());
                    let set: redis::RedisResult<()> =
                        bounded(redis::cmd("SET").arg(done).arg(at).query_async(&mut self.connection)).await;
                    if let Err(error) = set {
                        tracing::debug!(target: "spiderling", %error, "could not mark the crawl done");
                    }
                    return;
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// Take in a reply: leases, robots.txt answers and claims to the dispatcher; the
    /// fleet's view. Returns when the next round is due.
    fn absorb(&mut self, reply: Reply, sent: &Round) -> Next {
        let received = Instant::now();
        // A request whose end this worker has not sent yet, leased to it again: its lease
        // ran out while the worker was cut off, and went back to the queue. Its items are
        // written already, and the end on its way finishes the new lease: not fetched
        // twice. (One the round itself ended and queued again, void, is fetched anew.)
        let ending = {
            let mut exchange = self.link.lock();
            for (id, _, _) in &sent.finish {
                exchange.ending.remove(id);
            }
            std::mem::take(&mut exchange.ending)
        };
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
            if ending.contains(&id) {
                continue;
            }
            match messages::decode(id, json) {
                Ok(request) => {
                    let start = start_of(start_ms);
                    arrived.push((HostKey::from(host), start, request));
                }
                Err(problem) => {
                    tracing::error!(target: "spiderling", %problem, "a request in Redis does not read back; \
                        skipped")
                }
            }
        }
        if reply.reaped > 0 {
            tracing::info!(target: "spiderling", requests = reply.reaped, "took back the requests of workers \
                not heard from");
        }
        if reply.void > 0 {
            tracing::warn!(target: "spiderling", requests = reply.void, "the fleet had given one of these \
                requests to another worker before their ends reached Redis: their items are left out of the \
                    committed output and fetched again");
        }
        let mut exchange = self.link.lock();
        exchange.ending.extend(ending);
        if let Some((file, to_bytes, to_items, from_bytes, from_items)) =
            sent.output.clone().filter(|_| reply.cut)
        {
            let stretch = Stretch { from_bytes, from_items, to_bytes, to_items };
            exchange.cut = Some(Cut { file, stretch, taken: false });
        }
        let taken = arrived.len() + reply.claims.len();
        exchange.want = exchange.want.saturating_sub(taken);
        exchange.arrived.extend(arrived);
        let claims =
            reply.claims.into_iter().map(|(host, start_ms)| (HostKey::from(host), start_of(start_ms)));
        exchange.claims.extend(claims);
        for (host, json) in reply.answers {
            match messages::decode_robots(&json) {
                Some(memo) => exchange.answers.push((HostKey::from(host), memo)),
                None => {
                    tracing::error!(target: "spiderling", %host, "a robots.txt answer in Redis does not read \
                        back")
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
        if reply.queues.is_some() && !self.parts.split() {
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
            tracing::warn!(target: "spiderling", redis = %self.address, %problem, "lost Redis: admitting \
                nothing until it is back; retrying");
        } else {
            tracing::debug!(target: "spiderling", redis = %self.address, %problem, "Redis still unreachable");
        }
    }

    /// Connect again if Redis answers; `false` when it answers without the crawl, or
    /// with a crawl of its name made anew. Either way every worker stops, and one that
    /// joins later is refused: what was queued is gone, and a crawl made again from its
    /// start URLs would write the items of the pages already crawled a second time.
    async fn reconnect(&mut self) -> bool {
        let Ok(mut connection) = self.redis.connect().await else { return true };
        let found: redis::RedisResult<(bool, Option<String>)> = redis::pipe()
            .exists(format!("{}:meta", self.parts.prefix(self.home)))
            .hget(format!("{}:meta", self.parts.crawl()), "made")
            .query_async(&mut connection)
            .await;
        let why = match found {
            Ok((true, Some(made))) if made == self.made => return self.use_connection(connection),
            Ok((_, Some(made))) if made != self.made => {
                "came back with a crawl of this name made anew (restarted empty or flushed, and a \
                                 worker that joined began the crawl again)"
            }
            Ok(_) => "came back without this crawl's data (restarted without persistence, or flushed)",
            Err(_) => return true,
        };
        self.connection = connection;
        let problem = format!(
            "Redis lost part of this crawl: it {why}, so what was queued is gone, and every worker stops; \
             the outputs keep the items written so far; crawl again under another crawl_id"
        );
        self.stop_the_fleet(problem, true).await;
        false
    }

    fn use_connection(&mut self, connection: Connection) -> bool {
        self.connection = connection;
        true
    }
}

/// A call that a cluster's client may keep retrying while a node is down, bounded: the
/// syncer's own backoff takes over.
pub(super) async fn bounded<T>(
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> redis::RedisResult<T> {
    tokio::time::timeout(super::connection::CALL_TIMEOUT, call).await.unwrap_or_else(|_| {
        Err(redis::RedisError::from((redis::ErrorKind::Io, "Redis did not answer in time")))
    })
}

/// A duration in milliseconds from Redis; anything that is not one reads as none.
fn millis(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()
}
