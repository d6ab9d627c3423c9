//! The dispatcher's launching: requests taken from the ready hosts round-robin while
//! admission allows, each on its host's slot, and the slot rested once its request ends.

use super::*;

impl<S: Spider> Dispatcher<S> {
    /// Launch requests while admission allows; returns when the next rate token is due
    /// when that is what stopped it.
    pub(super) fn launch_ready(&mut self, now: Instant) -> Option<Instant> {
        loop {
            let standing = Standing {
                slots_taken: self.in_flight + self.commit.slots_held(),
                in_flight: self.in_flight,
                stopping: self.fatal.is_some() || self.draining_until.is_some(),
                budget_reached: self.budget_reached,
            };
            let (exchange, frontier) = (&self.shared.exchange, &mut self.frontier);
            let budget_spent =
                || exchange.budget_reached(|own| frontier.shared().and_then(|s| s.fleet_proxy_bytes(own)));
            match self.admission.crawl(standing, &self.shared.tally, budget_spent) {
                Gate::Open => {}
                Gate::Full | Gate::Closed(Stop::Stopping) => return None,
                Gate::Closed(Stop::Budget) => {
                    if !self.budget_reached {
                        tracing::warn!(
                            target: "spiderling",
                            in_flight = self.in_flight,
                            "proxy budget reached: admitting nothing more, finishing requests in flight"
                        );
                        self.budget_reached = true;
                    }
                    return None;
                }
            }
            let (host, job) = match self.held.take() {
                Some(held) => held,
                None => self.next_job(now)?,
            };
            let state = self.hosts.state(host, now);
            match self.admission.request(state, job.offline(), now) {
                Admit::Launch => self.launch(host, job, now),
                Admit::WaitUntil(at) => {
                    self.held = Some((host, job));
                    return Some(at);
                }
                // The host was told to slow down while this request waited for its token.
                Admit::Hold(_) => self.put_back(host, job),
            }
        }
    }

    /// The next request of the first ready host, round-robin. Holds nothing: the host's
    /// slot is taken only at launch.
    pub(super) fn next_job(&mut self, now: Instant) -> Option<(HostId, Job)> {
        // Requests of hosts whose robots.txt could not be had: given up, with the reason;
        // and those robots.txt disallows: finished unfetched.
        let mut unreachable = Vec::new();
        let mut disallowed = Vec::new();
        let mut failed = None;
        while let Some(id) = self.hosts.pop_ready() {
            match self.hosts.state(id, now) {
                SlotState::Free => {}
                SlotState::PausedUntil(due) => {
                    self.hosts.wake_at(id, due);
                    continue;
                }
                // Woken again when a request of this host or its group finishes; its
                // slots or its group's, not its pace, held it back (`Hosts::state` marks
                // which ran out, for adaptive mode to give it more).
                SlotState::Busy => continue,
            }
            let host = &mut self.hosts[id];
            let robots = matches!(host.robots, RobotsState::Unknown | RobotsState::Redirected(_))
                .then(|| self.hosts.robots_request(id))
                .flatten();
            let host = &mut self.hosts[id];
            let job = match (robots, &host.robots) {
                (Some(request), _) => Some(Job::robots(request)),
                (None, RobotsState::Known(rules)) => loop {
                    match self.frontier.next(&host.key) {
                        Ok(Some(request)) if !rules.allows(request.url()) => {
                            if let RobotsRules::Unavailable(reason) = rules {
                                unreachable.push((request, reason.clone()));
                            } else {
                                tracing::debug!(target: "spiderling", url = %request.url(), "disallowed by \
                                    robots.txt");
                                self.shared.tally.robots_disallowed.add(1);
                                disallowed.push(request.ticket);
                            }
                        }
                        Ok(next) => break next.map(Job::page),
                        Err(error) => {
                            failed = Some(error);
                            break None;
                        }
                    }
                },
                // Woken again when robots.txt arrives.
                (None, _) => None,
            };
            if job.is_none() && matches!(self.hosts[id].robots, RobotsState::Known(_)) {
                self.hosts.note_quiet(id, now);
            }
            if let Some(error) = failed.take() {
                self.fail(error);
            }
            for ticket in disallowed.drain(..) {
                self.finish(ticket, now);
            }
            for (request, reason) in unreachable.drain(..) {
                // A proxy that could not be reached is the route's trouble, and said so.
                let why = Cause::behind_proxy_message(&reason).map_or_else(
                    || Reason::RobotsUnavailable(Cause::behind_robots_message(&reason)),
                    Reason::ProxyUnreachable,
                );
                let failure = Failure::error(why, &reason);
                self.give_up(request.url(), request.method(), request.attempts + 1, &failure);
                self.finish(request.ticket, now);
            }
            if let Some(mut job) = job {
                self.hosts.mark_ready(id);
                if let Some(lane) = job.request.lane.filter(|_| !job.robots) {
                    let host = &mut self.hosts[id];
                    match host.slots.lane(lane, now) {
                        LaneState::Ready => {}
                        LaneState::ReadyAt(due) => {
                            let deferred = self.frontier.defer(job.request, due);
                            self.ok(deferred);
                            continue;
                        }
                        LaneState::Busy => {
                            host.parked.push(job.request);
                            continue;
                        }
                        LaneState::Gone => job.request.lane = None,
                    }
                }
                let cached = self.commit.cached(&job.request);
                job.cached = self.ok(cached).flatten();
                return Some((id, job));
            }
        }
        None
    }

    /// Return a request that could not launch after all; the host launches it when ready.
    fn put_back(&mut self, id: HostId, job: Job) {
        if job.robots {
            self.hosts[id].robots = RobotsState::Redirected(Box::new(job.request));
        } else {
            let deferred = self.frontier.defer(job.request, Instant::now());
            self.ok(deferred);
        }
        self.hosts.mark_ready(id);
    }

    pub(in crate::engine) fn launch(&mut self, id: HostId, mut job: Job, now: Instant) {
        let slot = (!job.offline()).then(|| self.hosts.take(id, job.request.lane, now));
        job.slot = slot.map(|lane| PageSlot { host: id, lane });
        if slot.is_some() {
            self.shared.tally.requests.add(1);
            // A host's first request: the clients may hold a connection to it from now on.
            if !std::mem::replace(&mut self.hosts[id].contacted, true) {
                let met = self.shared.exchange.met_host();
                self.ok(met);
            }
        }
        // A redirect hop and a request passing a wall keep their lane: the cookie the hop or
        // the wall set is in that lane's jar.
        if job.request.lane.is_none() {
            job.request.lane = slot;
        }
        self.in_flight += 1;
        let request = &job.request;
        let report = Report {
            host: id,
            slot: job.slot.map(|slot| slot.lane),
            launched: now,
            robots: job.robots,
            ticket: request.ticket,
            url: request.url().clone(),
            method: request.method().clone(),
            attempts: request.attempts,
            to: self.done_tx.clone(),
            sent: false,
        };
        let shared = self.shared.clone();
        self.tasks.spawn(async move {
            let mut notes = Byproducts::default();
            let outcome = if job.robots {
                fetch_robots(&shared, job, &mut notes).await
            } else {
                crawl_page(&shared, job, &mut notes).await
            };
            report.send(outcome, notes);
        });
    }

    /// A request of host `id` on `lane` ended: the slot rests for its politeness pause,
    /// and requests parked for that lane go back to the queue.
    pub(in crate::engine) fn release(&mut self, id: HostId, lane: u32, ticket: Option<Ticket>, now: Instant) {
        let pause = throttle::pause(&self.delay, self.hosts[id].crawl_delay, &mut self.rng);
        self.hosts.release(id, lane, now + pause);
        let host = &mut self.hosts[id];
        let parked = std::mem::take(&mut host.parked);
        let (waiting, free): (Vec<_>, Vec<_>) = parked.into_iter().partition(|r| r.lane != Some(lane));
        host.parked = waiting;
        if let (Some(ticket), Some(shared)) = (ticket, self.frontier.shared()) {
            shared.rest_slot(ticket, now + pause);
        }
        for request in free {
            let deferred = self.frontier.defer(request, now);
            self.ok(deferred);
        }
    }
}
