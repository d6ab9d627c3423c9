//! What the crawls in a fleet's Redis are doing: [`FleetReport::read`] and its
//! [`FleetReport`], what `spiderling fleet REDIS_URL` prints.
//!
//! It reads with plain commands and writes nothing, so it can run beside the workers as
//! often as one likes without moving a lease or a count. Each crawl's keys are read in one
//! `MULTI` block, so its counts come from one moment; the leases each worker holds are
//! read just after, and may be a round apart.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use redis::RedisError;
use serde::{Deserialize, Serialize};

use spider_settings::RedisAddress as Address;

use crate::error::Error;
use crate::observe::counters::Counts;
use crate::observe::tables::{elapsed, table, unix_ms};
use crate::observe::text::{size, thousands};
use crate::schedule::fleet::connection::{self, Connection, Redis};
use crate::schedule::fleet::outputs::{self, FleetOutput};
use crate::schedule::fleet::parts::{prefix, Parts, CRAWLS};
use spider_settings::utc_date;

/// The crawls of a fleet's Redis, each with its workers, frontier and totals.
///
/// Read by [`read`](Self::read). `Display` gives the tables `spiderling fleet` prints;
/// the `Serialize` form is what `--json` prints. Times are unix milliseconds (RFC 3339
/// text in the JSON, each named without its `_ms`: `heard_at`, `created_at`); a worker's
/// are its own clock's, and how long ago it was heard from is measured with the clock of
/// the machine that read the report.
///
/// # Examples
///
/// ```no_run
/// use spider_core::{FleetReport, FleetStatus};
///
/// # async fn show() -> Result<(), spider_core::Error> {
/// // `env:VAR` works too, to keep the password out of `ps` and shell history.
/// let report = FleetReport::read("redis://127.0.0.1:6379/0", Some("books")).await?;
/// let crawl = &report.crawls[0];
/// if crawl.status == FleetStatus::Stalled {
///     eprintln!("{}: no worker heard from; {} requests wait", crawl.id, crawl.queued);
/// }
/// println!("{report}");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FleetReport {
    /// The Redis read, its password hidden.
    pub address: String,
    /// When it was read.
    #[serde(rename = "read_at", serialize_with = "crate::observe::tables::rfc3339_ms")]
    pub read_at_ms: i64,
    /// Its crawls, by id; only the one asked for when [`read`](Self::read) was given one.
    pub crawls: Vec<FleetCrawl>,
}

/// One crawl of a fleet, in a [`FleetReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FleetCrawl {
    /// Its id: the `crawl_id` its workers were started with, or their spider's name.
    pub id: String,
    /// The spider whose crawl it is; `None` if Redis has lost its record.
    pub spider: Option<String>,
    /// When its first worker joined.
    #[serde(rename = "created_at", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub created_ms: Option<i64>,
    /// The limits every worker shares, as the last worker to join set them (`per_host =
    /// 16 · rps = 200`): the whole fleet's, not each worker's.
    pub limits: Option<String>,
    /// Running, done or stalled.
    pub status: FleetStatus,
    /// When it was found done, by Redis's clock.
    #[serde(rename = "done_at", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub done_at_ms: Option<i64>,
    /// Requests queued, over every host.
    pub queued: u64,
    /// Requests leased to a worker and not finished.
    pub leased: u64,
    /// Retries waiting for their due time.
    pub deferred: u64,
    /// Every request ever queued (the size of its seen-set).
    pub seen: u64,
    /// Requests given up, as listed in Redis.
    pub failures: u64,
    /// The fleet's counts, every worker's summed, the gone ones' included; in JSON with
    /// their `failures` total.
    #[serde(serialize_with = "crate::observe::counters::with_failures")]
    pub totals: Counts,
    /// The live workers' pages per second, summed.
    pub pages_per_sec: f64,
    /// Blocked answers per request, from the totals; 0 before any request.
    pub block_rate: f64,
    /// Every worker that ever sent a heartbeat, by id.
    pub workers: Vec<FleetWorker>,
    /// The workers' output files, and how much of each the fleet committed.
    pub outputs: Vec<FleetOutput>,
    /// Why the crawl was stopped, when a worker found that Redis lost part of it.
    pub broken: Option<String>,
}

impl FleetCrawl {
    /// Write the committed part of every worker's output to `out`: each item of the crawl
    /// once, whatever workers were killed, leaving out what lies past each file's
    /// committed length. Returns how many items. The outputs must be on this machine and
    /// in the format of `out`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an output on another machine, in another format, or shorter
    /// than the fleet committed; [`Error::Io`] when one cannot be read or `out` written.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn merge() -> Result<(), spider_core::Error> {
    /// let report = spider_core::FleetReport::read("redis://127.0.0.1:6379/0", Some("books")).await?;
    /// if let Some(crawl) = report.crawls.first() {
    ///     let items = crawl.merge(std::path::Path::new("books.jsonl"))?;
    ///     println!("{items} items");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn merge(&self, out: &std::path::Path) -> Result<u64, Error> {
        outputs::merge(&self.outputs, &outputs::hostname(), out)
    }
}

/// Where a fleet's crawl is, in a [`FleetCrawl`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FleetStatus {
    /// A worker was heard from within [`FleetReport::SILENT_AFTER`].
    Running,
    /// The last worker found nothing left queued, leased or waiting.
    Done,
    /// Not done, and no worker heard from within [`FleetReport::SILENT_AFTER`]: the
    /// workers were stopped or lost; starting one goes on with the crawl.
    Stalled,
}

/// One worker of a fleet's crawl, as its last heartbeat says, in a [`FleetCrawl`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FleetWorker {
    /// `hostname:pid:random`.
    pub id: String,
    /// Its process id; `None` if the heartbeat does not read back.
    pub pid: Option<u32>,
    /// Live, ended or silent.
    pub state: WorkerState,
    /// When it sent its last heartbeat, by its own clock.
    #[serde(rename = "heard_at", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub heard_at_ms: Option<i64>,
    /// How long before the report was read that was, in seconds.
    pub heard_secs_ago: Option<f64>,
    /// Whether it was in touch with Redis when it sent it.
    pub connected: bool,
    /// Requests it holds leases on.
    pub leases: u64,
    /// Requests it sent.
    pub requests: u64,
    /// Pages it handed to `parse`.
    pub pages: u64,
    /// Items it wrote.
    pub items: u64,
    /// Answers it judged blocks.
    pub blocked: u64,
    /// Requests it gave up.
    pub failures: u64,
    /// How long it has run, or ran.
    pub elapsed_secs: f64,
    /// Its pages over its time: the average of its run, not of the last second.
    pub pages_per_sec: f64,
    /// Its blocked answers per request; 0 before any request.
    pub block_rate: f64,
}

/// Whether a worker is still at work, in a [`FleetWorker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum WorkerState {
    /// Heard from within [`FleetReport::SILENT_AFTER`].
    Live,
    /// It stopped and said so: its last heartbeat was its last round.
    Ended,
    /// Not heard from within [`FleetReport::SILENT_AFTER`], without saying it stopped:
    /// killed, hung, or cut off from Redis. Its leases go back to the queue when they run
    /// out.
    Silent,
}

/// A worker's heartbeat as `syncer.rs` writes it; every field optional, as a worker of
/// another version may write fewer.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Beat {
    pid: Option<u32>,
    at_ms: Option<i64>,
    requests: u64,
    pages: u64,
    items: u64,
    blocked: u64,
    failures: u64,
    elapsed_secs: f64,
    connected: bool,
    ended: bool,
}

impl FleetReport {
    /// How long a worker may go unheard before it is counted as silent. Workers beat
    /// about once a second, so this is ten beats missed, and a few seconds of clock skew
    /// between machines.
    pub const SILENT_AFTER: Duration = Duration::from_secs(10);

    /// Read the crawls of the fleet's Redis at `address` (`redis://…`, `rediss://…`, or
    /// `env:VAR` naming a variable that holds one): every crawl it lists, or only `crawl`.
    ///
    /// Nothing is written, so it is safe while workers run. A Redis that does not answer
    /// is given 5 s.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn show() -> Result<(), spider_core::Error> {
    /// let report = spider_core::FleetReport::read("env:FLEET_REDIS", None).await?;
    /// for crawl in &report.crawls {
    ///     println!("{}: {} pages, {:.1} pages/s", crawl.id, crawl.totals.pages, crawl.pages_per_sec);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an address that is not a Redis URL, a Redis that cannot be
    /// reached or refuses the password, and a `crawl` it does not hold (the message lists
    /// those it does); [`Error::Fleet`] when a read fails otherwise. No message holds the
    /// password.
    pub async fn read(address: &str, crawl: Option<&str>) -> Result<FleetReport, Error> {
        let address = Address::parse(address).map_err(|problem| {
            // `Address` speaks of the setting; here the URL is an argument.
            Error::Config(problem.strip_prefix("frontier = ").unwrap_or(&problem).to_owned())
        })?;
        let failed = |error: RedisError| failure(&address, &error);
        let mut connection = Redis::open(&address).map_err(failed)?.connect().await.map_err(failed)?;
        let mut ids: Vec<String> =
            redis::cmd("SMEMBERS").arg(CRAWLS).query_async(&mut connection).await.map_err(failed)?;
        ids.sort();
        if let Some(wanted) = crawl {
            if !ids.iter().any(|id| id == wanted) {
                let known = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
                return Err(Error::Config(format!(
                    "the fleet's Redis at {address} holds no crawl {wanted:?}; the crawls it holds: {known}"
                )));
            }
            ids = vec![wanted.to_owned()];
        }
        let now_ms = unix_ms(SystemTime::now());
        let mut crawls = Vec::with_capacity(ids.len());
        for id in ids {
            crawls.push(read_crawl(&mut connection, id, now_ms).await.map_err(failed)?);
        }
        Ok(FleetReport { address: address.to_string(), read_at_ms: now_ms, crawls })
    }
}

/// A Redis error as ours: not reaching Redis, or being refused by it, is a matter of
/// the address or the password (exit code 2); anything else a failed read.
fn failure(address: &Address, error: &RedisError) -> Error {
    match connection::refusal(address, error) {
        Some(refusal) => Error::Config(format!("cannot read the fleet's Redis at {address}: {refusal}")),
        None => Error::Fleet {
            address: address.to_string(),
            message: format!("reading the fleet failed: {}", address.hide(&error.to_string())),
        },
    }
}

/// The keys of one crawl, as `round.lua`'s header lists them: the crawl's record, and
/// each part's queues, totals, heartbeats and outputs, summed (`parts.rs`).
async fn read_crawl(connection: &mut Connection, id: String, now_ms: i64) -> redis::RedisResult<FleetCrawl> {
    let p = prefix(&id);
    let (meta, done): (HashMap<String, String>, Option<String>) = redis::pipe()
        .atomic()
        .hgetall(format!("{p}:meta"))
        .get(format!("{p}:done"))
        .query_async(connection)
        .await?;
    let tags: Vec<String> =
        meta.get("parts").and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
    let parts = Parts::new(&id, &tags);
    let (mut queued, mut leased, mut deferred, mut failures) = (0, 0, 0, 0);
    let mut stats: HashMap<String, i64> = HashMap::new();
    // Each worker's latest heartbeat, from whichever part it was in, and its leases in all.
    let mut beats: HashMap<String, (i64, String)> = HashMap::new();
    let mut leases: HashMap<String, u64> = HashMap::new();
    let mut files: HashMap<String, String> = HashMap::new();
    // Each file's gaps, from every part it was committed in.
    let mut gaps: HashMap<String, Vec<(u64, u64, u64)>> = HashMap::new();
    for part in parts.prefixes() {
        type Keys = (
            Option<i64>,
            u64,
            u64,
            u64,
            HashMap<String, i64>,
            HashMap<String, String>,
            HashMap<String, String>,
            HashMap<String, String>,
        );
        let (
            part_queued,
            part_leased,
            part_deferred,
            part_failures,
            part_stats,
            part_beats,
            part_files,
            part_gaps,
        ): Keys = redis::pipe()
            .atomic()
            .get(format!("{part}:queued"))
            .zcard(format!("{part}:leases"))
            .zcard(format!("{part}:deferred"))
            .llen(format!("{part}:failures"))
            .hgetall(format!("{part}:stats"))
            .hgetall(format!("{part}:workers"))
            .hgetall(format!("{part}:outputs"))
            .hgetall(format!("{part}:gaps"))
            .query_async(connection)
            .await?;
        queued += part_queued.map_or(0, count);
        leased += part_leased;
        deferred += part_deferred;
        failures += part_failures;
        for (name, n) in part_stats {
            *stats.entry(name).or_default() += n;
        }
        if !part_beats.is_empty() {
            let workers: Vec<&String> = part_beats.keys().collect();
            let mut pipe = redis::pipe();
            for worker in &workers {
                pipe.scard(format!("{part}:mine:{worker}"));
            }
            let held: Vec<u64> = pipe.query_async(connection).await?;
            for (worker, n) in workers.into_iter().zip(held) {
                *leases.entry(worker.clone()).or_default() += n;
            }
        }
        for (worker, json) in part_beats {
            let at = serde_json::from_str::<Beat>(&json).ok().and_then(|beat| beat.at_ms).unwrap_or(0);
            if beats.get(&worker).is_none_or(|(known, _)| at > *known) {
                beats.insert(worker, (at, json));
            }
        }
        for (file, json) in part_gaps {
            gaps.entry(file).or_default().extend(outputs::read_gaps(&json));
        }
        for (file, json) in part_files {
            let bytes = |json: &str| outputs::read_committed(json).map_or(0, |c| c.bytes);
            if files.get(&file).is_none_or(|known| bytes(&json) > bytes(known)) {
                files.insert(file, json);
            }
        }
    }
    let mut beats: Vec<(String, (i64, String))> = beats.into_iter().collect();
    beats.sort();
    let workers: Vec<FleetWorker> = beats
        .into_iter()
        .map(|(id, (_, json))| {
            let held = leases.get(&id).copied().unwrap_or(0);
            worker(id, &json, held, now_ms)
        })
        .collect();

    let stat = |name: &str| stats.get(name).copied().map_or(0, count);
    let mut totals = Counts::from_named(stat);
    for (name, n) in &stats {
        let n = count(*n);
        if let Some(status) = name.strip_prefix("status:").and_then(|code| code.parse().ok()) {
            totals.statuses.insert(status, n);
        } else if let Some(reason) = name.strip_prefix("failure:") {
            totals.failures_by_reason.insert(reason.to_owned(), n);
        } else if let Some(reason) = name.strip_prefix("drop:") {
            totals.drops_by_reason.insert(reason.to_owned(), n);
        } else if let Some(rule) = name.strip_prefix("no_item:") {
            totals.no_item_by_rule.insert(rule.to_owned(), n);
        }
    }
    let live = workers.iter().filter(|w| w.state == WorkerState::Live);
    // Folded from 0.0: `sum` of no floats is -0.0, which prints as such.
    let pages_per_sec = live.clone().fold(0.0, |sum, w| sum + w.pages_per_sec);
    let status = if done.is_some() {
        FleetStatus::Done
    } else if live.count() > 0 {
        FleetStatus::Running
    } else {
        FleetStatus::Stalled
    };
    let here = outputs::hostname();
    let mut files: Vec<(String, String)> = files.into_iter().collect();
    files.sort();
    let outputs = files
        .iter()
        .filter_map(|(file, json)| {
            FleetOutput::read(file, json, gaps.get(file).map_or(&[], Vec::as_slice), &here)
        })
        .collect();
    Ok(FleetCrawl {
        outputs,
        broken: meta.get("broken").cloned(),
        id,
        spider: meta.get("spider").cloned(),
        created_ms: meta.get("created_ms").and_then(|ms| ms.parse().ok()),
        limits: meta.get("limits").cloned(),
        status,
        done_at_ms: done.and_then(|ms| ms.parse().ok()),
        queued,
        leased,
        deferred,
        seen: stat("seen"),
        failures,
        block_rate: ratio(totals.blocked, totals.requests),
        totals,
        pages_per_sec,
        workers,
    })
}

/// A worker from its heartbeat; one that does not read back shows as silent, with no
/// counts, rather than not at all.
fn worker(id: String, json: &str, leases: u64, now_ms: i64) -> FleetWorker {
    let beat: Beat = serde_json::from_str(json).unwrap_or_default();
    let ago_ms = beat.at_ms.map(|at| now_ms.saturating_sub(at).max(0));
    let silent_ms = i64::try_from(FleetReport::SILENT_AFTER.as_millis()).unwrap_or(i64::MAX);
    let state = match ago_ms {
        _ if beat.ended => WorkerState::Ended,
        Some(ago) if ago <= silent_ms => WorkerState::Live,
        _ => WorkerState::Silent,
    };
    let pages_per_sec = if beat.elapsed_secs > 0.0 { beat.pages as f64 / beat.elapsed_secs } else { 0.0 };
    FleetWorker {
        id,
        pid: beat.pid,
        state,
        heard_at_ms: beat.at_ms,
        heard_secs_ago: ago_ms.map(|ms| ms as f64 / 1000.0),
        connected: beat.connected,
        leases,
        requests: beat.requests,
        pages: beat.pages,
        items: beat.items,
        blocked: beat.blocked,
        failures: beat.failures,
        elapsed_secs: beat.elapsed_secs,
        pages_per_sec,
        block_rate: ratio(beat.blocked, beat.requests),
    }
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A rate with one decimal and its thousands marked: `1,283.4`.
fn per_sec(rate: f64) -> String {
    let tenths = (rate.max(0.0) * 10.0).round() as u64;
    format!("{}.{}", thousands(tenths / 10), tenths % 10)
}

/// A share as a percentage, or `-` when there was nothing to share.
fn percent(rate: f64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", rate * 100.0)
    }
}

impl fmt::Display for FleetReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.crawls.len() {
            0 => {
                return write!(
                    f,
                    "fleet {}: no crawls (a worker started with --set frontier=REDIS_URL makes one)",
                    self.address
                )
            }
            1 => write!(f, "fleet {}: 1 crawl", self.address)?,
            n => write!(f, "fleet {}: {n} crawls", self.address)?,
        }
        for crawl in &self.crawls {
            write!(f, "\n\n{crawl}")?;
        }
        Ok(())
    }
}

impl fmt::Display for FleetCrawl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut about = Vec::new();
        if let Some(spider) = &self.spider {
            about.push(format!("spider {spider}"));
        }
        if let Some(ms) = self.created_ms {
            about.push(format!("created {}", utc_date(ms)));
        }
        if about.is_empty() {
            writeln!(f, "crawl {}", self.id)?;
        } else {
            writeln!(f, "crawl {} ({})", self.id, about.join(", "))?;
        }
        let field =
            |f: &mut fmt::Formatter<'_>, label: &str, value: &str| writeln!(f, "  {label:<9} {value}");

        if self.workers.is_empty() {
            field(f, "workers", "none heard from yet")?;
        } else {
            let rows: Vec<Vec<String>> = self.workers.iter().map(worker_row).collect();
            let columns = [
                ("worker", false),
                ("pid", true),
                ("state", false),
                ("leases", true),
                ("pages", true),
                ("items", true),
                ("pages/s", true),
                ("blocked", true),
            ];
            table(f, &columns, &rows)?;
        }

        let silent = elapsed(FleetReport::SILENT_AFTER.as_secs_f64());
        let status = match (self.status, self.done_at_ms) {
            (FleetStatus::Done, Some(ms)) => format!("done at {}", utc_date(ms)),
            (FleetStatus::Done, None) => "done".to_owned(),
            (FleetStatus::Running, _) => "running".to_owned(),
            (FleetStatus::Stalled, _) => {
                format!("stalled: no worker heard from in {silent}; a worker started on it goes on")
            }
        };
        let status = match &self.broken {
            Some(why) => format!("stopped: {why}"),
            None => status,
        };
        field(f, "status", &status)?;
        if let Some(limits) = &self.limits {
            let workers = self.workers.iter().filter(|worker| worker.state == WorkerState::Live).count();
            let shared = match workers {
                0 | 1 => String::new(),
                n => format!(", shared by its {n} workers"),
            };
            field(f, "limits", &format!("{limits} for the whole fleet{shared}"))?;
        }
        field(
            f,
            "frontier",
            &format!(
                "{} queued, {} leased, {} waiting for retry",
                thousands(self.queued),
                thousands(self.leased),
                thousands(self.deferred)
            ),
        )?;
        field(f, "seen", &format!("{} requests", thousands(self.seen)))?;
        let requests = if self.failures == 1 { "request" } else { "requests" };
        field(f, "failures", &format!("{} {requests} given up", thousands(self.failures)))?;
        let t = &self.totals;
        field(
            f,
            "totals",
            &format!(
                "{} requests, {} pages, {} items, {} retries, {} blocked, {} failures, {} received, {} \
                    duplicate links",
                thousands(t.requests),
                thousands(t.pages),
                thousands(t.items),
                thousands(t.retries),
                thousands(t.blocked),
                thousands(t.failures()),
                size(t.bytes),
                thousands(t.duplicates)
            ),
        )?;
        if t.skipped_not_html > 0 {
            let skipped = format!("{} answers not HTML, not parsed", thousands(t.skipped_not_html));
            field(f, "skipped", &skipped)?;
        }
        if t.skipped_hidden > 0 {
            field(f, "hidden", &format!("{} hidden links not followed", thousands(t.skipped_hidden)))?;
        }
        for output in &self.outputs {
            let tail = match output.tail {
                Some(tail) if tail > 0 => format!(
                    "; {} past them, of requests the fleet may have had fetched again (left out by --merge)",
                    size(tail)
                ),
                _ => String::new(),
            };
            let left_out: u64 = output.gaps.iter().map(|(from, to)| to.saturating_sub(*from)).sum();
            let gaps = match left_out {
                0 => String::new(),
                _ => format!(", less {} of requests fetched again elsewhere", size(left_out)),
            };
            let committed = format!(
                "{}:{}: {} {} committed ({}{gaps}){tail}",
                output.host,
                output.path,
                thousands(output.items),
                if output.items == 1 { "item" } else { "items" },
                size(output.bytes)
            );
            field(f, "output", &committed)?;
        }
        let live = self.workers.iter().filter(|w| w.state == WorkerState::Live).count();
        // The last line without its line end, as `Display` of one value goes.
        write!(
            f,
            "  {:<9} {} pages/s from {live} live worker{}; {} of requests blocked",
            "rate",
            per_sec(self.pages_per_sec),
            if live == 1 { "" } else { "s" },
            percent(self.block_rate, t.requests)
        )
    }
}

fn worker_row(worker: &FleetWorker) -> Vec<String> {
    let ago = worker.heard_secs_ago.map(elapsed);
    let state = match (worker.state, ago) {
        (WorkerState::Live, Some(ago)) => format!("seen {ago} ago"),
        (WorkerState::Ended, Some(ago)) => format!("ended {ago} ago"),
        (WorkerState::Silent, Some(ago)) => format!("silent for {ago}"),
        (WorkerState::Live, None) => "live".to_owned(),
        (WorkerState::Ended, None) => "ended".to_owned(),
        (WorkerState::Silent, None) => "silent".to_owned(),
    };
    vec![
        worker.id.clone(),
        worker.pid.map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
        state,
        thousands(worker.leases),
        thousands(worker.pages),
        thousands(worker.items),
        per_sec(worker.pages_per_sec),
        percent(worker.block_rate, worker.requests),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_100_000;

    fn beat(at_ms: i64, pages: u64, ended: bool) -> String {
        serde_json::json!({
            "pid": 4242, "at_ms": at_ms, "requests": pages * 2, "pages": pages, "items": pages / 2,
            "blocked": pages / 10, "failures": 0, "elapsed_secs": 10.0, "connected": true, "ended": ended,
        })
        .to_string()
    }

    #[test]
    fn a_worker_is_live_ended_or_silent_by_its_last_heartbeat() {
        let live = worker("a:1:00".into(), &beat(NOW - 1_500, 100, false), 3, NOW);
        assert_eq!((live.state, live.heard_secs_ago, live.leases), (WorkerState::Live, Some(1.5), 3));
        assert_eq!((live.pages_per_sec, live.block_rate), (10.0, 0.05));
        let ended = worker("a:2:00".into(), &beat(NOW - 60_000, 100, true), 0, NOW);
        assert_eq!(ended.state, WorkerState::Ended);
        let silent = worker("a:3:00".into(), &beat(NOW - 10_001, 100, false), 5, NOW);
        assert_eq!(silent.state, WorkerState::Silent);
        // A clock ahead of ours is heard from now, not in the future.
        let ahead = worker("a:4:00".into(), &beat(NOW + 2_000, 0, false), 0, NOW);
        assert_eq!(
            (ahead.state, ahead.heard_secs_ago, ahead.block_rate),
            (WorkerState::Live, Some(0.0), 0.0)
        );
        let garbled = worker("a:5:00".into(), "not json", 0, NOW);
        assert_eq!((garbled.state, garbled.pid, garbled.pages), (WorkerState::Silent, None, 0));
    }

    #[test]
    fn the_text_has_a_row_per_worker_and_the_crawl_below() {
        let workers = vec![
            worker("box:4242:0a0b0c0d".into(), &beat(NOW - 400, 1_200, false), 16, NOW),
            worker("box:4243:01020304".into(), &beat(NOW - 30_000, 80, true), 0, NOW),
        ];
        let crawl = FleetCrawl {
            id: "shop".into(),
            spider: Some("shop".into()),
            created_ms: Some(1_700_000_000_000),
            limits: Some("per_host = 16 · rps = 200".into()),
            status: FleetStatus::Running,
            done_at_ms: None,
            queued: 12_345,
            leased: 16,
            deferred: 2,
            seen: 20_000,
            failures: 1,
            totals: Counts { requests: 2_000, pages: 1_280, blocked: 5, ..Counts::default() },
            pages_per_sec: 120.0,
            block_rate: 0.0025,
            workers,
            outputs: vec![FleetOutput {
                host: "box".into(),
                path: "/data/shop-a.jsonl".into(),
                bytes: 2_048,
                items: 12,
                gaps: Vec::new(),
                tail: Some(300),
            }],
            broken: None,
        };
        let report =
            FleetReport { address: "redis://***@h:6379/0".into(), read_at_ms: NOW, crawls: vec![crawl] };
        let text = report.to_string();
        assert!(
            text.starts_with(
                "fleet redis://***@h:6379/0: 1 crawl\n\ncrawl shop (spider shop, created \
            2023-11-14 22:13:20 UTC)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "    worker              pid  state             leases  pages  items  pages/s  blocked\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "    box:4242:0a0b0c0d  4242  seen 0.40 s ago       16  1,200    600    120.0     5.0%\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "    box:4243:01020304  4242  ended 30.0 s ago       0     80     40      8.0     5.0%\n"
            ),
            "{text}"
        );
        assert!(text.contains("  failures  1 request given up\n"), "{text}");
        assert!(text.contains("  status    running\n"), "{text}");
        assert!(
            text.contains("  output    box:/data/shop-a.jsonl: 12 items committed (2.0 kB); 300 B past them"),
            "{text}"
        );
        assert!(text.contains("  frontier  12,345 queued, 16 leased, 2 waiting for retry\n"), "{text}");
        assert!(
            text.ends_with("  rate      120.0 pages/s from 1 live worker; 0.2% of requests blocked"),
            "{text}"
        );
    }

    #[test]
    fn rates_read_with_their_thousands_marked() {
        assert_eq!(per_sec(0.0), "0.0");
        assert_eq!(per_sec(-0.0), "0.0");
        assert_eq!(per_sec(8.04), "8.0");
        assert_eq!(per_sec(1_283.449), "1,283.4");
        assert_eq!(per_sec(99.96), "100.0");
    }

    #[test]
    fn no_crawls_says_where_one_comes_from() {
        let report = FleetReport { address: "redis://h:6379/0".into(), read_at_ms: NOW, crawls: Vec::new() };
        assert!(report.to_string().contains("no crawls"));
    }
}
