//! The hosts the crawl has met: each one's slots, its robots.txt state, its gauges and
//! adaptive controller, and the queues that say which host is ready to go next.
//!
//! A host is ready when it is in the round-robin `ready` queue; one whose slots are all
//! pausing waits on a timer instead, and one whose slots are all busy waits until a request
//! of it finishes. Its robots.txt moves `Unknown → Fetching → Known` (or through
//! `Redirected` hops): until it is known nothing else of the host goes out.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use spider_settings::Config;
use tokio::time::Instant;
use url::Url;

use crate::observe::gauge::{Window, WINDOW};
use crate::request::host::{write_host_key, HostKey};
use crate::request::Request;
use crate::schedule::frontier::RobotsMemo;
use crate::schedule::robots::{self, RobotsRules};
use crate::schedule::throttle::adaptive::{Controller, Target};
use crate::schedule::throttle::HostSlots;

/// A host's place in [`Hosts`].
pub(super) type HostId = usize;

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
}

/// Every host met, and which is ready to go next.
pub(super) struct Hosts {
    hosts: Vec<Host>,
    ids: HashMap<HostKey, HostId>,
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
}

impl Hosts {
    pub(super) fn new(config: &Config) -> Self {
        Hosts {
            hosts: Vec::new(),
            ids: HashMap::new(),
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
    /// it gets a controller from now on, which paces it from a slow start and raises its
    /// pace while it answers, so that its retries and the rest of its queue come back
    /// spread and under its limit instead of all at once when its pause ends. Whether it
    /// got one now; a host under a Crawl-delay keeps its one slow slot.
    pub(super) fn slow_down(&mut self, id: HostId, now: Instant) -> bool {
        let target = self.target;
        let host = &mut self.hosts[id];
        if host.controller.is_some() || !host.crawl_delay.is_zero() {
            return false;
        }
        let controller = Controller::new(&target, now);
        host.slots.set_limit(controller.limit(), now);
        host.slots.set_rate(Some(controller.rps()));
        host.controller = Some(controller);
        true
    }

    /// Whether robots.txt is fetched and obeyed.
    pub(super) fn obey_robots(&self) -> bool {
        self.obey_robots
    }

    pub(super) fn id_of(&self, key: &str) -> Option<HostId> {
        self.ids.get(key).copied()
    }

    pub(super) fn len(&self) -> usize {
        self.hosts.len()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Host> {
        self.hosts.iter_mut()
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
        let id = self.hosts.len();
        let robots =
            if self.obey_robots { RobotsState::Unknown } else { RobotsState::Known(RobotsRules::AllowAll) };
        let mut host = Host {
            key: key.clone(),
            slots: HostSlots::new(self.per_host, now),
            robots,
            robots_attempts: 0,
            last_robots_backoff: Duration::ZERO,
            crawl_delay: Duration::ZERO,
            in_ready_queue: false,
            window: Window::new(WINDOW),
            controller: None,
            good_this_step: 0,
            saturated: false,
            parked: Vec::new(),
        };
        if self.adaptive {
            let controller = Controller::new(&self.target, now);
            host.slots.set_limit(controller.limit(), now);
            host.slots.set_rate(Some(controller.rps()));
            host.controller = Some(controller);
        }
        self.hosts.push(host);
        self.ids.insert(key, id);
        match memo {
            Some(RobotsMemo::Answer { status, body }) => {
                self.learn_robots(id, RobotsRules::from_answer(status, &body, token), now);
            }
            Some(RobotsMemo::Unavailable(reason)) => {
                self.hosts[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            None => {}
        }
        id
    }

    /// Put a host in the ready queue; whether it can really launch is checked when it
    /// comes out.
    pub(super) fn mark_ready(&mut self, id: HostId) {
        let host = &mut self.hosts[id];
        if !host.in_ready_queue {
            host.in_ready_queue = true;
            self.ready.push_back(id);
        }
    }

    /// The next host of the ready queue, round-robin; it must be marked ready again to
    /// come out once more.
    pub(super) fn pop_ready(&mut self) -> Option<HostId> {
        let id = self.ready.pop_front()?;
        self.hosts[id].in_ready_queue = false;
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
        let host = &mut self.hosts[id];
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
        let host = &mut self.hosts[id];
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
    pub(super) fn known_disallowed(&mut self, url: &Url) -> bool {
        if !write_host_key(url, &mut self.scratch) {
            return false;
        }
        let Some(id) = self.id_of(&self.scratch) else { return false };
        matches!(&self.hosts[id].robots, RobotsState::Known(rules @ RobotsRules::Rules(_)) if !rules.allows(url))
    }
}

impl std::ops::Index<HostId> for Hosts {
    type Output = Host;

    fn index(&self, id: HostId) -> &Host {
        &self.hosts[id]
    }
}

impl std::ops::IndexMut<HostId> for Hosts {
    fn index_mut(&mut self, id: HostId) -> &mut Host {
        &mut self.hosts[id]
    }
}
