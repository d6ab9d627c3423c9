//! A PostgreSQL table: one connection, a batch per transaction with its chunk number.

use std::sync::Arc;

use spider_settings::StoreUri;
use tokio_postgres::{Client, Config, Error as PgError};

use super::postgres_tls::postgres_tls;
use super::rows::{Column, Rows};
use super::table::{Chunk, Table, Trouble};
use crate::error::Error;

pub(super) struct Postgres {
    config: Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    client: Option<Client>,
    /// `"schema"."table"` or `"table"`, quoted for SQL.
    quoted: String,
    schema: Option<String>,
    name: String,
    target: String,
    key: Option<String>,
    /// The table's columns, once it was found or made.
    columns: Option<Vec<String>>,
}

impl Postgres {
    /// A table at `url`: the password from the URL, or else `PGPASSWORD`; the user from
    /// the URL, `PGUSER` or `USER`. TLS as libpq's `sslmode` and `sslrootcert` say
    /// (`postgres_tls.rs`): by default when the server offers it, its certificate not
    /// checked; `verify-full` checks it.
    pub(super) fn new(url: &str, uri: &StoreUri) -> Result<Postgres, Error> {
        let tls = postgres_tls(url).map_err(|e| Error::Config(format!("output {uri}: {e}")))?;
        let mut config: Config =
            tls.url.parse().map_err(|e: PgError| Error::Config(format!("output {uri}: {e}")))?;
        config.ssl_mode(tls.mode);
        if config.get_password().is_none() {
            if let Ok(password) = std::env::var("PGPASSWORD") {
                config.password(password);
            }
        }
        if config.get_user().is_none() {
            if let Some(user) = std::env::var("PGUSER").ok().or_else(|| std::env::var("USER").ok()) {
                config.user(user);
            }
        }
        let table = uri.table();
        let (schema, name) = match table.split_once('.') {
            Some((schema, name)) => (Some(schema.to_owned()), name.to_owned()),
            None => (None, table.to_owned()),
        };
        let quoted = match &schema {
            Some(schema) => format!("\"{schema}\".\"{name}\""),
            None => format!("\"{name}\""),
        };
        Ok(Postgres {
            config,
            tls: tokio_postgres_rustls::MakeRustlsConnect::new(tls.config),
            client: None,
            quoted,
            schema,
            name,
            target: table.to_owned(),
            key: uri.key().map(str::to_owned),
            columns: None,
        })
    }

    async fn client(&mut self) -> Result<&mut Client, Trouble> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let (client, connection) = self.config.connect(self.tls.clone()).await.map_err(trouble)?;
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(target: "spiderling", %error, "a PostgreSQL connection ended");
                }
            });
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS spiderling_commits (crawl text NOT NULL, target text NOT \
                     NULL, seq bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY \
                         (crawl, target))",
                )
                .await
                .map_err(trouble)?;
            self.client = Some(client);
        }
        self.client.as_mut().ok_or_else(|| Trouble::Down("no connection".to_owned()))
    }

    /// The table's columns, making it from `rows` when there is none.
    async fn ensure(&mut self, rows: &Rows) -> Result<(), Trouble> {
        let known =
            self.columns.as_ref().is_some_and(|columns| rows.fields.iter().all(|(f, _)| columns.contains(f)));
        if known {
            return Ok(());
        }
        let (schema, name, key, quoted) =
            (self.schema.clone(), self.name.clone(), self.key.clone(), self.quoted.clone());
        let client = self.client().await?;
        let columns = columns(client, schema.as_deref(), &name).await?;
        let columns = if columns.is_empty() {
            client.batch_execute(&rows.create(&quoted, key.as_deref(), sql_type)).await.map_err(trouble)?;
            tracing::info!(target: "spiderling", table = %name, columns = rows.fields.len(), "made the table \
                from the items' fields");
            rows.fields.iter().map(|(field, _)| field.clone()).collect()
        } else {
            columns
        };
        if let Some(problem) = rows.missing_from(&name, &columns) {
            return Err(Trouble::Refused(problem));
        }
        self.columns = Some(columns);
        Ok(())
    }
}

async fn columns(client: &Client, schema: Option<&str>, name: &str) -> Result<Vec<String>, Trouble> {
    let found = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = coalesce($1, current_schema()) AND table_name = $2 ORDER BY \
                 ordinal_position",
            &[&schema, &name],
        )
        .await
        .map_err(trouble)?;
    Ok(found.iter().map(|row| row.get(0)).collect())
}

fn sql_type(column: Column) -> &'static str {
    match column {
        Column::Text => "text",
        Column::Integer => "bigint",
        Column::Real => "double precision",
        Column::Boolean => "boolean",
        Column::Json => "jsonb",
    }
}

#[async_trait::async_trait]
impl Table for Postgres {
    fn reset(&mut self) {
        (self.client, self.columns) = (None, None);
    }

    async fn committed(&mut self, crawl: &str) -> Result<u64, Trouble> {
        let target = self.target.clone();
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT seq FROM spiderling_commits WHERE crawl = $1 AND target = $2",
                &[&crawl, &target],
            )
            .await
            .map_err(trouble)?;
        Ok(row.map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
    }

    async fn write(&mut self, crawl: &str, chunks: &[Arc<Chunk>]) -> Result<(), Trouble> {
        let seq = chunks.last().map_or(0, |chunk| chunk.seq);
        let rows = &Rows::read(chunks, self.key.as_deref()).map_err(Trouble::Refused)?;
        if rows.count > 0 {
            self.ensure(rows).await?;
        }
        let insert = (!rows.fields.is_empty()).then(|| {
            let names = rows.columns();
            let upsert = rows.upsert(self.key.as_deref());
            format!(
                "INSERT INTO {table} ({names}) SELECT {names} FROM json_populate_recordset(NULL::{table}, \
                    $1::text::json){upsert}",
                table = self.quoted
            )
        });
        let target = self.target.clone();
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let transaction = client.transaction().await.map_err(trouble)?;
        if let Some(insert) = insert {
            transaction.execute(&insert, &[&rows.json]).await.map_err(trouble)?;
        }
        transaction
            .execute(
                "INSERT INTO spiderling_commits (crawl, target, seq) VALUES ($1, $2, $3) \
                 ON CONFLICT (crawl, target) DO UPDATE SET seq = excluded.seq, committed_at = now()",
                &[&crawl, &target, &seq],
            )
            .await
            .map_err(trouble)?;
        transaction.commit().await.map_err(trouble)
    }
}

/// A database's refusal of what was asked (a column that does not exist, a value of the
/// wrong type, a broken constraint) is for a person to mend; anything else (a refused or
/// dropped connection, a server shutting down) may pass.
fn trouble(error: PgError) -> Trouble {
    if let Some(refused) = certificate_refused(&error) {
        return Trouble::Refused(format!(
            "the server's certificate was refused ({refused}); sslmode and sslrootcert say what is checked"
        ));
    }
    match error.as_db_error() {
        Some(db) if ["22", "23", "42"].iter().any(|class| db.code().code().starts_with(class)) => {
            Trouble::Refused(db.message().to_owned())
        }
        Some(db) => Trouble::Down(db.message().to_owned()),
        None => Trouble::Down(crate::error::cause::chain(&error)),
    }
}

/// The TLS handshake's refusal of the server's certificate, somewhere in `error`'s
/// causes: waiting will not mend it.
fn certificate_refused(error: &PgError) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        let tls = current
            .downcast_ref::<rustls::Error>()
            .or_else(|| current.downcast_ref::<std::io::Error>()?.get_ref()?.downcast_ref::<rustls::Error>());
        if let Some(refused @ rustls::Error::InvalidCertificate(_)) = tls {
            return Some(refused.to_string());
        }
        cause = current.source();
    }
    None
}
