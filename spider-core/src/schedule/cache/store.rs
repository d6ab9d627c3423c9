//! The cache file itself, in SQLite.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use rusqlite::{params, Connection, OptionalExtension};

use super::{keeps, CacheWrite, Cached};
use crate::error::Error;
use crate::observe::tables::unix_ms;
use crate::request::headers::StoredHeaders;
use crate::request::Request;
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

impl HttpCache {
    /// Open the cache file of `config`, creating it (and its folder) if there is none.
    pub(crate) fn open(config: &Config) -> Result<Option<Self>, Error> {
        let Some(path) = config.cache.as_deref() else { return Ok(None) };
        let refuse = |message: String| Error::CacheFile { path: path.to_owned(), message };
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
