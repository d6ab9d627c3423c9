//! What the dispatcher does with each request that comes back: its items written, its
//! links queued, its host's robots.txt learnt, a sitemap's URLs followed, or its trouble
//! retried or given up (the decision is `retry_plan.rs`'s); and with a stretch of items
//! a fleet's Redis did not commit.

use super::*;

impl<S: Spider> Dispatcher<S> {
    /// Take in what a task reported: the slot freed, what it learnt recorded, and its
    /// outcome acted on.
    pub(super) fn on_done(&mut self, done: Done, now: Instant) {
        self.in_flight -= 1;
        self.commit.returned(now);
        let ticket = done.ticket;
        let id = done.host;
        if let Some(lane) = done.slot {
            self.release(id, lane, ticket, now);
        }
        // A retry as someone else owes nothing to the blocked identity's backoff.
        let followed_identity = done.notes.sample.is_some_and(|sample| sample.follows_identity);
        if let Some(server) = done.notes.sample.and_then(|sample| sample.server) {
            self.hosts.learn_server(id, server);
        }
        if let Some(mut sample) = done.notes.sample {
            // A limiter's refusal (`classify`) is a block to the host's controller.
            sample.blocked |= matches!(&done.outcome, Outcome::Trouble { trouble: Trouble::SlowDown, .. });
            self.record(id, sample, done.launched, now);
        }
        // The archive first: with both, the cache keeps where the archive put the body.
        let stored = match done.notes.archive {
            Some(archived) => {
                let written = self.commit.archive(&archived);
                self.ok(written).flatten()
            }
            None => None,
        };
        if let Some(write) = done.notes.cache {
            let written = self.commit.cache(write, stored.as_ref());
            self.ok(written);
        }
        if let (Some(ticket), Some(shared)) = (ticket, self.frontier.shared()) {
            if !shared.holds(ticket, now) {
                shared.forsake(ticket);
                self.hosts.mark_ready(id);
                return;
            }
        }
        match done.outcome {
            Outcome::Parsed { sorted, follows, failed, not_html, missed } => {
                self.hosts.answered_well(id);
                self.write_items(&sorted);
                if let Some(miss) = missed {
                    self.missed(&miss);
                }
                let tally = &self.shared.tally;
                let counter = if not_html { &tally.skipped_not_html } else { &tally.pages };
                counter.add(1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket, now);
            }
            Outcome::Sitemap { follows, failed } => {
                self.shared.tally.sitemaps.add(1);
                for request in follows {
                    self.enqueue(request, now);
                }
                if let Some((url, method, attempts, failure)) = failed {
                    self.give_up(&url, &method, attempts, &failure);
                }
                self.finish(ticket, now);
            }
            Outcome::Redirect(request) => {
                self.shared.tally.redirects.add(1);
                self.enqueue(request, now);
                self.finish(ticket, now);
            }
            Outcome::Robots(rules, memo) => {
                let key = self.hosts[id].key.clone();
                self.remember_robots(&key, &memo);
                if self.sitemap_hosts.remove(&key) {
                    self.queue_sitemaps(&key, rules.sitemaps(), now);
                }
                self.hosts.learn_robots(id, rules, now);
            }
            Outcome::RobotsRedirect(next) => self.hosts[id].robots = RobotsState::Redirected(Box::new(next)),
            Outcome::RobotsUnavailable(_) if self.hosts[id].robots_attempts < self.retries => {
                let host = &mut self.hosts[id];
                host.robots_attempts += 1;
                let wait =
                    retry::wait(&self.backoff, host.last_robots_backoff, Duration::ZERO, &mut self.rng);
                host.last_robots_backoff = wait;
                host.robots = RobotsState::Unknown;
                host.slots.pause_until(now + wait);
            }
            Outcome::RobotsUnavailable(reason) => {
                let key = self.hosts[id].key.clone();
                tracing::warn!(target: "spiderling", host = %key, %reason, "robots.txt unavailable: nothing \
                    on this host is fetched (RFC 9309)");
                self.remember_robots(&key, &RobotsMemo::Unavailable(reason.clone()));
                self.hosts[id].robots = RobotsState::Known(RobotsRules::Unavailable(reason));
            }
            Outcome::Trouble { mut request, trouble, retry_after, failure } => {
                if followed_identity {
                    request.last_backoff = Duration::ZERO;
                }
                self.retry_or_give_up(id, request, trouble, retry_after, &failure, now);
            }
            Outcome::Failed { url, method, attempts, failure } => {
                self.give_up(&url, &method, attempts, &failure);
                self.finish(ticket, now);
            }
            // Left in flight in a durable frontier, which queues it again on resume.
            Outcome::Interrupted { .. } if self.durable => self.left += 1,
            Outcome::Interrupted { url, method, attempts } => {
                let failure = Failure::bare(Reason::Interrupted);
                self.give_up(&url, &method, attempts, &failure);
            }
            // Not finished: with a durable frontier, a resumed crawl fetches it again.
            Outcome::Fatal(error) => self.fail(error),
        }
        self.hosts.mark_ready(id);
    }

    /// Cut out of the items file a stretch a fleet did not commit, its requests given to
    /// another worker before their ends reached Redis, which writes their items too.
    pub(super) fn cut_void_stretch(&mut self) {
        let Some(stretch) = self.frontier.shared().and_then(|shared| shared.stretch_to_cut()) else { return };
        let made = self.commit.cut_output(&stretch);
        let made = self.ok(made).is_some();
        if made {
            let items = stretch.to_items - stretch.from_items;
            tracing::info!(target: "spiderling", items, "cut the items the fleet had another worker write \
                out of the output");
        }
        if let Some(shared) = self.frontier.shared() {
            shared.stretch_cut(stretch, made);
        }
    }

    /// Remember what a host's robots.txt said, in a durable frontier.
    fn remember_robots(&mut self, host: &str, memo: &RobotsMemo) {
        if let Some(durable) = self.frontier.durable() {
            let remembered = durable.remember_robots(host, memo);
            self.ok(remembered);
        }
    }

    /// Queue the sitemaps a start host's robots.txt lists. Only an answer fetched in this
    /// run comes here: one remembered by a state file or learnt from the fleet had its
    /// sitemaps queued by the run, or the worker, that fetched it, in the same checkpoint.
    fn queue_sitemaps(&mut self, host: &str, sitemaps: &[String], now: Instant) {
        for listed in sitemaps {
            match Url::parse(listed) {
                Ok(url) => {
                    tracing::info!(target: "spiderling", %host, sitemap = %url, "robots.txt lists a sitemap");
                    self.enqueue(Request::sitemap(url), now);
                }
                Err(error) => {
                    tracing::warn!(target: "spiderling", %host, sitemap = %listed, %error, "robots.txt lists \
                        a sitemap that is not a URL")
                }
            }
        }
    }

    /// Append a page's items to the output file, file those its pipeline dropped, and
    /// count both.
    fn write_items(&mut self, sorted: &Sorted) {
        if let Err(error) = self.commit.write_items(sorted) {
            self.fail(error);
            return;
        }
        self.shared.tally.items.add(sorted.items.count);
        for dropped in &sorted.dropped {
            self.shared.tally.dropped(dropped.reason);
        }
    }

    /// A page without the item its rule parses: counted by rule and filed, never a block.
    fn missed(&mut self, miss: &Miss) {
        tracing::debug!(target: "spiderling", url = %miss.url, rule = %miss.rule, "no item on the page");
        self.shared.tally.no_item(&miss.rule);
        let filed = self.commit.record_miss(miss);
        self.ok(filed);
    }

    /// Defer the request for a jittered backoff (holding no slot), or give it up when
    /// its attempts are spent. A 429 also pauses its whole host.
    fn retry_or_give_up(
        &mut self,
        id: HostId,
        mut request: Request,
        trouble: Trouble,
        retry_after: Option<Duration>,
        failure: &Failure,
        now: Instant,
    ) {
        // A 503 in a run at hosts that share a budget is a limiter's: they slow down.
        let trouble = match trouble {
            Trouble::TryAgain if failure.status == Some(503) && self.hosts.unavailable_again(id) => {
                Trouble::SlowDown
            }
            trouble => trouble,
        };
        // At once, also in adaptive mode, and also for a request given up below: a limiter
        // bans a client that keeps going.
        let refusal = (trouble == Trouble::SlowDown).then(|| {
            let first = self.hosts.slow_down(id, now);
            if first {
                let key = &self.hosts[id].key;
                let hosts = self.hosts.group(id).members().len();
                tracing::info!(target: "spiderling", host = %key, hosts, "told to slow down: the host and \
                    those sharing its budget paced from a slow start from now on, faster while they answer");
            }
            Refusal { first, paced: self.hosts.group(id).controller.is_some() }
        });
        let wait =
            retry::wait(&self.backoff, request.last_backoff, retry_after.unwrap_or_default(), &mut self.rng);
        let facts = Facts {
            trouble,
            retry_after,
            wait,
            attempts: request.attempts,
            retries: self.retries,
            walls: request.walls,
            refusal,
        };
        let planned = retry_plan::plan(&facts);
        if let Some(pause) = planned.pause {
            let until = now + pause;
            self.hosts.pause(id, until);
            let host = &self.hosts[id];
            tracing::info!(
                target: "spiderling",
                host = %host.key,
                status = ?failure.status,
                ?retry_after,
                "told to slow down: backing off the host"
            );
            let key = host.key.clone();
            if let Some(shared) = self.frontier.shared() {
                shared.hold_host(&key, until);
            }
        }
        match planned.next {
            Next::PassWall { walls } => {
                request.walls = walls;
                tracing::debug!(target: "spiderling", url = %request.url(), walls, "a wall gave the identity \
                    a cookie: sending it again");
                let deferred = self.frontier.defer(request, now);
                self.ok(deferred);
            }
            Next::GiveUp => {
                let attempts = request.attempts + 1;
                self.give_up(request.url(), request.method(), attempts, failure);
                self.finish(request.ticket, now);
            }
            Next::Retry { wait } => {
                request.attempts += 1;
                request.last_backoff = wait;
                request.walls = 0;
                // Tried again on whichever slot is free, as that slot's identity: a fresh
                // one after a block, with its first answer settled before its next request.
                request.lane = None;
                tracing::debug!(
                    target: "spiderling",
                    url = %request.url(),
                    reason = %failure.reason,
                    ?wait,
                    attempt = request.attempts,
                    "retrying"
                );
                self.shared.tally.retries.add(1);
                let deferred = self.frontier.defer(request, now + wait);
                self.ok(deferred);
            }
        }
    }

    /// Count a request given up, and file it: the failures file, a durable frontier, the
    /// timeline.
    pub(super) fn give_up(&mut self, url: &Url, method: &Method, attempts: u32, failure: &Failure) {
        tracing::warn!(
            target: "spiderling",
            %url,
            reason = %failure.reason,
            status = ?failure.status,
            error = failure.error.as_deref().unwrap_or_default(),
            attempts,
            "giving up"
        );
        let message = match (&failure.error, failure.status) {
            (Some(error), _) => error.clone(),
            (None, Some(status)) => format!("status {status}"),
            (None, None) => failure.reason.as_str().to_owned(),
        };
        self.shared.tally.failure(failure.reason, &message);
        if let Some(timeline) = &self.timeline {
            timeline.lock().failure(failure.reason.as_str(), url.as_str(), message);
        }
        let filed = self.commit.give_up(self.frontier.durable(), url, method, attempts, failure);
        self.ok(filed);
    }
}
