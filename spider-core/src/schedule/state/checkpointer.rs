//! Copying the write-ahead log back into the state file, on a thread of its own.
//!
//! SQLite does this in the committing connection by default, every thousand pages, with
//! two `fsync`s: the dispatcher, which commits after every turn, would stall there. Here
//! the dispatcher's connection only appends to the log, and this thread checkpoints it
//! (PASSIVE: never waiting for the writer) a few times a second, so the dispatcher does not
//! wait for the disk.
//!
//! Copying the log back is not enough to keep it small: SQLite writes from the start of the
//! log again only when a write transaction begins while every frame is already in the
//! file, and the writer begins its next transaction as soon as it commits, before this
//! thread can copy that commit. So the log grew for the whole crawl: 14.4 GiB, and 28 MiB
//! more resident for its index (`-shm`, mapped), at 10,000,000 URLs queued
//! (`benches/frontier_disk.rs`). This thread publishes how many frames the log holds; once
//! that is more than [`RESTART_FRAMES`], the writer, after its next commit, copies back
//! itself what this thread has not yet (the commits since its last pass), with a
//! checkpoint's two `fsync`s, before it begins again
//! ([`StateFrontier::commit`](super::StateFrontier::commit)); its next write starts the log
//! over. The writer waits for the disk once per 64 MiB of log, not at every commit.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;

/// How often the log is copied back.
const EVERY: Duration = Duration::from_millis(250);

/// Frames in the log (pages of 4 KiB) beyond which the writer starts it over: 64 MiB.
pub(super) const RESTART_FRAMES: u64 = 16_384;

/// The checkpointing thread; dropping it stops it and waits for it.
#[derive(Debug)]
pub(super) struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// Frames in the log at the last checkpoint.
    frames: Arc<AtomicU64>,
}

impl Checkpointer {
    pub(super) fn start(path: &Path) -> Result<Self, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| Error::Store { path: path.to_owned(), source: Box::new(source) })?;
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = path.display().to_string();
        let frames = Arc::new(AtomicU64::new(0));
        let published = Arc::clone(&frames);
        let thread = std::thread::Builder::new()
            .name("spiderling-checkpoint".to_owned())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    // busy, frames in the log, frames copied back
                    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get::<_, i64>(1)) {
                        Ok(log) => published.store(u64::try_from(log).unwrap_or(0), Ordering::Relaxed),
                        // The log only grows until the next success; the crawl goes on.
                        Err(error) => {
                            tracing::warn!(target: "spiderling", state = %shown, %error, "checkpointing the \
                                state file's log failed");
                        }
                    }
                }
            })
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(Checkpointer { stop: Some(stop), thread: Some(thread), frames })
    }

    /// Whether the log is long enough that the writer should start it over; asked once
    /// per measure, so the writer copies the log back at most once between two passes of
    /// this thread (each copy waits for the disk).
    pub(super) fn take_long_log(&self) -> bool {
        self.frames.load(Ordering::Relaxed) > RESTART_FRAMES
            && self.frames.swap(0, Ordering::Relaxed) > RESTART_FRAMES
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::request::Request;
    use crate::schedule::frontier::Frontier;
    use spider_settings::Config;

    use crate::schedule::state::frontier::StateFrontier;

    /// The writer holds a transaction open between commits, so copying the log back never
    /// let SQLite start it over: it grew for the whole crawl (15 GB at 10,000,000 URLs).
    #[test]
    fn a_long_log_is_started_over_by_the_commits_that_follow() {
        let dir = std::env::temp_dir().join(format!("spiderling-log-restart-{}", std::process::id()));
        let path = dir.join("restart.state");
        let mut frontier = StateFrontier::open(&path, &Config::new("restart")).unwrap();
        let frames_in_log = || -> i64 {
            let conn = Connection::open(&path).unwrap();
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1)).unwrap()
        };
        let mut url = 0;
        let mut add = |frontier: &mut StateFrontier, count: usize| {
            for _ in 0..count {
                frontier.enqueue(Request::get(&format!("https://a.example/{url}")).unwrap()).unwrap();
                url += 1;
            }
            frontier.commit().unwrap();
        };
        for _ in 0..5 {
            add(&mut frontier, 200);
        }
        let long = frames_in_log();
        // The checkpointing thread publishes the log's real length every 250 ms, and may be
        // copying when the writer tries: a few tries, not a sleep.
        let mut restarted = false;
        for _ in 0..10 {
            frontier.checkpointer.frames.store(u64::MAX, Ordering::Relaxed);
            add(&mut frontier, 1); // sees a long log: copies it back, begins on the file alone
            add(&mut frontier, 1); // so its first write starts the log over
            if frames_in_log() < long {
                restarted = true;
                break;
            }
        }
        drop(frontier);
        std::fs::remove_dir_all(&dir).ok();
        assert!(restarted, "the log still holds its {long} frames or more");
    }
}
