//! The rate search: which rate the next step holds, from the highest clean rate and the
//! lowest blocked one seen so far.

use super::tuning::{FLOOR_RPS, GROWTH, PRECISION};

/// The rate search: ramp up while clean, then bisect between the highest clean rate and
/// the lowest blocked one.
#[derive(Debug, Clone)]
pub(super) struct Search {
    start: f64,
    /// The most the site allows (robots.txt's Crawl-delay), if it says.
    ceiling: Option<f64>,
    clean: Option<f64>,
    pub(super) blocked: Option<f64>,
}

/// The search's next move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Next {
    /// Hold this rate for a step.
    Try(f64),
    /// The limit is within [`PRECISION`].
    Converged,
    /// The ceiling itself was clean.
    AtCeiling(f64),
    /// Every rate down to [`FLOOR_RPS`] was blocked.
    Floor,
}

impl Search {
    pub(super) fn new(start: f64, ceiling: Option<f64>) -> Self {
        Search { start, ceiling, clean: None, blocked: None }
    }

    pub(super) fn next(&self) -> Next {
        let capped = |rps: f64| self.ceiling.map_or(rps, |cap| rps.min(cap));
        match (self.clean, self.blocked) {
            (None, None) => Next::Try(capped(self.start)),
            (Some(clean), None) => match self.ceiling {
                Some(cap) if clean >= cap => Next::AtCeiling(cap),
                _ => Next::Try(capped(clean * GROWTH)),
            },
            (None, Some(blocked)) if blocked / 2.0 < FLOOR_RPS => Next::Floor,
            (None, Some(blocked)) => Next::Try(blocked / 2.0),
            (Some(clean), Some(blocked)) if blocked <= clean * PRECISION => Next::Converged,
            (Some(clean), Some(blocked)) => Next::Try((clean * blocked).sqrt()),
        }
    }

    pub(super) fn record(&mut self, rps: f64, clean: bool) {
        if clean {
            self.clean = Some(self.clean.map_or(rps, |seen| seen.max(rps)));
        } else {
            self.blocked = Some(self.blocked.map_or(rps, |seen| seen.min(rps)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_ramps_then_bisects_to_five_percent() {
        let limit = 20.0;
        let mut search = Search::new(4.0, None);
        let mut tried = Vec::new();
        let (clean, blocked) = loop {
            match search.next() {
                Next::Try(rps) => {
                    tried.push(rps);
                    search.record(rps, rps < limit);
                }
                Next::Converged => break (search.clean.unwrap(), search.blocked.unwrap()),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(&tried[..5], &[4.0, 6.0, 9.0, 13.5, 20.25], "×1.5 until the first block");
        assert!(tried[5..].iter().all(|r| *r > 13.5 && *r < 20.25), "then inside the bracket: {tried:?}");
        assert!(clean < limit && blocked >= limit && blocked / clean <= PRECISION, "{clean} {blocked}");
        assert!(tried.len() <= 10, "a handful of steps: {tried:?}");
    }

    #[test]
    fn a_blocked_start_halves_down_to_the_floor() {
        let mut search = Search::new(1.0, None);
        let mut tried = Vec::new();
        while let Next::Try(rps) = search.next() {
            tried.push(rps);
            search.record(rps, false);
        }
        assert_eq!(search.next(), Next::Floor);
        assert_eq!(&tried[..3], &[1.0, 0.5, 0.25]);
        assert!(tried.iter().all(|r| *r >= FLOOR_RPS), "{tried:?}");
        let mut search = Search::new(4.0, None);
        search.record(4.0, false);
        search.record(2.0, true);
        assert_eq!(search.next(), Next::Try((8.0f64).sqrt()), "a clean rate under a blocked start bisects");
    }

    #[test]
    fn a_crawl_delay_caps_the_ramp() {
        let mut search = Search::new(1.0, Some(2.0));
        assert_eq!(search.next(), Next::Try(1.0));
        search.record(1.0, true);
        assert_eq!(search.next(), Next::Try(1.5));
        search.record(1.5, true);
        assert_eq!(search.next(), Next::Try(2.0));
        search.record(2.0, true);
        assert_eq!(search.next(), Next::AtCeiling(2.0));
    }
}
