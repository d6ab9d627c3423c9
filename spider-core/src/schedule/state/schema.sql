-- The schema of a Spiderling state file, version 3 (upgraded when opened: version 1 lacked
-- `seen_log`, version 2 the checksums, `requests.sum` and the `seen_sum` fact). A state file is one SQLite database (write-ahead log on); open it with
-- `sqlite3 shop.state` to look inside. Times are unix milliseconds. Spiderling holds it
-- locked while a crawl runs.

-- Facts about the crawl, one per key: schema_version, spider (its name), output (the
-- absolute path of its items file, empty for none), created_at, and status (`new`,
-- `running` while a run works on it or after one was killed, `paused`, `stopped` after an
-- error, `complete`), and `seen_sum`, the XOR of every fingerprint of the seen-set (below),
-- in hex: a resumed crawl refuses a file whose seen-set or requests (`requests.sum`) no
-- longer hold what was written, a damaged disk's doing that SQLite's own check misses.
CREATE TABLE crawl (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Every host the crawl has met, by origin (`scheme://host:port`), with what its
-- robots.txt said: an answer's status and body, or why it could not be had.
CREATE TABLE hosts (
    id            INTEGER PRIMARY KEY,
    origin        TEXT NOT NULL UNIQUE,
    done          INTEGER NOT NULL DEFAULT 0,  -- requests finished: fetched, dropped or given up
    failed        INTEGER NOT NULL DEFAULT 0,  -- of those, given up
    robots_status INTEGER,
    robots_body   BLOB,
    robots_error  TEXT,
    robots_at     INTEGER
);

-- The frontier: every request admitted and not yet finished. A finished request's row is
-- deleted; its fingerprint stays in `seen`.
CREATE TABLE requests (
    id       INTEGER PRIMARY KEY,  -- order of arrival: first in, first out within a priority
    host     INTEGER NOT NULL REFERENCES hosts (id),
    state    INTEGER NOT NULL,     -- 0 queued, 1 in flight (queued again on resume), 2 deferred,
                                   -- 3 taken ahead: next in its host's queue (queued again on resume)
    priority INTEGER NOT NULL,     -- higher first, per host
    due      INTEGER,              -- deferred: when it may go again
    url      TEXT NOT NULL,
    method   TEXT NOT NULL,
    depth    INTEGER NOT NULL,     -- links followed from a start URL
    attempts INTEGER NOT NULL,     -- attempts already made (retries so far)
    extra    TEXT,                 -- JSON: headers, meta, session, last backoff, redirects; NULL if none
    sum      INTEGER               -- CRC-32 of host, priority, url, method, depth, attempts and extra
);
CREATE INDEX requests_queued ON requests (host, priority DESC, id) WHERE state = 0;
CREATE INDEX requests_deferred ON requests (due) WHERE state = 2;

-- The seen-set: the 128-bit fingerprint (method and canonical URL) of every request ever
-- admitted, finished or not, in two parts. `seen_log` holds the fingerprints first seen
-- since the last merge, one row per checkpoint (16 bytes each, end to end): appended
-- without touching an index, and read into memory when the file is opened. Once it holds
-- 262,144 fingerprints they are merged into `seen`, in order, and the log emptied. A
-- fingerprint is seen when it is in either. A file written before `seen_log` existed gets
-- it when opened.
CREATE TABLE seen (
    fingerprint BLOB PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE seen_log (
    id           INTEGER PRIMARY KEY,
    fingerprints BLOB NOT NULL
);

-- Requests given up, as in the failures file.
CREATE TABLE failures (
    id        INTEGER PRIMARY KEY,
    host      INTEGER REFERENCES hosts (id),
    url       TEXT NOT NULL,
    method    TEXT NOT NULL,
    attempts  INTEGER NOT NULL,
    reason    TEXT NOT NULL,
    status    INTEGER,
    error     TEXT,
    failed_at INTEGER NOT NULL
);

-- How much of each file the crawl writes is committed (`output`, `failures`, `warc`): its
-- length in bytes and the records in it (the items of `output`; for `warc`, whose `path`
-- names the archive, the number of its last file: 0 for `path` itself, then
-- `NAME-00001.warc.gz`, ...). A resumed crawl cuts the file back to this length, once it
-- has checked that an items file still ends there as it did: `tail` is the CRC-32 of its
-- last 4 KiB before `bytes` (NULL for the other files, and in a file made before it).
CREATE TABLE files (
    role    TEXT PRIMARY KEY,
    path    TEXT NOT NULL,
    bytes   INTEGER NOT NULL,
    records INTEGER NOT NULL,
    tail    INTEGER
);

-- Each run that worked on the crawl: when, how it ended (NULL while it runs or if it was
-- killed), and its counts as JSON (the fields of the stats file's counters).
CREATE TABLE runs (
    id         INTEGER PRIMARY KEY,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    status     TEXT,
    counts     TEXT NOT NULL
);

-- Each identity's cookie jar and user agent as the last checkpoint left them, by its
-- logical task (`task:KEY`) or host (`host:ORIGIN`); `cookies` is the jar as JSON, cookie
-- values included: a file that holds a signed-in session is a secret. A file written
-- before this table existed gets it when opened.
CREATE TABLE identities (
    key     TEXT PRIMARY KEY,
    agent   TEXT,
    cookies TEXT NOT NULL
);

-- The outbox of a crawl whose items go to tables (`output = "postgres://…"`): the items
-- of the pages each checkpoint committed, as JSON lines, by chunk number, kept until every
-- table holds them (each table's `spiderling_commits` row names the last chunk it has).
-- `crawl` holds `outbox_crawl`, the name the tables know this crawl by, and `outbox_seq`,
-- the last chunk number given. A chunk holds the items of one type when a table takes one
-- type only (`item_type`; NULL: items of every type, for every table). A file written
-- before this table, or its `item_type`, existed gets them when opened.
CREATE TABLE outbox (
    seq       INTEGER PRIMARY KEY,
    items     BLOB NOT NULL,
    count     INTEGER NOT NULL,
    item_type TEXT
);

-- The keys of the items kept (`#[item(key)]`): 16 bytes each, a 128-bit hash of the key
-- field's JSON, written with the checkpoint that commits the page whose item holds it, so
-- a page fetched again after a kill finds its keys free. A file written before this table
-- existed gets it when opened.
CREATE TABLE item_keys (
    key BLOB PRIMARY KEY
) WITHOUT ROWID;

-- Hosts that refused the crawl's own client (`impersonate = "auto"`), by origin: a resumed
-- crawl sends them a browser's wire from its first request.
CREATE TABLE refusing_plain (
    host TEXT PRIMARY KEY
);
