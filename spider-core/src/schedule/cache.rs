//! The HTTP cache: every answer kept in one SQLite file, so later runs answer from it
//! without the network, or ask the server only whether it changed.
//!
//! The dispatcher looks a request up before admission: a fresh answer needs no rate token,
//! no host slot and no politeness pause, since nothing is sent. The request's task rebuilds
//! the answer (or, revalidating, sends the request with `If-None-Match` /
//! `If-Modified-Since` and takes a 304 as the cached answer) and hands new answers back for
//! the dispatcher to store: only the dispatcher touches the file. Bodies are stored
//! deflated; blocked answers and failures are never stored, nor answers to a request
//! other than GET or HEAD: a POST (a login, a search, an order) is sent every run, as
//! HTTP caches do (RFC 9111 lets no later POST be answered from a stored one).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use reqwest::header::{HeaderMap, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use reqwest::{Method, StatusCode};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Error;
use crate::request::canonical::Fingerprint;
use crate::request::headers::StoredHeaders;
use crate::request::Request;
use crate::schedule::state::unix_ms;
use spider_settings::Config;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS answers (
        id          INTEGER PRIMARY KEY,
        fingerprint BLOB NOT NULL UNIQUE,  -- of the request: method and canonical URL
        url         TEXT NOT NULL,
        status      INTEGER NOT NULL,
        headers     TEXT NOT NULL,         -- JSON, [name, value] pairs
        body        BLOB NOT NULL,         -- deflated
        stored_at   INTEGER NOT NULL       -- unix milliseconds
    );";

/// The version of the cache's schema; a file of another is refused.
const CACHE_VERSION: &str = "1";

/// Stores are committed in groups this far apart: a crash loses at most that much of the
/// cache, which only costs fetching it again.
const COMMIT_EVERY: Duration = Duration::from_secs(1);

/// The cache file, owned by the dispatcher.
pub(crate) struct HttpCache {
    conn: Connection,
    path: PathBuf,
    ttl: Option<Duration>,
    revalidate: bool,
    max_body: usize,
    last_commit: std::time::Instant,
}

/// An answer from the cache, travelling with its request to the task.
#[derive(Debug)]
pub(crate) struct Cached {
    fingerprint: Fingerprint,
    status: StatusCode,
    headers: HeaderMap,
    /// Deflated: inflated on the task.
    body: Vec<u8>,
    max_body: usize,
    /// Whether the server is asked first whether it still holds.
    pub(crate) revalidate: bool,
}

/// What a task hands back for the dispatcher to write to the cache.
#[derive(Debug)]
pub(crate) enum CacheWrite {
    /// A new answer.
    Store(Entry),
    /// A revalidated answer, fresh again from now.
    Touch(Fingerprint),
}

/// A new answer, its body already deflated on the task.
#[derive(Debug)]
pub(crate) struct Entry {
    fingerprint: Fingerprint,
    url: String,
    status: u16,
    headers: String,
    body: Vec<u8>,
}

/// Whether `request`'s answer is kept and reused: GET and HEAD only.
fn keeps(request: &Request) -> bool {
    matches!(*request.method(), Method::GET | Method::HEAD)
}

impl Entry {
    /// The entry to store for `request`'s answer; `None` for a request whose answers are
    /// not kept, or when the answer cannot be encoded.
    pub(crate) fn new(
        fingerprint: Fingerprint,
        request: &Request,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<Self> {
        if !keeps(request) {
            return None;
        }
        let mut deflated = DeflateEncoder::new(Vec::with_capacity(body.len() / 4), Compression::fast());
        deflated.write_all(body).ok()?;
        Some(Entry {
            fingerprint,
            url: request.url().to_string(),
            status: status.as_u16(),
            headers: serde_json::to_string(&StoredHeaders::of(headers)).ok()?,
            body: deflated.finish().ok()?,
        })
    }
}

impl Cached {
    /// The request to send when revalidating: with the answer's validators.
    pub(crate) fn conditional(&self, request: &Request) -> Request {
        let mut conditional = request.clone();
        for (stored, condition) in [(ETAG, IF_NONE_MATCH), (LAST_MODIFIED, IF_MODIFIED_SINCE)] {
            if let Some(value) = self.headers.get(stored) {
                conditional.headers.insert(condition, value.clone());
            }
        }
        conditional
    }

    /// Whether the answer carries a validator the server can confirm with a 304.
    pub(crate) fn has_validators(&self) -> bool {
        self.headers.contains_key(ETAG) || self.headers.contains_key(LAST_MODIFIED)
    }

    pub(crate) fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The stored answer: status, headers and inflated body (within the body cap).
    pub(crate) fn answer(self) -> Result<(StatusCode, HeaderMap, Bytes), String> {
        let mut body = Vec::new();
        let limit = u64::try_from(self.max_body).unwrap_or(u64::MAX).saturating_add(1);
        DeflateDecoder::new(&self.body[..])
            .take(limit)
            .read_to_end(&mut body)
            .map_err(|e| format!("body: {e}"))?;
        if body.len() > self.max_body {
            return Err(format!("body over the cap of {} bytes", self.max_body));
        }
        Ok((self.status, self.headers, Bytes::from(body)))
    }
}

impl HttpCache {
    /// Open the cache file of `config`, creating it (and its folder) if there is none.
    pub(crate) fn open(config: &Config) -> Result<Option<Self>, Error> {
        let Some(path) = config.cache.as_deref() else { return Ok(None) };
        let refuse = |message: String| Error::State { path: path.to_owned(), message };
        let store = |source| Error::Store { path: path.to_owned(), source: Box::new(source) };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|source| Error::Io { path: parent.to_owned(), source })?;
        }
        let conn = Connection::open(path).map_err(store)?;
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut select| select.query_map([], |row| row.get(0))?.collect())
            .map_err(|e| {
                refuse(format!("is not a Spiderling cache ({e}); give the cache a file of its own"))
            })?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "cache_meta") {
            return Err(refuse("is not a Spiderling cache; give the cache a file of its own".to_owned()));
        }
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; {SCHEMA}"
        ))
        .map_err(store)?;
        conn.execute("INSERT OR IGNORE INTO cache_meta (key, value) VALUES ('version', ?1)", [CACHE_VERSION])
            .map_err(store)?;
        let version: String = conn
            .query_row("SELECT value FROM cache_meta WHERE key = 'version'", [], |row| row.get(0))
            .map_err(store)?;
        if version != CACHE_VERSION {
            return Err(refuse(format!(
                "is a cache of version {version}, and this Spiderling reads version {CACHE_VERSION}; give it another file"
            )));
        }
        conn.execute_batch("BEGIN").map_err(store)?;
        Ok(Some(HttpCache {
            conn,
            path: path.to_owned(),
            ttl: config.cache_ttl,
            revalidate: config.revalidate,
            max_body: config.max_body_bytes,
            last_commit: std::time::Instant::now(),
        }))
    }

    fn store_error(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |source| Error::Store { path: self.path.clone(), source: Box::new(source) }
    }

    /// The answer kept for `request`, unless it is older than `cache_ttl`; with
    /// `revalidate`, marked to be confirmed by the server first.
    pub(crate) fn lookup(&self, request: &Request) -> Result<Option<Cached>, Error> {
        if !keeps(request) {
            return Ok(None);
        }
        let fingerprint = request.fingerprint();
        let fresh_since = self
            .ttl
            .map_or(i64::MIN, |ttl| unix_ms(SystemTime::now().checked_sub(ttl).unwrap_or(UNIX_EPOCH)));
        let row: Option<(u16, String, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT status, headers, body FROM answers WHERE fingerprint = ?1 AND stored_at >= ?2",
            )
            .and_then(|mut select| {
                select
                    .query_row(params![&fingerprint.0.to_be_bytes()[..], fresh_since], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .optional()
            })
            .map_err(self.store_error())?;
        let Some((status, headers, body)) = row else { return Ok(None) };
        let headers = serde_json::from_str::<StoredHeaders>(&headers).ok().and_then(|h| h.into_map().ok());
        let (Ok(status), Some(headers)) = (StatusCode::from_u16(status), headers) else {
            // A damaged entry is a miss: the answer is fetched and stored again.
            return Ok(None);
        };
        let revalidate = self.revalidate;
        Ok(Some(Cached { fingerprint, status, headers, body, max_body: self.max_body, revalidate }))
    }

    /// Write what a task handed back; committed in groups (see [`COMMIT_EVERY`]).
    pub(crate) fn write(&mut self, write: CacheWrite) -> Result<(), Error> {
        let now = unix_ms(SystemTime::now());
        match write {
            CacheWrite::Store(entry) => {
                self.conn
                    .prepare_cached(
                        "INSERT INTO answers (fingerprint, url, status, headers, body, stored_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (fingerprint) DO UPDATE SET \
                         url = excluded.url, status = excluded.status, headers = excluded.headers, \
                         body = excluded.body, stored_at = excluded.stored_at",
                    )
                    .and_then(|mut upsert| {
                        upsert.execute(params![
                            &entry.fingerprint.0.to_be_bytes()[..],
                            entry.url,
                            entry.status,
                            entry.headers,
                            entry.body,
                            now
                        ])
                    })
                    .map_err(self.store_error())?;
            }
            CacheWrite::Touch(fingerprint) => {
                self.conn
                    .prepare_cached("UPDATE answers SET stored_at = ?2 WHERE fingerprint = ?1")
                    .and_then(|mut touch| touch.execute(params![&fingerprint.0.to_be_bytes()[..], now]))
                    .map_err(self.store_error())?;
            }
        }
        if self.last_commit.elapsed() >= COMMIT_EVERY {
            self.commit()?;
        }
        Ok(())
    }

    /// Make what was stored durable; also when the crawl ends.
    pub(crate) fn commit(&mut self) -> Result<(), Error> {
        self.last_commit = std::time::Instant::now();
        self.conn.execute_batch("COMMIT; BEGIN").map_err(self.store_error())
    }
}

impl std::fmt::Debug for HttpCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCache").field("path", &self.path).finish()
    }
}
