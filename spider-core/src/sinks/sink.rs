//! An items file as the dispatcher writes it: encoded pages joined in the file's format.

use std::io::Write as _;
use std::path::Path;

use super::encode::Records;
use super::file::AppendFile;
use super::format::{Compression, Format};
use crate::error::Error;

/// How much of the output file is committed: its length and the items in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) bytes: u64,
    pub(crate) items: u64,
    /// The CRC-32 of the file's last bytes up to `bytes` ([`TAIL`](super::TAIL) at most),
    /// when known: a resumed crawl checks that the file still ends there so.
    pub(crate) tail: Option<u32>,
}

/// Whether a crawl of `config` may append to its items files (`overwrite = false`, `-o`),
/// asked before anything is touched: a JSON array that holds items cannot take more after
/// its `]`, and a new state file's crawl writes its outputs from the start (what it keeps
/// after a kill is counted from there).
pub(crate) fn check_appendable(config: &spider_settings::Config) -> Result<(), Error> {
    if config.overwrite {
        return Ok(());
    }
    config.outputs.iter().try_for_each(|file| check_append(config, &file.path))
}

fn check_append(config: &spider_settings::Config, path: &Path) -> Result<(), Error> {
    if std::fs::metadata(path).map_or(true, |meta| meta.len() == 0) {
        return Ok(());
    }
    // A state file's crawl going on cuts its file back to what it committed: no append.
    let resuming = config.state.as_deref().is_some_and(Path::exists) && !config.fresh;
    if Compression::of(path).is_some() && !resuming {
        return Err(Error::Config(format!(
            "-o appends, and {} is a compressed file that holds items: overwrite it with -O, or append to an \
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

/// An items file, owned by the dispatcher.
#[derive(Debug)]
pub(crate) struct Sink {
    file: AppendFile,
    format: Format,
    items: u64,
    /// A compressed file's open member (a gzip member, a zstd frame): what was written
    /// since the last flush, compressed. Each flush ends the member, so the length a
    /// checkpoint records always ends one and a file cut back to it is whole (a gzip
    /// file may hold many members, a zstd file many frames).
    member: Option<Member>,
    /// Whether the open member holds anything.
    in_member: bool,
    /// Whether the file held nothing when opened and nothing was written since: a CSV
    /// header is due.
    empty: bool,
    /// A CSV file's header, as written or found at its start: every page's items must
    /// have the same, or their rows would sit under another type's columns.
    header: Option<Vec<u8>>,
}

impl Sink {
    fn open(path: &Path, file: AppendFile, items: u64) -> Result<Self, Error> {
        let member = Compression::of(path)
            .map(Member::new)
            .transpose()
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let empty = file.len() == 0;
        let format = Format::of(path)?;
        let header =
            (format == Format::Csv && !empty && member.is_none()).then(|| first_line(path)).flatten();
        Ok(Sink { format, file, items, member, in_member: false, empty, header })
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
        Sink::open(path, AppendFile::resume(path, committed.bytes, committed.tail)?, committed.items)
    }

    /// Append a page's items.
    pub(crate) fn write(&mut self, page: &Records) -> Result<(), Error> {
        if page.count == 0 {
            return Ok(());
        }
        match (self.format, &page.header) {
            (Format::Csv, Some(header)) if self.header.as_ref().is_some_and(|first| first != header) => {
                return Err(Error::Export {
                    path: self.file.path().to_owned(),
                    message: format!(
                        "items whose fields are {} reach this CSV file, whose header is {}: give each type \
                            of item a file of its own, FILE.csv?type=NAME",
                        String::from_utf8_lossy(header).trim_end(),
                        String::from_utf8_lossy(self.header.as_deref().unwrap_or_default()).trim_end()
                    ),
                });
            }
            (Format::Csv, Some(header)) if self.empty => {
                self.put(header)?;
                self.header = Some(header.clone());
            }
            (Format::Csv, Some(header)) if self.header.is_none() => self.header = Some(header.clone()),
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
                member.write(bytes).map_err(|source| Error::Io { path: self.file.path().to_owned(), source })
            }
            None => self.file.write_all(bytes),
        }
    }

    /// Hand what was written to the operating system; what a checkpoint records.
    pub(crate) fn flush(&mut self) -> Result<Committed, Error> {
        if let Some(member) = self.member.as_mut().filter(|_| self.in_member) {
            let ended =
                member.end().map_err(|source| Error::Io { path: self.file.path().to_owned(), source })?;
            self.file.write_all(&ended)?;
            self.in_member = false;
        }
        let bytes = self.file.flush()?;
        Ok(Committed { bytes, items: self.items, tail: Some(self.file.tail_sum()?) })
    }

    /// Take the items between two commits out of the file, `from` and `to` each a commit's
    /// `(bytes, items)`; what was written after them moves up. Not at the file's start,
    /// whose first item a CSV header or a JSON array's `[` comes before: what follows
    /// would lack them. A compressed file's stretch is whole members, and its open
    /// member is not in the file yet.
    pub(crate) fn cut(&mut self, from: (u64, u64), to: (u64, u64)) -> Result<(), Error> {
        if from.1 == 0 || to.1 < from.1 || to.1 - from.1 > self.items {
            return Err(Error::Export {
                path: self.file.path().to_owned(),
                message: format!("cannot cut items {} to {} out of a file of {}", from.1, to.1, self.items),
            });
        }
        self.file.cut(from.0, to.0)?;
        self.items -= to.1 - from.1;
        Ok(())
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

/// The first line of the file at `path`, its newline included (what a CSV header is).
fn first_line(path: &Path) -> Option<Vec<u8>> {
    use std::io::{BufRead as _, Read as _};
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(file.take(64 * 1024)).read_until(b'\n', &mut line).ok()?;
    line.ends_with(b"\n").then_some(line)
}

/// `parts` joined and compressed whole, as one object of a bucket is: one gzip member or
/// zstd frame, or the bytes as they are without `compression`.
#[cfg(feature = "s3")]
pub(crate) fn compress<'a>(
    compression: Option<Compression>,
    parts: impl Iterator<Item = &'a [u8]>,
) -> std::io::Result<Vec<u8>> {
    let Some(compression) = compression else { return Ok(parts.flatten().copied().collect()) };
    let mut member = Member::new(compression)?;
    for part in parts {
        member.write(part)?;
    }
    member.end()
}

/// The open piece of a compressed file.
enum Member {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Member {
    fn new(compression: Compression) -> std::io::Result<Member> {
        Ok(match compression {
            Compression::Gzip => {
                Member::Gzip(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()))
            }
            Compression::Zstd => Member::Zstd(zstd::stream::write::Encoder::new(Vec::new(), 0)?),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Member::Gzip(member) => member.write_all(bytes),
            Member::Zstd(member) => member.write_all(bytes),
        }
    }

    /// End this piece, its bytes to append, and start the next.
    fn end(&mut self) -> std::io::Result<Vec<u8>> {
        let next = Member::new(match self {
            Member::Gzip(_) => Compression::Gzip,
            Member::Zstd(_) => Compression::Zstd,
        })?;
        match std::mem::replace(self, next) {
            Member::Gzip(member) => member.finish(),
            Member::Zstd(member) => member.finish(),
        }
    }
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Member::Gzip(_) => "Member::Gzip",
            Member::Zstd(_) => "Member::Zstd",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_file_takes_no_rows_of_another_header_this_run_or_the_last() {
        let dir = std::env::temp_dir().join(format!("spiderling-csv-header-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("books.csv");
        let page = |header: &str, row: &str| Records {
            records: row.as_bytes().to_vec(),
            count: 1,
            header: Some(header.as_bytes().to_vec()),
        };
        let mut sink = Sink::create(&path).unwrap();
        sink.write(&page("title\n", "Atlas\n")).unwrap();
        sink.write(&page("title\n", "Dune\n")).unwrap();
        let refused = sink.write(&page("page,books\n", "3,20\n")).map_err(|e| e.to_string()).unwrap_err();
        assert!(refused.contains("page,books") && refused.contains("?type="), "{refused}");
        sink.finish().unwrap();
        let mut appended = Sink::append(&path).unwrap();
        assert!(appended.write(&page("page,books\n", "3,20\n")).is_err(), "the header found in the file");
        appended.write(&page("title\n", "Emma\n")).unwrap();
        appended.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "title\nAtlas\nDune\nEmma\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Items `a`, `b`, `c` and `d`, a commit after each of the first three: the stretch of
    /// `b` and `c` cut out, `d` written after the cut, the file closed.
    fn cut_b_and_c(path: &Path, header: Option<&str>) -> Vec<u8> {
        let page = |row: &str| Records {
            records: row.as_bytes().to_vec(),
            count: 1,
            header: header.map(|h| h.as_bytes().to_vec()),
        };
        let mut sink = Sink::create(path).unwrap();
        let mut commits = Vec::new();
        for row in ["{\"t\":\"a\"}\n", "{\"t\":\"b\"}\n", "{\"t\":\"c\"}\n"] {
            sink.write(&page(row)).unwrap();
            let committed = sink.flush().unwrap();
            commits.push((committed.bytes, committed.items));
        }
        assert!(sink.cut((0, 0), commits[2]).is_err(), "not at the file's start");
        sink.cut(commits[0], commits[2]).unwrap();
        sink.write(&page("{\"t\":\"d\"}\n")).unwrap();
        sink.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    #[test]
    fn a_stretch_cut_out_leaves_every_format_whole_and_what_follows_in_place() {
        let dir = std::env::temp_dir().join(format!("spiderling-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = cut_b_and_c(&dir.join("books.jsonl"), None);
        assert_eq!(String::from_utf8(lines).unwrap(), "{\"t\":\"a\"}\n{\"t\":\"d\"}\n");
        let array = cut_b_and_c(&dir.join("books.json"), None);
        let array: serde_json::Value = serde_json::from_slice(&array).unwrap();
        assert_eq!(array, serde_json::json!([{"t": "a"}, {"t": "d"}]));
        let rows = cut_b_and_c(&dir.join("books.csv"), Some("t\n"));
        assert!(String::from_utf8(rows).unwrap().starts_with("t\n{\"t\":\"a\"}\n{\"t\":\"d\"}"));
        let gzipped = cut_b_and_c(&dir.join("books.jsonl.gz"), None);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&gzipped[..]), &mut text)
            .unwrap();
        assert_eq!(text, "{\"t\":\"a\"}\n{\"t\":\"d\"}\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_compressed_file_is_appended_to_only_by_its_state_files_crawl_going_on() {
        let dir = std::env::temp_dir().join(format!("spiderling-appendable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (output, state) = (dir.join("books.jsonl.zst"), dir.join("books.state"));
        std::fs::write(&output, b"frames").unwrap();
        let appending = spider_settings::Config::new("books").output(&output).overwrite(false);
        let refused = check_appendable(&appending).map_err(|e| e.to_string()).unwrap_err();
        assert!(refused.contains("is a compressed file that holds items"), "{refused}");
        std::fs::write(&state, b"").unwrap();
        assert!(
            check_appendable(&appending.clone().state(&state)).is_ok(),
            "resumed: cut back, not appended"
        );
        assert!(check_appendable(&appending.state(&state).fresh(true)).is_err(), "started over");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
