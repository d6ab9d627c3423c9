//! `--start-urls FILE`: start URLs read from a file (or standard input) while the crawl
//! runs, one per line, so a list of millions never sits in memory whole. A thread reads
//! it and hands each request to the dispatcher through a bounded channel: when the
//! frontier is busy the reading waits. A line that is not a URL is counted and logged with
//! its number, and the crawl goes on; so is one of another scheme (`ftp:`, `mailto:`).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::error::Error;
use crate::request::Request;

/// Requests read ahead of the dispatcher.
const READ_AHEAD: usize = 1024;
/// Bad lines logged one by one; the rest are only counted.
const LOGGED: u64 = 20;

/// The thread reading a list: the lines it found not to be URLs so far.
pub(crate) struct ListReader(Arc<AtomicU64>);

impl ListReader {
    /// Open `path` (`-` for standard input) and start reading it: its requests come out of
    /// the receiver. A file that cannot be opened is a configuration error, before
    /// anything is fetched.
    pub(crate) fn open(path: &Path) -> Result<(mpsc::Receiver<Request>, Self), Error> {
        let source: Box<dyn BufRead + Send> = if path == Path::new("-") {
            Box::new(BufReader::new(io::stdin()))
        } else {
            let file =
                File::open(path).map_err(|e| Error::Config(format!("start list {}: {e}", path.display())))?;
            Box::new(BufReader::new(file))
        };
        let (tx, requests) = mpsc::channel(READ_AHEAD);
        let name = path.to_owned();
        let bad_lines = Arc::new(AtomicU64::new(0));
        let counted = bad_lines.clone();
        // Not joined: a crawl that ends before its list (a limit, Ctrl-C) must not wait for
        // standard input to close. The thread stops at its next request, the receiver gone.
        std::thread::Builder::new()
            .name("spiderling-start-list".to_owned())
            .spawn(move || read(source, &name, &tx, &counted))
            .map_err(|e| Error::Config(format!("start list {}: {e}", path.display())))?;
        Ok((requests, ListReader(bad_lines)))
    }

    /// The lines found not to be URLs: all of them once the list was read to its end.
    pub(crate) fn bad_lines(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// Send each URL of `source` on, counting the lines that are not http or https URLs in `bad`.
fn read(source: Box<dyn BufRead + Send>, name: &Path, tx: &mpsc::Sender<Request>, bad: &AtomicU64) {
    let (mut urls, mut bad_lines) = (0_u64, 0_u64);
    for (number, line) in source.lines().enumerate() {
        let number = number + 1;
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(target: "spiderling", list = %name.display(), line = number, %error, "start \
                    list: stopped reading");
                break;
            }
        };
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        // A crawl fetches only the web: an `ftp:` or `mailto:` line is as useless as one
        // that does not parse, and said as plainly.
        let request = Request::get(text).and_then(|request| match request.url().scheme() {
            "http" | "https" => Ok(request),
            scheme => Err(Error::Config(format!("a {scheme}: URL; a crawl fetches only http and https"))),
        });
        let request = match request {
            Ok(request) => request,
            Err(error) => {
                bad_lines += 1;
                bad.store(bad_lines, Ordering::Release);
                if bad_lines <= LOGGED {
                    tracing::warn!(
                        target: "spiderling",
                        list = %name.display(),
                        line = number,
                        %error,
                        "start list: skipped a line that is not an http or https URL"
                    );
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
        tracing::warn!(target: "spiderling", list = %name.display(), skipped = bad_lines, "start list: more \
            lines were not http or https URLs than were logged");
    }
    tracing::info!(target: "spiderling", list = %name.display(), urls, bad_lines, "start list read");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_web_url_of_the_list_is_a_request_and_other_lines_are_counted_not_sent() {
        let path = std::env::temp_dir().join(format!("spiderling-start-list-{}.txt", std::process::id()));
        let list = "https://a.example/\n# a comment\n\n  http://b.example/x  \nnot a url\nftp://c.example/\n";
        std::fs::write(&path, list).unwrap_or_else(|e| panic!("{e}"));
        let (mut requests, reader) = ListReader::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut urls = Vec::new();
        while let Some(request) = requests.recv().await {
            urls.push(request.url().to_string());
        }
        assert_eq!(urls, ["https://a.example/", "http://b.example/x"]);
        assert_eq!(reader.bad_lines(), 2, "the line that is no URL and the ftp one");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_list_that_cannot_be_opened_is_a_setting_error_at_once() {
        let missing = Path::new("/nonexistent/spiderling/hosts.txt");
        let refused = ListReader::open(missing).map(|_| ()).map_err(|e| e.to_string());
        assert!(refused.is_err_and(|e| e.contains("start list /nonexistent/spiderling/hosts.txt")));
    }
}
