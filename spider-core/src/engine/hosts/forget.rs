//! Hosts let go of once idle: a host with nothing queued for [`QUIET`] that knows nothing a
//! host met anew would not is forgotten, its robots.txt kept in an LRU for its return.

use super::*;

impl Hosts {
    /// `id` was found with nothing to do at `now`: it is forgotten if it stays so (see
    /// [`Hosts::forget_quiet`]).
    pub(in crate::engine) fn note_quiet(&mut self, id: HostId, now: Instant) {
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
    pub(in crate::engine) fn forget_quiet(
        &mut self,
        now: Instant,
        held: impl Fn(HostId) -> bool,
    ) -> Vec<HostKey> {
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
}
