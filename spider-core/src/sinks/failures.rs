//! The failures file: one JSON line per request given up, so nothing disappears silently;
//! and one per item the pipeline dropped and per page without the item its rule parses,
//! which are not failures of the crawl.

use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use crate::error::reason::Reason;
use crate::error::Error;
use crate::sinks::AppendFile;

/// Why an attempt failed: a reason stats count by, and the detail.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) reason: Reason,
    pub(crate) status: Option<u16>,
    pub(crate) error: Option<String>,
}

impl Failure {
    pub(crate) fn status(reason: Reason, status: u16) -> Self {
        Failure { reason, status: Some(status), error: None }
    }

    pub(crate) fn error(reason: Reason, error: &dyn std::fmt::Display) -> Self {
        Failure { reason, status: None, error: Some(error.to_string()) }
    }

    /// A failure with nothing to say beyond its reason.
    pub(crate) fn bare(reason: Reason) -> Self {
        Failure { reason, status: None, error: None }
    }
}

/// An item a page's pipeline dropped: its page, why, and the item as JSON when the stage
/// that dropped it gave it back.
#[derive(Debug)]
pub(crate) struct DroppedItem {
    /// The page's URL and method.
    pub(crate) page: (String, String),
    /// The reason it is counted by.
    pub(crate) reason: &'static str,
    pub(crate) detail: Option<String>,
    pub(crate) item: Option<String>,
}

/// The failures file's line of an item dropped: its page, `"reason": "item dropped"`,
/// and why in `dropped` and `error`.
#[derive(Serialize)]
struct DropLine<'a> {
    url: &'a str,
    method: &'a str,
    reason: &'static str,
    dropped: &'static str,
    error: Option<&'a str>,
    item: Option<serde_json::Value>,
    failed_at: String,
}

/// The failures file's line of a page without its item: `"reason": "no item"`, and the
/// rule that parses it.
#[derive(Serialize)]
struct MissLine<'a> {
    url: &'a str,
    method: &'a str,
    reason: &'static str,
    rule: &'a str,
    failed_at: String,
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

/// A buffered JSON Lines file of failures, written by the dispatcher.
pub(crate) struct FailuresFile {
    file: AppendFile,
}

impl FailuresFile {
    /// Create (or empty) the file, so a stale one never outlives its crawl.
    pub(crate) fn create(path: &Path) -> Result<Self, Error> {
        Ok(FailuresFile { file: AppendFile::create(path)? })
    }

    /// The failures file of a stopped crawl, cut back to the length its last checkpoint
    /// committed.
    pub(crate) fn resume(path: &Path, len: u64) -> Result<Self, Error> {
        Ok(FailuresFile { file: AppendFile::resume(path, len, None)? })
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
            reason: failure.reason.as_str(),
            status: failure.status,
            error: failure.error.as_deref(),
            failed_at: spider_settings::rfc3339(SystemTime::now()),
        };
        self.write_line(&line)
    }

    /// File an item a page's pipeline dropped.
    pub(crate) fn record_drop(&mut self, dropped: &DroppedItem) -> Result<(), Error> {
        let line = DropLine {
            url: &dropped.page.0,
            method: &dropped.page.1,
            reason: "item dropped",
            dropped: dropped.reason,
            error: dropped.detail.as_deref(),
            item: dropped.item.as_deref().and_then(|json| serde_json::from_str(json).ok()),
            failed_at: spider_settings::rfc3339(SystemTime::now()),
        };
        self.write_line(&line)
    }

    /// File a page that had none of the item `rule` parses.
    pub(crate) fn record_miss(&mut self, url: &str, method: &str, rule: &str) -> Result<(), Error> {
        let line = MissLine {
            url,
            method,
            reason: "no item",
            rule,
            failed_at: spider_settings::rfc3339(SystemTime::now()),
        };
        self.write_line(&line)
    }

    fn write_line(&mut self, line: &impl Serialize) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec(line)
            .map_err(|e| Error::Export { path: self.file.path().to_owned(), message: e.to_string() })?;
        bytes.push(b'\n');
        self.file.write_all(&bytes)
    }

    /// Hand what was written to the operating system; returns the file's length.
    pub(crate) fn flush(&mut self) -> Result<u64, Error> {
        self.file.flush()
    }

    /// Wait until what was flushed is on the disk.
    pub(crate) fn sync(&mut self) -> Result<(), Error> {
        self.file.sync()
    }
}
