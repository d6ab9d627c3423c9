//! A crawl split into parts by host, each part in a hash slot of its own, so that on a
//! Redis Cluster one crawl's hosts spread over the masters while every round still
//! touches one slot.
//!
//! The crawl's own slot (`spiderling:{CRAWL}`) keeps what is crawl-wide: its record
//! (`meta`, with the parts' names in `parts`), `done`, the item keys, and, for a crawl
//! under `rpm`/`rps`, the GCRA bucket the workers reserve starts from. A part
//! (`spiderling:{CRAWL/N}`) keeps its hosts' queues, seen-set, leases, limits and
//! robots.txt answers, its workers' heartbeats and the outputs committed with its
//! requests. A crawl of one part is the crawl's slot itself, the layout of a crawl made
//! before parts existed.
//!
//! A worker leases from one part at a time, its home, so that the ends of its requests
//! and the length of its output that holds their items are committed in one script, in
//! one slot. What it finds for the hosts of other parts (links, robots.txt answers, a
//! host's pause or limits) it sends there first, in a visit (`round.lua` with `visit`),
//! before the round that ends the request it came from. It moves home when its part has
//! nothing left to lease and it holds nothing there, to the part with the most work per
//! worker; and a part with work and no worker draws one of the workers of a part that has
//! several, which leases nothing more until it holds nothing. No coordinator assigns
//! parts.

use std::collections::HashMap;

use super::connection::Connection;
use super::messages::Round;

/// The set of every crawl a Redis holds, for `spiderling fleet`.
pub(crate) const CRAWLS: &str = "spiderling:crawls";

/// The key prefix of a crawl, or of a part of one: its name is the hash tag of all its
/// keys, so that on a Redis Cluster they share one slot and a round's script may touch
/// any of them.
pub fn prefix(crawl_id: &str) -> String {
    format!("spiderling:{{{crawl_id}}}")
}

/// The parts of one crawl.
#[derive(Debug, Clone)]
pub(crate) struct Parts {
    /// The crawl's own key prefix: its record, `done`, item keys and rate bucket.
    crawl: String,
    /// Each part's key prefix.
    prefixes: Vec<String>,
}

impl Parts {
    /// The parts named by `tags` (each the hash tag of a part) of the crawl `crawl`.
    pub(crate) fn new(crawl: &str, tags: &[String]) -> Parts {
        let prefixes =
            if tags.is_empty() { vec![prefix(crawl)] } else { tags.iter().map(|t| prefix(t)).collect() };
        Parts { crawl: prefix(crawl), prefixes }
    }

    pub(super) fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// Whether the crawl is split: a crawl of one part is the crawl's slot, and its rounds
    /// keep the rate bucket and decide that it is done themselves.
    pub(super) fn split(&self) -> bool {
        self.prefixes.len() > 1
    }

    pub(super) fn crawl(&self) -> &str {
        &self.crawl
    }

    pub(super) fn prefix(&self, part: usize) -> &str {
        &self.prefixes[part % self.prefixes.len()]
    }

    pub(crate) fn prefixes(&self) -> &[String] {
        &self.prefixes
    }

    /// The part of `host` (a host key): FNV-1a of its text, so that every worker of every
    /// version places it alike.
    pub(super) fn of(&self, host: &str) -> usize {
        let hash = host.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        usize::try_from(hash % self.prefixes.len() as u64).unwrap_or(0)
    }

    /// Take out of `round` the changes that belong to parts other than `home`: each
    /// other part's visit, by part. What is the worker's own (ends, output, failures,
    /// counts, heartbeat) stays in the home round.
    pub(super) fn visits(&self, home: usize, round: &mut Round) -> Vec<(usize, Round)> {
        if !self.split() {
            return Vec::new();
        }
        let mut by_part: HashMap<usize, Round> = HashMap::new();
        macro_rules! visit {
            ($part:expr) => {
                by_part.entry($part).or_insert_with(|| Round { visit: true, ..Round::default() })
            };
        }
        let enqueue = std::mem::take(&mut round.enqueue);
        let requests = std::mem::take(&mut round.requests);
        for (change, request) in enqueue.into_iter().zip(requests) {
            match self.of(&change.1) {
                part if part == home => {
                    round.enqueue.push(change);
                    round.requests.push(request);
                }
                part => {
                    let visit = visit!(part);
                    visit.enqueue.push(change);
                    visit.requests.push(request);
                }
            }
        }
        macro_rules! route {
            ($field:ident, |$change:ident| $host:expr) => {
                for $change in std::mem::take(&mut round.$field) {
                    match self.of($host) {
                        part if part == home => round.$field.push($change),
                        part => visit!(part).$field.push($change),
                    }
                }
            };
        }
        route!(robots, |change| &change.0);
        route!(pause, |change| &change.0);
        route!(refusing, |change| &change);
        route!(adapt, |change| &change.0);
        route!(answers, |change| &change.0);
        let mut visits: Vec<(usize, Round)> = by_part.into_iter().collect();
        visits.sort_by_key(|(part, _)| *part);
        visits
    }
}

/// The parts' names for a new crawl `crawl` of `count` parts (0: one per master, or one
/// on a single Redis): on a cluster, each part's tag is chosen so that the parts fall on
/// the masters in turn.
pub(super) async fn plan(
    connection: &mut Connection,
    crawl: &str,
    count: usize,
) -> redis::RedisResult<Vec<String>> {
    let masters = connection.masters().await?;
    let count = match count {
        0 => masters.as_ref().map_or(1, Vec::len).max(1),
        n => n,
    };
    if count == 1 {
        return Ok(Vec::new());
    }
    let Some(masters) = masters.filter(|m| !m.is_empty()) else {
        return Ok((0..count).map(|n| format!("{crawl}/{n}")).collect());
    };
    let mut tags = Vec::with_capacity(count);
    let mut next = 0_u64;
    for part in 0..count {
        let ranges = &masters[part % masters.len()];
        // A slot range of a master holds about 1/masters of the slots: a tag lands in it
        // within a few tries; the bound only keeps a broken slot map from looping.
        let found = (next..next + 100_000).find(|n| {
            let slot = super::connection::slot(&format!("{crawl}/{n}"));
            ranges.iter().any(|(low, high)| (*low..=*high).contains(&slot))
        });
        let n = found.unwrap_or(next);
        tags.push(format!("{crawl}/{n}"));
        next = n + 1;
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawl_of_one_part_is_the_crawls_own_slot() {
        let parts = Parts::new("books", &[]);
        assert_eq!(parts.prefixes(), ["spiderling:{books}"]);
        assert!(!parts.split());
        assert_eq!(parts.of("http://a:80"), 0);
        let mut round = Round { enqueue: vec![("00".into(), "http://a:80".into(), 0)], ..Round::default() };
        round.requests.push("0 http://a/".into());
        assert!(parts.visits(0, &mut round).is_empty());
        assert_eq!(round.enqueue.len(), 1);
    }

    #[test]
    fn what_concerns_another_parts_hosts_goes_there_and_the_rest_stays_home() {
        let tags: Vec<String> = (0..3).map(|n| format!("books/{n}")).collect();
        let parts = Parts::new("books", &tags);
        assert_eq!(parts.prefix(2), "spiderling:{books/2}");
        assert_eq!(parts.crawl(), "spiderling:{books}");
        let hosts: Vec<String> = (0..40).map(|n| format!("http://127.0.0.1:{}", 8000 + n)).collect();
        let mut placed = [0; 3];
        for host in &hosts {
            placed[parts.of(host)] += 1;
        }
        assert!(placed.iter().all(|&n| n >= 5), "hosts spread over the parts: {placed:?}");
        let home = parts.of(&hosts[0]);
        let away = hosts.iter().find(|h| parts.of(h) != home).unwrap();
        let mut round = Round {
            finish: vec![(7, 0, hosts[0].clone())],
            enqueue: vec![("01".into(), hosts[0].clone(), 0), ("02".into(), away.clone(), 0)],
            requests: vec!["0 home".into(), "0 away".into()],
            robots: vec![(away.clone(), "{}".into(), 0)],
            answers: vec![(hosts[0].clone(), 1, 0), (away.clone(), 2, 1)],
            failures: vec!["{}".into()],
            ..Round::default()
        };
        let visits = parts.visits(home, &mut round);
        assert_eq!(visits.len(), 1);
        let (part, visit) = &visits[0];
        assert_eq!(*part, parts.of(away));
        assert!(visit.visit && !round.visit);
        assert_eq!(
            (visit.requests.as_slice(), round.requests.as_slice()),
            (&["0 away".to_owned()][..], &["0 home".to_owned()][..])
        );
        assert_eq!(visit.robots.len() + visit.answers.len(), 2);
        assert_eq!((round.finish.len(), round.failures.len(), round.answers.len()), (1, 1, 1));
        assert!(visit.finish.is_empty() && visit.failures.is_empty(), "a worker's own changes stay home");
    }
}
