//! The frontier of a state file: queues, seen-set and deferred retries in SQLite, in one
//! transaction that each checkpoint commits with the files' lengths.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};
use tokio::time::Instant;
use url::Url;

use super::checkpointer::Checkpointer;
use super::row::{self, Row};
use super::sums;
use crate::error::Error;
use crate::observe::summary::CrawlStatus;
use crate::observe::tables::unix_ms;
use crate::request::canonical::Fingerprint;
use crate::request::host::{host_key, HostKey};
use crate::request::identity::IdentityChanges;
use crate::request::Request;
use crate::request::Ticket;
use crate::schedule::frontier::{
    Checkpoint, CrawlFrontier, Durable, Enqueued, Frontier, OutboxChange, PassThrough, RobotsMemo, Rules,
    RunEnd,
};
use crate::sinks::failures::Failure;

/// How long a robots.txt answer is trusted across runs, as RFC 9309 allows a cache to.
const ROBOTS_FRESH: Duration = Duration::from_secs(24 * 60 * 60);

/// Fingerprints kept in memory (and in `seen_log`) before they are merged into the `seen`
/// table: about 9 MB of hash set at most. Inserting each new fingerprint into the table's
/// index as it came wrote a page of the index, at a random place, per URL, and the
/// commits that copied those pages to the log held every finished request's slot: the
/// state file's crawl ran at three quarters of the in-memory one. Merged in order, a
/// quarter of a million at a time, each page of the index is written once per merge.
pub(super) const MERGE_SEEN_AT: usize = 1 << 18;

/// Take sixteen requests of a host from its queue in one statement, for its next turns (a
/// statement per turn cost as much as the rest of the turn), marked taken ahead; each
/// checkpoint marks in flight those handed out since the last.
const TAKE_AHEAD: &str = "UPDATE requests SET state = 3 WHERE id IN (SELECT id FROM requests \
     WHERE host = ?1 AND state = 0 ORDER BY priority DESC, id LIMIT 16) \
     RETURNING id, url, method, priority, depth, attempts, extra";

/// Take one request, once [`TAKEN_AHEAD_MAX`] are held.
const TAKE_ONE: &str = "UPDATE requests SET state = 1 WHERE id = (SELECT id FROM requests \
     WHERE host = ?1 AND state = 0 ORDER BY priority DESC, id LIMIT 1) \
     RETURNING id, url, method, priority, depth, attempts, extra";

/// Requests held taken ahead, all hosts: past it, a host's next turn takes one request, so
/// a crawl of a million hosts keeps no more than this in memory.
const TAKEN_AHEAD_MAX: usize = 4096;

/// The fingerprints seen since the last merge.
pub(super) type Recent = HashSet<Fingerprint, BuildHasherDefault<PassThrough>>;

/// The frontier of a state file: queues, seen-set and deferred retries on disk, so a
/// frontier of tens of millions of URLs costs little memory (the SQLite page cache, 16 MB,
/// and a few bytes per host).
///
/// A crawl with [`Config::state`](spider_settings::Config::state) uses it through the engine, which also keeps in it what
/// the crawl must remember besides the queues. On its own it serves tools and benchmarks.
///
/// Every change goes into one open transaction; [`commit`](Self::commit) (or the engine's
/// checkpoints) makes it durable. A request handed out by [`next`](Frontier::next) is
/// marked in flight, not removed, and removed only when [`finish`](Frontier::finish) says
/// so: if the process dies first, the next open puts it back in its queue.
///
/// # Examples
///
/// ```
/// use spider_core::{Config, Enqueued, Frontier, Request, StateFrontier};
///
/// let dir = std::env::temp_dir().join(format!("state-doc-{}", std::process::id()));
/// let config = Config::new("books");
/// let mut frontier = StateFrontier::open(&dir.join("books.state"), &config)?;
/// assert!(matches!(frontier.enqueue(Request::get("https://books.example/a")?)?, Enqueued::Accepted(_)));
/// assert_eq!(frontier.enqueue(Request::get("https://BOOKS.example/a#top")?)?, Enqueued::Duplicate);
/// frontier.commit()?;
/// drop(frontier);
///
/// let mut again = StateFrontier::open(&dir.join("books.state"), &config)?;
/// assert!(again.next("https://books.example:443")?.is_some(), "still queued after a reopen");
/// # drop(again);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), spider_core::Error>(())
/// ```
pub struct StateFrontier {
    /// Stopped before `conn` closes (fields drop in order), so that the close, the last
    /// of the file's connections, checkpoints and removes the log.
    pub(super) checkpointer: Checkpointer,
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// Held for the crawl, so that a second process cannot work on the same file.
    pub(super) _lock: File,
    pub(super) rules: Rules,
    pub(super) hosts: HashMap<HostKey, i64>,
    pub(super) origins: HashMap<i64, HostKey>,
    /// The seen-set's part not merged into `seen` yet: every fingerprint in `seen_log`, and
    /// those first seen since the last checkpoint, which are also in `unlogged` (16 bytes
    /// each) until the checkpoint appends them to the log.
    pub(super) recent: Recent,
    pub(super) unlogged: Vec<u8>,
    /// The seen-set's sum as the file holds it (`sums.rs`).
    pub(super) seen_sum: u128,
    /// Whether `seen` holds a fingerprint: until it does, one not in `recent` is new
    /// without asking the file.
    pub(super) merged: bool,
    /// [`MERGE_SEEN_AT`], smaller in tests.
    pub(super) merge_seen_at: usize,
    /// Requests taken ahead per host (marked so in the file, so a crash puts them back),
    /// in the order of their turns, and how many in all.
    pub(super) ahead: HashMap<i64, VecDeque<Request>>,
    pub(super) ahead_count: usize,
    /// The rows of the requests taken ahead and handed out since the last checkpoint,
    /// marked in flight by it in one statement.
    pub(super) handed: Vec<i64>,
    pub(super) queued: usize,
    pub(super) deferred: usize,
    /// The earliest due time of a deferred request, in the file's milliseconds.
    pub(super) min_due: Option<i64>,
    pub(super) clock: Clock,
    /// Requests finished and given up per host since the last checkpoint.
    pub(super) finished: HashMap<i64, (i64, i64)>,
    /// The rows of the requests finished since the last checkpoint, deleted by it in one
    /// statement.
    pub(super) finished_tickets: Vec<i64>,
    pub(super) run: Option<i64>,
    pub(super) started_at: i64,
    /// The items files' absolute paths, in `output`'s order.
    pub(super) outputs: Vec<String>,
    pub(super) failures: Option<String>,
    pub(super) warc: Option<String>,
    /// Why a commit failed, once one has: nothing is committed after it. SQLite may roll
    /// the failed transaction back and leave the connection committing every statement on
    /// its own, which would record a file length or a finished request without the rest of
    /// its checkpoint.
    pub(super) failed: Option<String>,
}

/// Converts between the engine's instants and the file's unix milliseconds, from one
/// reading of both clocks, so a time converted there and back never moves later.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    instant: Instant,
    unix_ms: i64,
}

impl Clock {
    pub(super) fn now() -> Self {
        Clock { instant: Instant::now(), unix_ms: unix_ms(SystemTime::now()) }
    }

    fn to_ms(self, at: Instant) -> i64 {
        let since = at.saturating_duration_since(self.instant).as_millis();
        self.unix_ms.saturating_add(i64::try_from(since).unwrap_or(i64::MAX))
    }

    fn to_instant(self, ms: i64) -> Instant {
        let after = u64::try_from(ms.saturating_sub(self.unix_ms)).unwrap_or(0);
        self.instant + Duration::from_millis(after)
    }
}

impl StateFrontier {
    /// Make every change since the last commit durable.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when SQLite cannot write it.
    pub fn commit(&mut self) -> Result<(), Error> {
        self.writable()?;
        let store = |source| Error::Store { path: self.path.clone(), source: Box::new(source) };
        if !self.finished_tickets.is_empty() {
            let tickets =
                std::rc::Rc::new(self.finished_tickets.drain(..).map(Value::from).collect::<Vec<Value>>());
            let hosts = self
                .conn
                .prepare_cached("DELETE FROM requests WHERE id IN rarray(?1) RETURNING host")
                .and_then(|mut delete| {
                    delete
                        .query_map([tickets], |row| row.get::<_, i64>(0))?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(store)?;
            for host in hosts {
                self.finished.entry(host).or_default().0 += 1;
            }
        }
        if !self.handed.is_empty() {
            // A deferred one is left deferred, a finished one is gone.
            let handed = std::rc::Rc::new(self.handed.drain(..).map(Value::from).collect::<Vec<Value>>());
            self.conn
                .prepare_cached("UPDATE requests SET state = 1 WHERE state = 3 AND id IN rarray(?1)")
                .and_then(|mut update| update.execute([handed]))
                .map_err(store)?;
        }
        for (host, (done, failed)) in self.finished.drain() {
            self.conn
                .prepare_cached("UPDATE hosts SET done = done + ?2, failed = failed + ?3 WHERE id = ?1")
                .and_then(|mut update| update.execute(params![host, done, failed]))
                .map_err(store)?;
        }
        self.log_seen()?;
        if let Err(error) = self.conn.execute_batch("COMMIT") {
            return Err(self.give_up_committing(error));
        }
        if self.checkpointer.take_long_log() {
            // Copy back what the checkpointing thread has not yet (this commit, mostly), so
            // that the next transaction reads the file alone and its first write starts the
            // log over (see `checkpointer.rs`). Once per pass of that thread: if this one
            // could not copy everything (the thread, or a reader, was in the way), the
            // thread's next measure asks again.
            if let Err(error) = self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                return Err(self.give_up_committing(error));
            }
        }
        match self.conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => Ok(()),
            Err(error) => Err(self.give_up_committing(error)),
        }
    }

    /// Refuse every write once a commit has failed, or once SQLite has rolled back the
    /// open transaction after a failed statement (the file always has one open, so a
    /// connection committing on its own means that happened).
    fn writable(&mut self) -> Result<(), Error> {
        if self.failed.is_none() && self.conn.is_autocommit() {
            self.failed = Some("a write failed, and SQLite rolled back what it was part of".to_owned());
            // A deferred BEGIN takes no lock and writes nothing, so it does not fail as
            // the disk fills.
            let _ = self.conn.execute_batch("BEGIN");
        }
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(Error::State {
                path: self.path.clone(),
                message: format!(
                    "could not be written ({why}), so nothing after its last checkpoint is recorded; the \
                     next run goes on from that checkpoint"
                ),
            }),
        }
    }

    /// After a failed commit: keep every later change in a transaction that is never
    /// committed, and say why.
    fn give_up_committing(&mut self, error: rusqlite::Error) -> Error {
        self.failed = Some(error.to_string());
        if self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("BEGIN");
        }
        Error::Store { path: self.path.clone(), source: Box::new(error) }
    }

    pub(super) fn store(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |source| Error::Store { path: self.path.clone(), source: Box::new(source) }
    }

    fn damaged(&self, message: String) -> Error {
        Error::State { path: self.path.clone(), message: format!("is damaged: {message}") }
    }

    /// The id of `host`, added if new.
    fn host_id(&mut self, host: &HostKey) -> Result<i64, Error> {
        if let Some(&id) = self.hosts.get(host) {
            return Ok(id);
        }
        let id = self
            .conn
            .prepare_cached("INSERT INTO hosts (origin) VALUES (?1) RETURNING id")
            .and_then(|mut insert| insert.query_row([&**host], |row| row.get(0)))
            .map_err(self.store())?;
        self.hosts.insert(host.clone(), id);
        self.origins.insert(id, host.clone());
        Ok(id)
    }

    fn insert(&mut self, request: &Request, host: i64, state: i64, due: Option<i64>) -> Result<(), Error> {
        let extra = row::extra(request);
        let covered = [
            ValueRef::Integer(host),
            ValueRef::Integer(i64::from(request.priority())),
            ValueRef::Text(request.url().as_str().as_bytes()),
            ValueRef::Text(request.method().as_str().as_bytes()),
            ValueRef::Integer(i64::from(request.depth())),
            ValueRef::Integer(i64::from(request.attempts)),
            extra.as_deref().map_or(ValueRef::Null, |json| ValueRef::Text(json.as_bytes())),
        ];
        self.conn
            .prepare_cached(
                "INSERT INTO requests (host, state, priority, due, url, method, depth, attempts, extra, sum) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    host,
                    state,
                    request.priority(),
                    due,
                    request.url().as_str(),
                    request.method().as_str(),
                    request.depth(),
                    request.attempts,
                    extra,
                    sums::row_sum(&covered),
                ])
            })
            .map_err(self.store())?;
        Ok(())
    }

    /// Add `request`'s fingerprint to the seen-set: whether it was new. The file learns of
    /// it at the next checkpoint.
    fn first_sight(&mut self, request: &Request) -> Result<bool, Error> {
        let fingerprint = request.fingerprint();
        if self.recent.contains(&fingerprint) {
            return Ok(false);
        }
        if self.merged {
            let known = self
                .conn
                .prepare_cached("SELECT 1 FROM seen WHERE fingerprint = ?1")
                .and_then(|mut select| select.exists([&fingerprint.0.to_be_bytes()[..]]))
                .map_err(self.store())?;
            if known {
                return Ok(false);
            }
        }
        self.recent.insert(fingerprint);
        self.unlogged.extend_from_slice(&fingerprint.0.to_be_bytes());
        Ok(true)
    }

    /// Append the fingerprints first seen since the last checkpoint to `seen_log`, in the
    /// checkpoint's transaction; merge the log into `seen` once it is long.
    fn log_seen(&mut self) -> Result<(), Error> {
        if !self.unlogged.is_empty() {
            self.conn
                .prepare_cached("INSERT INTO seen_log (fingerprints) VALUES (?1)")
                .and_then(|mut insert| insert.execute([&self.unlogged[..]]))
                .map_err(self.store())?;
            let seen_sum = sums::add_seen(self.seen_sum, &self.unlogged);
            self.conn
                .prepare_cached("UPDATE crawl SET value = ?1 WHERE key = 'seen_sum'")
                .and_then(|mut update| update.execute([sums::seen_fact(seen_sum)]))
                .map_err(self.store())?;
            self.seen_sum = seen_sum;
            self.unlogged.clear();
        }
        if self.recent.len() < self.merge_seen_at {
            return Ok(());
        }
        let mut sorted: Vec<u128> = self.recent.iter().map(|fingerprint| fingerprint.0).collect();
        sorted.sort_unstable();
        {
            let mut insert = self
                .conn
                .prepare_cached("INSERT OR IGNORE INTO seen (fingerprint) VALUES (?1)")
                .map_err(self.store())?;
            for fingerprint in sorted {
                insert.execute([&fingerprint.to_be_bytes()[..]]).map_err(self.store())?;
            }
        }
        self.conn.execute("DELETE FROM seen_log", []).map_err(self.store())?;
        self.recent.clear();
        self.merged = true;
        Ok(())
    }

    /// Sum row `id` again after a change to what the sum covers, from the row as it now is.
    fn sum_again(&mut self, id: i64) -> Result<(), Error> {
        let sum = self
            .conn
            .prepare_cached(&format!("SELECT {} FROM requests WHERE id = ?1", sums::COVERED))
            .and_then(|mut select| {
                select.query_row([id], |row| {
                    let covered = (0..7).map(|i| row.get_ref(i)).collect::<rusqlite::Result<Vec<_>>>()?;
                    Ok(sums::row_sum(&covered))
                })
            })
            .map_err(self.store())?;
        self.conn
            .prepare_cached("UPDATE requests SET sum = ?2 WHERE id = ?1")
            .and_then(|mut update| update.execute([id, sum]))
            .map_err(self.store())?;
        Ok(())
    }

    /// Put the requests taken ahead for `host` back in its queue.
    fn put_back(&mut self, host: i64) -> Result<(), Error> {
        let Some(taken) = self.ahead.remove(&host) else { return Ok(()) };
        self.ahead_count -= taken.len();
        for request in taken {
            let Some(ticket) = request.ticket else { continue };
            self.conn
                .prepare_cached("UPDATE requests SET state = 0 WHERE id = ?1")
                .and_then(|mut update| update.execute([ticket.0]))
                .map_err(self.store())?;
        }
        Ok(())
    }

    /// Read the earliest due time again, after some fell due.
    fn reload_min_due(&mut self) -> Result<(), Error> {
        self.min_due = self
            .conn
            .prepare_cached("SELECT min(due) FROM requests WHERE state = 2")
            .and_then(|mut min| min.query_row([], |row| row.get(0)))
            .map_err(self.store())?;
        Ok(())
    }
}

impl Frontier for StateFrontier {
    fn enqueue(&mut self, request: Request) -> Result<Enqueued, Error> {
        self.writable()?;
        if let Some(refused) = self.rules.refuse(&request) {
            return Ok(refused);
        }
        let Some(host) = host_key(request.url()) else {
            return Ok(Enqueued::OutOfScope);
        };
        if !self.first_sight(&request)? {
            return Ok(Enqueued::Duplicate);
        }
        let id = self.host_id(&host)?;
        self.insert(&request, id, 0, None)?;
        self.queued += 1;
        // A request that goes before one taken ahead: those go back to the queue.
        let behind = self
            .ahead
            .get(&id)
            .and_then(VecDeque::back)
            .is_some_and(|last| last.priority() < request.priority());
        if behind {
            self.put_back(id)?;
        }
        Ok(Enqueued::Accepted(host))
    }

    fn see(&mut self, request: &Request) -> Result<Enqueued, Error> {
        self.writable()?;
        if let Some(refused) = self.rules.refuse(request) {
            return Ok(refused);
        }
        let Some(host) = host_key(request.url()) else {
            return Ok(Enqueued::OutOfScope);
        };
        Ok(if self.first_sight(request)? { Enqueued::Accepted(host) } else { Enqueued::Duplicate })
    }

    fn next(&mut self, host: &str) -> Result<Option<Request>, Error> {
        self.writable()?;
        let Some(&id) = self.hosts.get(host) else { return Ok(None) };
        if let Some(request) = self.ahead.get_mut(&id).and_then(VecDeque::pop_front) {
            self.ahead_count -= 1;
            self.queued -= 1;
            self.handed.extend(request.ticket.map(|ticket| ticket.0));
            return Ok(Some(request));
        }
        // Taken (marked in flight) and read in one statement. The limit is written into
        // it: SQLite plans a statement again whenever a bound limit changes.
        let take = if self.ahead_count < TAKEN_AHEAD_MAX { TAKE_AHEAD } else { TAKE_ONE };
        let mut rows = self
            .conn
            .prepare_cached(take)
            .and_then(|mut take| {
                take.query_map([id], |row| {
                    Ok(Row {
                        id: row.get(0)?,
                        url: row.get(1)?,
                        method: row.get(2)?,
                        priority: row.get(3)?,
                        depth: row.get(4)?,
                        attempts: row.get(5)?,
                        extra: row.get(6)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<Row>>>()
            })
            .map_err(self.store())?;
        // RETURNING gives rows in no set order.
        rows.sort_unstable_by_key(|row| (std::cmp::Reverse(row.priority), row.id));
        let mut requests = rows.into_iter().map(|row| row.request().map_err(|message| self.damaged(message)));
        let Some(first) = requests.next().transpose()? else { return Ok(None) };
        let rest = requests.collect::<Result<VecDeque<Request>, Error>>()?;
        self.handed.extend(first.ticket.map(|ticket| ticket.0));
        if !rest.is_empty() {
            self.ahead_count += rest.len();
            self.ahead.insert(id, rest);
        }
        self.queued -= 1;
        Ok(Some(first))
    }

    fn finish(&mut self, ticket: Ticket) -> Result<(), Error> {
        self.writable()?;
        self.finished_tickets.push(ticket.0);
        Ok(())
    }

    fn defer(&mut self, request: Request, due: Instant) -> Result<(), Error> {
        self.writable()?;
        let due = self.clock.to_ms(due);
        match request.ticket {
            Some(ticket) => {
                self.conn
                    .prepare_cached(
                        "UPDATE requests SET state = 2, due = ?2, attempts = ?3, extra = ?4 WHERE id = ?1",
                    )
                    .and_then(|mut defer| {
                        defer.execute(params![ticket.0, due, request.attempts, row::extra(&request)])
                    })
                    .map_err(self.store())?;
                self.sum_again(ticket.0)?;
            }
            None => {
                let Some(host) = host_key(request.url()) else { return Ok(()) };
                let id = self.host_id(&host)?;
                self.insert(&request, id, 2, Some(due))?;
            }
        }
        self.deferred += 1;
        self.min_due = Some(self.min_due.map_or(due, |min| min.min(due)));
        Ok(())
    }

    fn next_due(&self) -> Option<Instant> {
        self.min_due.map(|ms| self.clock.to_instant(ms))
    }

    fn release_due(&mut self, now: Instant) -> Result<Vec<HostKey>, Error> {
        let now = self.clock.to_ms(now);
        if self.min_due.is_none_or(|min| min > now) {
            return Ok(Vec::new());
        }
        self.writable()?;
        let released: Vec<i64> = self
            .conn
            .prepare_cached(
                "UPDATE requests SET state = 0, due = NULL WHERE state = 2 AND due <= ?1 RETURNING host",
            )
            .and_then(|mut release| release.query_map([now], |row| row.get(0))?.collect())
            .map_err(self.store())?;
        self.deferred -= released.len();
        self.queued += released.len();
        self.reload_min_due()?;
        // A retry goes before the requests taken ahead that came after it.
        for host in &released {
            self.put_back(*host)?;
        }
        Ok(released.iter().filter_map(|id| self.origins.get(id).cloned()).collect())
    }

    fn hosts(&self) -> Result<Vec<HostKey>, Error> {
        let queued = self
            .conn
            .prepare_cached("SELECT DISTINCT host FROM requests WHERE state = 0")
            .and_then(|mut select| {
                select.query_map([], |row| row.get::<_, i64>(0))?.collect::<Result<Vec<_>, _>>()
            })
            .map_err(self.store())?;
        let ahead = self.ahead.keys().filter(|id| !queued.contains(id));
        Ok(queued.iter().chain(ahead).filter_map(|id| self.origins.get(id).cloned()).collect())
    }

    fn has_pending(&self) -> bool {
        self.queued + self.deferred > 0
    }

    fn len(&self) -> usize {
        self.queued + self.deferred
    }
}

impl CrawlFrontier for StateFrontier {
    fn durable(&mut self) -> Option<&mut dyn Durable> {
        Some(self)
    }
}

impl Durable for StateFrontier {
    fn robots(&mut self, host: &str) -> Result<Option<RobotsMemo>, Error> {
        type Memo = (Option<u16>, Option<Vec<u8>>, Option<String>, Option<i64>);
        let memo: Option<Memo> = self
            .conn
            .prepare_cached(
                "SELECT robots_status, robots_body, robots_error, robots_at FROM hosts WHERE origin = ?1",
            )
            .and_then(|mut select| {
                select
                    .query_row([host], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
                    .optional()
            })
            .map_err(self.store())?;
        let fresh_since = unix_ms(SystemTime::now() - ROBOTS_FRESH);
        Ok(match memo {
            Some((_, _, _, Some(at))) if at < fresh_since => None,
            Some((Some(status), body, _, Some(_))) => {
                Some(RobotsMemo::Answer { status, body: body.unwrap_or_default().into() })
            }
            Some((None, _, Some(reason), Some(_))) => Some(RobotsMemo::Unavailable(reason)),
            _ => None,
        })
    }

    fn remember_robots(&mut self, host: &str, memo: &RobotsMemo) -> Result<(), Error> {
        self.writable()?;
        let id = self.host_id(&HostKey::from(host))?;
        let (status, body, reason) = match memo {
            RobotsMemo::Answer { status, body } => (Some(*status), Some(&body[..]), None),
            RobotsMemo::Unavailable(reason) => (None, None, Some(reason.as_str())),
        };
        self.conn
            .prepare_cached(
                "UPDATE hosts SET robots_status = ?2, robots_body = ?3, robots_error = ?4, robots_at = ?5 \
                    WHERE id = ?1",
            )
            .and_then(|mut update| {
                update.execute(params![id, status, body, reason, unix_ms(SystemTime::now())])
            })
            .map_err(self.store())?;
        Ok(())
    }

    fn record_failure(
        &mut self,
        url: &Url,
        method: &Method,
        attempts: u32,
        failure: &Failure,
    ) -> Result<(), Error> {
        self.writable()?;
        let host = match host_key(url) {
            Some(key) => Some(self.host_id(&key)?),
            None => None,
        };
        self.conn
            .prepare_cached(
                "INSERT INTO failures (host, url, method, attempts, reason, status, error, failed_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    host,
                    url.as_str(),
                    method.as_str(),
                    attempts,
                    failure.reason.as_str(),
                    failure.status,
                    failure.error,
                    unix_ms(SystemTime::now())
                ])
            })
            .map_err(self.store())?;
        if let Some(host) = host {
            self.finished.entry(host).or_default().1 += 1;
        }
        Ok(())
    }

    fn keeps_identities(&self) -> bool {
        true
    }

    fn checkpoint(&mut self, checkpoint: &Checkpoint<'_>) -> Result<(), Error> {
        self.writable()?;
        if checkpoint.ended.is_some() {
            // A run that ends leaves nothing in flight: what it took ahead goes back.
            let hosts: Vec<i64> = self.ahead.keys().copied().collect();
            for host in hosts {
                self.put_back(host)?;
            }
        }
        let store = |source| Error::Store { path: self.path.clone(), source: Box::new(source) };
        let counts = serde_json::to_string(checkpoint.counts).unwrap_or_default();
        let ended = checkpoint.ended.map(|end| (unix_ms(SystemTime::now()), end_word(end)));
        let run = match self.run {
            Some(run) => {
                self.conn
                    .prepare_cached("UPDATE runs SET counts = ?2, ended_at = ?3, status = ?4 WHERE id = ?1")
                    .and_then(|mut update| {
                        update.execute(params![run, counts, ended.map(|e| e.0), ended.map(|e| e.1)])
                    })
                    .map_err(store)?;
                run
            }
            None => {
                let run = self
                    .conn
                    .query_row(
                        "INSERT INTO runs (started_at, counts) VALUES (?1, ?2) RETURNING id",
                        params![self.started_at, counts],
                        |row| row.get(0),
                    )
                    .map_err(store)?;
                self.conn
                    .execute("UPDATE crawl SET value = 'running' WHERE key = 'status'", [])
                    .map_err(store)?;
                if let Some((at, status)) = ended {
                    self.conn
                        .execute(
                            "UPDATE runs SET ended_at = ?2, status = ?3 WHERE id = ?1",
                            params![run, at, status],
                        )
                        .map_err(store)?;
                }
                run
            }
        };
        self.run = Some(run);
        let outputs =
            self.outputs.iter().zip(checkpoint.outputs).enumerate().map(|(at, (path, committed))| {
                let row = (committed.bytes, committed.items, committed.tail);
                (super::schema::output_role(at), Some(path.as_str()), Some(row))
            });
        let files = [
            (
                "failures".to_owned(),
                self.failures.as_deref(),
                checkpoint.failures.map(|bytes| (bytes, 0, None)),
            ),
            (
                "warc".to_owned(),
                self.warc.as_deref(),
                checkpoint.warc.map(|archive| (archive.bytes, archive.file, None)),
            ),
        ];
        for (role, path, committed) in outputs.chain(files) {
            let (Some(path), Some((bytes, records, tail))) = (path, committed) else { continue };
            self.conn
                .prepare_cached(
                    "INSERT INTO files (role, path, bytes, records, tail) VALUES (?1, ?2, ?3, ?4, ?5) \
                     ON CONFLICT (role) DO UPDATE SET path = excluded.path, bytes = excluded.bytes, \
                     records = excluded.records, tail = excluded.tail",
                )
                .and_then(|mut upsert| upsert.execute(params![role, path, bytes, records, tail]))
                .map_err(store)?;
        }
        if let Some(identities) = &checkpoint.identities {
            save_identities(&self.conn, identities).map_err(store)?;
        }
        if let Some(outbox) = &checkpoint.outbox {
            save_outbox(&self.conn, outbox).map_err(store)?;
        }
        if !checkpoint.kept_keys.is_empty() {
            let mut insert = self
                .conn
                .prepare_cached("INSERT OR IGNORE INTO item_keys (key) VALUES (?1)")
                .map_err(store)?;
            for key in checkpoint.kept_keys {
                insert.execute([key.to_bytes().as_slice()]).map_err(store)?;
            }
        }
        if let Some((_, status)) = ended {
            let crawl = match status {
                "complete" | "complete_with_failures" => "complete",
                "interrupted" | "budget_reached" | "limit_reached" => "paused",
                _ => "stopped",
            };
            self.conn.execute("UPDATE crawl SET value = ?1 WHERE key = 'status'", [crawl]).map_err(store)?;
        }
        self.commit()
    }
}

/// How a run ended, in the words of the stats file's `status`.
fn end_word(end: RunEnd) -> &'static str {
    match end {
        RunEnd::Finished(CrawlStatus::Complete) => "complete",
        RunEnd::Finished(CrawlStatus::CompleteWithFailures) => "complete_with_failures",
        RunEnd::Finished(CrawlStatus::Interrupted) => "interrupted",
        RunEnd::Finished(CrawlStatus::BudgetReached) => "budget_reached",
        RunEnd::Finished(CrawlStatus::LimitReached) => "limit_reached",
        RunEnd::Finished(CrawlStatus::AlreadyComplete) => "already_complete",
        RunEnd::Failed => "error",
    }
}

impl std::fmt::Debug for StateFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateFrontier").field("path", &self.path).field("queued", &self.queued).finish()
    }
}

/// Keep a checkpoint's chunk of items for the tables, and its number as the last one
/// given; forget the chunks every table holds.
fn save_outbox(conn: &rusqlite::Connection, outbox: &OutboxChange<'_>) -> rusqlite::Result<()> {
    for chunk in outbox.chunks {
        conn.prepare_cached("INSERT INTO outbox (seq, items, count, item_type) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![chunk.seq, chunk.items, chunk.count, chunk.item_type])?;
    }
    if let Some(last) = outbox.chunks.last() {
        conn.prepare_cached("INSERT OR REPLACE INTO crawl (key, value) VALUES ('outbox_seq', ?1)")?
            .execute([last.seq.to_string()])?;
    }
    conn.prepare_cached("DELETE FROM outbox WHERE seq <= ?1")?.execute([outbox.delivered])?;
    Ok(())
}

/// Write the identities that changed and delete the retired ones, in the checkpoint's
/// transaction.
fn save_identities(conn: &rusqlite::Connection, changes: &IdentityChanges) -> rusqlite::Result<()> {
    let mut upsert = conn.prepare_cached(
        "INSERT INTO identities (key, agent, cookies) VALUES (?1, ?2, ?3) \
         ON CONFLICT (key) DO UPDATE SET agent = excluded.agent, cookies = excluded.cookies",
    )?;
    for identity in &changes.saved {
        upsert.execute(params![identity.key, identity.agent, identity.cookies])?;
    }
    let mut delete = conn.prepare_cached("DELETE FROM identities WHERE key = ?1")?;
    for key in &changes.gone {
        delete.execute([key])?;
    }
    let mut refusing = conn.prepare_cached("INSERT OR IGNORE INTO refusing_plain (host) VALUES (?1)")?;
    for host in &changes.refusing {
        refusing.execute([host])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::identity::SavedIdentity;
    use spider_settings::Config;

    const HOST: &str = "http://h.example:80";

    fn request(path: &str) -> Request {
        Request::get(&format!("http://h.example/{path}")).unwrap()
    }

    /// A state file in a directory of its own, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("spiderling-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            Scratch(dir)
        }

        fn open(&self) -> StateFrontier {
            StateFrontier::open(&self.0.join("t.state"), &Config::new("t")).unwrap()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn paths(frontier: &mut StateFrontier) -> Vec<String> {
        std::iter::from_fn(|| frontier.next(HOST).unwrap()).map(|r| r.url().path().to_owned()).collect()
    }

    #[test]
    fn a_request_only_seen_takes_no_row_and_stays_seen_after_a_reopen() {
        let scratch = Scratch::new("seen-only");
        let mut frontier = scratch.open();
        assert_eq!(frontier.see(&request("private")).unwrap(), Enqueued::Accepted(HOST.into()));
        assert_eq!(frontier.see(&request("private")).unwrap(), Enqueued::Duplicate);
        assert_eq!((frontier.len(), frontier.has_pending()), (0, false));
        frontier.commit().unwrap();
        drop(frontier);
        let mut reopened = scratch.open();
        assert_eq!(reopened.enqueue(request("private")).unwrap(), Enqueued::Duplicate, "from the file");
        assert!(paths(&mut reopened).is_empty());
    }

    #[test]
    fn identities_come_back_and_a_file_from_before_them_still_opens() {
        let scratch = Scratch::new("identities");
        let path = scratch.0.join("t.state");
        let config = Config::new("t");
        drop(crate::schedule::state::open::open(&path, &config, false).unwrap());
        // A file written before the identities table existed.
        rusqlite::Connection::open(&path).unwrap().execute("DROP TABLE identities", []).unwrap();
        let mut opened = crate::schedule::state::open::open(&path, &config, false).unwrap();
        assert!(opened.identities.is_empty());
        let saved =
            SavedIdentity { key: "host:http://h.example:80".into(), agent: None, cookies: "{}".into() };
        let counts = crate::observe::counters::Counts::default();
        let checkpoint = Checkpoint {
            outputs: &[],
            failures: None,
            counts: &counts,
            proxy_bytes: 0,
            ended: None,
            identities: Some(IdentityChanges { saved: vec![saved.clone()], ..IdentityChanges::default() }),
            outbox: None,
            warc: None,
            kept_keys: &[],
        };
        opened.frontier.checkpoint(&checkpoint).unwrap();
        drop(opened);
        let mut opened = crate::schedule::state::open::open(&path, &config, false).unwrap();
        assert_eq!(opened.identities, [saved]);
        // Retired since: gone from the file.
        let gone =
            IdentityChanges { gone: vec!["host:http://h.example:80".into()], ..IdentityChanges::default() };
        let checkpoint = Checkpoint { identities: Some(gone), ..checkpoint };
        opened.frontier.checkpoint(&checkpoint).unwrap();
        drop(opened);
        assert!(crate::schedule::state::open::open(&path, &config, false).unwrap().identities.is_empty());
    }

    #[test]
    fn higher_priority_first_then_arrival_order_as_in_memory() {
        let scratch = Scratch::new("order");
        let mut frontier = scratch.open();
        for (path, priority) in [("a", 0), ("b", 5), ("c", 0), ("d", 5)] {
            frontier.enqueue(request(path).with_priority(priority)).unwrap();
        }
        assert_eq!(paths(&mut frontier), ["/b", "/d", "/a", "/c"]);
        assert!(!frontier.has_pending());
    }

    #[test]
    fn a_request_of_higher_priority_goes_before_those_taken_ahead() {
        let scratch = Scratch::new("ahead");
        let mut frontier = scratch.open();
        for path in ["a", "b", "c"] {
            frontier.enqueue(request(path)).unwrap();
        }
        assert_eq!(frontier.next(HOST).unwrap().unwrap().url().path(), "/a");
        assert_eq!(frontier.ahead_count, 2, "b and c taken with a");
        frontier.enqueue(request("urgent").with_priority(5)).unwrap();
        frontier.enqueue(request("d")).unwrap();
        assert_eq!(paths(&mut frontier), ["/urgent", "/b", "/c", "/d"]);
        assert_eq!(frontier.len(), 0);
    }

    #[test]
    fn the_seen_set_lives_in_its_log_until_merged_and_reads_the_same_from_both() {
        let scratch = Scratch::new("seen-log");
        let mut frontier = scratch.open();
        frontier.merge_seen_at = 4;
        for path in ["a", "b", "c"] {
            frontier.enqueue(request(path)).unwrap();
        }
        frontier.commit().unwrap();
        let count = |frontier: &StateFrontier, sql: &str| -> i64 {
            frontier.conn.query_row(sql, [], |row| row.get(0)).unwrap()
        };
        assert_eq!(count(&frontier, "SELECT count(*) FROM seen"), 0, "three are below the merge");
        assert_eq!(count(&frontier, "SELECT sum(length(fingerprints)) FROM seen_log"), 3 * 16);
        drop(frontier);

        let mut again = scratch.open();
        again.merge_seen_at = 4;
        assert_eq!(again.enqueue(request("b")).unwrap(), Enqueued::Duplicate, "read back from the log");
        assert!(matches!(again.enqueue(request("d")).unwrap(), Enqueued::Accepted(_)));
        again.commit().unwrap();
        assert_eq!(count(&again, "SELECT count(*) FROM seen"), 4, "merged at four");
        assert_eq!(count(&again, "SELECT count(*) FROM seen_log"), 0);
        assert_eq!(again.enqueue(request("a")).unwrap(), Enqueued::Duplicate, "read from the table");
        assert!(matches!(again.enqueue(request("e")).unwrap(), Enqueued::Accepted(_)));
        drop(again);

        let mut third = scratch.open();
        for path in ["a", "b", "c", "d"] {
            assert_eq!(third.enqueue(request(path)).unwrap(), Enqueued::Duplicate, "{path}");
        }
        assert!(matches!(third.enqueue(request("e")).unwrap(), Enqueued::Accepted(_)), "never committed");
    }

    #[test]
    fn what_a_commit_holds_comes_back_and_in_flight_is_queued_again() {
        let scratch = Scratch::new("reopen");
        let mut frontier = scratch.open();
        for path in ["a", "b", "c"] {
            frontier.enqueue(request(path)).unwrap();
        }
        let taken = frontier.next(HOST).unwrap().unwrap();
        assert!(taken.ticket().is_some());
        let finished = frontier.next(HOST).unwrap().unwrap();
        frontier.finish(finished.ticket().unwrap()).unwrap();
        frontier.commit().unwrap();
        frontier.enqueue(request("uncommitted")).unwrap();
        drop(frontier);

        let mut again = scratch.open();
        assert_eq!(again.len(), 2, "the one in flight and the one never taken");
        assert_eq!(again.enqueue(request("b")).unwrap(), Enqueued::Duplicate, "finished, still seen");
        assert!(
            matches!(again.enqueue(request("uncommitted")).unwrap(), Enqueued::Accepted(_)),
            "never committed"
        );
        assert_eq!(paths(&mut again), ["/a", "/c", "/uncommitted"]);
    }

    #[test]
    fn a_deferred_request_keeps_its_due_time_and_attempts_across_a_reopen() {
        let scratch = Scratch::new("defer");
        let mut frontier = scratch.open();
        frontier.enqueue(request("retry")).unwrap();
        let mut retry = frontier.next(HOST).unwrap().unwrap();
        retry.attempts = 2;
        let now = Instant::now();
        frontier.defer(retry, now + Duration::from_secs(3600)).unwrap();
        assert!(frontier.has_pending());
        assert!(frontier.release_due(now).unwrap().is_empty());
        assert!(frontier.next(HOST).unwrap().is_none());
        frontier.commit().unwrap();
        drop(frontier);

        let mut again = scratch.open();
        let due = again.next_due().unwrap();
        assert!(due > Instant::now() + Duration::from_secs(3500), "still an hour away");
        assert!(again.release_due(Instant::now()).unwrap().is_empty());
        assert_eq!(again.release_due(due).unwrap().len(), 1);
        assert_eq!(again.next(HOST).unwrap().unwrap().attempts, 2);
    }
}
