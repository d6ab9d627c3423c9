//! An output file the crawl appends to, that knows its length so a checkpoint can record it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// A buffered file written only at its end. Its length counts what was handed to it,
/// flushed or not; [`flush`](Self::flush) makes the file that long and returns it.
#[derive(Debug)]
pub(crate) struct AppendFile {
    path: PathBuf,
    writer: BufWriter<File>,
    len: u64,
    /// The length at the last flush that succeeded: whole records only.
    flushed: u64,
}

impl AppendFile {
    /// Create `path`, emptying any file there.
    pub(crate) fn create(path: &Path) -> Result<Self, Error> {
        // Readable too: a checkpoint sums the file's last bytes as written.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|source| io(path, source))?;
        Ok(AppendFile::wrap(path, file, 0))
    }

    /// Open the file a stopped crawl wrote and cut it back to `len`, the length its last
    /// checkpoint recorded: what lies beyond belongs to requests that checkpoint did not
    /// record as finished, which will be fetched again.
    pub(crate) fn resume(path: &Path, len: u64, tail: Option<u32>) -> Result<Self, Error> {
        check_resumable(path, len, tail)?;
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|source| io(path, source))?;
        file.set_len(len).map_err(|source| io(path, source))?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(|source| io(path, source))?;
        Ok(AppendFile::wrap(path, file, len))
    }

    /// Open `path` to write after what it holds (`-o`), creating it if there is none. A
    /// last line without its end, left by a run that was killed mid-write, is cut off so
    /// the next record starts a line of its own.
    pub(crate) fn append(path: &Path) -> Result<Self, Error> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|source| io(path, source))?;
        let len = whole_lines(&mut file).map_err(|source| io(path, source))?;
        let found = file.metadata().map_err(|source| io(path, source))?.len();
        if len < found {
            tracing::warn!(
                target: "spiderling",
                path = %path.display(),
                "cut {} bytes of an unfinished last line before appending",
                found - len
            );
            file.set_len(len).map_err(|source| io(path, source))?;
        }
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(len)).map_err(|source| io(path, source))?;
        Ok(AppendFile::wrap(path, file, len))
    }

    /// How long the file is; what an appending run found in it counts.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    fn wrap(path: &Path, file: File, len: u64) -> Self {
        AppendFile {
            path: path.to_owned(),
            writer: BufWriter::with_capacity(64 * 1024, file),
            len,
            flushed: len,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if let Err(source) = self.writer.write_all(bytes) {
            return Err(self.cut_back(source));
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// The CRC-32 of the last [`TAIL`] bytes handed to the operating system (fewer in a
    /// shorter file), read back from the file: what a checkpoint records beside the
    /// length, so that a resume knows the file still ends there as it did.
    pub(crate) fn tail_sum(&self) -> Result<u32, Error> {
        tail_sum(self.writer.get_ref(), self.flushed).map_err(|source| io(&self.path, source))
    }

    /// Hand everything written to the operating system, which keeps it through a crash
    /// of this process; returns the file's length.
    pub(crate) fn flush(&mut self) -> Result<u64, Error> {
        if let Err(source) = self.writer.flush() {
            return Err(self.cut_back(source));
        }
        self.flushed = self.len;
        Ok(self.len)
    }

    /// After a failed write (a full disk, mostly), which may have left part of a record at
    /// the end: cut the file back to the last flush, whole records only, and say why.
    fn cut_back(&mut self, source: std::io::Error) -> Error {
        // What is still buffered is dropped, not written later at a position past the cut.
        let cut = self.writer.get_ref().try_clone().and_then(|mut file| {
            file.set_len(self.flushed)?;
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(self.flushed))?;
            let fresh = BufWriter::with_capacity(64 * 1024, file);
            let (_, _dropped) = std::mem::replace(&mut self.writer, fresh).into_parts();
            Ok(())
        });
        match cut {
            Ok(()) => self.len = self.flushed,
            Err(error) => {
                tracing::warn!(target: "spiderling", path = %self.path.display(), %error, "could not cut the \
                    output back to its last whole record");
            }
        }
        io(&self.path, source)
    }

    /// Take the bytes `[from, to)` out of the file, what lies after them moving up to
    /// `from`: they were flushed (a commit ended at `to`), and what was written since is
    /// held, a round trip's worth at most.
    pub(crate) fn cut(&mut self, from: u64, to: u64) -> Result<(), Error> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::FileExt;
        if from > to || to > self.flushed {
            return Err(Error::Export {
                path: self.path.clone(),
                message: format!("cannot cut bytes {from} to {to} out of a file flushed to {}", self.flushed),
            });
        }
        if let Err(source) = self.writer.flush() {
            return Err(self.cut_back(source));
        }
        let moved = (|| {
            let file = self.writer.get_mut();
            let mut after = vec![0u8; usize::try_from(self.len - to).unwrap_or(0)];
            file.read_exact_at(&mut after, to)?;
            file.set_len(from)?;
            file.seek(SeekFrom::Start(from))?;
            file.write_all(&after)
        })();
        moved.map_err(|source| io(&self.path, source))?;
        self.len -= to - from;
        self.flushed = self.len;
        Ok(())
    }

    /// Wait until what was flushed is on the disk, so it survives a power loss too.
    pub(crate) fn sync(&mut self) -> Result<(), Error> {
        self.writer.get_ref().sync_data().map_err(|source| io(&self.path, source))
    }
}

/// Whether the file at `path` can be cut back to `len`: it exists and is at least that long.
/// Checked before a resumed crawl touches anything.
/// How much of a file's end a checkpoint sums (see [`AppendFile::tail_sum`]).
pub(crate) const TAIL: u64 = 4096;

/// The CRC-32 of the bytes of `file` before `len`, [`TAIL`] at most.
fn tail_sum(file: &File, len: u64) -> std::io::Result<u32> {
    use std::os::unix::fs::FileExt;
    let start = len.saturating_sub(TAIL);
    let mut bytes = vec![0u8; usize::try_from(len - start).unwrap_or(0)];
    file.read_exact_at(&mut bytes, start)?;
    let mut crc = flate2::Crc::new();
    crc.update(&bytes);
    Ok(crc.sum())
}

pub(crate) fn check_resumable(path: &Path, len: u64, tail: Option<u32>) -> Result<(), Error> {
    let found = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && len == 0 => return Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Config(format!(
                "{} is gone, and the state file recorded {len} bytes of it: restore it, or start over \
                 with --fresh",
                path.display()
            )));
        }
        Err(source) => return Err(io(path, source)),
    };
    if found < len {
        return Err(Error::Config(format!(
            "{} is {found} bytes, shorter than the {len} bytes the state file recorded: it was changed \
             outside the crawl; restore it, or start over with --fresh",
            path.display()
        )));
    }
    // The file's end as recorded: a length that is not the one written (a damaged state
    // file) or a file changed before it would be cut mid-record, and the crawl go on.
    if let Some(recorded) = tail {
        let found =
            File::open(path).and_then(|file| tail_sum(&file, len)).map_err(|source| io(path, source))?;
        if found != recorded {
            return Err(Error::Config(format!(
                "{} does not end at byte {len} as it did when the state file recorded that length (its last \
                 bytes before it differ): the file or the state file was changed outside the crawl; restore \
                 them, or start over with --fresh",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The length of `file` up to the end of its last whole line, read backwards a block at a
/// time so a large file costs one block.
fn whole_lines(file: &mut File) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut end = file.metadata()?.len();
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let piece = &mut block[..usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(piece)?;
        if let Some(at) = piece.iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io { path: path.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resuming_cuts_what_was_written_after_the_checkpoint() -> Result<(), Error> {
        let dir = std::env::temp_dir().join(format!("spiderling-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| io(&dir, source))?;
        let path = dir.join("items.jsonl");
        let mut file = AppendFile::create(&path)?;
        file.write_all(b"{\"a\":1}\n")?;
        let committed = file.flush()?;
        file.write_all(b"{\"a\":2}\n{\"a\"")?;
        file.flush()?;
        drop(file);

        let mut file = AppendFile::resume(&path, committed, None)?;
        file.write_all(b"{\"a\":3}\n")?;
        assert_eq!(file.flush()?, 16);
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("{\"a\":1}\n{\"a\":3}\n"));

        let error = AppendFile::resume(&path, 100, None).map(|_| ()).map_err(|e| e.to_string());
        assert!(error.is_err_and(|e| e.contains("shorter than the 100 bytes")));
        let gone =
            AppendFile::resume(&dir.join("gone.jsonl"), 16, None).map(|_| ()).map_err(|e| e.to_string());
        assert!(gone.is_err_and(|e| e.contains("is gone, and the state file recorded 16 bytes")));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn appending_goes_on_after_the_last_whole_line_of_any_length() -> Result<(), Error> {
        let dir = std::env::temp_dir().join(format!("spiderling-append-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| io(&dir, source))?;
        let path = dir.join("items.jsonl");
        // A first line longer than the block read backwards, then one a kill cut short.
        let long = format!("{{\"a\":\"{}\"}}\n", "x".repeat(100_000));
        std::fs::write(&path, format!("{long}{{\"a\"")).map_err(|source| io(&path, source))?;
        let mut file = AppendFile::append(&path)?;
        assert_eq!(file.len(), long.len() as u64);
        file.write_all(b"{\"a\":2}\n")?;
        file.flush()?;
        assert_eq!(std::fs::read_to_string(&path).ok(), Some(format!("{long}{{\"a\":2}}\n")));
        let fresh = AppendFile::append(&dir.join("new.jsonl"))?;
        assert_eq!(fresh.len(), 0, "a file that was not there is made");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
