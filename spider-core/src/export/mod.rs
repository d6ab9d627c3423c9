//! Exporters: items stream to a file through a buffered writer, in the format its
//! extension names, and are flushed when the crawl ends.

mod csv;
mod json;
mod jsonl;

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

/// Where items go.
pub(crate) trait Exporter<I>: Send {
    /// Write one item.
    fn write(&mut self, item: &I) -> Result<(), Error>;
    /// Close the format (a JSON array's `]`) and flush.
    fn finish(&mut self) -> Result<(), Error>;
}

/// Open the exporter the file's extension names: `.jsonl` (or `.ndjson`), `.csv`, `.json`.
pub(crate) fn open<I: Serialize + 'static>(path: &Path) -> Result<Box<dyn Exporter<I>>, Error> {
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let Some(format) = extension.as_deref().and_then(Format::from_extension) else {
        return Err(Error::Config(format!(
            "output {} has no known extension; write a name ending in .jsonl, .csv or .json",
            path.display()
        )));
    };
    let file = File::create(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    let out = Output { path: path.to_owned(), writer: BufWriter::with_capacity(64 * 1024, file) };
    Ok(match format {
        Format::JsonLines => Box::new(jsonl::JsonLines::new(out)),
        Format::Csv => Box::new(csv::Csv::new(out)),
        Format::Json => Box::new(json::JsonArray::new(out)),
    })
}

enum Format {
    JsonLines,
    Csv,
    Json,
}

impl Format {
    fn from_extension(extension: &str) -> Option<Self> {
        match extension {
            "jsonl" | "ndjson" => Some(Format::JsonLines),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// A buffered output file that knows its path, for error messages.
struct Output {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl Output {
    fn io_error(&self, source: std::io::Error) -> Error {
        Error::Io { path: self.path.clone(), source }
    }

    fn export_error(&self, message: impl std::fmt::Display) -> Error {
        Error::Export { path: self.path.clone(), message: message.to_string() }
    }
}
