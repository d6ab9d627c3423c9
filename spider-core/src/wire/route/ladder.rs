//! Escalation: each host starts on the cheapest route tier, climbs one tier when it keeps
//! blocking there, and later sends a single probe one tier down to see whether the cheaper
//! route works again. Residential traffic is paid by the GB; a host that does not need it
//! should not use it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::request::host::HostKey;

/// A second block within this many answers of the first moves a host up a tier. Not
/// "in a row": a limiter answers a few requests between its refusals.
const CLIMB_WITHIN: u32 = 10;
/// The first wait before probing one tier down; doubled after each failed probe.
const FIRST_PROBE: Duration = Duration::from_secs(300);
const LONGEST_PROBE: Duration = Duration::from_secs(3600);
/// A probe that never reports back (its request failed in transport) is given up after this.
const PROBE_LOST: Duration = Duration::from_secs(120);

#[derive(Debug)]
struct Rung {
    tier: usize,
    /// Answers on its tier since its last block there, if any.
    since_block: Option<u32>,
    probe_at: Option<Instant>,
    probe_after: Duration,
    probing_since: Option<Instant>,
}

impl Rung {
    fn bottom() -> Self {
        Rung { tier: 0, since_block: None, probe_at: None, probe_after: FIRST_PROBE, probing_since: None }
    }
}

/// The tier each host is on.
#[derive(Debug)]
pub(crate) struct Ladder {
    tiers: usize,
    hosts: HashMap<HostKey, Rung>,
}

impl Ladder {
    pub(crate) fn new(tiers: usize) -> Self {
        Ladder { tiers, hosts: HashMap::new() }
    }

    /// The tier for the host's next request: its own, or one lower when a probe is due.
    pub(crate) fn tier_for(&mut self, host: &HostKey, now: Instant) -> usize {
        let rung = self.hosts.entry(host.clone()).or_insert_with(Rung::bottom);
        let probe_due = rung.probe_at.is_some_and(|at| at <= now);
        let probe_free = rung.probing_since.is_none_or(|since| since + PROBE_LOST <= now);
        if rung.tier > 0 && probe_due && probe_free {
            rung.probing_since = Some(now);
            return rung.tier - 1;
        }
        rung.tier
    }

    /// The crawl forgot `host`, idle: its rung goes when it is the bottom one with no
    /// block to remember, as a rung made anew would be.
    pub(crate) fn forget(&mut self, host: &HostKey) {
        if self.hosts.get(host).is_some_and(|rung| rung.tier == 0 && rung.since_block.is_none()) {
            self.hosts.remove(host);
        }
    }

    /// The tier the host is on.
    pub(crate) fn tier_of(&self, host: &HostKey) -> usize {
        self.hosts.get(host).map_or(0, |rung| rung.tier)
    }

    /// A request of `host` sent on `tier` was blocked; returns the host's new tier when it
    /// climbed.
    pub(crate) fn blocked(&mut self, host: &HostKey, tier: usize, now: Instant) -> Option<usize> {
        let rung = self.hosts.get_mut(host)?;
        if rung.probing_since.is_some() && tier + 1 == rung.tier {
            // The cheaper tier still blocks: wait longer before the next probe.
            rung.probing_since = None;
            rung.probe_after = (rung.probe_after * 2).min(LONGEST_PROBE);
            rung.probe_at = Some(now + rung.probe_after);
            return None;
        }
        if tier != rung.tier {
            return None;
        }
        let again = rung.since_block.is_some_and(|answers| answers <= CLIMB_WITHIN);
        if !again || rung.tier + 1 >= self.tiers {
            rung.since_block = Some(0);
            return None;
        }
        rung.tier += 1;
        rung.since_block = None;
        rung.probe_at = Some(now + rung.probe_after);
        Some(rung.tier)
    }

    /// A request of `host` sent on `tier` was answered; returns the host's new tier when a
    /// probe brought it down.
    pub(crate) fn answered(&mut self, host: &HostKey, tier: usize, now: Instant) -> Option<usize> {
        let rung = self.hosts.get_mut(host)?;
        if rung.probing_since.is_some() && tier + 1 == rung.tier {
            rung.tier = tier;
            rung.probing_since = None;
            rung.since_block = None;
            rung.probe_after = FIRST_PROBE;
            rung.probe_at = (tier > 0).then(|| now + FIRST_PROBE);
            return Some(tier);
        }
        if tier == rung.tier {
            rung.since_block = rung.since_block.map(|answers| answers + 1);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostKey {
        HostKey::from("https://shop.example:443")
    }

    #[test]
    fn climbs_after_two_blocks_close_together_and_not_past_the_top() {
        let (mut ladder, now) = (Ladder::new(3), Instant::now());
        assert_eq!(ladder.tier_for(&host(), now), 0);
        assert_eq!(ladder.blocked(&host(), 0, now), None);
        for _ in 0..=CLIMB_WITHIN {
            assert_eq!(ladder.answered(&host(), 0, now), None);
        }
        assert_eq!(ladder.blocked(&host(), 0, now), None, "blocks far apart do not climb");
        for _ in 0..5 {
            ladder.answered(&host(), 0, now);
        }
        assert_eq!(ladder.blocked(&host(), 0, now), Some(1), "a limiter's refusals a few answers apart do");
        assert_eq!(ladder.blocked(&host(), 0, now), None, "a late block from the old tier");
        assert_eq!(ladder.blocked(&host(), 1, now), None);
        assert_eq!(ladder.blocked(&host(), 1, now), Some(2));
        assert_eq!(ladder.blocked(&host(), 2, now), None);
        assert_eq!(ladder.blocked(&host(), 2, now), None);
        assert_eq!(ladder.tier_for(&host(), now), 2);
    }

    #[test]
    fn probes_one_tier_down_once_and_backs_off_when_it_still_blocks() {
        let (mut ladder, now) = (Ladder::new(2), Instant::now());
        ladder.tier_for(&host(), now);
        ladder.blocked(&host(), 0, now);
        ladder.blocked(&host(), 0, now);
        assert_eq!(ladder.tier_for(&host(), now + FIRST_PROBE / 2), 1);
        let due = now + FIRST_PROBE;
        assert_eq!(ladder.tier_for(&host(), due), 0, "the probe");
        assert_eq!(ladder.tier_for(&host(), due), 1, "one probe at a time");
        assert_eq!(ladder.blocked(&host(), 0, due), None);
        assert_eq!(ladder.tier_for(&host(), due + FIRST_PROBE), 1, "the next probe waits twice as long");
        let next = due + FIRST_PROBE * 2;
        assert_eq!(ladder.tier_for(&host(), next), 0);
        assert_eq!(ladder.answered(&host(), 0, next), Some(0));
        assert_eq!(ladder.tier_for(&host(), next + LONGEST_PROBE), 0, "back on the cheap tier for good");
    }
}
