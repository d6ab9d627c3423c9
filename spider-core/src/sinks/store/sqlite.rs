//! A table in an SQLite file: written off the runtime's threads, a batch per transaction
//! with its chunk number.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::{params, Connection, ErrorCode};
use spider_settings::StoreUri;

use super::rows::{Column, Rows};
use super::table::{Chunk, Table, Trouble};

pub(super) struct Sqlite {
    /// Moved onto a blocking thread for each call, and back.
    inner: Option<Inner>,
}

struct Inner {
    path: PathBuf,
    name: String,
    key: Option<String>,
    conn: Option<Connection>,
    columns: Option<Vec<String>>,
}

impl Sqlite {
    pub(super) fn new(path: PathBuf, uri: &StoreUri) -> Sqlite {
        let inner = Inner {
            path,
            name: uri.table().to_owned(),
            key: uri.key().map(str::to_owned),
            conn: None,
            columns: None,
        };
        Sqlite { inner: Some(inner) }
    }

    async fn run<T: Send + 'static>(
        &mut self,
        work: impl FnOnce(&mut Inner) -> Result<T, Trouble> + Send + 'static,
    ) -> Result<T, Trouble> {
        let mut inner = self.inner.take().ok_or_else(|| Trouble::Down("a write was cut short".to_owned()))?;
        let (inner, result) = tokio::task::spawn_blocking(move || {
            let result = work(&mut inner);
            (inner, result)
        })
        .await
        .map_err(|e| Trouble::Down(e.to_string()))?;
        self.inner = Some(inner);
        result
    }
}

impl Inner {
    fn conn(&mut self) -> Result<&mut Connection, Trouble> {
        if self.conn.is_none() {
            let conn = Connection::open(&self.path).map_err(trouble)?;
            conn.execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; \
                 CREATE TABLE IF NOT EXISTS spiderling_commits (crawl TEXT NOT NULL, target TEXT NOT NULL, \
                 seq INTEGER NOT NULL, committed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY \
                     (crawl, target));",
            )
            .map_err(trouble)?;
            self.conn = Some(conn);
        }
        self.conn.as_mut().ok_or_else(|| Trouble::Down("no connection".to_owned()))
    }

    /// The table's columns, making it from `rows` when there is none.
    fn ensure(&mut self, rows: &Rows) -> Result<(), Trouble> {
        if self.columns.as_ref().is_some_and(|columns| rows.fields.iter().all(|(f, _)| columns.contains(f))) {
            return Ok(());
        }
        let (name, key) = (self.name.clone(), self.key.clone());
        let conn = self.conn()?;
        let mut columns: Vec<String> = {
            let mut select = conn.prepare("SELECT name FROM pragma_table_info(?1)").map_err(trouble)?;
            let found = select.query_map([&name], |row| row.get(0)).map_err(trouble)?;
            found.collect::<Result<_, _>>().map_err(trouble)?
        };
        if columns.is_empty() {
            conn.execute_batch(&rows.create(&format!("\"{name}\""), key.as_deref(), sql_type))
                .map_err(trouble)?;
            tracing::info!(target: "spiderling", table = %name, columns = rows.fields.len(), "made the table \
                from the items' fields");
            columns = rows.fields.iter().map(|(field, _)| field.clone()).collect();
        }
        if let Some(problem) = rows.missing_from(&name, &columns) {
            return Err(Trouble::Refused(problem));
        }
        self.columns = Some(columns);
        Ok(())
    }

    fn write(&mut self, crawl: &str, seq: u64, rows: &Rows) -> Result<(), Trouble> {
        if rows.count > 0 {
            self.ensure(rows)?;
        }
        let (name, key) = (self.name.clone(), self.key.clone());
        let conn = self.conn()?;
        let transaction = conn.transaction().map_err(trouble)?;
        if !rows.fields.is_empty() {
            let values: Vec<String> = rows
                .fields
                .iter()
                .map(|(field, _)| format!("json_extract(value, '$.\"{field}\"')"))
                .collect();
            let upsert = rows.upsert(key.as_deref());
            let insert = format!(
                "INSERT INTO \"{name}\" ({}) SELECT {} FROM json_each(?1) WHERE true{upsert}",
                rows.columns(),
                values.join(", ")
            );
            transaction.execute(&insert, [&rows.json]).map_err(trouble)?;
        }
        transaction
            .execute(
                "INSERT INTO spiderling_commits (crawl, target, seq) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (crawl, target) DO UPDATE SET seq = excluded.seq, committed_at = \
                     CURRENT_TIMESTAMP",
                params![crawl, name, seq],
            )
            .map_err(trouble)?;
        transaction.commit().map_err(trouble)
    }
}

fn sql_type(column: Column) -> &'static str {
    match column {
        Column::Text | Column::Json => "TEXT",
        Column::Integer | Column::Boolean => "INTEGER",
        Column::Real => "REAL",
    }
}

#[async_trait::async_trait]
impl Table for Sqlite {
    async fn committed(&mut self, crawl: &str) -> Result<u64, Trouble> {
        let crawl = crawl.to_owned();
        self.run(move |inner| {
            let name = inner.name.clone();
            let conn = inner.conn()?;
            let seq: Option<i64> = conn
                .query_row(
                    "SELECT seq FROM spiderling_commits WHERE crawl = ?1 AND target = ?2",
                    [&crawl, &name],
                    |row| row.get(0),
                )
                .map(Some)
                .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
                .map_err(trouble)?;
            Ok(seq.and_then(|seq| u64::try_from(seq).ok()).unwrap_or(0))
        })
        .await
    }

    async fn write(&mut self, crawl: &str, chunks: &[Arc<Chunk>]) -> Result<(), Trouble> {
        let seq = chunks.last().map_or(0, |chunk| chunk.seq);
        let key = self.inner.as_ref().and_then(|inner| inner.key.clone());
        let rows = Rows::read(chunks, key.as_deref()).map_err(Trouble::Refused)?;
        let crawl = crawl.to_owned();
        self.run(move |inner| inner.write(&crawl, seq, &rows)).await
    }
}

/// A busy, locked or full database may pass; anything else (a column that does not
/// exist, a constraint) is for a person to mend.
fn trouble(error: rusqlite::Error) -> Trouble {
    let passing = matches!(
        error.sqlite_error_code(),
        Some(
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
        )
    );
    if passing {
        Trouble::Down(error.to_string())
    } else {
        Trouble::Refused(error.to_string())
    }
}
