//! The output file as the dispatcher writes it: encoded pages joined in the file's format.

use std::path::Path;

use super::{AppendFile, Encoded, Format};
use crate::error::Error;

/// How much of the output file is committed: its length and the items in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) bytes: u64,
    pub(crate) items: u64,
}

/// Whether a crawl of `config` may append to its output file (`overwrite = false`, `-o`),
/// asked before anything is touched: a JSON array that holds items cannot take more after
/// its `]`, and a new state file's crawl writes its output from the start (what it keeps
/// after a kill is counted from there).
pub(crate) fn check_appendable(config: &spider_settings::Config) -> Result<(), Error> {
    let Some(path) = config.output.as_deref().filter(|_| !config.overwrite) else { return Ok(()) };
    if std::fs::metadata(path).map_or(true, |meta| meta.len() == 0) {
        return Ok(());
    }
    if super::gzipped(path) {
        return Err(Error::Config(format!(
            "-o appends, and {} is a gzipped file that holds items: overwrite it with -O, or append to an \
             uncompressed file",
            path.display()
        )));
    }
    if Format::of(path)? == Format::Json {
        return Err(Error::Config(format!(
            "-o appends, and {} holds a JSON array, which takes no more items after its `]`: overwrite it \
             with -O, or write JSON Lines (.jsonl)",
            path.display()
        )));
    }
    // `--fresh` on a state file starts its crawl over, output and all: the file was its.
    if config.state.as_deref().is_some_and(|state| !state.exists()) {
        return Err(Error::Config(format!(
            "-o appends, and {} holds items already, while a new state file's crawl writes its output from \
             the start: overwrite it with -O, or give another file",
            path.display()
        )));
    }
    Ok(())
}

/// The output file, owned by the dispatcher.
#[derive(Debug)]
pub(crate) struct Sink {
    file: AppendFile,
    format: Format,
    items: u64,
    /// A gzipped file's open member: what was written since the last flush, compressed.
    /// Each flush ends the member, so the length a checkpoint records always ends one
    /// and a file cut back to it is whole (a gzip file may hold many members).
    member: Option<GzEncoder<Vec<u8>>>,
    /// Whether the open member holds anything.
    in_member: bool,
    /// Whether the file held nothing when opened and nothing was written since: a CSV
    /// header is due.
    empty: bool,
}

type GzEncoder<W> = flate2::write::GzEncoder<W>;

impl Sink {
    fn open(path: &Path, file: AppendFile, items: u64) -> Result<Self, Error> {
        let member = super::gzipped(path).then(new_member);
        let empty = file.len() == 0;
        Ok(Sink { format: Format::of(path)?, file, items, member, in_member: false, empty })
    }

    /// A new output file at `path` (an old one is emptied).
    pub(crate) fn create(path: &Path) -> Result<Self, Error> {
        Format::of(path)?;
        Sink::open(path, AppendFile::create(path)?, 0)
    }

    /// The output file at `path`, written after what it holds (`-o`); a JSON array cannot
    /// take more items after its `]`, so one is refused before anything is touched (see
    /// [`check_appendable`]).
    pub(crate) fn append(path: &Path) -> Result<Self, Error> {
        Format::of(path)?;
        Sink::open(path, AppendFile::append(path)?, 0)
    }

    /// The output file of a stopped crawl, cut back to what its last checkpoint committed.
    /// A JSON array loses its closing `]` until the crawl stops again.
    pub(crate) fn resume(path: &Path, committed: Committed) -> Result<Self, Error> {
        Format::of(path)?;
        Sink::open(path, AppendFile::resume(path, committed.bytes)?, committed.items)
    }

    /// Append a page's items.
    pub(crate) fn write(&mut self, page: &Encoded) -> Result<(), Error> {
        if page.count == 0 {
            return Ok(());
        }
        match (self.format, &page.header) {
            (Format::Csv, Some(header)) if self.empty => self.put(header)?,
            (Format::Json, _) => self.put(if self.items == 0 { b"[\n" } else { b",\n" })?,
            _ => {}
        }
        self.put(&page.records)?;
        self.empty = false;
        self.items += page.count;
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self.member.as_mut() {
            Some(member) => {
                self.in_member = true;
                std::io::Write::write_all(member, bytes)
                    .map_err(|source| Error::Io { path: self.file.path().to_owned(), source })
            }
            None => self.file.write_all(bytes),
        }
    }

    /// Hand what was written to the operating system; what a checkpoint records.
    pub(crate) fn flush(&mut self) -> Result<Committed, Error> {
        if let Some(member) = self.member.as_mut().filter(|_| self.in_member) {
            let ended = std::mem::replace(member, new_member()).finish();
            let ended = ended.map_err(|source| Error::Io { path: self.file.path().to_owned(), source })?;
            self.file.write_all(&ended)?;
            self.in_member = false;
        }
        Ok(Committed { bytes: self.file.flush()?, items: self.items })
    }

    /// Wait until what was flushed is on the disk.
    pub(crate) fn sync(&mut self) -> Result<(), Error> {
        self.file.sync()
    }

    /// Close the format (a JSON array's `]`) and flush. Take a checkpoint before: the
    /// closing bracket is not committed, so a resumed crawl cuts it off and goes on.
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        if self.format == Format::Json {
            self.put(if self.items == 0 { b"[]\n" } else { b"\n]\n" })?;
        }
        self.flush().map(|_| ())
    }
}

fn new_member() -> GzEncoder<Vec<u8>> {
    GzEncoder::new(Vec::new(), flate2::Compression::default())
}
