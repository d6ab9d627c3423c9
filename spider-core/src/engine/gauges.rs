//! What the dispatcher learns from answers: the gauges it publishes each second (and
//! records in the timeline, when one is kept), and the adaptive controllers it steps (their
//! cuts marked in the timeline).

use std::cmp::Reverse;

use tokio::time::Instant;

use super::dispatch::Dispatcher;
use super::group::GroupId;
use super::hosts::{Host, HostId};
use super::protocol::Sample;
use crate::observe::gauge::{HostLive, Live};
use crate::observe::timeline::{Event, EventKind};
use crate::schedule::frontier::FleetAnswers;
use crate::schedule::throttle::adaptive::{self, Change, Controller, Proposal};
use crate::spider::Spider;

impl<S: Spider> Dispatcher<S> {
    /// What an answer tells the gauges, and the controllers of its host and its group; the
    /// request was launched at `launched`.
    pub(super) fn record(&mut self, id: HostId, sample: Sample, launched: Instant, now: Instant) {
        self.latencies.record(sample.latency);
        self.window.record(now, sample.blocked);
        let host = &mut self.hosts[id];
        host.window.record(now, sample.blocked);
        if let Some(shared) = self.frontier.shared() {
            shared.answered(&host.key, sample.blocked);
        }
        host.good_this_step += usize::from(!sample.blocked);
        let target = self.hosts.target();
        // A block that followed an identity (used, then blocked, and replaced by another
        // exit) is the identity's, not the host's: the host's limits stay.
        let host_blocked = sample.blocked && !sample.follows_identity;
        let group_id = self.hosts.group_of(id);
        let group = self.hosts.group_mut(group_id);
        // By when it was launched: of a burst launched before a limiter's first refusal,
        // a task may send its request after the group's controller was made.
        group.answered(now, launched, sample.blocked);
        let in_flight = group.busy() + 1;
        let change = group
            .controller
            .as_mut()
            .and_then(|c| c.answer(&target, now, launched, host_blocked, in_flight, &group.window));
        if let Some(change) = change {
            self.apply_group(group_id, change, now);
        }
        let host = &mut self.hosts[id];
        let Some(controller) = host.controller.as_mut() else { return };
        // This answer's slot is free again already: with it, what was in flight as it came.
        let in_flight = host.slots.busy() + 1;
        let change = controller.answer(&target, now, sample.sent_at, host_blocked, in_flight, &host.window);
        if let Some(change) = change {
            self.apply(id, change, now);
        }
    }

    /// Once a second: the controllers take the limits a fleet's other workers set, step,
    /// and the gauges are published.
    pub(super) fn tick(&mut self, now: Instant) {
        self.next_tick = now + adaptive::STEP;
        let refusing = self.frontier.shared().map(|shared| shared.fleet_refusing_plain()).unwrap_or_default();
        if !refusing.is_empty() {
            self.shared.exchange.identities().resume_refusing(refusing);
        }
        if self.hosts.adaptive().is_some() {
            let fleet_limits = self.frontier.shared().map(|shared| shared.fleet_host_limits());
            for (key, limit, rps) in fleet_limits.unwrap_or_default() {
                let Some(id) = self.hosts.id_of(&key) else { continue };
                let change = self.hosts[id].controller.as_mut().and_then(|c| c.adopt(limit, rps, now));
                if let Some(change) = change {
                    self.apply(id, change, now);
                }
            }
        }
        // Every host with a controller steps: in adaptive mode all of them, else those
        // that told the crawl to slow down.
        {
            let target = self.hosts.target();
            let fleet = self.frontier.shared().and_then(|shared| shared.fleet_answers());
            for id in 0..self.hosts.id_bound() {
                let Some(host) = self.hosts.get_mut(id) else { continue };
                if host.controller.is_none() {
                    (host.good_this_step, host.saturated) = (0, false);
                    continue;
                }
                // A fleet's worker uses its share of the host's rate: the fleet's use is its
                // own times the fleet's answers over its own in the window.
                let share = fleet
                    .as_ref()
                    .and_then(|fleet| fleet.hosts.get(&*host.key))
                    .map_or(1.0, |&(answered, _)| {
                        (answered as f64 / host.window.answered().max(1) as f64).max(1.0)
                    });
                let used_rps =
                    std::mem::take(&mut host.good_this_step) as f64 / adaptive::STEP.as_secs_f64() * share;
                let saturated = std::mem::take(&mut host.saturated);
                let change = host.controller.as_mut().and_then(|c| c.tick(&target, now, used_rps, saturated));
                if let Some(change) = change {
                    self.apply(id, change, now);
                }
            }
        }
        // And the groups a limiter told to slow down, on their hosts' answers together.
        let target = self.hosts.target();
        for group_id in 0..self.hosts.groups_len() {
            let group = self.hosts.group_mut(group_id);
            let used_rps = std::mem::take(&mut group.good_this_step) as f64 / adaptive::STEP.as_secs_f64();
            let saturated = std::mem::take(&mut group.saturated);
            let change = group.controller.as_mut().and_then(|c| c.tick(&target, now, used_rps, saturated));
            if let Some(change) = change {
                self.apply_group(group_id, change, now);
            }
        }
        self.forget_quiet(now);
        self.publish(now);
    }

    /// Let go of the hosts with nothing to do that a host met anew would equal (see
    /// `Hosts::forget_quiet`), and of what the clients hold of them.
    fn forget_quiet(&mut self, now: Instant) {
        #[cfg(feature = "render")]
        let asked = self.asking.waiting.keys().copied();
        #[cfg(not(feature = "render"))]
        let asked = std::iter::empty();
        let held: Vec<HostId> = self.held.iter().map(|(id, _)| *id).chain(asked).collect();
        let forgotten = self.hosts.forget_quiet(now, |id| held.contains(&id));
        for key in &forgotten {
            tracing::debug!(target: "spiderling", host = %key, "idle: forgotten, what its robots.txt said \
                kept");
            self.shared.exchange.forget_host(key);
        }
    }

    /// Give a group the limits its controller decided, and say so.
    fn apply_group(&mut self, group: GroupId, change: Change, now: Instant) {
        let tripped = match change {
            Change::Tripped { until } => Some(until),
            _ => None,
        };
        self.hosts.group_changed(group, tripped);
        let changed = self.hosts.group_mut(group);
        let Some(controller) = &changed.controller else { return };
        let (limit, rps, hosts) = (controller.limit(), controller.rps(), changed.members().len());
        let host = self.hosts.group_name(group).map(ToString::to_string).unwrap_or_default();
        match change {
            Change::Raised | Change::Closed | Change::Adopted { .. } => {
                tracing::debug!(target: "spiderling::adaptive", %host, hosts, limit, rps, "a limiter's hosts \
                    raised")
            }
            Change::Cut { block_rate } => {
                tracing::info!(target: "spiderling::adaptive", %host, hosts, limit, rps, block_rate, "a \
                    limiter refused again: its hosts cut")
            }
            Change::Tripped { until } => {
                let pause = until.saturating_duration_since(now);
                tracing::warn!(target: "spiderling::adaptive", %host, hosts, ?pause, "a limiter refuses most \
                    requests: its hosts paused, then probed");
            }
        }
    }

    /// Give a host the limits its controller decided, and say so.
    fn apply(&mut self, id: HostId, change: Change, now: Instant) {
        let host = &mut self.hosts[id];
        let Some(controller) = &host.controller else { return };
        let (limit, rps) = (controller.limit(), controller.rps());
        host.slots.set_limit(limit, now);
        host.slots.set_rate(Some(rps));
        let key = &host.key;
        // A fleet's workers share the host's limits: this worker's change is theirs.
        let proposal = match change {
            Change::Cut { .. } | Change::Tripped { .. } => Some(Proposal::Cut),
            Change::Raised | Change::Closed => Some(Proposal::Raise),
            Change::Adopted { .. } => None,
        };
        if let Some(shared) = self.frontier.shared() {
            if let Some(proposal) = proposal {
                shared.adapt_host(key, limit, rps, proposal);
            }
            if let Change::Tripped { until } = change {
                shared.hold_host(key, until);
                // No request may come back to carry the pause to the fleet.
                self.commit.changed(now);
            }
        }
        if let Some(timeline) = &self.timeline {
            let (kind, block_rate) = match change {
                Change::Cut { block_rate } => (Some(EventKind::Cut), Some(block_rate)),
                Change::Tripped { .. } => (Some(EventKind::Tripped), Some(host.window.block_rate())),
                Change::Adopted { lower: true } => (Some(EventKind::Cut), None),
                Change::Raised | Change::Closed | Change::Adopted { lower: false } => (None, None),
            };
            if let Some(kind) = kind {
                let t = self.shared.tally.elapsed().as_secs_f64();
                let host = key.to_string();
                timeline.lock().event(Event { t, host, kind, limit, rate: rps, block_rate });
            }
        }
        match change {
            Change::Raised => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, "raised")
            }
            Change::Cut { block_rate } => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, block_rate, "block \
                    rate above target: cut")
            }
            Change::Tripped { until } => {
                host.slots.pause_until(until);
                let pause = until.saturating_duration_since(now);
                tracing::warn!(target: "spiderling::adaptive", host = %key, ?pause, "mostly blocks: circuit \
                    breaker open, host paused, then probed");
            }
            Change::Closed => {
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, "probe answered: \
                    circuit breaker closed")
            }
            Change::Adopted { lower } => {
                let by = if lower { "cut" } else { "raised" };
                tracing::info!(target: "spiderling::adaptive", host = %key, limit, rps, "{by} by another \
                    worker of the fleet")
            }
        }
        self.hosts.mark_ready(id);
    }

    /// Send the gauges to whoever watches: the progress line, the metrics endpoint.
    pub(super) fn publish(&mut self, now: Instant) {
        /// Hosts listed, the busiest first.
        const HOSTS_SHOWN: usize = 50;
        self.window.expire(now);
        let tally = &self.shared.tally;
        let [p50, p90, p95, p99] = self.latencies.percentiles();
        // A host paced with its group shows the group's pace.
        let group_rps: Vec<Option<f64>> = (0..self.hosts.groups_len())
            .map(|group| self.hosts.group_mut(group).controller.as_ref().map(Controller::rps))
            .collect();
        let mut hosts: Vec<&mut Host> = self.hosts.iter_mut().collect();
        for host in &mut hosts {
            host.window.expire(now);
        }
        hosts.sort_by_key(|host| Reverse(host.window.answered()));
        let mut hosts: Vec<HostLive> = hosts
            .into_iter()
            .take(HOSTS_SHOWN)
            .map(|host| HostLive {
                host: host.key.to_string(),
                block_rate: host.window.block_rate(),
                answered: host.window.answered(),
                limit: host.slots.limit(),
                rate_per_sec: host
                    .controller
                    .as_ref()
                    .map(Controller::rps)
                    .or_else(|| group_rps.get(host.group).copied().flatten()),
                tripped: host.controller.as_ref().is_some_and(Controller::tripped),
            })
            .collect();
        // A fleet's worker shows the fleet's block rate: one worker's blocks are every
        // worker's concern.
        let mut block_rate = self.window.block_rate();
        if let Some(fleet) = self.frontier.shared().and_then(|shared| shared.fleet_answers()) {
            block_rate = FleetAnswers::block_rate(fleet.answered, fleet.blocked);
            for host in &mut hosts {
                if let Some(&(answered, blocked)) = fleet.hosts.get(&host.host) {
                    host.block_rate = FleetAnswers::block_rate(answered, blocked);
                }
            }
        }
        let proxy = self.shared.exchange.spend();
        let counts = tally.counts(self.shared.pool.html_parses(), self.shared.pool.streamed_pages());
        let live = Live {
            failures: counts.failures(),
            counts,
            pages_per_sec: self.window.good_per_second(),
            block_rate,
            latency_p50_ms: p50,
            latency_p90_ms: p90,
            latency_p95_ms: p95,
            latency_p99_ms: p99,
            in_flight: self.in_flight,
            queued: self.frontier.len(),
            concurrency_limit: self.concurrency,
            proxy_bytes: proxy.as_ref().map_or(0, |p| p.bytes),
            proxy_spend: proxy.as_ref().map_or(0.0, |p| p.spend),
            proxy_budget: proxy.as_ref().and_then(|p| p.budget),
            items_held: self.commit.items_held(),
            hosts,
        };
        if let Some(timeline) = &self.timeline {
            timeline.lock().record(&live);
        }
        self.live.send_replace(live);
    }
}
