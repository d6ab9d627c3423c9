//! The cache file itself, in SQLite.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use rusqlite::{params, Connection, OptionalExtension};

use super::entry::{keeps, Body, CacheWrite, Cached, EntryBody};
use crate::error::Error;
use crate::observe::tables::unix_ms;
use crate::request::headers::StoredHeaders;
use crate::request::Request;
use crate::schedule::state::add_columns;
use crate::sinks::warc::{file_path, series, stored_digest, Archive, Stored};
use spider_settings::Config;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS answers (
        id          INTEGER PRIMARY KEY,
        fingerprint BLOB NOT NULL UNIQUE,  -- of the request: method and canonical URL
        url         TEXT NOT NULL,
        status      INTEGER NOT NULL,
        headers     TEXT NOT NULL,         -- JSON, [name, value] pairs
        body        BLOB NOT NULL,         -- deflated; empty when the archive holds it
        stored_at   INTEGER NOT NULL,      -- unix milliseconds
        warc        TEXT,                  -- the WARC file whose record holds the body
        warc_offset INTEGER,               -- where the record's gzip member starts
        warc_length INTEGER,               -- and how long it is
        digest      TEXT                   -- the payload's, as WARC-Payload-Digest says
    );";

/// The columns that locate a body in a WARC archive, added to a cache made before them.
const ARCHIVE_COLUMNS: [(&str, &str); 4] =
    [("warc", "TEXT"), ("warc_offset", "INTEGER"), ("warc_length", "INTEGER"), ("digest", "TEXT")];

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
    /// Whether anything was written since the last commit.
    unsaved: bool,
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
                "is a cache of version {version}, and this Spiderling reads version {CACHE_VERSION}; give it \
                    another file"
            )));
        }
        add_columns(&conn, "answers", &ARCHIVE_COLUMNS).map_err(store)?;
        conn.execute_batch("BEGIN").map_err(store)?;
        Ok(Some(HttpCache {
            conn,
            path: path.to_owned(),
            ttl: config.cache_ttl,
            revalidate: config.revalidate,
            max_body: config.max_body_bytes,
            last_commit: std::time::Instant::now(),
            unsaved: false,
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
        type Row = (u16, String, Vec<u8>, Option<(String, u64, u64, String)>);
        let row: Option<Row> = self
            .conn
            .prepare_cached(
                "SELECT status, headers, body, warc, warc_offset, warc_length, digest FROM answers \
                 WHERE fingerprint = ?1 AND stored_at >= ?2",
            )
            .and_then(|mut select| {
                select
                    .query_row(params![&fingerprint.0.to_be_bytes()[..], fresh_since], |row| {
                        let archived = match row.get::<_, Option<String>>(3)? {
                            Some(warc) => Some((warc, row.get(4)?, row.get(5)?, row.get(6)?)),
                            None => None,
                        };
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?, archived))
                    })
                    .optional()
            })
            .map_err(self.store_error())?;
        let Some((status, headers, body, archived)) = row else { return Ok(None) };
        let body = match archived {
            None => Body::Deflated(body),
            Some((warc, offset, length, digest)) => {
                let stored = Stored { file: warc.into(), offset, length };
                // An archive cut back, written over or moved away since: a miss, fetched
                // (through admission) and stored again.
                if stored_digest(&stored).as_deref() != Some(digest.as_str()) {
                    return Ok(None);
                }
                Body::Archived { stored, digest }
            }
        };
        let headers = serde_json::from_str::<StoredHeaders>(&headers).ok().and_then(|h| h.into_map().ok());
        let (Ok(status), Some(headers)) = (StatusCode::from_u16(status), headers) else {
            // A damaged entry is a miss: the answer is fetched and stored again.
            return Ok(None);
        };
        let revalidate = self.revalidate;
        Ok(Some(Cached { fingerprint, status, headers, body, max_body: self.max_body, revalidate }))
    }

    /// Write what a task handed back, an archived body at `stored`, where the dispatcher
    /// wrote its record; committed in groups (see [`COMMIT_EVERY`]).
    pub(crate) fn write(&mut self, write: CacheWrite, stored: Option<&Stored>) -> Result<(), Error> {
        let now = unix_ms(SystemTime::now());
        match write {
            CacheWrite::Store(entry) => {
                let (body, archived) = match (entry.body, stored) {
                    (EntryBody::Deflated(body), _) => (body, None),
                    (EntryBody::Archived(digest), Some(stored)) => (Vec::new(), Some((stored, digest))),
                    // The archive kept no payload for it: nothing to point at.
                    (EntryBody::Archived(_), None) => return Ok(()),
                };
                let file = archived.as_ref().map(|(stored, _)| stored.file.display().to_string());
                self.conn
                    .prepare_cached(
                        "INSERT INTO answers (fingerprint, url, status, headers, body, stored_at, warc, \
                         warc_offset, warc_length, digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
                         ON CONFLICT (fingerprint) DO UPDATE SET url = excluded.url, status = \
                         excluded.status, headers = excluded.headers, body = excluded.body, stored_at = \
                         excluded.stored_at, warc = excluded.warc, warc_offset = excluded.warc_offset, \
                             warc_length = excluded.warc_length, digest = excluded.digest",
                    )
                    .and_then(|mut upsert| {
                        upsert.execute(params![
                            &entry.fingerprint.0.to_be_bytes()[..],
                            entry.url,
                            entry.status,
                            entry.headers,
                            body,
                            now,
                            file,
                            archived.as_ref().map(|(stored, _)| stored.offset),
                            archived.as_ref().map(|(stored, _)| stored.length),
                            archived.as_ref().map(|(_, digest)| digest.as_str()),
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
        self.unsaved = true;
        if self.last_commit.elapsed() >= COMMIT_EVERY {
            self.commit()?;
        }
        Ok(())
    }

    /// Make what was stored durable; also when the crawl ends.
    pub(crate) fn commit(&mut self) -> Result<(), Error> {
        self.last_commit = std::time::Instant::now();
        if !std::mem::take(&mut self.unsaved) {
            return Ok(());
        }
        self.conn.execute_batch("COMMIT; BEGIN").map_err(self.store_error())
    }

    /// Forget the answers whose records the archive `base` is about to lose: a resumed
    /// crawl cuts its last committed file back to `committed` and deletes the files after
    /// it, and the records written past that are overwritten by others.
    pub(crate) fn forget_beyond(&mut self, base: &std::path::Path, committed: Archive) -> Result<(), Error> {
        let absolute = |number| std::path::absolute(file_path(base, number)).map(|p| p.display().to_string());
        let last = absolute(committed.file).map_err(|source| Error::Io { path: base.to_owned(), source })?;
        let bytes = i64::try_from(committed.bytes).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "DELETE FROM answers WHERE warc = ?1 AND warc_offset + warc_length > ?2",
                params![last, bytes],
            )
            .map_err(self.store_error())?;
        for number in series(base).into_iter().filter(|number| *number > committed.file) {
            let path = absolute(number).map_err(|source| Error::Io { path: base.to_owned(), source })?;
            self.conn.execute("DELETE FROM answers WHERE warc = ?1", [path]).map_err(self.store_error())?;
        }
        self.unsaved = true;
        self.commit()
    }
}

impl std::fmt::Debug for HttpCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCache").field("path", &self.path).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::cache::entry::Entry;

    #[test]
    fn a_resume_forgets_the_answers_whose_records_its_archive_cuts_off() -> Result<(), Error> {
        let dir = std::env::temp_dir().join(format!("spiderling-cache-forget-{}", std::process::id()));
        let io = |source| Error::Io { path: dir.clone(), source };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let base = dir.join("crawl.warc.gz");
        for number in 0..3 {
            std::fs::write(file_path(&base, number), vec![0u8; 1_000]).map_err(io)?;
        }
        let config = Config::new("shop").cache(dir.join("cache"));
        let mut cache = HttpCache::open(&config)?.ok_or_else(|| Error::Config("a cache".into()))?;
        let request = |n: u64| {
            Request::new(url::Url::parse(&format!("http://a.example/{n}")).unwrap_or_else(|e| panic!("{e}")))
        };
        let stored = |file: u64, offset: u64| Stored {
            file: std::path::absolute(file_path(&base, file)).unwrap_or_default(),
            offset,
            length: 100,
        };
        let places = [(0, 0), (1, 200), (1, 600), (2, 0)];
        for (n, (file, offset)) in places.into_iter().enumerate() {
            let request = request(n as u64);
            let entry = Entry::new(
                request.fingerprint(),
                &request,
                StatusCode::OK,
                &Default::default(),
                b"",
                Some("sha1:X"),
            );
            let entry = entry.ok_or_else(|| Error::Config("an entry".into()))?;
            cache.write(CacheWrite::Store(entry), Some(&stored(file, offset)))?;
        }
        // The checkpoint kept file 1 up to byte 500: the record at 600 and file 2 are lost.
        cache.forget_beyond(&base, Archive { file: 1, bytes: 500 })?;
        let kept: Vec<String> = cache
            .conn
            .prepare("SELECT url FROM answers ORDER BY url")
            .and_then(|mut select| select.query_map([], |row| row.get(0))?.collect())
            .map_err(cache.store_error())?;
        assert_eq!(kept, ["http://a.example/0", "http://a.example/1"]);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
