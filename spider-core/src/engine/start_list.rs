//! `--start-urls FILE`: start URLs read from a file (or standard input) while the crawl
//! runs, one per line, so a list of millions never sits in memory whole. A thread reads
//! it and hands each request to the dispatcher through a bounded channel: when the
//! frontier is busy the reading waits. A line that is not a URL is counted and logged with
//! its number, and the crawl goes on.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::Error;
use crate::request::Request;

/// Requests read ahead of the dispatcher.
const READ_AHEAD: usize = 1024;
/// Bad lines logged one by one; the rest are only counted.
const LOGGED: u64 = 20;

/// The thread reading a list, and what it found once it is done.
pub(crate) struct ListReader(JoinHandle<u64>);

impl ListReader {
    /// Open `path` (`-` for standard input) and start reading it: its requests come out of
    /// the receiver. A file that cannot be opened is a configuration error, before
    /// anything is fetched.
    pub(crate) fn open(path: &Path, sticky: bool) -> Result<(mpsc::Receiver<Request>, Self), Error> {
        let source: Box<dyn BufRead + Send> = if path == Path::new("-") {
            Box::new(BufReader::new(io::stdin()))
        } else {
            let file =
                File::open(path).map_err(|e| Error::Config(format!("start list {}: {e}", path.display())))?;
            Box::new(BufReader::new(file))
        };
        let (tx, requests) = mpsc::channel(READ_AHEAD);
        let name = path.to_owned();
        let reader = std::thread::Builder::new()
            .name("spiderling-start-list".to_owned())
            .spawn(move || read(source, &name, sticky, &tx))
            .map_err(|e| Error::Config(format!("start list {}: {e}", path.display())))?;
        Ok((requests, ListReader(reader)))
    }

    /// The lines that were not URLs; call once the receiver is dropped, so a reader
    /// waiting on a full channel stops.
    pub(crate) fn finish(self) -> u64 {
        self.0.join().unwrap_or_default()
    }
}

/// Send each URL of `source` on; the number of lines that were not URLs.
fn read(source: Box<dyn BufRead + Send>, name: &Path, sticky: bool, tx: &mpsc::Sender<Request>) -> u64 {
    let (mut urls, mut bad_lines) = (0_u64, 0_u64);
    for (number, line) in source.lines().enumerate() {
        let number = number + 1;
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(list = %name.display(), line = number, %error, "start list: stopped reading");
                break;
            }
        };
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let request = match Request::get(text) {
            Ok(request) if sticky => request.with_session(format!("list-{number}")),
            Ok(request) => request,
            Err(error) => {
                bad_lines += 1;
                if bad_lines <= LOGGED {
                    tracing::warn!(list = %name.display(), line = number, %error, "start list: skipped a line that is not a URL");
                }
                continue;
            }
        };
        urls += 1;
        if tx.blocking_send(request).is_err() {
            // The crawl ended first (a limit, Ctrl-C): the rest is not needed.
            break;
        }
    }
    if bad_lines > LOGGED {
        tracing::warn!(list = %name.display(), skipped = bad_lines, "start list: more lines were not URLs than were logged");
    }
    tracing::info!(list = %name.display(), urls, bad_lines, "start list read");
    bad_lines
}
