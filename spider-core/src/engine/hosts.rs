//! The hosts the crawl has met: each one's slots, its robots.txt state, its gauges and
//! adaptive controller, and the queues that say which host is ready to go next.
//!
//! A host is ready when it is in one of the two round-robin ready queues; one whose slots
//! are all pausing waits on a timer instead, and one whose slots are all busy waits until
//! a request of it finishes. Its robots.txt moves `Unknown → Fetching → Known` (or through
//! `Redirected` hops): until it is known nothing else of the host goes out. Hosts whose
//! robots.txt is known go before hosts met but not asked yet (`fresh`): a host's pages
//! follow its robots.txt at once, not behind every host of a broad crawl's read-ahead,
//! each of those holding its connection and its state meanwhile.
//!
//! Every host is in a [`Group`] (`group.rs`), the hosts that share one politeness
//! budget: by registrable domain when met, and by server address once one answers; two
//! groups found on one server become one.
//!
//! A broad crawl meets most hosts once. A host found with nothing to do is forgotten once
//! it has stayed so for [`QUIET`] and knows nothing a host met anew would not (at rest,
//! no block in its window, its group at rest too): its place, its group's when it was the
//! last, and its robots.txt move to a bounded memory of robots.txt answers, so what the
//! crawl holds follows the hosts at work, not every host it has met. Met again, it is
//! made anew with the robots.txt kept (`hosts/forget.rs`; the groups are
//! `hosts/groups.rs`, robots.txt `hosts/robots_txt.rs`).

mod forget;
mod groups;
mod robots_txt;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use lru::LruCache;
use spider_settings::{Config, Politeness};
use tokio::time::Instant;

pub(super) use super::group::HostId;
use super::group::{registrable_domain, Group, GroupId};
use crate::observe::gauge::{Window, WINDOW};
use crate::request::host::HostKey;
use crate::request::Request;
use crate::schedule::frontier::RobotsMemo;
use crate::schedule::robots::RobotsRules;
use crate::schedule::throttle::adaptive::{Controller, Target};
use crate::schedule::throttle::{HostSlots, SlotState};

/// How long a host stays with nothing to do before it may be forgotten: long enough for
/// a page's links to bring it back, short enough that a crawl of a host a second keeps a
/// few of them.
const QUIET: Duration = Duration::from_secs(1);

/// The robots.txt answers of forgotten hosts kept, the most recently forgotten: met
/// again, a host fetches none.
const ROBOTS_KEPT: usize = 4096;

/// The span over which the limiters met count a client's rate.
const LIMITER_SECOND: Duration = Duration::from_secs(1);

/// Where a host's robots.txt stands.
pub(super) enum RobotsState {
    Unknown,
    /// robots.txt redirected: the next hop waits for admission like any request.
    Redirected(Box<Request>),
    Fetching,
    Known(RobotsRules),
}

/// One host: its slots and robots.txt, and what the gauges and adaptive mode know of it.
pub(super) struct Host {
    pub(super) key: HostKey,
    pub(super) slots: HostSlots,
    pub(super) robots: RobotsState,
    /// robots.txt fetches that failed, and the last backoff between them.
    pub(super) robots_attempts: u32,
    pub(super) last_robots_backoff: Duration,
    pub(super) crawl_delay: Duration,
    /// The group whose budget it shares.
    pub(super) group: GroupId,
    in_ready_queue: bool,
    /// Its answers over the last [`WINDOW`].
    pub(super) window: Window,
    /// Adaptive mode's controller of its slots and pace; none when a Crawl-delay rules.
    pub(super) controller: Option<Controller>,
    /// Good answers since the controller's last step, and whether every slot was busy.
    pub(super) good_this_step: usize,
    pub(super) saturated: bool,
    /// Requests bound to a lane that was busy when they came up (a wall's cookie or a
    /// redirect's is in that lane's jar), each sent again when its lane's request ends:
    /// two at once on one lane would meet its wall twice and set two cookies.
    pub(super) parked: Vec<Request>,
    /// A request of it has gone out: the crawl's clients have met it.
    pub(super) contacted: bool,
    /// Since when it has had nothing to do, when it has not (see [`Hosts::forget_quiet`]).
    quiet_since: Option<Instant>,
}

/// Every host met, and which is ready to go next.
pub(super) struct Hosts {
    /// By id; `None` where a forgotten host was, until a host met later takes its place.
    hosts: Vec<Option<Host>>,
    vacant: Vec<HostId>,
    ids: HashMap<HostKey, HostId>,
    groups: Vec<Group>,
    /// Places of groups left with no host, forgotten or merged into another.
    vacant_groups: Vec<GroupId>,
    /// The groups by registrable domain and by server address; a group merged into
    /// another leaves its entries pointing to that one.
    by_domain: HashMap<String, GroupId>,
    by_server: HashMap<SocketAddr, GroupId>,
    politeness: Politeness,
    /// The ready hosts whose robots.txt is known, and those whose is not yet.
    ready: VecDeque<HostId>,
    fresh: VecDeque<HostId>,
    /// Hosts whose slots are all pausing, by when the first pause ends.
    timers: BinaryHeap<Reverse<(Instant, HostId)>>,
    per_host: usize,
    obey_robots: bool,
    /// What a host's controller aims for: every host's in adaptive mode, and a host's
    /// that told the crawl to slow down in any mode.
    target: Target,
    adaptive: bool,
    /// Room to spell a link's host key in, for [`Hosts::known_disallowed`].
    scratch: String,
    /// Hosts found with nothing to do, by when, the earliest first.
    quiet: VecDeque<(Instant, HostId)>,
    /// What the robots.txt of hosts forgotten said.
    robots_kept: LruCache<HostKey, RobotsRules>,
}

impl Hosts {
    pub(super) fn new(config: &Config) -> Self {
        Hosts {
            hosts: Vec::new(),
            vacant: Vec::new(),
            ids: HashMap::new(),
            groups: Vec::new(),
            vacant_groups: Vec::new(),
            by_domain: HashMap::new(),
            by_server: HashMap::new(),
            politeness: config.politeness,
            ready: VecDeque::new(),
            fresh: VecDeque::new(),
            timers: BinaryHeap::new(),
            per_host: config.per_host,
            obey_robots: config.obey_robots,
            target: Target {
                block_rate: config.block_target,
                ceiling: config.per_host.min(config.concurrency),
                max_rps: config.rate.and_then(|r| r.per_second()).unwrap_or(f64::INFINITY),
            },
            adaptive: config.adaptive,
            scratch: String::new(),
            quiet: VecDeque::new(),
            robots_kept: LruCache::new(NonZeroUsize::new(ROBOTS_KEPT).unwrap_or(NonZeroUsize::MIN)),
        }
    }

    /// Adaptive mode's aim, when on.
    pub(super) fn adaptive(&self) -> Option<Target> {
        self.adaptive.then_some(self.target)
    }

    /// What the hosts' controllers aim for.
    pub(super) fn target(&self) -> Target {
        self.target
    }

    /// A host told the crawl to slow down (a 429, a limiter's 503): its group gets a
    /// controller from now on, which paces the group's hosts together from a slow start
    /// at half what the limiter let through over its last second, and raises their pace
    /// while they answer, so that the retries and the rest of their queues come back
    /// spread and under the server's limit instead of all at once when the pause ends.
    /// Whether it got one now. A host under a Crawl-delay keeps to that,
    /// and so does a host alone in its group with a controller of its own (adaptive mode).
    /// Hosts of one group that had their own let them go: one limiter counts them
    /// together, and controllers that each ramp up and cut on their own overshoot it
    /// together (HAProxy, which counts refused requests too, gave four such hosts 0.69 of
    /// its rate).
    pub(super) fn slow_down(&mut self, id: HostId, now: Instant) -> bool {
        let host = &self[id];
        let group = host.group;
        let alone = self.groups[group].members().len() < 2;
        if (host.controller.is_some() && alone) || !host.crawl_delay.is_zero() {
            return false;
        }
        // What the limiter let through over the second its rate counts (nginx's and
        // HAProxy's): the pace starts at half that.
        let second_ago = now.checked_sub(LIMITER_SECOND).unwrap_or(now);
        let members = self.groups[group].members();
        let got_through: usize =
            members.iter().map(|&member| self[member].window.good_since(second_ago)).sum();
        let got_through = got_through as f64 / LIMITER_SECOND.as_secs_f64();
        let paced = self.groups[group].slow_down(&self.target, self.per_host, got_through, now);
        if paced {
            self.let_group_pace(group, now);
        }
        paced
    }

    /// The hosts of `group`, paced by its controller, give up their own: their slots are
    /// the group's to limit.
    fn let_group_pace(&mut self, group: GroupId, now: Instant) {
        let per_host = self.per_host;
        for member in self.groups[group].members().iter().copied().collect::<Vec<_>>() {
            let host = &mut self[member];
            if host.controller.take().is_some() {
                host.slots.set_limit(per_host, now);
                host.slots.set_rate(None);
            }
        }
    }

    /// Whether a request of `id` may start at `now`, by its own slots and its group's; a
    /// host held back by its group's slots alone is made ready when one of them frees.
    /// A host held back by its own slots is marked saturated for its controller, one held
    /// back by its group's for the group's: adaptive mode raises the slots that ran out.
    pub(super) fn state(&mut self, id: HostId, now: Instant) -> SlotState {
        let Some(host) = self.hosts[id].as_mut() else { return SlotState::Busy };
        let group = &mut self.groups[host.group];
        match (host.slots.state(now), group.state(now)) {
            (SlotState::Busy, _) => {
                host.saturated = true;
                SlotState::Busy
            }
            (_, SlotState::Busy) => {
                group.hold_back(id);
                SlotState::Busy
            }
            (SlotState::PausedUntil(a), SlotState::PausedUntil(b)) => SlotState::PausedUntil(a.max(b)),
            (SlotState::PausedUntil(until), SlotState::Free)
            | (SlotState::Free, SlotState::PausedUntil(until)) => SlotState::PausedUntil(until),
            (SlotState::Free, SlotState::Free) => SlotState::Free,
        }
    }

    /// Until when a request riding on a slot already taken (a rendered page's own) is
    /// held back by its host's or its group's pause or pace.
    #[cfg(feature = "render")]
    pub(super) fn held_until(&self, id: HostId, now: Instant) -> Option<Instant> {
        let host = &self[id];
        host.slots.held_until(now).max(self.groups[host.group].held_until(now))
    }

    /// Start a request of `id` on `lane` if it is idle, else on the slot
    /// [`HostSlots::take`] picks; the lane taken.
    pub(super) fn take(&mut self, id: HostId, lane: Option<u32>, now: Instant) -> u32 {
        let host = self.hosts[id].as_mut().unwrap_or_else(|| forgotten(id));
        self.groups[host.group].take(now);
        host.slots.take(lane, now)
    }

    /// Start a request of `id` on a slot already taken: it counts against the pace alone.
    #[cfg(feature = "render")]
    pub(super) fn count_start(&mut self, id: HostId, now: Instant) {
        let host = self.hosts[id].as_mut().unwrap_or_else(|| forgotten(id));
        host.slots.count_start(now);
        self.groups[host.group].count_start(now);
    }

    /// The request of `id` on `lane` ended; its slot is ready again at `ready_at`, and
    /// the hosts its group held back are ready to try again.
    pub(super) fn release(&mut self, id: HostId, lane: u32, ready_at: Instant) {
        let host = self.hosts[id].as_mut().unwrap_or_else(|| forgotten(id));
        host.slots.release(lane, ready_at);
        for waiting in self.groups[host.group].release() {
            self.mark_ready(waiting);
        }
    }

    /// A 503 of `id`: whether it is the second or later in a row among its group's
    /// answers, which makes it a limiter's (the "a run at one host").
    pub(super) fn unavailable_again(&mut self, id: HostId) -> bool {
        let group = self[id].group;
        self.groups[group].unavailable_again()
    }

    /// A page of `id` came whole: a run of 503s at its group is over.
    pub(super) fn answered_well(&mut self, id: HostId) {
        let group = self[id].group;
        self.groups[group].answered_well();
    }

    /// Start no request of `id`'s group before `until` (a limiter's pause); a host with a
    /// controller of its own (adaptive mode) is paused alone, its controller pacing it
    /// after.
    pub(super) fn pause(&mut self, id: HostId, until: Instant) {
        let host = self.hosts[id].as_mut().unwrap_or_else(|| forgotten(id));
        if host.controller.is_some() {
            host.slots.pause_until(until);
            return;
        }
        self.groups[host.group].pause_until(until);
    }

    /// Whether robots.txt is fetched and obeyed.
    pub(super) fn obey_robots(&self) -> bool {
        self.obey_robots
    }

    pub(super) fn id_of(&self, key: &str) -> Option<HostId> {
        self.ids.get(key).copied()
    }

    /// Every host's id is below this.
    pub(super) fn id_bound(&self) -> usize {
        self.hosts.len()
    }

    /// The host of `id`, unless it was forgotten.
    pub(super) fn get_mut(&mut self, id: HostId) -> Option<&mut Host> {
        self.hosts.get_mut(id).and_then(Option::as_mut)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Host> {
        self.hosts.iter_mut().flatten()
    }

    /// Meet the host of `key` at `now`, with what its robots.txt said in an earlier run
    /// (`memo`, read for `token`): its slots, and in adaptive mode its controller.
    pub(super) fn add(
        &mut self,
        key: HostKey,
        now: Instant,
        memo: Option<RobotsMemo>,
        token: &str,
    ) -> HostId {
        let id = self.vacant.pop().unwrap_or_else(|| {
            self.hosts.push(None);
            self.hosts.len() - 1
        });
        let group = self.group_for(&key, id, now);
        let robots =
            if self.obey_robots { RobotsState::Unknown } else { RobotsState::Known(RobotsRules::AllowAll) };
        let mut host = Host {
            key: key.clone(),
            slots: HostSlots::new(self.per_host, now),
            robots,
            robots_attempts: 0,
            last_robots_backoff: Duration::ZERO,
            crawl_delay: Duration::ZERO,
            group,
            in_ready_queue: false,
            window: Window::new(WINDOW),
            controller: None,
            good_this_step: 0,
            saturated: false,
            parked: Vec::new(),
            contacted: false,
            quiet_since: None,
        };
        // A group a limiter paces already paces its new hosts too.
        if self.adaptive && self.groups[group].controller.is_none() {
            let controller = Controller::new(&self.target, now);
            host.slots.set_limit(controller.limit(), now);
            host.slots.set_rate(Some(controller.rps()));
            host.controller = Some(controller);
        }
        let kept = if memo.is_none() && self.obey_robots { self.robots_kept.pop(&key) } else { None };
        self.hosts[id] = Some(host);
        self.ids.insert(key, id);
        match memo {
            Some(RobotsMemo::Answer { status, body }) => {
                self.learn_robots(id, RobotsRules::from_answer(status, &body, token), now);
            }
            Some(RobotsMemo::Unavailable(reason)) => {
                self[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            None => {}
        }
        if let Some(rules) = kept {
            self.learn_robots(id, rules, now);
        }
        id
    }

    /// Put a host in the ready queue; whether it can really launch is checked when it
    /// comes out.
    pub(super) fn mark_ready(&mut self, id: HostId) {
        // A stale timer or group list may name a host forgotten since.
        let Some(host) = self.hosts[id].as_mut() else { return };
        host.quiet_since = None;
        if !host.in_ready_queue {
            host.in_ready_queue = true;
            match host.robots {
                RobotsState::Known(_) => self.ready.push_back(id),
                _ => self.fresh.push_back(id),
            }
        }
    }

    /// The next ready host, round-robin, those whose robots.txt is known first; it must
    /// be marked ready again to come out once more.
    pub(super) fn pop_ready(&mut self) -> Option<HostId> {
        let id = self.ready.pop_front().or_else(|| self.fresh.pop_front())?;
        self[id].in_ready_queue = false;
        Some(id)
    }

    /// Ready `id` again at `due`, when its first pause ends.
    pub(super) fn wake_at(&mut self, id: HostId, due: Instant) {
        self.timers.push(Reverse((due, id)));
    }

    /// Ready the hosts whose pauses ended by `now`.
    pub(super) fn wake_due(&mut self, now: Instant) {
        while let Some(&Reverse((due, id))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            self.mark_ready(id);
        }
    }

    /// When the next pause ends.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((due, _))| *due)
    }
}

impl std::ops::Index<HostId> for Hosts {
    type Output = Host;

    fn index(&self, id: HostId) -> &Host {
        self.hosts[id].as_ref().unwrap_or_else(|| forgotten(id))
    }
}

impl std::ops::IndexMut<HostId> for Hosts {
    fn index_mut(&mut self, id: HostId) -> &mut Host {
        self.hosts[id].as_mut().unwrap_or_else(|| forgotten(id))
    }
}

/// A host named after it was forgotten: the dispatcher forgets none it holds work of.
#[track_caller]
fn forgotten(id: HostId) -> ! {
    panic!("host {id} used after it was forgotten")
}
