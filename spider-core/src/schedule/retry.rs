//! How long a request waits before its next attempt.
//!
//! Waits follow "decorrelated jitter": each is drawn from `base..=3 × previous` (the
//! first from `base..=3 × base`), capped, so requests that failed together come back
//! spread out instead of in a synchronised burst. A `Retry-After` is a floor under it.

use std::time::Duration;

use rand::Rng;
use spider_settings::Backoff;

/// The wait after a failed attempt whose previous wait was `previous` (zero before the
/// first retry), within `bounds` and never shorter than `floor`.
pub(crate) fn wait(bounds: &Backoff, previous: Duration, floor: Duration, rng: &mut impl Rng) -> Duration {
    let high = previous.max(bounds.base) * 3;
    rng.random_range(bounds.base..=high).min(bounds.cap).max(floor)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    const BACKOFF: Backoff = Backoff { base: Duration::from_millis(500), cap: Duration::from_secs(30) };

    #[test]
    fn waits_stay_between_base_and_three_times_the_previous() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut previous = Duration::ZERO;
        for _ in 0..100 {
            let waited = wait(&BACKOFF, previous, Duration::ZERO, &mut rng);
            assert!(waited >= BACKOFF.base && waited <= BACKOFF.cap);
            assert!(waited <= previous.max(BACKOFF.base) * 3);
            previous = waited;
        }
    }

    #[test]
    fn first_retries_of_a_burst_are_spread_over_base_to_three_base() {
        let mut rng = StdRng::seed_from_u64(11);
        let waits: Vec<Duration> =
            (0..50).map(|_| wait(&BACKOFF, Duration::ZERO, Duration::ZERO, &mut rng)).collect();
        let (low, high) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
        assert!(*high - *low > Duration::from_millis(700), "{low:?}..{high:?}");
    }

    #[test]
    fn retry_after_is_a_floor() {
        let mut rng = StdRng::seed_from_u64(7);
        let floor = Duration::from_secs(45);
        assert_eq!(wait(&BACKOFF, Duration::ZERO, floor, &mut rng), floor);
    }
}
