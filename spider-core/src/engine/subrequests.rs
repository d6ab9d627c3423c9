//! The browser's requests (`render`), admitted by the dispatcher as every request is:
//! inside the allowed domains, allowed by their host's robots.txt (fetched first for a host
//! the crawl has not met), on a slot of their host (`per_host`) past its politeness pause,
//! and with a token of the crawl's rate ceiling.
//!
//! A page's task asks ([`Ask`]) and waits for a [`Pass`]; the slot is the request's until
//! its [`Permit`] is dropped, when its answer has been read. A request of the page's own
//! host may also go on the page's slot, one at a time: the page's document was fetched
//! already, and a browser loading a page's resources is the one visitor the slot stands
//! for. So a page never waits for the slot it holds (with `per_host = 1` it would wait
//! until its render timed out), and its host never has more requests in flight than
//! `per_host`. The pause between pages is the slot's; a page's own resources come
//! without one, as a browser's do. Its tests ask as a page does, with no browser
//! (`dispatch/tests/browsers.rs`).

use std::collections::VecDeque;

use tokio::time::Instant;

use super::admission::Admit;
use super::dispatch::Dispatcher;
use super::hosts::{HostId, RobotsState};
use super::protocol::{Ask, Freed, Heard, Job, PageSlot, Pass, Permit};
use crate::request::host::host_key;
use crate::schedule::throttle::SlotState;
use crate::spider::Spider;

impl<S: Spider> Dispatcher<S> {
    pub(super) fn hear(&mut self, heard: Heard, now: Instant) {
        match heard {
            Heard::Ask(ask) => {
                let key = host_key(&ask.url).filter(|_| self.shared.scope.allows(&ask.url));
                let Some(key) = key else {
                    let _ = ask.reply.send(Pass::Refused);
                    return;
                };
                let id = self.meet_host(key, now);
                self.asking.waiting.entry(id).or_default().push_back(ask);
            }
            Heard::Freed(Freed { slot, riding: true }) => {
                self.asking.riding.remove(&(slot.host, slot.lane));
            }
            Heard::Freed(Freed { slot, riding: false }) => {
                self.release(slot.host, slot.lane, None, now);
                self.hosts.mark_ready(slot.host);
            }
        }
    }

    /// Let go the browsers' requests their hosts admit now, first fetching the robots.txt
    /// of a host met through them; when the next rate token is due, if that held one back.
    pub(super) fn admit_asks(&mut self, now: Instant) -> Option<Instant> {
        let mut token_at: Option<Instant> = None;
        let mut wait_for = |at: Instant| token_at = Some(token_at.map_or(at, |t| t.min(at)));
        let hosts: Vec<HostId> = self.asking.waiting.keys().copied().collect();
        for id in hosts {
            // A host's robots.txt goes before its asks, on a slot of its own, whatever the
            // crawl's concurrency: the pages asking are in flight already.
            if matches!(self.hosts[id].robots, RobotsState::Unknown | RobotsState::Redirected(_)) {
                if let Some(request) = self.hosts.robots_request(id) {
                    let state = self.hosts.state(id, now);
                    match self.admission.request(state, false, now) {
                        Admit::Launch => self.launch(id, Job::robots(request), now),
                        held => {
                            self.hosts[id].robots = RobotsState::Redirected(Box::new(request));
                            match held {
                                Admit::WaitUntil(at) => wait_for(at),
                                Admit::Hold(Some(due)) => self.hosts.wake_at(id, due),
                                Admit::Hold(None) | Admit::Launch => {}
                            }
                        }
                    }
                }
            }
            while let Some(ask) = self.asking.waiting.get_mut(&id).and_then(VecDeque::pop_front) {
                let answer = match self.judge(id, &ask, now) {
                    Verdict::Wait(at) => {
                        at.into_iter().for_each(&mut wait_for);
                        if let Some(queue) = self.asking.waiting.get_mut(&id) {
                            queue.push_front(ask);
                        }
                        break;
                    }
                    Verdict::Refuse => Pass::Refused,
                    Verdict::Go(permit) => Pass::Go(permit),
                };
                // A page that stopped waiting drops the pass, and with it the permit.
                let _ = ask.reply.send(answer);
            }
            if self.asking.waiting.get(&id).is_some_and(VecDeque::is_empty) {
                self.asking.waiting.remove(&id);
            }
        }
        token_at
    }

    /// What becomes of one ask of host `id` now.
    fn judge(&mut self, id: HostId, ask: &Ask, now: Instant) -> Verdict {
        if ask.reply.is_closed() {
            return Verdict::Refuse;
        }
        match &self.hosts[id].robots {
            RobotsState::Known(rules) if rules.allows(&ask.url) => {}
            RobotsState::Known(_) => {
                tracing::debug!(target: "spiderling", url = %ask.url, "a request of the browser disallowed \
                    by robots.txt");
                return Verdict::Refuse;
            }
            _ => return Verdict::Wait(None),
        }
        // A free slot of the host first; else the page's own, when no other of its
        // requests rides on it.
        let ride = ask.page.filter(|page| page.host == id && !self.asking.riding.contains(&(id, page.lane)));
        let state = self.hosts.state(id, now);
        let admit = match ride {
            Some(_) if state != SlotState::Free => self.admission.ride(self.hosts.held_until(id, now), now),
            _ => self.admission.request(state, false, now),
        };
        let (slot, riding) = match (admit, ride) {
            (Admit::Launch, Some(page)) if state != SlotState::Free => {
                self.hosts.count_start(id, now);
                self.asking.riding.insert((id, page.lane));
                (page, true)
            }
            (Admit::Launch, _) => (PageSlot { host: id, lane: self.hosts.take(id, None, now) }, false),
            (Admit::WaitUntil(at), _) => return Verdict::Wait(Some(at)),
            (Admit::Hold(until), _) => {
                if let Some(due) = until {
                    self.hosts.wake_at(id, due);
                }
                return Verdict::Wait(None);
            }
        };
        Verdict::Go(Permit { slot, riding, to: self.asking.freed_tx.clone() })
    }
}

/// What becomes of an ask.
enum Verdict {
    /// It goes now, on this permit's slot.
    Go(Permit),
    /// Not sent (see [`Pass::Refused`]), or nobody waits for it any more.
    Refuse,
    /// It waits: for the rate token due then, or for its host.
    Wait(Option<Instant>),
}
