//! The politeness groups of the hosts: a host joins its registrable domain's group when
//! met, and the group of the server address it answered from, two groups becoming one
//! when they meet (`politeness`).

use super::*;

impl Hosts {
    /// `id` answered from `server` (directly, not through a proxy): under `politeness =
    /// "server"` its group and the group of that address's hosts become one.
    pub(in crate::engine) fn learn_server(&mut self, id: HostId, server: SocketAddr) {
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
        if self.groups[into].controller.is_some() {
            self.let_group_pace(into, Instant::now());
        }
    }

    /// The group of `id`.
    pub(in crate::engine) fn group(&self, id: HostId) -> &Group {
        &self.groups[self[id].group]
    }

    /// The group of `id`, by its place.
    pub(in crate::engine) fn group_of(&self, id: HostId) -> GroupId {
        self[id].group
    }

    pub(in crate::engine) fn groups_len(&self) -> usize {
        self.groups.len()
    }

    pub(in crate::engine) fn group_mut(&mut self, group: GroupId) -> &mut Group {
        &mut self.groups[group]
    }

    /// Give `group` the limits its controller decided (paused until `tripped`, when its
    /// breaker opened), and make its hosts ready to take them.
    pub(in crate::engine) fn group_changed(&mut self, group: GroupId, tripped: Option<Instant>) {
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
    pub(in crate::engine) fn group_name(&self, group: GroupId) -> Option<&HostKey> {
        self.groups[group].members().first().map(|&id| &self[id].key)
    }

    /// The group a host of `key` joins when met: its registrable domain's, unless each
    /// host is its own.
    pub(super) fn group_for(&mut self, key: &str, id: HostId, now: Instant) -> GroupId {
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
}
