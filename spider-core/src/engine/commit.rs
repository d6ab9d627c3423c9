//! Commit: what the crawl writes as requests finish, and when it is made durable.
//!
//! Only the dispatcher writes the output and failures files, and only for requests it has
//! finished, in the same step in which it tells the frontier; with a durable frontier (a
//! state file, a fleet) a checkpoint then flushes the files and only then hands the
//! frontier every change since the last one: a state file commits them with the files'
//! lengths in one transaction; a fleet's worker sends its requests' ends to Redis, so a
//! worker killed before leaves them leased, to be fetched again, never done and lost. Finished requests
//! are committed in groups, at most [`GROUP_COMMIT`] after the first, and each keeps its
//! global slot until its group is committed, so a crash fetches again at most
//! `concurrency` pages.

use std::time::Duration;

use reqwest::Method;
use tokio::time::Instant;
use url::Url;

use super::protocol::{Miss, Sorted};
use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::observe::counters::Counts;
use crate::request::identity::IdentityChanges;
use crate::request::Request;
use crate::schedule::cache::{CacheWrite, Cached, HttpCache};
use crate::schedule::frontier::OutboxChange;
use crate::schedule::frontier::{Checkpoint, Durable, RunEnd, Stretch};
use crate::sinks::failures::{Failure, FailuresFile};
use crate::sinks::store::Outbox;
use crate::sinks::warc::{Archived, Stored, WarcFile};
use crate::sinks::Sink;

/// The longest a finished request waits for its checkpoint (see [`Commit::due`]).
pub(super) const GROUP_COMMIT: Duration = Duration::from_millis(1);
/// Without a durable frontier, the longest what was written waits in the process before
/// it is handed to the operating system: items reach their files as they come, however
/// long a paused host keeps the crawl going after them.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The files the dispatcher writes.
pub(super) struct Files {
    /// The items files, in the order `output` names them.
    pub(super) sinks: Vec<Sink>,
    pub(super) failures: Option<FailuresFile>,
    /// The HTTP cache, looked up before admission and written with what tasks bring back.
    pub(super) cache: Option<HttpCache>,
    /// With tables as output, their outbox and delivery tasks.
    pub(super) outbox: Option<Outbox>,
    /// The WARC archive of every exchange.
    pub(super) warc: Option<WarcFile>,
}

impl Files {
    /// No file at all: for the engine's tests.
    #[cfg(test)]
    pub(super) fn none() -> Self {
        Files { sinks: Vec::new(), failures: None, cache: None, outbox: None, warc: None }
    }
}

/// What a checkpoint commits besides the files' lengths.
pub(super) struct Progress {
    pub(super) counts: Counts,
    pub(super) proxy_bytes: u64,
    pub(super) identities: Option<IdentityChanges>,
    pub(super) ended: Option<RunEnd>,
}

/// The files and the bookkeeping of what is not committed yet.
pub(super) struct Commit {
    files: Files,
    /// Whether the frontier keeps its requests past the process.
    durable: bool,
    /// `state_sync`: the files are synced to the disk before each checkpoint.
    state_sync: bool,
    /// Changes since the last checkpoint.
    unsaved: bool,
    /// With a durable frontier, requests finished since the last checkpoint, and since
    /// when: each keeps its global slot until committed.
    uncommitted: usize,
    uncommitted_since: Option<Instant>,
    /// The keys of the items written since the last checkpoint, for a state file.
    kept_keys: Vec<ItemKey>,
    /// The types of items no output takes, told once each.
    unrouted: Vec<Option<&'static str>>,
    /// Without a durable frontier: whether the files were written since their last
    /// flush, and when that was.
    written: bool,
    flushed_at: Instant,
}

impl Commit {
    pub(super) fn new(files: Files, durable: bool, state_sync: bool) -> Self {
        // The seeds, or an earlier run's queue put back: committed before any launch.
        Commit {
            files,
            durable,
            state_sync,
            unsaved: true,
            uncommitted: 0,
            uncommitted_since: None,
            kept_keys: Vec::new(),
            unrouted: Vec::new(),
            written: false,
            flushed_at: Instant::now(),
        }
    }

    /// A request came back from its task: its global slot is held until it is committed.
    pub(super) fn returned(&mut self, now: Instant) {
        self.unsaved = true;
        if self.durable {
            self.uncommitted += 1;
            self.uncommitted_since.get_or_insert(now);
        }
    }

    /// The frontier changed without a request coming back (one finished unfetched, as
    /// robots.txt disallows it): a change to save, with the next group.
    pub(super) fn changed(&mut self, now: Instant) {
        self.unsaved = true;
        if self.durable {
            self.uncommitted_since.get_or_insert(now);
        }
    }

    /// Global slots held by requests finished but not committed yet.
    pub(super) fn slots_held(&self) -> usize {
        self.uncommitted
    }

    /// Whether to checkpoint now. Changes that finished no request (the seeds, an earlier
    /// run's queue) are committed at once; finished requests in groups, at most
    /// [`GROUP_COMMIT`] after the first (each commit costs some fifty requests' changes:
    /// one per request slowed a fast crawl by a fifth; 2 ms held every slot long enough to
    /// cost it a tenth), or at once when the crawl is draining.
    pub(super) fn due(&self, now: Instant, draining: bool) -> bool {
        if self.flush_at().is_some_and(|at| now >= at) {
            return true;
        }
        match self.uncommitted_since {
            _ if !self.unsaved => false,
            None => true,
            Some(since) => now >= since + GROUP_COMMIT || draining,
        }
    }

    /// When the open group must be committed, or the files flushed.
    pub(super) fn due_at(&self) -> Option<Instant> {
        let group = self.uncommitted_since.map(|since| since + GROUP_COMMIT);
        [group, self.flush_at()].into_iter().flatten().min()
    }

    /// Without a durable frontier, when what was written is to be flushed.
    fn flush_at(&self) -> Option<Instant> {
        (!self.durable && self.written).then(|| self.flushed_at + FLUSH_EVERY)
    }

    /// Commit what this run did since the last checkpoint, to a durable frontier: flush
    /// the files to the operating system (and to the disk with `state_sync`), then commit
    /// the frontier's changes together with their lengths. Without one, the files are
    /// flushed at most [`FLUSH_EVERY`] after they were written, and when the crawl ends.
    pub(super) fn checkpoint(
        &mut self,
        frontier: Option<&mut dyn Durable>,
        progress: impl FnOnce(bool) -> Progress,
    ) -> Result<(), Error> {
        self.unsaved = false;
        self.uncommitted = 0;
        self.uncommitted_since = None;
        if let Some(error) = self.files.outbox.as_mut().and_then(Outbox::trouble) {
            return Err(error);
        }
        let chunks = self.files.outbox.as_mut().map(Outbox::take).unwrap_or_default();
        let Some(frontier) = frontier else {
            // Nothing outlives the process: the tables may have the items at once.
            if let Some(outbox) = self.files.outbox.as_mut() {
                chunks.into_iter().for_each(|chunk| outbox.send(chunk));
            }
            let now = Instant::now();
            if self.flush_at().is_some_and(|at| now >= at) {
                (self.written, self.flushed_at) = (false, now);
                for sink in &mut self.files.sinks {
                    sink.flush()?;
                }
                if let Some(file) = self.files.failures.as_mut() {
                    file.flush()?;
                }
            }
            return Ok(());
        };
        let sync = self.state_sync;
        let outputs: Result<Vec<_>, Error> = self
            .files
            .sinks
            .iter_mut()
            .map(|sink| {
                let committed = sink.flush()?;
                synced(sync, || sink.sync()).map(|()| committed)
            })
            .collect();
        let failures = self.files.failures.as_mut().map(|file| {
            let committed = file.flush()?;
            synced(sync, || file.sync()).map(|()| committed)
        });
        let warc = self.files.warc.as_mut().map(|file| {
            let committed = file.flush()?;
            synced(sync, || file.sync()).map(|()| committed)
        });
        // Nothing is committed past what the files hold.
        let (outputs, failures, warc) = (outputs?, failures.transpose()?, warc.transpose()?);
        // The cache first, its bodies' records flushed above: once the frontier counts
        // these pages fetched, a resumed crawl fetches none of them again, so the cache
        // must hold their answers; what it holds past a checkpoint the resume cuts off
        // the archive is forgotten then (`forget_beyond`).
        if let Some(cache) = self.files.cache.as_mut() {
            cache.commit()?;
        }
        let Progress { counts, proxy_bytes, identities, ended } = progress(frontier.keeps_identities());
        let outbox = self
            .files
            .outbox
            .as_mut()
            .map(|outbox| OutboxChange { chunks: &chunks, delivered: outbox.delivered() });
        frontier.checkpoint(&Checkpoint {
            outputs: &outputs,
            failures,
            warc,
            counts: &counts,
            proxy_bytes,
            ended,
            identities,
            outbox,
            kept_keys: &self.kept_keys,
        })?;
        self.kept_keys.clear();
        // In the state file now: a kill from here on hands them to the tables again.
        if let Some(outbox) = self.files.outbox.as_mut() {
            chunks.into_iter().for_each(|chunk| outbox.send(chunk));
        }
        Ok(())
    }

    /// Cut `stretch` out of the first items file, a fleet worker's output, which the fleet
    /// did not commit (see `SharedLimits::stretch_to_cut`).
    pub(super) fn cut_output(&mut self, stretch: &Stretch) -> Result<(), Error> {
        let Some(sink) = self.files.sinks.first_mut() else { return Ok(()) };
        sink.cut((stretch.from_bytes, stretch.from_items), (stretch.to_bytes, stretch.to_items))
    }

    /// Append a page's items to the items files and to the outbox for the tables, keep
    /// their keys for the next checkpoint, and file the items its pipeline dropped.
    pub(super) fn write_items(&mut self, sorted: &Sorted) -> Result<(), Error> {
        self.written = true;
        let items = &sorted.items;
        if let Some(outbox) = self.files.outbox.as_mut() {
            outbox.add(&items.lines);
        }
        if self.durable {
            self.kept_keys.extend_from_slice(&sorted.kept_keys);
        }
        if let Some(file) = self.files.failures.as_mut() {
            for dropped in &sorted.dropped {
                file.record_drop(dropped)?;
            }
        }
        for (sink, records) in self.files.sinks.iter_mut().zip(&items.files) {
            sink.write(records)?;
        }
        for item_type in &items.unrouted {
            if !self.unrouted.contains(item_type) {
                self.unrouted.push(*item_type);
                match item_type {
                    Some(named) => {
                        tracing::warn!(target: "spiderling", item_type = named, "items of this type go to no \
                            output: counted, not written; add an output that takes them, such as -o \
                                FILE.jsonl?type={named}")
                    }
                    None => {
                        tracing::warn!(target: "spiderling", "items that serialize under no type's name (a \
                            map, a plain value) go to no output, as every output takes one type: counted, \
                                not written; add an output without type= to take them")
                    }
                }
            }
        }
        Ok(())
    }

    /// File a page without the item its rule parses, when there is a failures file.
    pub(super) fn record_miss(&mut self, miss: &Miss) -> Result<(), Error> {
        self.written = true;
        match self.files.failures.as_mut() {
            Some(file) => file.record_miss(miss.url.as_str(), miss.method.as_str(), &miss.rule),
            None => Ok(()),
        }
    }

    /// Append an exchange's records to the WARC archive: where its payload lies.
    pub(super) fn archive(&mut self, archived: &Archived) -> Result<Option<Stored>, Error> {
        match self.files.warc.as_mut() {
            Some(file) => file.write(archived),
            None => Ok(None),
        }
    }

    /// Why a table takes no more items, once, if one gave up.
    pub(super) fn table_trouble(&mut self) -> Option<Error> {
        self.files.outbox.as_mut().and_then(Outbox::trouble)
    }

    /// Items handed to the tables that some table does not hold yet.
    pub(super) fn items_held(&mut self) -> u64 {
        self.files.outbox.as_mut().map_or(0, Outbox::held)
    }

    /// After the last checkpoint: wait until every table holds every item (see
    /// `store_patience`).
    pub(super) async fn deliver(&mut self) -> Result<(), Error> {
        match self.files.outbox.as_mut() {
            Some(outbox) => outbox.finish().await,
            None => Ok(()),
        }
    }

    /// File a request given up: in the failures file, and in a durable frontier.
    pub(super) fn give_up(
        &mut self,
        frontier: Option<&mut dyn Durable>,
        url: &Url,
        method: &Method,
        attempts: u32,
        failure: &Failure,
    ) -> Result<(), Error> {
        self.written = true;
        if let Some(file) = self.files.failures.as_mut() {
            file.record(url.as_str(), method.as_str(), attempts, failure)?;
        }
        match frontier {
            Some(frontier) => frontier.record_failure(url, method, attempts, failure),
            None => Ok(()),
        }
    }

    /// The cached answer to `request`, if the crawl keeps a cache and it has one.
    pub(super) fn cached(&self, request: &Request) -> Result<Option<Cached>, Error> {
        match &self.files.cache {
            Some(cache) => cache.lookup(request),
            None => Ok(None),
        }
    }

    /// Store or refresh an answer in the cache; its body at `stored` when the archive
    /// keeps it.
    pub(super) fn cache(&mut self, write: CacheWrite, stored: Option<&Stored>) -> Result<(), Error> {
        match self.files.cache.as_mut() {
            Some(cache) => cache.write(write, stored),
            None => Ok(()),
        }
    }

    /// After the last checkpoint: commit the cache, close the output (a JSON array's
    /// closing bracket is not committed, so a resumed crawl cuts it off and goes on), and
    /// flush the failures. Every step is tried; the first error is returned.
    pub(super) fn close(&mut self) -> Result<(), Error> {
        let cache = self.files.cache.as_mut().map_or(Ok(()), HttpCache::commit);
        let sinks = self.files.sinks.iter_mut().try_for_each(Sink::finish);
        let failures = self.files.failures.as_mut().map_or(Ok(()), |file| file.flush().map(|_| ()));
        let warc = self.files.warc.as_mut().map_or(Ok(()), WarcFile::finish);
        cache.and(sinks).and(failures).and(warc)
    }
}

/// Sync a file to the disk with `sync`, when `state_sync` asks for it.
fn synced(asked: bool, sync: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
    if asked {
        sync()
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(_keeps_identities: bool) -> Progress {
        Progress { counts: Counts::default(), proxy_bytes: 0, identities: None, ended: None }
    }

    #[tokio::test(start_paused = true)]
    async fn finished_requests_keep_their_slots_until_their_group_is_committed() {
        let mut commit = Commit::new(Files::none(), true, false);
        let start = Instant::now();
        assert!(commit.due(start, false), "the seeds are committed before any launch");
        commit.checkpoint(None, progress).unwrap();
        assert!(!commit.due(start, false));
        assert_eq!(commit.due_at(), None, "nothing to commit, nothing to wake for");
        commit.returned(start);
        commit.returned(start);
        assert_eq!(commit.slots_held(), 2, "each keeps its global slot");
        assert!(!commit.due(start, false), "the group stays open for more");
        assert_eq!(commit.due_at(), Some(start + GROUP_COMMIT));
        assert!(commit.due(start, true), "a draining crawl commits at once");
        assert!(commit.due(start + GROUP_COMMIT, false));
        commit.checkpoint(None, progress).unwrap();
        assert_eq!(commit.slots_held(), 0, "committed: the slots are free");
        // A change that finished no request (robots.txt turned one away) is committed with
        // the next group, and holds no slot.
        commit.changed(start);
        assert_eq!((commit.slots_held(), commit.due_at()), (0, Some(start + GROUP_COMMIT)));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_durable_frontier_nothing_waits_for_a_group() {
        let mut commit = Commit::new(Files::none(), false, false);
        let start = Instant::now();
        commit.checkpoint(None, progress).unwrap();
        commit.returned(start);
        assert_eq!(commit.slots_held(), 0, "no slot is held for a commit");
        assert!(commit.due(start, false));
        assert_eq!(commit.due_at(), None, "no group to wait for, nothing written to flush");
    }
}
