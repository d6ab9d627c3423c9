//! Copying the write-ahead log back into the state file, on a thread of its own.
//!
//! SQLite does this in the committing connection by default, every thousand pages, with
//! two `fsync`s: the dispatcher, which commits after every turn, would stall there. Here
//! the dispatcher's connection only appends to the log, and this thread checkpoints it
//! (PASSIVE: never waiting for the writer) a few times a second, so the log stays small and
//! the dispatcher never waits for the disk.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;

/// How often the log is copied back.
const EVERY: Duration = Duration::from_millis(250);

/// The checkpointing thread; dropping it stops it and waits for it.
#[derive(Debug)]
pub(super) struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
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
        let thread = std::thread::Builder::new()
            .name("spiderling-checkpoint".to_owned())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    if let Err(error) = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)") {
                        // The log only grows until the next success; the crawl goes on.
                        tracing::warn!(state = %shown, %error, "checkpointing the state file's log failed");
                    }
                }
            })
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(Checkpointer { stop: Some(stop), thread: Some(thread) })
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
