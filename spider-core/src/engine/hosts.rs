//! The hosts the crawl has met: each one's slots, its robots.txt state, its gauges and
//! adaptive controller, and the queues that say which host is ready to go next.
//!
//! A host is ready when it is in the round-robin `ready` queue; one whose slots are all
//! pausing waits on a timer instead, and one whose slots are all busy waits until a request
//! of it finishes. Its robots.txt moves `Unknown → Fetching → Known` (or through
//! `Redirected` hops): until it is known nothing else of the host goes out.
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
//! made anew with the robots.txt kept.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use lru::LruCache;
use spider_settings::{Config, Politeness};
use tokio::time::Instant;
use url::Url;

pub(super) use super::group::HostId;
use super::group::{registrable_domain, Group, GroupId};
use crate::observe::gauge::{Window, WINDOW};
use crate::request::host::{write_host_key, HostKey};
use crate::request::Request;
use crate::schedule::frontier::RobotsMemo;
use crate::schedule::robots::{self, RobotsRules};
use crate::schedule::throttle::adaptive::{Controller, Target};
use crate::schedule::throttle::{HostSlots, SlotState};

/// How long a host stays with nothing to do before it may be forgotten: long enough for
/// a page's links to bring it back, short enough that a crawl of a host a second keeps a
/// few of them.
const QUIET: Duration = Duration::from_secs(1);

/// The robots.txt answers of forgotten hosts kept, the most recently forgotten: met
/// again, a host fetches none.
const ROBOTS_KEPT: usize = 4096;

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
    ready: VecDeque<HostId>,
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

    /// A host told the crawl to slow down (a 429, a limiter's 503): outside adaptive mode
    /// its group gets a controller from now on, which paces the group's hosts together
    /// from a slow start and raises their pace while they answer, so that the retries and
    /// the rest of their queues come back spread and under the server's limit instead of
    /// all at once when the pause ends. Whether it got one now; a host with a controller
    /// of its own (adaptive mode), or under a Crawl-delay, keeps to that.
    pub(super) fn slow_down(&mut self, id: HostId, now: Instant) -> bool {
        let host = &self[id];
        if host.controller.is_some() || !host.crawl_delay.is_zero() {
            return false;
        }
        let group = host.group;
        self.groups[group].slow_down(&self.target, self.per_host, now)
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

    /// `id` answered from `server` (directly, not through a proxy): under `politeness =
    /// "server"` its group and the group of that address's hosts become one.
    pub(super) fn learn_server(&mut self, id: HostId, server: SocketAddr) {
        if self.politeness != Politeness::Server {
            return;
        }
        let mine = self[id].group;
        match self.by_server.get(&server).copied() {
            Some(theirs) if theirs != mine => self.merge(theirs, mine),
            Some(_) => {}
            None => {
                self.by_server.insert(server, mine);
                self.groups[mine].add_server(server);
            }
        }
    }

    /// Fold group `from` into `into`: its hosts, its requests in flight, the later of
    /// the two pauses, and the slower controller.
    fn merge(&mut self, from: GroupId, into: GroupId) {
        let gone = std::mem::replace(&mut self.groups[from], Group::new(0, Instant::now()));
        self.vacant_groups.push(from);
        for &member in gone.members() {
            self[member].group = into;
        }
        let (domains, servers) = gone.found_at();
        for domain in domains {
            self.by_domain.insert(domain.clone(), into);
        }
        for server in servers {
            self.by_server.insert(*server, into);
        }
        let hosts = self.groups[into].members().len() + gone.members().len();
        tracing::debug!(target: "spiderling", hosts, "hosts found on one server share one politeness budget");
        self.groups[into].absorb(gone, self.per_host);
    }

    /// The group of `id`.
    pub(super) fn group(&self, id: HostId) -> &Group {
        &self.groups[self[id].group]
    }

    /// The group of `id`, by its place.
    pub(super) fn group_of(&self, id: HostId) -> GroupId {
        self[id].group
    }

    pub(super) fn groups_len(&self) -> usize {
        self.groups.len()
    }

    pub(super) fn group_mut(&mut self, group: GroupId) -> &mut Group {
        &mut self.groups[group]
    }

    /// Give `group` the limits its controller decided (paused until `tripped`, when its
    /// breaker opened), and make its hosts ready to take them.
    pub(super) fn group_changed(&mut self, group: GroupId, tripped: Option<Instant>) {
        let per_host = self.per_host;
        let changed = &mut self.groups[group];
        changed.apply(per_host);
        if let Some(until) = tripped {
            changed.pause_until(until);
        }
        for member in changed.members().iter().copied().collect::<Vec<_>>() {
            self.mark_ready(member);
        }
    }

    /// The first host's key of `group`, to name it in logs.
    pub(super) fn group_name(&self, group: GroupId) -> Option<&HostKey> {
        self.groups[group].members().first().map(|&id| &self[id].key)
    }

    /// The group a host of `key` joins when met: its registrable domain's, unless each
    /// host is its own.
    fn group_for(&mut self, key: &str, id: HostId, now: Instant) -> GroupId {
        let domain = match self.politeness {
            Politeness::Host => None,
            _ => registrable_domain(key),
        };
        let existing = domain.as_ref().and_then(|domain| self.by_domain.get(domain).copied());
        let group = existing.unwrap_or_else(|| match self.vacant_groups.pop() {
            Some(place) => {
                self.groups[place] = Group::new(self.per_host, now);
                place
            }
            None => {
                self.groups.push(Group::new(self.per_host, now));
                self.groups.len() - 1
            }
        });
        let new_domain = domain.filter(|_| existing.is_none());
        if let Some(domain) = &new_domain {
            self.by_domain.insert(domain.clone(), group);
        }
        self.groups[group].join(id, new_domain);
        group
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
        if self.adaptive {
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

    /// `id` was found with nothing to do at `now`: it is forgotten if it stays so (see
    /// [`Hosts::forget_quiet`]).
    pub(super) fn note_quiet(&mut self, id: HostId, now: Instant) {
        let Some(host) = self.get_mut(id) else { return };
        if host.quiet_since.is_none() {
            host.quiet_since = Some(now);
            self.quiet.push_back((now, id));
        }
    }

    /// Forget the hosts with nothing to do for [`QUIET`] by `now` that know nothing a host
    /// met anew would not, but those `held` says the dispatcher still has work of (a
    /// request in hand, a browser's asks): the keys of those forgotten. One not at rest
    /// yet is looked at again after another [`QUIET`].
    pub(super) fn forget_quiet(&mut self, now: Instant, held: impl Fn(HostId) -> bool) -> Vec<HostKey> {
        let mut forgotten = Vec::new();
        let mut later = Vec::new();
        while let Some(&(since, id)) = self.quiet.front() {
            if since + QUIET > now {
                break;
            }
            self.quiet.pop_front();
            let Some(host) = self.hosts[id].as_mut() else { continue };
            // Given work since, or quiet again later with an entry of its own.
            if host.quiet_since != Some(since) {
                continue;
            }
            host.window.expire(now);
            let at_rest = host.slots.at_rest(now)
                && !host.in_ready_queue
                && host.parked.is_empty()
                && host.window.blocked() == 0
                && matches!(host.robots, RobotsState::Known(_))
                && self.groups[host.group].at_rest(now)
                && !held(id);
            if at_rest {
                forgotten.push(self.forget(id));
            } else {
                host.quiet_since = Some(now);
                later.push((now, id));
            }
        }
        self.quiet.extend(later);
        forgotten
    }

    /// Let go of `id`: its place, its group's when it was the last there, and its
    /// robots.txt to [`Hosts::robots_kept`].
    fn forget(&mut self, id: HostId) -> HostKey {
        let host = self.hosts[id].take().unwrap_or_else(|| forgotten(id));
        self.ids.remove(&host.key);
        self.vacant.push(id);
        if let RobotsState::Known(rules) = host.robots {
            if self.obey_robots {
                self.robots_kept.put(host.key.clone(), rules);
            }
        }
        let group = host.group;
        if self.groups[group].leave(id) {
            let gone = std::mem::replace(&mut self.groups[group], Group::new(0, Instant::now()));
            let (domains, servers) = gone.found_at();
            for domain in domains {
                if self.by_domain.get(domain) == Some(&group) {
                    self.by_domain.remove(domain);
                }
            }
            for server in servers {
                if self.by_server.get(server) == Some(&group) {
                    self.by_server.remove(server);
                }
            }
            self.vacant_groups.push(group);
        }
        host.key
    }

    /// Put a host in the ready queue; whether it can really launch is checked when it
    /// comes out.
    pub(super) fn mark_ready(&mut self, id: HostId) {
        // A stale timer or group list may name a host forgotten since.
        let Some(host) = self.hosts[id].as_mut() else { return };
        host.quiet_since = None;
        if !host.in_ready_queue {
            host.in_ready_queue = true;
            self.ready.push_back(id);
        }
    }

    /// The next host of the ready queue, round-robin; it must be marked ready again to
    /// come out once more.
    pub(super) fn pop_ready(&mut self) -> Option<HostId> {
        let id = self.ready.pop_front()?;
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

    /// Obey a host's robots.txt, its Crawl-delay included.
    pub(super) fn learn_robots(&mut self, id: HostId, rules: RobotsRules, now: Instant) {
        let host = &mut self[id];
        if let Some(delay) = rules.crawl_delay() {
            tracing::info!(target: "spiderling", host = %host.key, ?delay, "robots.txt sets a Crawl-delay: one slot, paused at least that long");
            host.crawl_delay = delay;
            host.controller = None;
            host.slots.set_rate(None);
            host.slots.set_limit(1, now);
            host.slots.pause_until(now + delay);
        }
        host.robots = RobotsState::Known(rules);
    }

    /// The robots.txt request `id` must send before anything else of it goes: its first
    /// fetch, or a redirect's next hop, after which its robots.txt is being fetched.
    /// `None` when none is due; a host whose robots.txt has no URL is allowed everything.
    pub(super) fn robots_request(&mut self, id: HostId) -> Option<Request> {
        let host = &mut self[id];
        match std::mem::replace(&mut host.robots, RobotsState::Fetching) {
            RobotsState::Unknown => match Url::parse(&host.key).ok().and_then(|url| robots::robots_url(&url))
            {
                Some(url) => Some(Request::new(url)),
                None => {
                    host.robots = RobotsState::Known(RobotsRules::AllowAll);
                    None
                }
            },
            RobotsState::Redirected(next) => Some(*next),
            other => {
                host.robots = other;
                None
            }
        }
    }

    /// Whether the robots.txt of `url`'s host is known here and disallows it.
    /// A forgotten host's robots.txt, still kept, answers too.
    pub(super) fn known_disallowed(&mut self, url: &Url) -> bool {
        if !write_host_key(url, &mut self.scratch) {
            return false;
        }
        let rules = match self.id_of(&self.scratch) {
            Some(id) => match &self[id].robots {
                RobotsState::Known(rules) => Some(rules),
                _ => None,
            },
            None => self.robots_kept.peek(self.scratch.as_str()),
        };
        matches!(rules, Some(rules @ RobotsRules::Rules(_)) if !rules.allows(url))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registrable_domain_is_the_public_suffix_lists_with_scheme_and_port() {
        let domain = |key: &str| registrable_domain(key);
        assert_eq!(domain("https://a.example.co.uk:443").as_deref(), Some("https://example.co.uk:443"));
        assert_eq!(domain("https://b.example.co.uk:443").as_deref(), Some("https://example.co.uk:443"));
        assert_eq!(domain("http://a.shop.localhost:8080").as_deref(), Some("http://shop.localhost:8080"));
        assert_eq!(domain("http://127.0.0.1:8080").as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(domain("https://user.github.io:443").as_deref(), Some("https://user.github.io:443"));
    }

    fn crawl(politeness: Politeness, per_host: usize) -> Hosts {
        Hosts::new(&Config::new("groups").per_host(per_host).politeness(politeness).obey_robots(false))
    }

    fn meet(hosts: &mut Hosts, key: &str, now: Instant) -> HostId {
        hosts.add(HostKey::from(key), now, None, "groups")
    }

    fn allowed_but_private(hosts: &mut Hosts, id: HostId, now: Instant) {
        let rules = RobotsRules::from_answer(200, b"User-agent: *\nDisallow: /private/\n", "groups");
        hosts.learn_robots(id, rules, now);
    }

    fn private(url: &str) -> Url {
        Url::parse(url).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_host_quiet_and_at_rest_is_forgotten_and_met_again_with_its_robots_txt() {
        let now = Instant::now();
        let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Host));
        let a = meet(&mut hosts, "https://a.example:443", now);
        allowed_but_private(&mut hosts, a, now);
        let lane = hosts.take(a, None, now);
        hosts.release(a, lane, now + QUIET + QUIET / 2);
        hosts.note_quiet(a, now);
        assert!(hosts.forget_quiet(now + QUIET / 2, |_| false).is_empty(), "quiet for half of QUIET");
        assert!(hosts.forget_quiet(now + QUIET, |_| false).is_empty(), "its slot still rests");
        let forgotten = hosts.forget_quiet(now + 2 * QUIET, |_| false);
        assert_eq!(forgotten, [HostKey::from("https://a.example:443")]);
        assert_eq!(hosts.id_of("https://a.example:443"), None);
        assert_eq!(hosts.by_domain.len(), 0, "its group went with it");
        assert!(hosts.known_disallowed(&private("https://a.example/private/y")), "its robots.txt kept");
        // Met again, in the place it left, knowing its robots.txt: nothing to fetch first.
        let later = now + 3 * QUIET;
        let b = meet(&mut hosts, "https://b.example:443", later);
        let again = meet(&mut hosts, "https://a.example:443", later);
        assert_eq!(b, a, "the first host met takes the place left");
        assert_eq!(hosts.id_bound(), 2);
        assert!(hosts.robots_request(again).is_none());
        assert!(hosts.known_disallowed(&private("https://a.example/private/x")));
        assert!(!hosts.known_disallowed(&private("https://a.example/public")));
    }

    #[test]
    fn a_host_is_kept_while_it_knows_what_a_host_met_anew_would_not() {
        let now = Instant::now();
        let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Domain));
        let blocked = meet(&mut hosts, "https://blocked.example:443", now);
        let limited = meet(&mut hosts, "https://a.limited.example:443", now);
        let sibling = meet(&mut hosts, "https://b.limited.example:443", now);
        let held = meet(&mut hosts, "https://held.example:443", now);
        let fetching = meet(&mut hosts, "https://fetching.example:443", now);
        for id in [blocked, limited, sibling, held] {
            allowed_but_private(&mut hosts, id, now);
        }
        assert!(hosts.robots_request(fetching).is_some());
        hosts[blocked].window.record(now, true);
        assert!(hosts.slow_down(limited, now), "a limiter refused its domain");
        for id in [blocked, limited, sibling, held, fetching] {
            hosts.note_quiet(id, now);
        }
        let forgotten = hosts.forget_quiet(now + QUIET, |id| id == held);
        assert!(forgotten.is_empty(), "{forgotten:?}");
        for id in [blocked, limited, sibling, held, fetching] {
            assert!(hosts.id_of(&hosts[id].key.clone()).is_some());
        }
        // Looked at again a QUIET later: the block has left the window (WINDOW), the
        // dispatcher let go of the one it held.
        let forgotten = hosts.forget_quiet(now + WINDOW + QUIET, |_| false);
        assert_eq!(forgotten.len(), 2, "{forgotten:?}");
        assert_eq!(hosts.id_of("https://blocked.example:443"), None);
        assert_eq!(hosts.id_of("https://held.example:443"), None);
        assert!(hosts.id_of("https://a.limited.example:443").is_some(), "its domain is paced");
    }

    #[test]
    fn a_group_lasts_while_one_of_its_hosts_does() {
        let now = Instant::now();
        let mut hosts = Hosts::new(&Config::new("groups").per_host(1).politeness(Politeness::Domain));
        let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
        let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
        let group = hosts.group_of(a);
        for id in [a, b] {
            allowed_but_private(&mut hosts, id, now);
        }
        hosts.note_quiet(a, now);
        assert_eq!(hosts.forget_quiet(now + QUIET, |_| false).len(), 1);
        assert_eq!(hosts.group_of(b), group);
        assert_eq!(hosts.group(b).members().len(), 1);
        let c = meet(&mut hosts, "https://c.example.co.uk:443", now + QUIET);
        assert_eq!(hosts.group_of(c), group, "found by its domain");
        allowed_but_private(&mut hosts, c, now + QUIET);
        hosts.note_quiet(b, now + QUIET);
        hosts.note_quiet(c, now + QUIET);
        assert_eq!(hosts.forget_quiet(now + 2 * QUIET, |_| false).len(), 2);
        assert!(hosts.by_domain.is_empty());
        let other = meet(&mut hosts, "https://example.org:443", now + 2 * QUIET);
        assert_eq!(hosts.group_of(other), group, "the group's place is taken again");
        assert_eq!(hosts.groups_len(), 1);
    }

    #[test]
    fn the_hosts_of_a_registrable_domain_share_its_slots_and_wake_when_one_frees() {
        let now = Instant::now();
        let mut hosts = crawl(Politeness::Domain, 2);
        let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
        let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
        let other = meet(&mut hosts, "https://example.org:443", now);
        let lane = hosts.take(a, None, now);
        hosts.take(b, None, now);
        assert_eq!(hosts.state(a, now), SlotState::Busy, "a has a slot left, the domain none");
        assert_eq!(hosts.state(b, now), SlotState::Busy);
        assert_eq!(hosts.state(other, now), SlotState::Free, "another domain is not held");
        while hosts.pop_ready().is_some() {}
        hosts.release(a, lane, now);
        let woken: Vec<HostId> = std::iter::from_fn(|| hosts.pop_ready()).collect();
        assert_eq!(woken, [a, b], "the hosts the domain held back are ready again");
        assert_eq!(hosts.state(b, now), SlotState::Free);
    }

    #[test]
    fn a_host_held_back_by_its_groups_slots_is_not_taken_for_short_of_its_own() {
        let now = Instant::now();
        let mut hosts = crawl(Politeness::Domain, 2);
        let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
        let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
        hosts.take(a, None, now);
        hosts.take(a, None, now);
        assert_eq!(hosts.state(b, now), SlotState::Busy);
        assert!(!hosts[b].saturated, "b has both its slots free: the domain's ran out");
        assert!(hosts.group(b).saturated);
        assert_eq!(hosts.state(a, now), SlotState::Busy);
        assert!(hosts[a].saturated, "a used both of its own");
    }

    #[test]
    fn each_host_alone_shares_nothing() {
        let now = Instant::now();
        let mut hosts = crawl(Politeness::Host, 1);
        let a = meet(&mut hosts, "https://a.example.co.uk:443", now);
        let b = meet(&mut hosts, "https://b.example.co.uk:443", now);
        hosts.take(a, None, now);
        assert_eq!(hosts.state(b, now), SlotState::Free);
    }

    #[test]
    fn hosts_found_on_one_server_share_its_budget_and_a_limiters_pace() {
        let now = Instant::now();
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap_or_else(|e| panic!("{e}"));
        let mut hosts = crawl(Politeness::Server, 8);
        let a = meet(&mut hosts, "http://site-1.localhost:8080", now);
        let b = meet(&mut hosts, "http://site-2.localhost:8080", now);
        assert_ne!(hosts.group_of(a), hosts.group_of(b), "two registrable domains");
        hosts.learn_server(a, server);
        hosts.learn_server(b, server);
        assert_eq!(hosts.group_of(a), hosts.group_of(b), "one server");
        // A limiter's refusal at one paces both, from the controller's slow start.
        assert!(hosts.slow_down(a, now));
        assert!(!hosts.slow_down(b, now), "one controller for the two");
        hosts.take(a, None, now);
        let SlotState::PausedUntil(next) = hosts.state(b, now) else { panic!("b is paced too") };
        assert_eq!(next - now, Duration::from_millis(250), "4 requests a second between them");
        // Under `domain` the same answers join nothing.
        let mut apart = crawl(Politeness::Domain, 8);
        let (a, b) = (
            meet(&mut apart, "http://site-1.localhost:8080", now),
            meet(&mut apart, "http://site-2.localhost:8080", now),
        );
        apart.learn_server(a, server);
        apart.learn_server(b, server);
        assert_ne!(apart.group_of(a), apart.group_of(b));
    }
}
