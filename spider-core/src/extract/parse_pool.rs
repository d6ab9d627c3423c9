//! The parse pool: CPU work (HTML parsing, selectors, link extraction) on a bounded
//! rayon pool, reached from async code. The streaming pass over a small page is the one
//! piece of such work done on the fetching task (`Page::stream`): bounded by the page's
//! size, and cheaper than two thread hops.
//!
//! At most `2 × threads` jobs are inside the pool (one running and one waiting per
//! thread). A request whose job waits for room keeps its concurrency slot, so when
//! parsing is the bottleneck fetching slows down to match it: no more than `concurrency`
//! pages are ever held in memory, however slow the parser.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{oneshot, Semaphore};

use crate::error::Error;

/// A handle to the pool; cheap to clone.
#[derive(Clone)]
pub struct ParsePool {
    inner: Arc<Inner>,
}

struct Inner {
    pool: rayon::ThreadPool,
    room: Arc<Semaphore>,
    /// HTML documents parsed, for the stats: one per page is the goal.
    html_parses: AtomicU64,
    /// Of those, pages read by the streaming engine, without a DOM.
    streamed_pages: AtomicU64,
    /// Every page read into a DOM (`Config::dom_only`).
    dom_only: bool,
}

impl std::fmt::Debug for ParsePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsePool")
            .field("threads", &self.inner.pool.current_num_threads())
            .field("room", &self.inner.room.available_permits())
            .finish()
    }
}

/// A job panicked; its page counts as failed and the pool goes on.
#[derive(Debug)]
pub(crate) struct JobPanicked;

impl ParsePool {
    /// A pool of `threads` threads named `spiderling-parse-N`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the threads cannot be started.
    pub fn new(threads: usize) -> Result<Self, Error> {
        Self::reading(threads, false)
    }

    /// A pool of `threads` threads for a crawl; with `dom_only`, every page it reads goes
    /// into a DOM, the streaming engine's too (`Config::dom_only`).
    pub(crate) fn reading(threads: usize, dom_only: bool) -> Result<Self, Error> {
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("spiderling-parse-{i}"))
            .build()
            .map_err(|e| Error::Config(format!("cannot start the parse pool: {e}")))?;
        let room = Arc::new(Semaphore::new(threads * 2));
        Ok(ParsePool {
            inner: Arc::new(Inner {
                pool,
                room,
                html_parses: AtomicU64::new(0),
                streamed_pages: AtomicU64::new(0),
                dom_only,
            }),
        })
    }

    /// Whether every page is read into a DOM.
    pub(crate) fn dom_only(&self) -> bool {
        self.inner.dom_only
    }

    /// Count one HTML parse.
    pub(crate) fn parsed_html(&self) {
        self.inner.html_parses.fetch_add(1, Ordering::Relaxed);
    }

    /// Count one page read by the streaming engine (it counts as a parse too).
    pub(crate) fn streamed_page(&self) {
        self.inner.streamed_pages.fetch_add(1, Ordering::Relaxed);
    }

    /// Pages read by the streaming engine so far.
    pub(crate) fn streamed_pages(&self) -> u64 {
        self.inner.streamed_pages.load(Ordering::Relaxed)
    }

    /// HTML documents parsed so far.
    pub(crate) fn html_parses(&self) -> u64 {
        self.inner.html_parses.load(Ordering::Relaxed)
    }

    /// Run `job` on the pool and await its result, waiting first for room in the pool.
    pub(crate) async fn run<R, F>(&self, job: F) -> Result<R, JobPanicked>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let permit = self.inner.room.clone().acquire_owned().await.map_err(|_| JobPanicked)?;
        let (done, result) = oneshot::channel();
        self.inner.pool.spawn(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(job));
            drop(permit);
            let _ = done.send(outcome);
        });
        match result.await {
            Ok(Ok(value)) => Ok(value),
            _ => Err(JobPanicked),
        }
    }
}
