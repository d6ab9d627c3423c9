//! Hosts' robots.txt: learnt from an answer, a hook's read or an earlier run, the request
//! that fetches it, and what it says of a link before the link is queued.

use url::Url;

use super::*;
use crate::request::host::write_host_key;
use crate::schedule::robots;

impl Hosts {
    /// What robots.txt said of hosts, read before the crawl began (by the start hook):
    /// those met and not asked yet learn it now, the others when they are met, and none
    /// fetches it again.
    pub(in crate::engine) fn keep_robots(&mut self, answers: Vec<(HostKey, RobotsRules)>, now: Instant) {
        for (host, rules) in answers {
            match self.ids.get(&host).copied() {
                Some(id) if matches!(self[id].robots, RobotsState::Unknown) => {
                    self.learn_robots(id, rules, now)
                }
                Some(_) => {}
                None => {
                    self.robots_kept.put(host, rules);
                }
            }
        }
    }

    /// Obey a host's robots.txt, its Crawl-delay included.
    pub(in crate::engine) fn learn_robots(&mut self, id: HostId, rules: RobotsRules, now: Instant) {
        let host = &mut self[id];
        if let Some(delay) = rules.crawl_delay() {
            tracing::info!(target: "spiderling", host = %host.key, ?delay, "robots.txt sets a Crawl-delay: \
                one slot, paused at least that long");
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
    pub(in crate::engine) fn robots_request(&mut self, id: HostId) -> Option<Request> {
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
    pub(in crate::engine) fn known_disallowed(&mut self, url: &Url) -> bool {
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
