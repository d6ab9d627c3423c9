//! The default frontier: queues and a seen-set in memory.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use tokio::time::Instant;

use super::crawl_frontier::CrawlFrontier;
use super::queue::{Enqueued, Frontier};
use super::rules::Rules;
use crate::error::Error;
use crate::request::canonical::Fingerprint;
use crate::request::host::{host_key, HostKey};
use crate::request::Request;
use crate::request::Ticket;
use spider_settings::Config;

/// Queues per host plus the set of fingerprints seen.
///
/// Memory: a seen URL costs its 16-byte fingerprint in a hash set, 36 bytes at 1,000,000
/// URLs (between 19 and 39 as the table fills and doubles); a queued request costs its
/// [`Request`] and its URL on top, about 400 bytes for a typical link (measured by
/// `benches/frontier_memory.rs`). A host's queue gives its memory back as it drains: it
/// shrinks to twice its length once under a quarter full, and is dropped when empty, so
/// a crawl that has fetched everything it queued holds only the seen-set.
///
/// # Examples
///
/// ```
/// use spider_core::{Config, Enqueued, Frontier, MemoryFrontier, Request};
///
/// let config = Config::new("books").allowed_domain("books.example");
/// let mut frontier = MemoryFrontier::new(&config);
/// let page = Request::get("https://books.example/a?x=1&y=2")?;
/// let same = Request::get("https://BOOKS.example/a?y=2&x=1#top")?;
/// assert!(matches!(frontier.enqueue(page)?, Enqueued::Accepted(_)));
/// assert_eq!(frontier.enqueue(same)?, Enqueued::Duplicate);
/// assert!(frontier.next("https://books.example:443")?.is_some());
/// # Ok::<(), spider_core::Error>(())
/// ```
#[derive(Debug)]
pub struct MemoryFrontier {
    rules: Rules,
    seen: HashSet<Fingerprint, BuildHasherDefault<PassThrough>>,
    queues: HashMap<HostKey, BinaryHeap<Queued>>,
    deferred: BinaryHeap<Reverse<Deferred>>,
    queued: usize,
    sequence: u64,
}

impl MemoryFrontier {
    /// An empty frontier with the config's allowed domains and depth limit.
    pub fn new(config: &Config) -> Self {
        MemoryFrontier {
            rules: Rules::new(config),
            seen: HashSet::default(),
            queues: HashMap::new(),
            deferred: BinaryHeap::new(),
            queued: 0,
            sequence: 0,
        }
    }

    fn push(&mut self, host: &HostKey, request: Request) {
        self.sequence += 1;
        let entry = Queued { priority: request.priority(), sequence: self.sequence, request };
        match self.queues.get_mut(host) {
            Some(queue) => queue.push(entry),
            None => {
                self.queues.insert(host.clone(), BinaryHeap::from([entry]));
            }
        }
        self.queued += 1;
    }
}

impl Frontier for MemoryFrontier {
    fn enqueue(&mut self, request: Request) -> Result<Enqueued, Error> {
        if let Some(refused) = self.rules.refuse(&request) {
            return Ok(refused);
        }
        // Most links are duplicates: they are turned away before the host key is built.
        if !self.seen.insert(request.fingerprint()) {
            return Ok(Enqueued::Duplicate);
        }
        let Some(host) = host_key(request.url()) else {
            return Ok(Enqueued::OutOfScope);
        };
        self.push(&host, request);
        Ok(Enqueued::Accepted(host))
    }

    fn see(&mut self, request: &Request) -> Result<Enqueued, Error> {
        if let Some(refused) = self.rules.refuse(request) {
            return Ok(refused);
        }
        if !self.seen.insert(request.fingerprint()) {
            return Ok(Enqueued::Duplicate);
        }
        Ok(host_key(request.url()).map_or(Enqueued::OutOfScope, Enqueued::Accepted))
    }

    fn next(&mut self, host: &str) -> Result<Option<Request>, Error> {
        let Some(queue) = self.queues.get_mut(host) else { return Ok(None) };
        let Some(entry) = queue.pop() else { return Ok(None) };
        if queue.is_empty() {
            self.queues.remove(host);
        } else if queue.capacity() > MIN_CAPACITY && queue.len() < queue.capacity() / 4 {
            // Halving at a quarter full keeps the copies amortised O(1) per request.
            queue.shrink_to((queue.len() * 2).max(MIN_CAPACITY));
        }
        self.queued -= 1;
        Ok(Some(entry.request))
    }

    /// Requests of this frontier carry no ticket: it forgets them when it hands them out.
    fn finish(&mut self, _ticket: Ticket) -> Result<(), Error> {
        Ok(())
    }

    fn defer(&mut self, request: Request, due: Instant) -> Result<(), Error> {
        self.sequence += 1;
        self.deferred.push(Reverse(Deferred { due, sequence: self.sequence, request }));
        Ok(())
    }

    fn next_due(&self) -> Option<Instant> {
        self.deferred.peek().map(|Reverse(d)| d.due)
    }

    fn release_due(&mut self, now: Instant) -> Result<Vec<HostKey>, Error> {
        let mut hosts = Vec::new();
        while self.deferred.peek().is_some_and(|Reverse(d)| d.due <= now) {
            let Some(Reverse(deferred)) = self.deferred.pop() else {
                break;
            };
            if let Some(host) = host_key(deferred.request.url()) {
                self.push(&host, deferred.request);
                hosts.push(host);
            }
        }
        Ok(hosts)
    }

    fn hosts(&self) -> Result<Vec<HostKey>, Error> {
        Ok(self.queues.keys().cloned().collect())
    }

    fn has_pending(&self) -> bool {
        self.queued > 0 || !self.deferred.is_empty()
    }

    fn len(&self) -> usize {
        self.queued + self.deferred.len()
    }
}

impl CrawlFrontier for MemoryFrontier {}

/// A host's queue is not shrunk below this many requests' room (a few kilobytes).
const MIN_CAPACITY: usize = 16;

/// A queued request, ordered by priority, then by arrival.
#[derive(Debug)]
struct Queued {
    priority: i32,
    sequence: u64,
    request: Request,
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority.cmp(&other.priority).then_with(|| other.sequence.cmp(&self.sequence))
    }
}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Queued {}

/// A retry waiting for its backoff to end, ordered by due time, then arrival.
#[derive(Debug)]
struct Deferred {
    due: Instant,
    sequence: u64,
    request: Request,
}

impl Ord for Deferred {
    fn cmp(&self, other: &Self) -> Ordering {
        self.due.cmp(&other.due).then_with(|| self.sequence.cmp(&other.sequence))
    }
}

impl PartialOrd for Deferred {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Deferred {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Deferred {}

/// Fingerprints are already uniform hashes; hashing them again would only cost time.
#[derive(Debug, Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes.iter().take(8) {
            self.0 = (self.0 << 8) | u64::from(byte);
        }
    }

    fn write_u128(&mut self, value: u128) {
        // The low half of a fingerprint: truncation is the point.
        self.0 = value as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(url: &str) -> Request {
        match Request::get(url) {
            Ok(request) => request,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn higher_priority_first_then_arrival_order() {
        let mut frontier = MemoryFrontier::new(&Config::default());
        for (path, priority) in [("a", 0), ("b", 5), ("c", 0), ("d", 5)] {
            let r = request(&format!("http://h.example/{path}")).with_priority(priority);
            frontier.enqueue(r).unwrap();
        }
        let order: Vec<String> = std::iter::from_fn(|| frontier.next("http://h.example:80").unwrap())
            .map(|r| r.url().path().to_owned())
            .collect();
        assert_eq!(order, ["/b", "/d", "/a", "/c"]);
        assert!(!frontier.has_pending());
    }

    #[test]
    fn a_request_only_seen_is_never_queued_and_its_later_spellings_are_duplicates() {
        let mut frontier = MemoryFrontier::new(&Config::default());
        let host: HostKey = "http://h.example:80".into();
        assert_eq!(frontier.see(&request("http://h.example/private")).unwrap(), Enqueued::Accepted(host));
        assert_eq!(frontier.see(&request("http://h.example/private#top")).unwrap(), Enqueued::Duplicate);
        assert_eq!(frontier.enqueue(request("http://H.example/private")).unwrap(), Enqueued::Duplicate);
        assert!(!frontier.has_pending());
    }

    #[test]
    fn out_of_scope_and_too_deep_are_refused() {
        let config = Config::new("t").allowed_domain("h.example").max_depth(1);
        let mut frontier = MemoryFrontier::new(&config);
        assert_eq!(frontier.enqueue(request("http://other.example/")).unwrap(), Enqueued::OutOfScope);
        let deep = request("http://h.example/deep").child_of(1, None);
        assert_eq!(frontier.enqueue(deep).unwrap(), Enqueued::TooDeep);
        assert!(!frontier.has_pending());
    }

    #[test]
    fn a_draining_queue_gives_its_memory_back_and_its_urls_stay_seen() {
        const HOST: &str = "http://h.example:80";
        let mut frontier = MemoryFrontier::new(&Config::default());
        for i in 0..1000 {
            frontier.enqueue(request(&format!("http://h.example/{i}"))).unwrap();
        }
        assert!(frontier.queues[HOST].capacity() >= 1000);
        for _ in 0..990 {
            assert!(frontier.next(HOST).unwrap().is_some());
        }
        assert!(frontier.queues[HOST].capacity() <= 4 * MIN_CAPACITY, "shrunk as it drained");
        while frontier.next(HOST).unwrap().is_some() {}
        assert!(frontier.queues.is_empty(), "a drained host keeps no queue");
        assert!(!frontier.has_pending());

        assert_eq!(frontier.enqueue(request("http://H.example/7#again")).unwrap(), Enqueued::Duplicate);
        assert!(matches!(frontier.enqueue(request("http://h.example/new")).unwrap(), Enqueued::Accepted(_)));
        assert_eq!(frontier.next(HOST).unwrap().map(|r| r.url().path().to_owned()).as_deref(), Some("/new"));
    }

    #[test]
    fn a_deferred_request_waits_for_its_due_time() {
        let mut frontier = MemoryFrontier::new(&Config::default());
        let now = Instant::now();
        let due = now + std::time::Duration::from_secs(5);
        frontier.defer(request("http://h.example/retry"), due).unwrap();
        assert!(frontier.has_pending());
        assert!(frontier.release_due(now).unwrap().is_empty());
        assert!(frontier.next("http://h.example:80").unwrap().is_none());
        assert_eq!(frontier.next_due(), Some(due));
        assert_eq!(frontier.release_due(due).unwrap().len(), 1);
        assert!(frontier.next("http://h.example:80").unwrap().is_some());
    }
}
