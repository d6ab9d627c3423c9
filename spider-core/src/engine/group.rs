//! A politeness budget that hosts share (`politeness`): by default the hosts of one
//! registrable domain (the public suffix list) and those found answering from one server
//! address, which a server's limit counts together (nginx's `limit_req` per client
//! address counts every name it serves). Its hosts have `per_host` requests in flight
//! between them, one limiter's pause, and once a limiter told one of them to slow down,
//! one controller of their pace. `hosts/groups.rs` says which group a host is in.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use crate::observe::gauge::{Window, WINDOW};
use crate::schedule::throttle::adaptive::{Controller, Target};
use crate::schedule::throttle::{Pace, SlotState};

/// A host's place in `Hosts`.
pub(super) type HostId = usize;

/// A group's place in `Hosts`.
pub(super) type GroupId = usize;

/// How long after its first refusal a limiter's answers are still the burst's (see
/// [`Hosts::slow_down`]): the second over which nginx's and HAProxy's rates count, and
/// half as much again for the requests in flight at the refusal, which HAProxy counts
/// too (at exactly a second, one refusal in four runs came from its memory and cut the
/// slow start to half its first pace).
const LIMITER_MEMORY: Duration = Duration::from_millis(1500);

/// Hosts that share one politeness budget (see the module).
pub(super) struct Group {
    /// Requests of its hosts in flight, and how many may be: `per_host`, or fewer when
    /// its controller says so.
    busy: usize,
    limit: usize,
    /// A limiter's pause (a 429, a Retry-After) and the controller's pace, over every
    /// host of the group.
    pace: Pace,
    /// Hosts held back by the group's slots alone, made ready when one frees.
    waiting: Vec<HostId>,
    /// Ordered, so that the first names the group in logs while hosts come and go.
    members: BTreeSet<HostId>,
    /// Where it is found: its registrable domain and its server addresses.
    domains: Vec<String>,
    servers: Vec<SocketAddr>,
    /// The controller a limiter's refusal gives it (in adaptive mode, when it has more
    /// than one host), with the answers it steps on: those to requests sent once the
    /// limiter's memory of the burst is over (the controller's `judged_from`), as the ones
    /// sent before are no verdict on its pace.
    pub(super) controller: Option<Controller>,
    pub(super) window: Window,
    pub(super) good_this_step: usize,
    pub(super) saturated: bool,
    /// 503s without a page between them, which a limiter answers and a server in trouble
    /// seldom does in a row.
    unavailable_in_a_row: u32,
}

impl Group {
    pub(super) fn new(limit: usize, now: Instant) -> Self {
        Group {
            busy: 0,
            limit,
            pace: Pace::new(now),
            waiting: Vec::new(),
            members: BTreeSet::new(),
            domains: Vec::new(),
            servers: Vec::new(),
            controller: None,
            window: Window::new(WINDOW),
            good_this_step: 0,
            saturated: false,
            unavailable_in_a_row: 0,
        }
    }

    /// An answer to a request launched at `launched`, for its controller's window.
    pub(super) fn answered(&mut self, now: Instant, launched: Instant, blocked: bool) {
        if self.controller.as_ref().is_some_and(|c| launched >= c.judged_from()) {
            self.window.record(now, blocked);
            self.good_this_step += usize::from(!blocked);
        }
    }

    /// Whether one more request of its hosts may start at `now`.
    pub(super) fn state(&self, now: Instant) -> SlotState {
        let paused = self.pace.held_until(now);
        if self.busy >= self.limit {
            SlotState::Busy
        } else if let Some(until) = paused {
            SlotState::PausedUntil(until)
        } else {
            SlotState::Free
        }
    }

    /// Until when a limiter's pause or the pace holds its starts back.
    #[cfg(feature = "render")]
    pub(super) fn held_until(&self, now: Instant) -> Option<Instant> {
        self.pace.held_until(now)
    }

    /// A request of its hosts started at `now`: the next waits for the pace.
    pub(super) fn count_start(&mut self, now: Instant) {
        self.pace.count_start(now);
    }

    /// The controller's limits.
    pub(super) fn apply(&mut self, per_host: usize) {
        if let Some(controller) = &self.controller {
            self.limit = controller.limit().min(per_host);
            self.pace.set_rate(Some(controller.rps()));
        }
    }

    /// Its hosts, for logs: the first one's key and how many more.
    pub(super) fn members(&self) -> &BTreeSet<HostId> {
        &self.members
    }

    /// Whether nothing of it is in flight or paused and no limiter told it to slow down:
    /// it knows nothing a group made anew would not, so its hosts may be forgotten.
    pub(super) fn at_rest(&self, now: Instant) -> bool {
        self.busy == 0
            && self.controller.is_none()
            && self.unavailable_in_a_row == 0
            && self.pace.held_until(now).is_none()
    }

    pub(super) fn busy(&self) -> usize {
        self.busy
    }

    /// A limiter refused one of its hosts at `now`, having let `got_through` requests a
    /// second through: a controller paces them from now on, from half that, not taking
    /// refusals of what goes out in the first [`LIMITER_MEMORY`] as a verdict. `false`
    /// when it has one.
    pub(super) fn slow_down(
        &mut self,
        target: &Target,
        per_host: usize,
        got_through: f64,
        now: Instant,
    ) -> bool {
        if self.controller.is_some() {
            return false;
        }
        // A limiter still counts the burst it refused for a while after (nginx's bucket
        // drains, HAProxy's rate counts the refused requests over its second): refusals
        // of what goes out then are the burst's, no verdict on the pace.
        self.controller = Some(Controller::refused_at(target, now, now + LIMITER_MEMORY, got_through));
        (self.window, self.good_this_step) = (Window::new(WINDOW), 0);
        self.apply(per_host);
        true
    }

    /// Host `id`, whose own slots are free, is held back by the group's: it is made ready
    /// when one of them frees (see [`Group::release`]).
    pub(super) fn hold_back(&mut self, id: HostId) {
        self.saturated = true;
        // Not searched for first: a group may hold thousands of hosts, and a host comes
        // here only when it leaves the ready queue, which holds it once; making it ready
        // twice is once.
        self.waiting.push(id);
    }

    pub(super) fn take(&mut self, now: Instant) {
        self.busy += 1;
        self.count_start(now);
    }

    /// A request of its hosts ended: the hosts it held back, to be made ready.
    pub(super) fn release(&mut self) -> Vec<HostId> {
        self.busy = self.busy.saturating_sub(1);
        std::mem::take(&mut self.waiting)
    }

    /// No host of the group starts before `until`.
    pub(super) fn pause_until(&mut self, until: Instant) {
        self.pace.pause_until(until);
    }

    /// A 503 of one of its hosts: whether it is the second or later in a row, which makes
    /// it a limiter's.
    pub(super) fn unavailable_again(&mut self) -> bool {
        self.unavailable_in_a_row += 1;
        self.unavailable_in_a_row >= 2
    }

    /// A page of one of its hosts came whole: a run of 503s is over.
    pub(super) fn answered_well(&mut self) {
        self.unavailable_in_a_row = 0;
    }

    /// Host `id` joins it, found by `domain` when it has one.
    pub(super) fn join(&mut self, id: HostId, domain: Option<String>) {
        self.members.insert(id);
        self.domains.extend(domain);
    }

    /// Host `id` leaves it, forgotten: whether it has no hosts left.
    pub(super) fn leave(&mut self, id: HostId) -> bool {
        self.members.remove(&id);
        self.waiting.retain(|&waiting| waiting != id);
        self.members.is_empty()
    }

    pub(super) fn add_server(&mut self, server: SocketAddr) {
        self.servers.push(server);
    }

    /// Where it is found: its registrable domains and its server addresses.
    pub(super) fn found_at(&self) -> (&[String], &[SocketAddr]) {
        (&self.domains, &self.servers)
    }

    /// Take in `gone`, another group found on the same server: its hosts, its requests in
    /// flight, the later of the two pauses, and the slower controller with the answers it
    /// steps on.
    pub(super) fn absorb(&mut self, gone: Group, per_host: usize) {
        self.busy += gone.busy;
        self.pace.join(&gone.pace);
        self.members.extend(gone.members);
        self.domains.extend(gone.domains);
        self.servers.extend(gone.servers);
        self.waiting.extend(gone.waiting);
        let slower = match (&self.controller, &gone.controller) {
            (Some(kept), Some(other)) => other.rps() < kept.rps(),
            (None, Some(_)) => true,
            _ => false,
        };
        if slower {
            (self.controller, self.window) = (gone.controller, gone.window);
            self.good_this_step = gone.good_this_step;
        }
        self.apply(per_host);
    }
}

/// The registrable domain of a host key's host (`scheme://host:port`), by the public
/// suffix list, with its scheme and port: `https://example.co.uk:443` for
/// `https://a.example.co.uk:443`. An address, or a name the list knows no suffix of, is
/// its own.
pub(super) fn registrable_domain(key: &str) -> Option<String> {
    let url = Url::parse(key).ok()?;
    let port = url.port_or_known_default()?;
    let domain = match url.host()? {
        url::Host::Domain(name) => psl::domain_str(name).unwrap_or(name).to_owned(),
        address => address.to_string(),
    };
    Some(format!("{}://{domain}:{port}", url.scheme()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Target = Target { block_rate: 0.05, ceiling: 8, max_rps: 100.0 };

    #[tokio::test(start_paused = true)]
    async fn its_slots_are_shared_and_a_freed_one_wakes_the_hosts_it_held_back() {
        let now = Instant::now();
        let mut group = Group::new(2, now);
        group.take(now);
        group.take(now);
        assert_eq!(group.state(now), SlotState::Busy);
        group.hold_back(3);
        group.hold_back(4);
        assert_eq!(group.release(), vec![3, 4]);
        assert_eq!(group.state(now), SlotState::Free);
        assert!(group.release().is_empty(), "a host is woken once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_503_is_a_limiters_from_the_second_in_a_row_and_a_page_ends_the_run() {
        let mut group = Group::new(4, Instant::now());
        assert!(!group.unavailable_again());
        assert!(group.unavailable_again());
        group.answered_well();
        assert!(!group.unavailable_again());
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_paces_the_group_from_half_what_got_through_and_only_once() {
        let now = Instant::now();
        let mut group = Group::new(4, now);
        assert!(group.at_rest(now));
        assert!(group.slow_down(&TARGET, 4, 20.0, now));
        assert!(!group.slow_down(&TARGET, 4, 40.0, now), "the first controller stays");
        let controller = group.controller.as_ref().map(|c| (c.rps(), c.judged_from()));
        assert_eq!(controller, Some((10.0, now + LIMITER_MEMORY)));
        assert!(!group.at_rest(now), "a group told to slow down is not forgotten");
        group.count_start(now);
        assert!(matches!(group.state(now), SlotState::PausedUntil(_)), "the pace spaces its starts");
    }

    #[tokio::test(start_paused = true)]
    async fn answers_to_requests_sent_within_the_limiters_memory_are_no_verdict() {
        let now = Instant::now();
        let mut group = Group::new(4, now);
        group.answered(now, now, false);
        assert_eq!(group.good_this_step, 0, "no controller, nothing to step on");
        group.slow_down(&TARGET, 4, 20.0, now);
        let later = now + LIMITER_MEMORY;
        group.answered(later, now + Duration::from_millis(200), true);
        group.answered(later, later, false);
        assert_eq!(group.good_this_step, 1);
        assert_eq!(
            (group.window.answered(), group.window.blocked()),
            (1, 0),
            "the burst's refusal is not counted"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_merged_group_keeps_both_budgets_the_later_pause_and_the_slower_pace() {
        let now = Instant::now();
        let (mut kept, mut gone) = (Group::new(4, now), Group::new(4, now));
        kept.join(1, Some("http://a.localhost:80".into()));
        gone.join(2, Some("http://b.localhost:80".into()));
        kept.take(now);
        gone.take(now);
        gone.slow_down(&TARGET, 4, 8.0, now);
        gone.pause_until(now + Duration::from_secs(3));
        kept.absorb(gone, 4);
        assert_eq!(kept.busy(), 2);
        assert_eq!(kept.members().iter().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(kept.found_at().0.len(), 2);
        assert_eq!(kept.controller.as_ref().map(Controller::rps), Some(4.0));
        assert_eq!(kept.state(now), SlotState::Busy, "the slow start's slots are taken");
        kept.release();
        kept.release();
        assert_eq!(kept.state(now), SlotState::PausedUntil(now + Duration::from_secs(3)));
        assert!(!kept.leave(1));
        assert!(kept.leave(2), "the last host leaving empties it");
    }
}
