//! Looking inside a state file without touching it: [`StateReport::read`] and its [`StateReport`],
//! what `spiderling state FILE` prints.
//!
//! The file is read through SQLite, read-only, in one read transaction, so every number
//! comes from one committed moment of the crawl. The crawl's lock is never taken and
//! nothing is written, so a crawl running on the file goes on undisturbed, and one that
//! starts meanwhile is not refused. A file no crawl has open (no `-wal` log beside it) is
//! read as immutable, which leaves nothing behind; one with a log (a crawl runs on it, or
//! a `kill -9` left the log) is read as SQLite's readers share a file in WAL mode, through
//! the `-shm` index beside it.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::Serialize;

use crate::error::Error;
use crate::observe::counters::Counts;
use crate::observe::tables::{elapsed, table};
use crate::observe::text::{size, thousands};
use crate::schedule::state::open::check_header;
use crate::schedule::state::schema::{self, sidecar, uri, SCHEMA_VERSION};
use spider_settings::utc_date;

/// What a state file holds: the crawl, its runs, its frontier per host, its failures.
///
/// Read by [`read`](Self::read). `Display` gives the report `spiderling state FILE` prints, with
/// the [`HOSTS_SHOWN`](Self::HOSTS_SHOWN) hosts that have the most queued
/// ([`display_hosts`](Self::display_hosts) for another number); its `Serialize` form is
/// what `--json` prints, every host included. Times are unix milliseconds, as the file
/// keeps them, and RFC 3339 text in the JSON, each named without its `_ms`
/// (`started_at`, `next_due`), as every time the crawl writes.
///
/// # Examples
///
/// ```
/// use spider_core::{Config, Frontier, Request, StateFrontier};
///
/// let dir = std::env::temp_dir().join(format!("state-report-doc-{}", std::process::id()));
/// let path = dir.join("books.state");
/// let mut frontier = StateFrontier::open(&path, &Config::new("books"))?;
/// frontier.enqueue(Request::get("https://books.example/a")?)?;
/// frontier.enqueue(Request::get("https://books.example/b")?)?;
/// frontier.next("https://books.example:443")?; // handed out: in flight
/// frontier.commit()?;
///
/// // The frontier still holds the file, as a running crawl would.
/// let report = spider_core::StateReport::read(&path)?;
/// assert_eq!((report.spider.as_str(), report.status.as_str()), ("books", "new"));
/// let host = &report.hosts[0];
/// assert_eq!(host.origin, "https://books.example:443");
/// assert_eq!((host.queued, host.in_flight, host.done), (1, 1, 0));
/// assert_eq!(report.seen, 2);
/// println!("{report}");
/// # drop(frontier);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), spider_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StateReport {
    /// The state file, as given to [`StateReport::read`].
    pub path: PathBuf,
    /// Its schema version; a file of another than this build's is refused.
    pub schema_version: u32,
    /// The name of the spider whose crawl it is.
    pub spider: String,
    /// When the crawl began, in RFC 3339 as every time the crawl writes (a file made by
    /// an older Spiderling recorded an HTTP date, read and given the same way).
    pub created_at: String,
    /// The crawl's status: `new` (no run has committed anything yet), `running` (its last
    /// run is under way, or was killed), `paused` (stopped by Ctrl-C or the proxy budget),
    /// `stopped` (by an error) or `complete`.
    pub status: String,
    /// The items files and how much of each is committed, in `output`'s order; none for
    /// a crawl without one.
    pub outputs: Vec<StateOutput>,
    /// Every run that worked on the crawl, first first.
    pub runs: Vec<StateRun>,
    /// The runs' counts, summed; in JSON with their `failures` total.
    #[serde(serialize_with = "crate::observe::counters::with_failures")]
    pub totals: Counts,
    /// Requests queued, over every host.
    pub queued: u64,
    /// Requests handed out and not finished, over every host: in flight in a running
    /// crawl, or left by a killed run (queued again when the crawl resumes).
    pub in_flight: u64,
    /// Retries waiting for their due time, over every host.
    pub deferred: u64,
    /// The earliest due time of a deferred request.
    #[serde(rename = "next_due", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub next_due_ms: Option<i64>,
    /// Every host the crawl has met, most queued first (then by origin).
    pub hosts: Vec<StateHost>,
    /// Requests given up, by reason.
    pub failures_by_reason: BTreeMap<String, u64>,
    /// The size of the seen-set: every request ever admitted, finished or not.
    pub seen: u64,
}

/// An items file of a crawl, in a [`StateReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StateOutput {
    /// Its absolute path.
    pub path: String,
    /// Bytes committed: a resumed crawl cuts the file back to this length.
    pub bytes: u64,
    /// Items in the committed bytes.
    pub items: u64,
    /// The file's length now, `None` if it is not there. Beyond `bytes` while a crawl
    /// writes it, or after a crash: the pages those items came from are still in the
    /// frontier.
    pub on_disk: Option<u64>,
}

/// One run of a crawl, in a [`StateReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StateRun {
    /// Its number, from 1.
    pub number: u32,
    /// When it started.
    #[serde(rename = "started_at", serialize_with = "crate::observe::tables::rfc3339_ms")]
    pub started_at_ms: i64,
    /// When it ended; `None` while it runs, or if it was killed.
    #[serde(rename = "ended_at", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub ended_at_ms: Option<i64>,
    /// How it ended, in the words of the stats file's `status` (`complete`,
    /// `complete_with_failures`, `interrupted`, `budget_reached`, `already_complete`) or
    /// `error`; `None` while it runs, or if it was killed.
    pub status: Option<String>,
    /// What it did, as of its last checkpoint; in JSON with its `failures` total.
    #[serde(serialize_with = "crate::observe::counters::with_failures")]
    pub counts: Counts,
}

/// One host of a crawl, in a [`StateReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StateHost {
    /// Its origin, `scheme://host:port`.
    pub origin: String,
    /// Requests queued.
    pub queued: u64,
    /// Requests in flight, or left in flight by a killed run (queued again on resume).
    pub in_flight: u64,
    /// Retries waiting for their due time.
    pub deferred: u64,
    /// The earliest due time of its deferred requests.
    #[serde(rename = "next_due", serialize_with = "crate::observe::tables::rfc3339_ms_or_null")]
    pub next_due_ms: Option<i64>,
    /// Requests finished: fetched, dropped or given up.
    pub done: u64,
    /// Of those, given up.
    pub failed: u64,
    /// The status its robots.txt was answered with; `None` if it has not been fetched, or
    /// could not be had.
    pub robots_status: Option<u16>,
    /// Why its robots.txt could not be had, if it could not (then nothing of the host is
    /// fetched).
    pub robots_unavailable: Option<String>,
}

impl StateReport {
    /// The hosts its `Display` shows.
    pub const HOSTS_SHOWN: usize = 20;

    /// The report as text, showing the `hosts` hosts that have the most queued, and how
    /// many more there are.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let report = spider_core::StateReport::read(std::path::Path::new("shop.state"))?;
    /// println!("{}", report.display_hosts(100));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn display_hosts(&self, hosts: usize) -> impl fmt::Display + '_ {
        Shown { report: self, hosts }
    }
}

impl StateReport {
    /// Read what the state file at `path` holds, without touching it.
    ///
    /// It is opened read-only through SQLite: the crawl's lock is not taken and nothing is
    /// written, so this works while a crawl runs on the file (it reads the last committed
    /// checkpoint) and after a `kill -9` left the file's `-wal` log. The checks are those a
    /// crawl makes before it opens the file. It blocks while it reads (a large file takes a
    /// while: the seen-set and the frontier are counted row by row); in async code, call it
    /// from `spawn_blocking`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let report = spider_core::StateReport::read(std::path::Path::new("shop.state"))?;
    /// println!("{}: {} queued, {} items written", report.spider, report.queued, report.totals.items);
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::State`] when there is no file at `path`, or it is empty, not an SQLite
    /// database, truncated, not a Spiderling state file, of another schema version, or
    /// damaged; [`Error::Store`] or [`Error::Io`] when it cannot be read.
    pub fn read(path: &Path) -> Result<StateReport, Error> {
        let refuse = |message: &str| Error::State { path: path.to_owned(), message: message.to_owned() };
        match std::fs::metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(refuse("does not exist; a crawl run with --set state=FILE makes it"));
            }
            Err(source) => return Err(Error::Io { path: path.to_owned(), source }),
            Ok(meta) if meta.is_dir() => return Err(refuse("is a directory, not a state file")),
            // A FIFO or a device would block the read below for ever, or never end.
            Ok(meta) if !meta.is_file() => return Err(refuse("is not a regular file, so not a state file")),
            Ok(_) => {}
        }
        let log = sidecar(path, "-wal");
        check_header(path)?;
        if !log.exists() {
            if let Some(uri) = uri(path, "mode=ro&immutable=1") {
                let before = stamp(path);
                let result = Connection::open_with_flags(
                    uri,
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_URI
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(|e| refuse(&format!("cannot be opened: {e}")))
                .and_then(|conn| read(path, &conn));
                // A crawl that opened the file meanwhile made a log, or wrote to the file
                // itself: then what was read may be torn, and the file is read again below.
                if before.is_some() && !log.exists() && stamp(path) == before {
                    return result;
                }
            }
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| refuse(&format!("cannot be opened: {e}")))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|source| Error::Store { path: path.to_owned(), source: Box::new(source) })?;
        read(path, &conn)
    }
}

/// Everything, in one read transaction.
fn read(path: &Path, conn: &Connection) -> Result<StateReport, Error> {
    let refuse = |message: String| Error::State { path: path.to_owned(), message };
    let store = |source: rusqlite::Error| Error::Store { path: path.to_owned(), source: Box::new(source) };
    conn.execute_batch("BEGIN").map_err(store)?;
    let facts: HashMap<String, String> =
        rows(conn, "SELECT key, value FROM crawl", |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(|error| match error.sqlite_error_code() {
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => store(error),
                _ => refuse(format!("is not a Spiderling state file ({error})")),
            })?
            .into_iter()
            .collect();
    let fact = |key: &str| facts.get(key).cloned().unwrap_or_default();
    if !schema::reads_version(facts.get("schema_version").map(String::as_str)) {
        let found = facts.get("schema_version").map_or("(none)", String::as_str);
        return Err(refuse(format!(
            "has schema version {found}, and this Spiderling reads version {SCHEMA_VERSION}; inspect it with \
             the Spiderling that wrote it"
        )));
    }

    let mut runs = Vec::new();
    let mut totals = Counts::default();
    let recorded = rows(conn, "SELECT started_at, ended_at, status, counts FROM runs ORDER BY id", |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, Option<i64>>(1)?,
            row.get::<_, Option<String>>(2)?,
            row.get::<_, String>(3)?,
        ))
    })
    .map_err(store)?;
    for (number, (started_at_ms, ended_at_ms, status, json)) in (1u32..).zip(recorded) {
        let counts: Counts = serde_json::from_str(&json)
            .map_err(|e| refuse(format!("is damaged: the counts of run {number}: {e}")))?;
        totals.add(&counts);
        runs.push(StateRun { number, started_at_ms, ended_at_ms, status, counts });
    }

    let mut hosts: HashMap<i64, StateHost> = HashMap::new();
    let met = rows(conn, "SELECT id, origin, done, failed, robots_status, robots_error FROM hosts", |row| {
        Ok((
            row.get::<_, i64>(0)?,
            StateHost {
                origin: row.get(1)?,
                queued: 0,
                in_flight: 0,
                deferred: 0,
                next_due_ms: None,
                done: count(row.get(2)?),
                failed: count(row.get(3)?),
                robots_status: row.get::<_, Option<i64>>(4)?.and_then(|s| u16::try_from(s).ok()),
                robots_unavailable: row.get(5)?,
            },
        ))
    })
    .map_err(store)?;
    hosts.extend(met);
    let (mut queued, mut in_flight, mut deferred, mut next_due_ms) = (0, 0, 0, None::<i64>);
    let frontier =
        rows(conn, "SELECT host, state, count(*), min(due) FROM requests GROUP BY host, state", |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                count(row.get(2)?),
                row.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(store)?;
    for (host, state, n, due) in frontier {
        let host = hosts.get_mut(&host);
        match state {
            // Taken ahead by a running crawl: next in its host's queue.
            0 | 3 => {
                queued += n;
                if let Some(host) = host {
                    host.queued += n;
                }
            }
            1 => {
                in_flight += n;
                if let Some(host) = host {
                    host.in_flight += n;
                }
            }
            2 => {
                deferred += n;
                next_due_ms = earliest(next_due_ms, due);
                if let Some(host) = host {
                    host.deferred += n;
                    host.next_due_ms = earliest(host.next_due_ms, due);
                }
            }
            other => return Err(refuse(format!("is damaged: a request in the unknown state {other}"))),
        }
    }
    let mut hosts: Vec<StateHost> = hosts.into_values().collect();
    hosts.sort_by(|a, b| b.queued.cmp(&a.queued).then_with(|| a.origin.cmp(&b.origin)));

    let failures_by_reason = rows(conn, "SELECT reason, count(*) FROM failures GROUP BY reason", |row| {
        Ok((row.get::<_, String>(0)?, count(row.get(1)?)))
    })
    .map_err(store)?
    .into_iter()
    .collect();
    let seen = conn.query_row("SELECT count(*) FROM seen", [], |row| row.get(0)).map(count).map_err(store)?;
    let logged = if has_table(conn, "seen_log").map_err(store)? {
        conn.query_row("SELECT coalesce(sum(length(fingerprints)), 0) / 16 FROM seen_log", [], |row| {
            row.get(0)
        })
        .map(count)
        .map_err(store)?
    } else {
        0
    };
    let seen = seen + logged;
    let committed = rows(conn, "SELECT role, path, bytes, records FROM files", |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, count(row.get(2)?), count(row.get(3)?)))
    })
    .map_err(store)?;
    let outputs = fact("output")
        .lines()
        .filter(|path| !path.is_empty())
        .enumerate()
        .map(|(at, line)| {
            let path = spider_settings::ItemsFile::new(line).path.display().to_string();
            let path = path.as_str();
            let role = schema::output_role(at);
            let (bytes, items) = committed
                .iter()
                .find(|(recorded_role, recorded, _, _)| *recorded_role == role && recorded == path)
                .map_or((0, 0), |(_, _, bytes, items)| (*bytes, *items));
            let on_disk = std::fs::metadata(path).ok().map(|meta| meta.len());
            StateOutput { path: path.to_owned(), bytes, items, on_disk }
        })
        .collect();
    Ok(StateReport {
        path: path.to_owned(),
        schema_version: fact("schema_version").parse().unwrap_or(SCHEMA_VERSION),
        spider: fact("spider"),
        created_at: as_rfc3339(&fact("created_at")),
        status: fact("status"),
        outputs,
        runs,
        totals,
        queued,
        in_flight,
        deferred,
        next_due_ms,
        hosts,
        failures_by_reason,
        seen,
    })
}

fn rows<T>(
    conn: &Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut select = conn.prepare(sql)?;
    let rows = select.query_map([], row)?;
    rows.collect()
}

/// Whether the file has `table`: one written before it existed lacks it until opened for
/// a crawl, and this reads without writing.
fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |row| {
        row.get::<_, i64>(0)
    })
    .map(|found| found > 0)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The file's length and modification time, to tell whether it changed while read.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// `created_at` as recorded in RFC 3339, or as an HTTP date by an older Spiderling: in
/// RFC 3339 either way, or as recorded when it is neither.
fn as_rfc3339(recorded: &str) -> String {
    httpdate::parse_http_date(recorded).map_or_else(|_| recorded.to_owned(), spider_settings::rfc3339)
}

/// `created_at` (RFC 3339) in the format of [`date`], or as recorded.
fn created(recorded: &str) -> String {
    let whole = |text: &str| text.len() >= 19 && text.as_bytes()[10] == b'T' && text.ends_with('Z');
    if whole(recorded) {
        format!("{} {} UTC", &recorded[..10], &recorded[11..19])
    } else {
        recorded.to_owned()
    }
}

/// The crawl's status in words, with what the same command would do.
fn status_words(status: &str) -> String {
    match status {
        "new" => "new: no run has committed anything yet".to_owned(),
        "running" => {
            "running, or killed: its last run has not ended (after a kill, the same command goes on)"
                .to_owned()
        }
        "paused" => "paused: the same command goes on where it stopped".to_owned(),
        "stopped" => "stopped by an error: the same command goes on where it stopped".to_owned(),
        "complete" => "complete: the same command fetches nothing (--fresh starts over)".to_owned(),
        other => other.to_owned(),
    }
}

/// A [`StateReport`] shown with a number of hosts.
struct Shown<'a> {
    report: &'a StateReport,
    hosts: usize,
}

impl fmt::Display for StateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.display_hosts(Self::HOSTS_SHOWN).fmt(f)
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self.report;
        writeln!(f, "state file {} (schema version {})", report.path.display(), report.schema_version)?;
        let field =
            |f: &mut fmt::Formatter<'_>, label: &str, value: &str| writeln!(f, "  {label:<9} {value}");
        field(f, "spider", &report.spider)?;
        field(f, "status", &status_words(&report.status))?;
        field(f, "created", &created(&report.created_at))?;
        if report.outputs.is_empty() {
            field(f, "output", "none")?;
        }
        for output in &report.outputs {
            let disk = match output.on_disk {
                None => " (not on disk)".to_owned(),
                Some(len) if len != output.bytes => {
                    format!(" ({} on disk; a resumed crawl cuts it back to what is committed)", size(len))
                }
                Some(_) => String::new(),
            };
            let shown = format!(
                "{}: {} items, {} committed{disk}",
                output.path,
                thousands(output.items),
                size(output.bytes)
            );
            field(f, "output", &shown)?;
        }

        let totals = &report.totals;
        let runs = match report.runs.len() {
            0 => "none yet".to_owned(),
            n => format!(
                "{n}: {} pages, {} items, {} requests, {} failures in {}",
                thousands(totals.pages),
                thousands(totals.items),
                thousands(totals.requests),
                thousands(totals.failures()),
                elapsed(totals.elapsed_secs)
            ),
        };
        field(f, "runs", &runs)?;
        let rows: Vec<Vec<String>> = report
            .runs
            .iter()
            .map(|run| {
                vec![
                    run.number.to_string(),
                    utc_date(run.started_at_ms),
                    run.ended_at_ms.map_or_else(|| "-".to_owned(), utc_date),
                    run.status.clone().unwrap_or_else(|| "running or killed".to_owned()),
                    thousands(run.counts.pages),
                    thousands(run.counts.items),
                ]
            })
            .collect();
        if !rows.is_empty() {
            let columns = [
                ("run", true),
                ("started", false),
                ("ended", false),
                ("status", false),
                ("pages", true),
                ("items", true),
            ];
            table(f, &columns, &rows)?;
        }

        let due =
            report.next_due_ms.map(|ms| format!(" (the first due {})", utc_date(ms))).unwrap_or_default();
        let again = if report.in_flight > 0 { " (queued again on resume)" } else { "" };
        let frontier = format!(
            "{} queued, {} in flight{again}, {} deferred{due}",
            thousands(report.queued),
            thousands(report.in_flight),
            thousands(report.deferred)
        );
        field(f, "frontier", &frontier)?;
        field(f, "seen", &format!("{} requests", thousands(report.seen)))?;

        let hosts = match report.hosts.len() {
            0 => "none yet".to_owned(),
            1 => "1".to_owned(),
            n => format!("{}, most queued first", thousands(n as u64)),
        };
        field(f, "hosts", &hosts)?;
        let shown = &report.hosts[..self.hosts.min(report.hosts.len())];
        let with_due = shown.iter().any(|host| host.next_due_ms.is_some());
        let rows: Vec<Vec<String>> = shown
            .iter()
            .map(|host| {
                let robots = match (&host.robots_unavailable, host.robots_status) {
                    (Some(reason), _) => format!("unavailable: {reason}"),
                    (None, Some(status)) => status.to_string(),
                    (None, None) => "not fetched yet".to_owned(),
                };
                let mut row = vec![
                    host.origin.clone(),
                    thousands(host.queued),
                    thousands(host.in_flight),
                    thousands(host.deferred),
                ];
                if with_due {
                    row.push(host.next_due_ms.map_or_else(|| "-".to_owned(), utc_date));
                }
                row.extend([thousands(host.done), thousands(host.failed), robots]);
                row
            })
            .collect();
        if !rows.is_empty() {
            let mut columns =
                vec![("host", false), ("queued", true), ("in flight", true), ("deferred", true)];
            if with_due {
                columns.push(("next due", false));
            }
            columns.extend([("done", true), ("failed", true), ("robots.txt", false)]);
            table(f, &columns, &rows)?;
        }
        let more = report.hosts.len() - shown.len();
        if more > 0 {
            writeln!(
                f,
                "    … and {} more host{}",
                thousands(more as u64),
                if more == 1 { "" } else { "s" }
            )?;
        }

        let failures = if report.failures_by_reason.is_empty() {
            "none".to_owned()
        } else {
            let total: u64 = report.failures_by_reason.values().sum();
            let reasons: Vec<String> = report
                .failures_by_reason
                .iter()
                .map(|(reason, n)| format!("{reason} ×{}", thousands(*n)))
                .collect();
            format!("{}: {}", thousands(total), reasons.join(", "))
        };
        write!(f, "  {:<9} {failures}", "failures")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_in_the_gregorian_calendar() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_date(1_700_000_000_999), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc_date(4_107_542_399_000), "2100-02-28 23:59:59 UTC");
        assert_eq!(utc_date(-1_000), "1969-12-31 23:59:59 UTC");
    }

    #[test]
    fn created_at_is_shown_as_the_other_dates() {
        let old = as_rfc3339("Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(old, "2023-11-14T22:13:20.000Z", "an older file's HTTP date");
        assert_eq!(created(&old), "2023-11-14 22:13:20 UTC");
        assert_eq!(as_rfc3339("yesterday"), "yesterday");
        assert_eq!(created("yesterday"), "yesterday");
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(elapsed(0.4242), "0.42 s");
        assert_eq!(elapsed(12.34), "12.3 s");
        assert_eq!(elapsed(245.0), "4 min 05 s");
        assert_eq!(elapsed(7_380.0), "2 h 03 min");
    }

    fn host(origin: &str, queued: u64) -> StateHost {
        StateHost {
            origin: origin.to_owned(),
            queued,
            in_flight: 0,
            deferred: 0,
            next_due_ms: None,
            done: 1_234,
            failed: 0,
            robots_status: Some(200),
            robots_unavailable: None,
        }
    }

    #[test]
    fn the_text_shows_the_hosts_asked_for_and_counts_the_rest() {
        let mut hosts: Vec<StateHost> =
            (0..25).map(|i| host(&format!("https://h{i:02}.example:443"), 25 - i)).collect();
        hosts[1].robots_status = None;
        hosts[1].robots_unavailable = Some("503 after 3 attempts".to_owned());
        let report = StateReport {
            path: PathBuf::from("shop.state"),
            schema_version: SCHEMA_VERSION,
            spider: "shop".to_owned(),
            created_at: "Tue, 14 Nov 2023 22:13:20 GMT".to_owned(),
            status: "paused".to_owned(),
            outputs: Vec::new(),
            runs: Vec::new(),
            totals: Counts::default(),
            queued: 30,
            in_flight: 0,
            deferred: 0,
            next_due_ms: None,
            hosts,
            failures_by_reason: [("http_404".to_owned(), 1_200), ("robots_unavailable".to_owned(), 3)].into(),
            seen: 12_345,
        };
        let text = report.to_string();
        assert!(text.contains("  hosts     25, most queued first\n"), "{text}");
        assert!(
            text.contains("https://h19.example:443       6          0         0  1,234       0  200\n"),
            "{text}"
        );
        assert!(!text.contains("h20.example"), "{text}");
        assert!(text.contains("    … and 5 more hosts\n"), "{text}");
        assert!(text.contains("  seen      12,345 requests\n"), "{text}");
        assert!(text.contains("1,234       0  unavailable: 503 after 3 attempts\n"), "{text}");
        assert!(text.ends_with("  failures  1,203: http_404 ×1,200, robots_unavailable ×3"), "{text}");
        let text = report.display_hosts(1).to_string();
        assert!(text.contains("h00.example") && !text.contains("h01.example"), "{text}");
        assert!(text.contains("… and 24 more hosts"), "{text}");
    }
}
