//! What the dispatcher and a request's task tell each other: the job a task is sent to do,
//! and the outcome it reports back, exactly once, even if the task panics or is abandoned.

use std::time::Duration;

use reqwest::Method;
use tokio::sync::mpsc;
use tokio::time::Instant;
use url::Url;

use super::hosts::HostId;
use crate::error::reason::Reason;
use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::request::{Request, Ticket};
use crate::schedule::cache::{CacheWrite, Cached};
use crate::schedule::frontier::RobotsMemo;
use crate::schedule::robots::RobotsRules;
use crate::sinks::failures::{DroppedItem, Failure};
use crate::sinks::warc::Archived;
use crate::sinks::Encoded;
use crate::wire::classify::Trouble;

/// What a task is sent to do: a page, or a host's robots.txt, and the cached answer to
/// take or to have the server confirm.
pub(super) struct Job {
    pub(super) request: Request,
    pub(super) robots: bool,
    pub(super) cached: Option<Cached>,
    /// The host slot it took at launch; none for an answer taken from the cache.
    pub(super) slot: Option<PageSlot>,
}

/// A host's slot, by its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PageSlot {
    pub(super) host: HostId,
    pub(super) lane: u32,
}

impl Job {
    pub(super) fn page(request: Request) -> Self {
        Job { request, robots: false, cached: None, slot: None }
    }

    pub(super) fn robots(request: Request) -> Self {
        Job { request, robots: true, cached: None, slot: None }
    }

    /// Whether the answer is taken from the cache without asking the network: then the
    /// request needs no rate token, no host slot and no pause.
    pub(super) fn offline(&self) -> bool {
        self.cached.as_ref().is_some_and(|cached| !cached.revalidate)
    }
}

/// What a task learned besides its outcome: the answer's verdict and latency for the
/// gauges, and what to write to the cache.
#[derive(Default)]
pub(super) struct Byproducts {
    pub(super) sample: Option<Sample>,
    pub(super) cache: Option<CacheWrite>,
    /// The exchange's records for the WARC archive.
    pub(super) archive: Option<Archived>,
}

/// What became of a page's items.
pub(super) struct Sorted {
    /// The items kept, encoded.
    pub(super) items: Encoded,
    /// The items dropped, for the failures file and the counts.
    pub(super) dropped: Vec<DroppedItem>,
    /// The keys the kept items took, for a state file to keep with the page.
    pub(super) kept_keys: Vec<ItemKey>,
}

/// A page its rule parses that had none of the item: an extraction miss, never a block.
pub(super) struct Miss {
    pub(super) url: Url,
    pub(super) method: Method,
    /// The rule's label (`spider/rules.rs`).
    pub(super) rule: std::sync::Arc<str>,
}

/// What a task reports back.
pub(super) enum Outcome {
    /// The page was parsed: its items, through the pipeline and encoded; its follow-ups;
    /// and the failure if `parse` returned an error after finding some (its items are
    /// still written and its links still followed). `not_html`: the link rules skipped it
    /// as not HTML.
    Parsed {
        sorted: Sorted,
        follows: Vec<Request>,
        failed: Option<(Url, Method, u32, Failure)>,
        not_html: bool,
        /// The page had none of the item its rule parses.
        missed: Option<Miss>,
    },
    Redirect(Request),
    /// A sitemap was read: what it lists, as requests; and the failure if it could not be
    /// read whole (what was read before is still followed).
    Sitemap {
        follows: Vec<Request>,
        failed: Option<(Url, Method, u32, Failure)>,
    },
    /// robots.txt's rules, and the answer they were read from, for the state file.
    Robots(RobotsRules, RobotsMemo),
    /// robots.txt redirected here.
    RobotsRedirect(Request),
    /// robots.txt could not be had; the reason.
    RobotsUnavailable(String),
    /// Worth another attempt, if any are left.
    Trouble {
        request: Request,
        trouble: Trouble,
        retry_after: Option<Duration>,
        failure: Failure,
    },
    /// Given up for good.
    Failed {
        url: Url,
        method: Method,
        attempts: u32,
        failure: Failure,
    },
    /// Cut short by the end of the crawl: given up as interrupted, or, with a state file,
    /// left for the next run.
    Interrupted {
        url: Url,
        method: Method,
        attempts: u32,
    },
    Fatal(Error),
}

impl Outcome {
    pub(super) fn failed(request: &Request, failure: Failure) -> Self {
        Outcome::Failed {
            url: request.url().clone(),
            method: request.method().clone(),
            attempts: request.attempts + 1,
            failure,
        }
    }
}

pub(super) struct Done {
    pub(super) host: HostId,
    /// The host slot's lane the request took when it went to the network (not answered
    /// from the cache), which it gives back.
    pub(super) slot: Option<u32>,
    /// The request's ticket, when a durable frontier handed it out.
    pub(super) ticket: Option<Ticket>,
    /// When the dispatcher launched it: a request launched before its host's limits
    /// changed says nothing of them, however late its task got to send it.
    pub(super) launched: Instant,
    pub(super) outcome: Outcome,
    pub(super) notes: Byproducts,
}

/// What the gauges learn from one answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) blocked: bool,
    /// A block the identity met with use, not the host (`Answered::follows_identity`).
    pub(super) follows_identity: bool,
    pub(super) sent_at: Instant,
    pub(super) latency: Duration,
    /// The server's address, when the request went to it directly.
    pub(super) server: Option<std::net::SocketAddr>,
}

/// Reports a task's outcome exactly once, even if the task panics (the spider's `parse`
/// is user code) or is abandoned at shutdown: a lost report would leave a slot taken for
/// ever, and the request would be missing from the failures file.
pub(super) struct Report {
    pub(super) host: HostId,
    pub(super) slot: Option<u32>,
    pub(super) launched: Instant,
    pub(super) robots: bool,
    pub(super) ticket: Option<Ticket>,
    pub(super) url: Url,
    pub(super) method: Method,
    pub(super) attempts: u32,
    pub(super) to: mpsc::UnboundedSender<Done>,
    pub(super) sent: bool,
}

impl Report {
    pub(super) fn send(mut self, outcome: Outcome, notes: Byproducts) {
        self.sent = true;
        let (host, slot, ticket, launched) = (self.host, self.slot, self.ticket, self.launched);
        let _ = self.to.send(Done { host, slot, ticket, launched, outcome, notes });
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if self.sent {
            return;
        }
        let panicked = std::thread::panicking();
        let outcome = if self.robots {
            // The host must not wait for ever for an answer that will not come.
            let reason = if panicked { "panic" } else { "interrupted" };
            Outcome::RobotsUnavailable(format!("robots.txt fetch ended: {reason}"))
        } else if panicked {
            let failure = Failure::bare(Reason::Panic);
            Outcome::Failed {
                url: self.url.clone(),
                method: self.method.clone(),
                attempts: self.attempts + 1,
                failure,
            }
        } else {
            Outcome::Interrupted {
                url: self.url.clone(),
                method: self.method.clone(),
                attempts: self.attempts + 1,
            }
        };
        let (host, slot, ticket, launched) = (self.host, self.slot, self.ticket, self.launched);
        let _ = self.to.send(Done { host, slot, ticket, launched, outcome, notes: Byproducts::default() });
    }
}

/// The browsers' requests (`render`): what a page's task asks the dispatcher, and what it
/// hears back (`subrequests.rs` admits them).
#[cfg(feature = "render")]
mod browsers {
    use std::collections::{HashMap, HashSet, VecDeque};

    use tokio::sync::{mpsc, oneshot};
    use url::Url;

    use super::PageSlot;
    use crate::engine::hosts::HostId;

    /// A request of a page's browser, asking to go.
    pub(in crate::engine) struct Ask {
        pub(in crate::engine) url: Url,
        /// The slot the page's own request took, when it took one.
        pub(in crate::engine) page: Option<PageSlot>,
        pub(in crate::engine) reply: oneshot::Sender<Pass>,
    }

    /// The dispatcher's answer to an [`Ask`].
    pub(in crate::engine) enum Pass {
        /// Send it now; the slot is held until the permit is dropped.
        Go(Permit),
        /// Not sent: outside the allowed domains, disallowed by robots.txt, or its host's
        /// robots.txt could not be had.
        Refused,
    }

    /// A slot held by a browser's request; dropping it frees the slot.
    pub(in crate::engine) struct Permit {
        pub(in crate::engine) slot: PageSlot,
        /// Whether it rides on the page's own slot, which stays the page's.
        pub(in crate::engine) riding: bool,
        pub(in crate::engine) to: mpsc::UnboundedSender<Freed>,
    }

    impl Drop for Permit {
        fn drop(&mut self) {
            let _ = self.to.send(Freed { slot: self.slot, riding: self.riding });
        }
    }

    /// A permit's slot, free again.
    pub(in crate::engine) struct Freed {
        pub(in crate::engine) slot: PageSlot,
        pub(in crate::engine) riding: bool,
    }

    /// What the dispatcher hears from the browsers, in its turn.
    pub(in crate::engine) enum Heard {
        Ask(Ask),
        Freed(Freed),
    }

    /// The browsers' requests waiting for admission, by host, and the pages' slots a request
    /// rides on now.
    pub(in crate::engine) struct Asking {
        asks: mpsc::UnboundedReceiver<Ask>,
        pub(in crate::engine) freed_tx: mpsc::UnboundedSender<Freed>,
        freed: mpsc::UnboundedReceiver<Freed>,
        pub(in crate::engine) waiting: HashMap<HostId, VecDeque<Ask>>,
        pub(in crate::engine) riding: HashSet<(HostId, u32)>,
    }

    impl Asking {
        pub(in crate::engine) fn new(asks: mpsc::UnboundedReceiver<Ask>) -> Self {
            let (freed_tx, freed) = mpsc::unbounded_channel();
            Asking { asks, freed_tx, freed, waiting: HashMap::new(), riding: HashSet::new() }
        }

        /// The next ask or freed slot; pending for ever once every sender is gone.
        pub(in crate::engine) async fn next(&mut self) -> Heard {
            tokio::select! {
                Some(freed) = self.freed.recv() => Heard::Freed(freed),
                Some(ask) = self.asks.recv() => Heard::Ask(ask),
                else => std::future::pending().await,
            }
        }
    }
}

#[cfg(feature = "render")]
pub(super) use browsers::{Ask, Asking, Freed, Heard, Pass, Permit};

#[cfg(test)]
mod tests {
    use super::*;

    fn report(robots: bool, to: &mpsc::UnboundedSender<Done>) -> Report {
        Report {
            host: 3,
            slot: Some(1),
            launched: Instant::now(),
            robots,
            ticket: None,
            url: Url::parse("https://a.example/book/1").unwrap_or_else(|e| panic!("{e}")),
            method: Method::GET,
            attempts: 1,
            to: to.clone(),
            sent: false,
        }
    }

    #[test]
    fn a_task_reports_its_request_once_whether_it_ends_is_dropped_or_panics() {
        let (to, mut from) = mpsc::unbounded_channel();
        let next = Request::get("https://a.example/2").unwrap_or_else(|e| panic!("{e}"));
        report(false, &to).send(Outcome::Redirect(next), Byproducts::default());
        assert!(matches!(from.try_recv().map(|done| done.outcome), Ok(Outcome::Redirect(_))));
        assert!(from.try_recv().is_err(), "sent once, not again when dropped");
        // Abandoned at shutdown: interrupted, its slot given back.
        drop(report(false, &to));
        let done = from.try_recv().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((done.host, done.slot), (3, Some(1)));
        assert!(matches!(done.outcome, Outcome::Interrupted { attempts: 2, .. }));
        // The spider's parse panicked: failed, with the reason.
        let panicking = report(false, &to);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _report = panicking;
            panic!("a spider's parse");
        }));
        assert!(caught.is_err());
        let done = from.try_recv().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&done.outcome, Outcome::Failed { failure, .. } if failure.reason == Reason::Panic),
            "a panic is the request's failure"
        );
        // A robots.txt task that ends without an answer leaves its host unavailable, not
        // waiting for ever.
        drop(report(true, &to));
        let done = from.try_recv().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(done.outcome, Outcome::RobotsUnavailable(reason) if reason.contains("interrupted")));
    }
}
