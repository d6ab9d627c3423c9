//! Checksums on what a state file holds that a crawl cannot work out again: each
//! request's row, and the seen-set. SQLite checks a file's structure (`quick_check`), not
//! what its cells say: a damaged byte inside a URL or a fingerprint reads back as another
//! one, and a resumed crawl fetches a page twice or never. With these, such a file is
//! refused at open as damaged, before anything is fetched.
//!
//! A row's sum is the CRC-32 of the columns it covers (`requests.sum`); the seen-set's is
//! the XOR of every fingerprint in `seen` and `seen_log` (the `seen_sum` fact, in hex),
//! kept as the checkpoints add to it, so that merging the log into `seen` leaves it as it
//! is.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// The columns of `requests` a row's sum covers, in its order; `state` and `due` change
/// as the crawl goes, and a damaged one of them is put right by the crawl itself.
pub(super) const COVERED: &str = "host, priority, url, method, depth, attempts, extra";

/// The sum of a row's covered columns, as read or about to be written.
pub(super) fn row_sum(values: &[ValueRef<'_>]) -> i64 {
    let mut hasher = flate2::Crc::new();
    for value in values {
        match value {
            ValueRef::Null => hasher.update(&[0]),
            ValueRef::Integer(n) => {
                hasher.update(&[1]);
                hasher.update(&n.to_le_bytes());
            }
            ValueRef::Real(x) => {
                hasher.update(&[2]);
                hasher.update(&x.to_le_bytes());
            }
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                hasher.update(&[3]);
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
        }
    }
    i64::from(hasher.sum())
}

/// The seen-set's sum with `fingerprints` (16 bytes each, end to end) added.
pub(super) fn add_seen(sum: u128, fingerprints: &[u8]) -> u128 {
    fingerprints.chunks_exact(16).fold(sum, |sum, bytes| {
        let mut fingerprint = [0; 16];
        fingerprint.copy_from_slice(bytes);
        sum ^ u128::from_be_bytes(fingerprint)
    })
}

/// The seen-set's sum as the `seen_sum` fact holds it.
pub(super) fn seen_fact(sum: u128) -> String {
    format!("{sum:032x}")
}

/// The seen-set's sum as its rows give it: a message when one is not a fingerprint.
fn seen_in(conn: &Connection) -> Result<u128, String> {
    let mut sum = 0;
    let mut select = conn.prepare("SELECT fingerprint FROM seen").map_err(|e| e.to_string())?;
    let mut rows = select.query([]).map_err(|e| e.to_string())?;
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        match row.get_ref(0).map_err(|e| e.to_string())? {
            ValueRef::Blob(bytes) if bytes.len() == 16 => sum = add_seen(sum, bytes),
            _ => return Err("a row of the seen-set is not a fingerprint".to_owned()),
        }
    }
    let mut select = conn.prepare("SELECT id, fingerprints FROM seen_log").map_err(|e| e.to_string())?;
    let mut rows = select.query([]).map_err(|e| e.to_string())?;
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        match row.get_ref(1).map_err(|e| e.to_string())? {
            ValueRef::Blob(bytes) if bytes.len() % 16 == 0 => sum = add_seen(sum, bytes),
            _ => {
                return Err(format!(
                    "row {} of seen_log is not a list of fingerprints",
                    row.get::<_, i64>(0).unwrap_or(0)
                ))
            }
        }
    }
    Ok(sum)
}

/// Whether every request's row and the seen-set hold what was written: a message naming
/// the first that does not. A file upgraded from a version without sums has them from
/// its upgrade on.
pub(super) fn check(
    conn: &Connection,
    facts: &std::collections::HashMap<String, String>,
) -> Result<(), String> {
    let mut select =
        conn.prepare(&format!("SELECT id, {COVERED}, sum FROM requests")).map_err(|e| e.to_string())?;
    let mut rows = select.query([]).map_err(|e| e.to_string())?;
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        let covered = (1..=7)
            .map(|i| row.get_ref(i))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?;
        let recorded: Option<i64> = row.get(8).ok();
        if recorded != Some(row_sum(&covered)) {
            return Err(format!(
                "request {} does not hold what was written",
                row.get::<_, i64>(0).unwrap_or(0)
            ));
        }
    }
    let seen = seen_in(conn)?;
    if facts.get("seen_sum").map(String::as_str) != Some(seen_fact(seen).as_str()) {
        return Err("the seen-set does not hold what was written".to_owned());
    }
    Ok(())
}

/// Give a file of a version without sums its sums, in the open's transaction.
pub(super) fn upgrade(conn: &Connection) -> rusqlite::Result<()> {
    super::schema::add_columns(conn, "requests", &[("sum", "INTEGER")])?;
    let sums = {
        let mut select = conn.prepare(&format!("SELECT id, {COVERED} FROM requests WHERE sum IS NULL"))?;
        let mut rows = select.query([])?;
        let mut sums = Vec::new();
        while let Some(row) = rows.next()? {
            let covered = (1..=7).map(|i| row.get_ref(i)).collect::<rusqlite::Result<Vec<_>>>()?;
            sums.push((row.get::<_, i64>(0)?, row_sum(&covered)));
        }
        sums
    };
    let mut update = conn.prepare("UPDATE requests SET sum = ?2 WHERE id = ?1")?;
    for (id, sum) in sums {
        update.execute([id, sum])?;
    }
    let seen = seen_in(conn).map_err(rusqlite::Error::ModuleError)?;
    conn.execute("INSERT OR IGNORE INTO crawl (key, value) VALUES ('seen_sum', ?1)", [seen_fact(seen)])?;
    Ok(())
}
