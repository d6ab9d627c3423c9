//! What an items file is, by its name: its [`Format`] and its [`Compression`].

use std::path::Path;

use crate::error::Error;

/// The formats items are written in, picked by the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `.jsonl` or `.ndjson`: one item per line.
    JsonLines,
    /// `.csv`: a header row from the first item's field names, then one row per item.
    Csv,
    /// `.json`: one array; `]` is written when the crawl stops.
    Json,
}

impl Format {
    /// The format `path`'s extension names, under a `.gz` or `.zst` (see [`Compression`]).
    pub(crate) fn of(path: &Path) -> Result<Format, Error> {
        let named = if Compression::of(path).is_some() { path.with_extension("") } else { path.to_owned() };
        let extension = named.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("jsonl" | "ndjson") => Ok(Format::JsonLines),
            Some("csv") => Ok(Format::Csv),
            Some("json") => Ok(Format::Json),
            _ => Err(Error::Config(format!(
                "output {} has no known extension; write a name ending in .jsonl, .csv or .json (and .gz or \
                 .zst to compress it)",
                path.display()
            ))),
        }
    }
}

/// How the output file is compressed, by its last extension: `books.jsonl.gz`,
/// `books.jsonl.zst`. Either way the file is a series of whole pieces (gzip members, zstd
/// frames), one per flush, which every reader of the format takes as one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    pub(crate) fn of(path: &Path) -> Option<Compression> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "gz" => Some(Compression::Gzip),
            "zst" => Some(Compression::Zstd),
            _ => None,
        }
    }
}
