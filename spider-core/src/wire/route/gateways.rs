//! A tier's pool of gateways, rotated round-robin, with a bench for those that keep
//! failing to connect, so one dead gateway does not fail a share of every request.

use std::time::Duration;

use tokio::time::Instant;

/// Connect failures in a row that bench a gateway.
const BENCH_AFTER: u32 = 3;
/// How long a benched gateway rests before it is tried again.
const BENCH_FOR: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Health {
    failures_in_a_row: u32,
    benched_until: Option<Instant>,
}

/// Which gateway of a tier takes the next request.
#[derive(Debug)]
pub(crate) struct Pool {
    /// Indices into the router's list of gateways.
    members: Vec<usize>,
    health: Vec<Health>,
    next: usize,
}

impl Pool {
    pub(crate) fn new(members: Vec<usize>) -> Self {
        let health = members.iter().map(|_| Health::default()).collect();
        Pool { members, health, next: 0 }
    }

    /// The next gateway in turn that is not benched; when all are, the one back soonest.
    pub(crate) fn pick(&mut self, now: Instant) -> Option<usize> {
        let n = self.members.len();
        for step in 0..n {
            let at = (self.next + step) % n;
            if self.health[at].benched_until.is_none_or(|until| until <= now) {
                self.next = at + 1;
                return Some(self.members[at]);
            }
        }
        let soonest = (0..n).min_by_key(|&at| self.health[at].benched_until)?;
        Some(self.members[soonest])
    }

    /// The gateway could not be reached; returns true when this benches it.
    pub(crate) fn connect_failed(&mut self, gateway: usize, now: Instant) -> bool {
        let Some(health) = self.health_of(gateway) else { return false };
        health.failures_in_a_row += 1;
        if health.failures_in_a_row < BENCH_AFTER {
            return false;
        }
        health.failures_in_a_row = 0;
        health.benched_until = Some(now + BENCH_FOR);
        true
    }

    /// The gateway answered.
    pub(crate) fn reached(&mut self, gateway: usize) {
        if let Some(health) = self.health_of(gateway) {
            *health = Health::default();
        }
    }

    /// Whether `gateway` rests on the bench at `now`.
    pub(crate) fn is_benched(&mut self, gateway: usize, now: Instant) -> bool {
        self.health_of(gateway).and_then(|h| h.benched_until).is_some_and(|until| until > now)
    }

    fn health_of(&mut self, gateway: usize) -> Option<&mut Health> {
        let at = self.members.iter().position(|&m| m == gateway)?;
        self.health.get_mut(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_and_benches_a_failing_gateway_for_a_while() {
        let now = Instant::now();
        let mut pool = Pool::new(vec![4, 7]);
        assert_eq!([pool.pick(now), pool.pick(now), pool.pick(now)], [Some(4), Some(7), Some(4)]);
        assert!(!pool.connect_failed(4, now));
        assert!(!pool.connect_failed(4, now));
        assert!(pool.connect_failed(4, now));
        assert_eq!([pool.pick(now), pool.pick(now)], [Some(7), Some(7)]);
        let later = now + BENCH_FOR;
        assert_eq!([pool.pick(later), pool.pick(later)], [Some(4), Some(7)]);
    }

    #[test]
    fn all_benched_still_gives_the_one_back_soonest() {
        let now = Instant::now();
        let mut pool = Pool::new(vec![0, 1]);
        for _ in 0..BENCH_AFTER {
            pool.connect_failed(1, now);
        }
        for _ in 0..BENCH_AFTER {
            pool.connect_failed(0, now + Duration::from_secs(1));
        }
        assert_eq!(pool.pick(now + Duration::from_secs(2)), Some(1));
    }
}
