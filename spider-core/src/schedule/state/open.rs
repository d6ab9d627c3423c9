//! Opening a state file: one that is not this crawl's is refused before anything is
//! touched, a new one is created whole or not at all, and what an earlier run left in
//! flight is queued again.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{params, Connection, OpenFlags};

use super::checkpointer::Checkpointer;
use super::frontier::{Clock, Recent, StateFrontier, MERGE_SEEN_AT};
use super::schema::{sidecar, uri, SCHEMA_VERSION};
use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::observe::counters::Counts;
use crate::observe::tables::unix_ms;
use crate::observe::text::thousands;
use crate::request::canonical::Fingerprint;
use crate::request::host::HostKey;
use crate::request::identity::SavedIdentity;
use crate::schedule::frontier::Rules;
use crate::sinks::store::{Chunk, Outboxed};
use crate::sinks::warc::{file_path, Archive};
use crate::sinks::Committed;
use spider_settings::Config;

/// A state file ready for a run, and what the earlier runs left.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) frontier: StateFrontier,
    /// How much of each items file the last checkpoint committed, in `output`'s order
    /// (zero for a new crawl).
    pub(crate) outputs: Vec<Committed>,
    /// The failures file's committed length (zero for a new crawl or another path).
    pub(crate) failures: u64,
    /// The WARC archive's last file and its committed length (zero for a new crawl or
    /// another path).
    pub(crate) warc: Archive,
    /// The counts of the earlier runs, summed.
    pub(crate) earlier: Counts,
    /// How many runs came before this one.
    pub(crate) runs: u32,
    /// Whether the last run finished the crawl.
    pub(crate) complete: bool,
    /// The identities the last checkpoint saved: cookie jars and agents.
    pub(crate) identities: Vec<SavedIdentity>,
    /// Hosts that refused the crawl's own client (`impersonate = "auto"`).
    pub(crate) refusing_plain: Vec<String>,
    /// What the outbox holds for the tables.
    pub(crate) outbox: Outboxed,
    /// The keys of the items the earlier runs kept (`#[item(key)]`).
    pub(crate) kept_keys: Vec<ItemKey>,
}

/// Open the state file at `path` for `config`'s crawl, creating it if there is none. With
/// `fresh`, an existing one is deleted first, after saying what it held; one that is
/// another spider's or not a state file at all only with `force` too.
///
/// Whether the file is this crawl's is decided on a read-only connection: a read-write
/// one, closed, folds the log into the file and deletes it, so a refused file would not be
/// left as it was (and with a damaged frame in its log, what follows that frame would be
/// gone).
///
/// # Errors
///
/// [`Error::State`] when the file is another spider's or another output's, of another
/// schema version, not a state file at all, truncated, damaged, or in use by another
/// crawl; [`Error::Store`] or [`Error::Io`] when it cannot be read or written.
pub(crate) fn open(path: &Path, config: &Config, fresh: bool) -> Result<Opened, Error> {
    let outputs =
        config.outputs.iter().map(|file| absolute(&file.path)).collect::<Result<Vec<String>, Error>>()?;
    let failures = config.failures_path().as_deref().map(absolute).transpose()?;
    let warc = config.warc.as_deref().map(absolute).transpose()?;
    let lock = {
        let _directory = lock_directory(path)?;
        if fresh && path.exists() {
            let _lock = lock(path)?;
            let described = discardable(path, config)?;
            tracing::warn!(target: "spiderling", "starting over: discarding {}: {described}", path.display());
            for file in [path.to_owned(), sidecar(path, "-wal"), sidecar(path, "-shm")] {
                match std::fs::remove_file(&file) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::Io { path: file, source: error });
                    }
                    _ => {}
                }
            }
        }
        remove_unfinished_creations(path);
        if !path.exists() {
            create(path, config.name(), &super::schema::output_fact(&outputs, &config.outputs))?;
        }
        lock(path)?
    };
    let found = decide(path, config, &outputs, failures.as_deref(), warc.as_deref())?;
    warn_when_short_of_space(path);
    let store = |source| Error::Store { path: path.to_owned(), source: Box::new(source) };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(store)?;
    // See `state/mod.rs`: NORMAL survives a crash of the process; FULL,
    // with the files synced before each commit, a power loss.
    let synchronous = if config.state_sync { "FULL" } else { "NORMAL" };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous}; PRAGMA cache_size = -16000; \
         PRAGMA busy_timeout = 1000; PRAGMA wal_autocheckpoint = 0; BEGIN IMMEDIATE; UPDATE requests SET \
         state = 0 WHERE state IN (1, 3); {IDENTITIES}",
    ))
    .map_err(store)?;
    super::schema::add_columns(&conn, "outbox", &[("item_type", "TEXT")]).map_err(store)?;
    super::schema::add_columns(&conn, "files", &[("tail", "INTEGER")]).map_err(store)?;
    let version: String = conn
        .query_row("SELECT value FROM crawl WHERE key = 'schema_version'", [], |row| row.get(0))
        .map_err(store)?;
    if version != SCHEMA_VERSION.to_string() {
        super::sums::upgrade(&conn).map_err(store)?;
        conn.execute(
            "UPDATE crawl SET value = ?1 WHERE key = 'schema_version'",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(store)?;
    }
    conn.set_prepared_statement_cache_capacity(32);
    rusqlite::vtab::array::load_module(&conn).map_err(store)?;
    let identities = read_identities(&conn).map_err(store)?;
    let outbox = read_outbox(&conn).map_err(store)?;
    let kept_keys = read_kept_keys(&conn).map_err(store)?;
    let refusing_plain = read_refusing(&conn).map_err(store)?;
    let frontier = load(conn, path, lock, config, outputs, failures, warc)?;
    Ok(Opened {
        frontier,
        outputs: found.outputs,
        failures: found.failures,
        warc: found.warc,
        earlier: found.earlier,
        runs: found.runs,
        complete: found.complete,
        identities,
        refusing_plain,
        outbox,
        kept_keys,
    })
}

/// What a state file says of its crawl, read before anything is written to it.
struct Found {
    outputs: Vec<Committed>,
    failures: u64,
    warc: Archive,
    earlier: Counts,
    runs: u32,
    complete: bool,
}

/// Whether the file at `path` is sound and `config`'s crawl's, on a read-only connection
/// that leaves the file, its log and the log's index as they were.
fn decide(
    path: &Path,
    config: &Config,
    outputs: &[String],
    failures: Option<&str>,
    warc: Option<&str>,
) -> Result<Found, Error> {
    let refuse = |message: String| Error::State { path: path.to_owned(), message };
    check_header(path)?;
    let conn = read_only(path).map_err(|e| refuse(format!("cannot be opened: {e}")))?;
    let damaged = |detail: String| {
        refuse(format!(
            "is damaged ({detail}); it cannot be trusted, so start over with --fresh (the items already \
             written stay in the output file)"
        ))
    };
    // The whole file, once, before the crawl leans on it: a damaged page found later would
    // stop every run at the same place with no word of what to do.
    let check: String =
        conn.query_row("PRAGMA quick_check(1)", [], |row| row.get(0)).map_err(|e| damaged(e.to_string()))?;
    if check != "ok" {
        return Err(damaged(check));
    }
    let facts = read_facts(&conn).map_err(|e| match e {
        // The table is there and a fact does not read as text: damaged bytes in it.
        rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::Utf8Error(_) => {
            damaged(e.to_string())
        }
        e => refuse(format!(
            "is not a Spiderling state file ({e}); check the path, or discard it with --fresh --force"
        )),
    })?;
    let fact = |key: &str| facts.get(key).map(String::as_str);
    if !super::schema::reads_version(fact("schema_version")) {
        return Err(refuse(format!(
            "has schema version {}, and this Spiderling reads version {SCHEMA_VERSION}; finish the crawl \
             with the Spiderling that wrote it, or start over with --fresh",
            fact("schema_version").unwrap_or("(none)")
        )));
    }
    if fact("spider") != Some(config.name()) {
        return Err(refuse(format!(
            "belongs to the spider {:?}, not {:?}; give each spider a state file of its own, or discard \
             its crawl with --fresh --force",
            fact("spider").unwrap_or_default(),
            config.name()
        )));
    }
    let written = super::schema::output_fact(outputs, &config.outputs);
    if fact("output").unwrap_or_default() != written {
        let shown = |paths: &str| match paths {
            "" => "no output file".to_owned(),
            paths => paths.replace('\n', ", "),
        };
        return Err(refuse(format!(
            "was written for {}, and this run writes {}; run with the same -o to go on, or start over with \
             --fresh",
            shown(fact("output").unwrap_or_default()),
            shown(&written)
        )));
    }
    if fact("schema_version") == Some(SCHEMA_VERSION.to_string().as_str()) {
        super::sums::check(&conn, &facts).map_err(damaged)?;
    }
    let files = read_files(&conn).map_err(|e| damaged(e.to_string()))?;
    let committed = |role: &str, path: Option<&str>| match (files.get(role), path) {
        (Some(file), Some(path)) if file.path == path => Some(file),
        _ => None,
    };
    let outputs_committed: Vec<Committed> = outputs
        .iter()
        .enumerate()
        .map(|(at, path)| match committed(&super::schema::output_role(at), Some(path)) {
            Some(file) => Committed { bytes: file.bytes, items: file.records, tail: file.tail },
            None => Committed::default(),
        })
        .collect();
    let failures_committed = committed("failures", failures).map_or(0, |file| file.bytes);
    let warc_committed = committed("warc", warc)
        .map(|file| Archive { file: file.records, bytes: file.bytes })
        .unwrap_or_default();
    if let Some(path) = &config.warc {
        crate::sinks::check_resumable(&file_path(path, warc_committed.file), warc_committed.bytes, None)?;
    }
    for (file, committed) in config.outputs.iter().zip(&outputs_committed) {
        crate::sinks::check_resumable(&file.path, committed.bytes, committed.tail)?;
    }
    if let Some(path) = config.failures_path() {
        crate::sinks::check_resumable(&path, failures_committed, None)?;
    }
    let (earlier, runs) = read_runs(&conn).map_err(damaged)?;
    Ok(Found {
        outputs: outputs_committed,
        failures: failures_committed,
        warc: warc_committed,
        earlier,
        runs,
        complete: fact("status") == Some("complete"),
    })
}

/// A connection that reads the file as its crawl left it and writes nothing: without a
/// log, the file alone (`immutable`); with one, the log too, through its index read-only
/// (`readonly_shm`), which SQLite can do only when the index is there.
fn read_only(path: &Path) -> rusqlite::Result<Connection> {
    let how = match (sidecar(path, "-wal").exists(), sidecar(path, "-shm").exists()) {
        (false, _) => "immutable=1",
        (true, true) => "mode=ro&readonly_shm=1",
        (true, false) => "mode=ro",
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match uri(path, how) {
        Some(uri) => Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI),
        None => Connection::open_with_flags(path, flags),
    }
}

/// The identities table and the hosts that refused the plain client, added to the schema
/// after version 1's first files: created on open when missing, so those files stay
/// readable.
const IDENTITIES: &str =
    "CREATE TABLE IF NOT EXISTS identities (key TEXT PRIMARY KEY, agent TEXT, cookies TEXT NOT NULL); \
     CREATE TABLE IF NOT EXISTS refusing_plain (host TEXT PRIMARY KEY); \
     CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY, items BLOB NOT NULL, count INTEGER NOT \
     NULL); CREATE TABLE IF NOT EXISTS item_keys (key BLOB PRIMARY KEY) WITHOUT ROWID; \
     CREATE TABLE IF NOT EXISTS seen_log (id INTEGER PRIMARY KEY, fingerprints BLOB NOT NULL); \
     UPDATE crawl SET value = '2' WHERE key = 'schema_version' AND value = '1'; \
     INSERT OR IGNORE INTO crawl (key, value) VALUES ('outbox_crawl', lower(hex(randomblob(8))));";

/// The outbox an earlier run left: the crawl's name in the tables, the next chunk number,
/// and the chunks some table may lack.
fn read_outbox(conn: &Connection) -> rusqlite::Result<Outboxed> {
    let fact = |key: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT value FROM crawl WHERE key = ?1", [key], |row| row.get(0)).map(Some).or_else(
            |error| if error == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(error) },
        )
    };
    let crawl = fact("outbox_crawl")?.unwrap_or_default();
    let last: u64 = fact("outbox_seq")?.and_then(|seq| seq.parse().ok()).unwrap_or(0);
    let mut select = conn.prepare("SELECT seq, items, count, item_type FROM outbox ORDER BY seq")?;
    let rows = select.query_map([], |row| {
        Ok(Chunk { seq: row.get(0)?, items: row.get(1)?, count: row.get(2)?, item_type: row.get(3)? })
    })?;
    let held = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Outboxed { crawl, next_seq: last + 1, held })
}

/// The keys of the items kept so far; a row that is not a key (none is written so) is
/// left out.
fn read_kept_keys(conn: &Connection) -> rusqlite::Result<Vec<ItemKey>> {
    let mut select = conn.prepare("SELECT key FROM item_keys")?;
    let rows = select.query_map([], |row| row.get::<_, Vec<u8>>(0))?;
    rows.filter_map(|row| row.map(|bytes| ItemKey::from_bytes(&bytes)).transpose()).collect()
}

fn read_refusing(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut select = conn.prepare("SELECT host FROM refusing_plain ORDER BY host")?;
    let rows = select.query_map([], |row| row.get(0))?;
    rows.collect()
}

fn read_identities(conn: &Connection) -> rusqlite::Result<Vec<SavedIdentity>> {
    let mut select = conn.prepare("SELECT key, agent, cookies FROM identities")?;
    let rows = select.query_map([], |row| {
        Ok(SavedIdentity { key: row.get(0)?, agent: row.get(1)?, cookies: row.get(2)? })
    })?;
    rows.collect()
}

/// The frontier's in-memory part: host ids, counts, the earliest due time.
fn load(
    conn: Connection,
    path: &Path,
    lock: File,
    config: &Config,
    outputs: Vec<String>,
    failures: Option<String>,
    warc: Option<String>,
) -> Result<StateFrontier, Error> {
    let store = |source| Error::Store { path: path.to_owned(), source: Box::new(source) };
    let mut hosts = HashMap::new();
    let mut origins = HashMap::new();
    {
        let mut select = conn.prepare("SELECT id, origin FROM hosts").map_err(store)?;
        let rows = select
            .query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
            .map_err(store)?;
        for row in rows {
            let (id, origin) = row.map_err(store)?;
            let key = HostKey::from(origin);
            hosts.insert(key.clone(), id);
            origins.insert(id, key);
        }
    }
    let mut by_state = [0usize; 3];
    {
        let mut select =
            conn.prepare("SELECT state, count(*) FROM requests GROUP BY state").map_err(store)?;
        let rows =
            select.query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))).map_err(store)?;
        for row in rows {
            let (state, count) = row.map_err(store)?;
            if let Some(slot) = usize::try_from(state).ok().and_then(|s| by_state.get_mut(s)) {
                *slot = usize::try_from(count).unwrap_or(0);
            }
        }
    }
    let min_due = conn
        .query_row("SELECT min(due) FROM requests WHERE state = 2", [], |row| row.get(0))
        .map_err(store)?;
    let mut recent = Recent::default();
    {
        let mut select = conn.prepare("SELECT fingerprints FROM seen_log").map_err(store)?;
        let rows = select.query_map([], |row| row.get::<_, Vec<u8>>(0)).map_err(store)?;
        for row in rows {
            for bytes in row.map_err(store)?.chunks_exact(16) {
                let mut fingerprint = [0; 16];
                fingerprint.copy_from_slice(bytes);
                recent.insert(Fingerprint(u128::from_be_bytes(fingerprint)));
            }
        }
    }
    let merged = conn.query_row("SELECT EXISTS (SELECT 1 FROM seen)", [], |row| row.get(0)).map_err(store)?;
    let seen_sum: String = conn
        .query_row("SELECT value FROM crawl WHERE key = 'seen_sum'", [], |row| row.get(0))
        .map_err(store)?;
    let seen_sum = u128::from_str_radix(&seen_sum, 16).map_err(|e| Error::State {
        path: path.to_owned(),
        message: format!("has a seen_sum that does not read ({e}); start over with --fresh"),
    })?;
    Ok(StateFrontier {
        checkpointer: Checkpointer::start(path)?,
        conn,
        path: path.to_owned(),
        _lock: lock,
        rules: Rules::new(config),
        hosts,
        origins,
        recent,
        unlogged: Vec::new(),
        seen_sum,
        merged,
        merge_seen_at: MERGE_SEEN_AT,
        ahead: HashMap::new(),
        ahead_count: 0,
        handed: Vec::new(),
        queued: by_state[0],
        deferred: by_state[2],
        min_due,
        clock: Clock::now(),
        finished: HashMap::new(),
        finished_tickets: Vec::new(),
        run: None,
        started_at: unix_ms(SystemTime::now()),
        outputs,
        failures,
        warc,
        failed: None,
    })
}

/// Create a new state file whole: built under a temporary name with a rollback journal
/// (so its commit leaves everything in the file, and nothing in a log beside it), then
/// renamed; a failure removes what it made, and a kill leaves only the temporary file,
/// which the next open removes.
fn create(path: &Path, spider: &str, outputs: &str) -> Result<(), Error> {
    let temporary = path.with_file_name(format!("{}{}", unfinished_prefix(path), std::process::id()));
    let made = build(&temporary, spider, outputs)
        .map_err(|source| Error::Store { path: path.to_owned(), source: Box::new(source) })
        .and_then(|()| {
            std::fs::rename(&temporary, path).map_err(|source| Error::Io { path: path.to_owned(), source })
        });
    if made.is_err() {
        for file in [temporary.clone(), sidecar(&temporary, "-journal")] {
            let _ = std::fs::remove_file(file);
        }
    }
    made
}

fn build(temporary: &Path, spider: &str, outputs: &str) -> rusqlite::Result<()> {
    let conn = Connection::open(temporary)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL; BEGIN; {} ",
        super::schema::SCHEMA
    ))?;
    let facts = [
        ("schema_version", SCHEMA_VERSION.to_string()),
        ("spider", spider.to_owned()),
        ("output", outputs.to_owned()),
        ("created_at", spider_settings::rfc3339(SystemTime::now())),
        ("status", "new".to_owned()),
        ("seen_sum", super::sums::seen_fact(0)),
    ];
    for (key, value) in facts {
        conn.execute("INSERT INTO crawl (key, value) VALUES (?1, ?2)", params![key, value])?;
    }
    conn.execute_batch("COMMIT")?;
    conn.close().map_err(|(_, e)| e)
}

/// The start of the temporary names a creation of `path` builds under: `.NAME.new-`.
fn unfinished_prefix(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.new-")
}

/// Remove what creations of `path` killed before their rename left behind; called with
/// the directory locked, so no creation is under way.
fn remove_unfinished_creations(path: &Path) {
    let prefix = unfinished_prefix(path);
    let Ok(entries) = std::fs::read_dir(directory(path)) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The directory `path` is in.
fn directory(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Lock the state file's directory while the file is deleted, created and locked: two
/// crawls starting at once on a new file would otherwise each build a file, rename it into
/// place and lock their own, both getting past the file's lock.
fn lock_directory(path: &Path) -> Result<File, Error> {
    let dir = directory(path);
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    let handle = File::open(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    handle.lock().map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    Ok(handle)
}

/// Room the crawl wants on the state file's file system beyond what the file holds: its
/// log grows to 64 MiB before it is started over (`checkpointer.rs`), and may pass that
/// while a checkpoint is behind; the file itself grows about 140 bytes per URL seen.
const ROOM: u64 = 2 * super::checkpointer::RESTART_FRAMES * 4096;

/// Say so at the start when the file system may fill before the crawl ends: a full disk
/// stops the crawl at a checkpoint (nothing is lost, and the next run goes on once there
/// is room), but earlier is better than hours in.
fn warn_when_short_of_space(path: &Path) {
    #[cfg(unix)]
    if let Ok(stats) = rustix::fs::statvfs(directory(path)) {
        let free = stats.f_bavail.saturating_mul(stats.f_frsize);
        if free < ROOM {
            tracing::warn!(
                target: "spiderling",
                "{} is on a file system with {} MiB free; a state file wants {} MiB for its log besides \
                 about 140 bytes per URL: the crawl stops at its next checkpoint if the disk fills, and goes \
                 on from it once there is room",
                path.display(),
                free >> 20,
                ROOM >> 20
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Lock the file for this process, for as long as the returned handle lives (a BSD lock,
/// apart from SQLite's own, which it leaves alone).
fn lock(path: &Path) -> Result<File, Error> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::State {
            path: path.to_owned(),
            message: "is in use by another crawl; wait for it to end, or stop it".to_owned(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(Error::Io { path: path.to_owned(), source }),
    }
}

/// Refuse a file that is not an SQLite database, or that was cut short: SQLite would take
/// an empty file for an empty database, and read past the end of a truncated one as zeros.
pub(crate) fn check_header(path: &Path) -> Result<(), Error> {
    let refuse = |message: String| Error::State { path: path.to_owned(), message };
    let mut file = File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    let len = file.metadata().map_err(|source| Error::Io { path: path.to_owned(), source })?.len();
    let mut header = [0u8; 100];
    let read = file.read(&mut header).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    if read == 0 {
        return Err(refuse(
            "is empty, so not a Spiderling state file; delete it, or start over with --fresh --force".into(),
        ));
    }
    if read < header.len() || &header[..16] != b"SQLite format 3\0" {
        return Err(refuse(
            "is not a Spiderling state file (not an SQLite database); check the path, or discard it with \
                --fresh --force"
                .into(),
        ));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        size => u64::from(size),
    };
    let pages = u64::from(u32::from_be_bytes([header[28], header[29], header[30], header[31]]));
    // The page count is valid when the "version valid for" number matches the change counter.
    // With a log beside the file the log is the truth: a checkpoint writes page 1, with the
    // new count, before the pages that make the file longer, and a full disk or a kill
    // between the two leaves the file short of its count while the log still holds them.
    let counted = header[24..28] == header[92..96];
    if counted && len < page_size * pages && !sidecar(path, "-wal").exists() {
        return Err(refuse(format!(
            "is truncated: {len} bytes where its header says {}; it cannot be trusted, so start over with \
                --fresh --force",
            page_size * pages
        )));
    }
    Ok(())
}

fn read_facts(conn: &Connection) -> rusqlite::Result<HashMap<String, String>> {
    let mut select = conn.prepare("SELECT key, value FROM crawl")?;
    let rows = select.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

/// A row of `files`: how much of a file is committed.
struct FileRow {
    path: String,
    bytes: u64,
    records: u64,
    /// The sum of its last bytes before `bytes`; none in a file written before it was kept.
    tail: Option<u32>,
}

fn read_files(conn: &Connection) -> rusqlite::Result<HashMap<String, FileRow>> {
    // Read before the column is added to a file made without it.
    let summed: bool =
        conn.query_row("SELECT count(*) FROM pragma_table_info('files') WHERE name = 'tail'", [], |row| {
            row.get(0)
        })?;
    let tail = if summed { "tail" } else { "NULL" };
    let mut select = conn.prepare(&format!("SELECT role, path, bytes, records, {tail} FROM files"))?;
    let rows = select.query_map([], |row| {
        let file = FileRow { path: row.get(1)?, bytes: row.get(2)?, records: row.get(3)?, tail: row.get(4)? };
        Ok((row.get(0)?, file))
    })?;
    rows.collect()
}

/// The earlier runs' counts, summed, and how many runs there were.
fn read_runs(conn: &Connection) -> Result<(Counts, u32), String> {
    let mut select = conn.prepare("SELECT counts FROM runs").map_err(|e| e.to_string())?;
    let rows = select.query_map([], |row| row.get::<_, String>(0)).map_err(|e| e.to_string())?;
    let mut total = Counts::default();
    let mut runs = 0;
    for row in rows {
        let json = row.map_err(|e| e.to_string())?;
        let counts: Counts = serde_json::from_str(&json).map_err(|e| format!("a run's counts: {e}"))?;
        total.add(&counts);
        runs += 1;
    }
    Ok((total, runs))
}

/// What a state file holds, in a few words, for the message of `--fresh`.
/// What `--fresh` would discard at `path`, in words; refused unless `force` when the file
/// is another spider's or not a state file at all: a path typed wrong, or one spider's
/// file given to another, must not cost a crawl its progress.
fn discardable(path: &Path, config: &Config) -> Result<String, Error> {
    let refuse = |what: String| Error::State {
        path: path.to_owned(),
        message: format!(
            "{what}; --fresh discards only this spider's own state file: add --force to discard it"
        ),
    };
    let owner = check_header(path).ok().and_then(|()| {
        let conn = read_only(path).ok()?;
        read_facts(&conn).ok()?.remove("spider")
    });
    match owner {
        Some(spider) if spider == config.name() => Ok(describe(path)),
        _ if config.force => Ok(describe(path)),
        Some(spider) => Err(refuse(format!(
            "belongs to the spider {spider:?}, not {:?} ({})",
            config.name(),
            describe(path)
        ))),
        None => Err(refuse("is not a Spiderling state file".to_owned())),
    }
}

fn describe(path: &Path) -> String {
    let summary = read_only(path).map_err(|e| e.to_string()).and_then(|conn| {
        let queued = conn
            .query_row("SELECT count(*) FROM requests", [], |row| row.get::<_, i64>(0))
            .map_err(|e| e.to_string())?;
        Ok((read_runs(&conn)?, queued))
    });
    match summary {
        Ok(((counts, runs), queued)) => format!(
            "{} pages done, {} items, {} queued, over {runs} run{}",
            thousands(counts.pages),
            thousands(counts.items),
            thousands(u64::try_from(queued).unwrap_or(0)),
            if runs == 1 { "" } else { "s" }
        ),
        Err(error) => format!("not a readable state file ({error})"),
    }
}

/// The absolute spelling of `path`, as the state file records the files it belongs to.
fn absolute(path: &Path) -> Result<String, Error> {
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .map_err(|source| Error::Io { path: path.to_owned(), source })
}

impl StateFrontier {
    /// Open the state file at `path` for the crawl of `config` (its name, output file,
    /// allowed domains and depth limit), creating it if there is none.
    ///
    /// # Errors
    ///
    /// As [`Crawler::run`](crate::Crawler::run) with a state file: [`Error::State`] for a
    /// file that is not this crawl's, not a state file, truncated or in use;
    /// [`Error::Store`] or [`Error::Io`] when it cannot be read or written.
    pub fn open(path: &std::path::Path, config: &spider_settings::Config) -> Result<Self, Error> {
        open(path, config, false).map(|opened| opened.frontier)
    }
}
