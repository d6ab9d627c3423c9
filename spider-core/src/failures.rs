//! The failures file: one JSON line per request given up, so nothing disappears silently.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::error::Error;

/// Why an attempt failed: a reason stats count by, and the detail.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) reason: &'static str,
    pub(crate) status: Option<u16>,
    pub(crate) error: Option<String>,
}

impl Failure {
    pub(crate) fn status(reason: &'static str, status: u16) -> Self {
        Failure { reason, status: Some(status), error: None }
    }

    pub(crate) fn error(reason: &'static str, error: &dyn std::fmt::Display) -> Self {
        Failure { reason, status: None, error: Some(error.to_string()) }
    }
}

#[derive(Serialize)]
struct Line<'a> {
    url: &'a str,
    method: &'a str,
    attempts: u32,
    reason: &'static str,
    status: Option<u16>,
    error: Option<&'a str>,
    failed_at: String,
}

/// A buffered JSON Lines file of failures, flushed at the end of the crawl.
pub(crate) struct FailuresFile {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl FailuresFile {
    /// Create (or empty) the file, so a stale one never outlives its crawl.
    pub(crate) fn create(path: &Path) -> Result<Self, Error> {
        let file = File::create(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(FailuresFile { path: path.to_owned(), writer: BufWriter::new(file) })
    }

    pub(crate) fn record(
        &mut self,
        url: &str,
        method: &str,
        attempts: u32,
        failure: &Failure,
    ) -> Result<(), Error> {
        let line = Line {
            url,
            method,
            attempts,
            reason: failure.reason,
            status: failure.status,
            error: failure.error.as_deref(),
            failed_at: httpdate::fmt_http_date(SystemTime::now()),
        };
        let mut bytes = serde_json::to_vec(&line)
            .map_err(|e| Error::Export { path: self.path.clone(), message: e.to_string() })?;
        bytes.push(b'\n');
        self.writer.write_all(&bytes).map_err(|source| Error::Io { path: self.path.clone(), source })
    }

    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.writer.flush().map_err(|source| Error::Io { path: self.path.clone(), source })
    }
}
