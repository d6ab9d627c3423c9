//! `max_pages` and `max_items`: once either is reached the crawl admits nothing more,
//! finishes what is in flight and ends with
//! [`CrawlStatus::LimitReached`](crate::CrawlStatus::LimitReached).

use crate::observe::counters::{Counts, Tally};
use spider_settings::Config;

/// The crawl's page and item limits, counted over every run of its state file.
pub(super) struct Limits {
    max_pages: Option<u64>,
    max_items: Option<u64>,
    /// Pages and items of the state file's earlier runs.
    pages_before: u64,
    items_before: u64,
}

impl Limits {
    pub(super) fn new(config: &Config, earlier: Option<&Counts>) -> Self {
        Limits {
            max_pages: config.max_pages,
            max_items: config.max_items,
            pages_before: earlier.map_or(0, |counts| counts.pages),
            items_before: earlier.map_or(0, |counts| counts.items),
        }
    }

    /// Whether another request may be admitted with `in_flight` on their way. Requests in
    /// flight count as pages to come, so a crawl fetches `max_pages` pages and no more;
    /// one that fails makes room for another.
    pub(super) fn admit(&self, tally: &Tally, in_flight: usize) -> bool {
        let in_flight = u64::try_from(in_flight).unwrap_or(u64::MAX);
        let pages = self.pages(tally).saturating_add(in_flight);
        self.max_pages.is_none_or(|max| pages < max)
            && self.max_items.is_none_or(|max| self.items(tally) < max)
    }

    /// Whether a limit is reached: nothing more will be admitted.
    pub(super) fn reached(&self, tally: &Tally) -> bool {
        self.max_pages.is_some_and(|max| self.pages(tally) >= max)
            || self.max_items.is_some_and(|max| self.items(tally) >= max)
    }

    fn pages(&self, tally: &Tally) -> u64 {
        self.pages_before + tally.pages.get()
    }

    fn items(&self, tally: &Tally) -> u64 {
        self.items_before + tally.items.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_in_flight_count_and_earlier_runs_count() {
        let config = Config::new("t").max_pages(10).max_items(5);
        let earlier = Counts { pages: 4, items: 1, ..Counts::default() };
        let limits = Limits::new(&config, Some(&earlier));
        let tally = Tally::new();
        tally.pages.add(3);
        assert!(limits.admit(&tally, 2), "4 + 3 + 2 pages: one more fits");
        assert!(!limits.admit(&tally, 3), "4 + 3 + 3 pages: full");
        assert!(!limits.reached(&tally), "7 pages fetched: room once those in flight fail");
        tally.items.add(4);
        assert!(limits.reached(&tally) && !limits.admit(&tally, 0), "1 + 4 items");
    }

    #[test]
    fn no_limit_admits_everything() {
        let limits = Limits::new(&Config::new("t"), None);
        let tally = Tally::new();
        tally.pages.add(1_000_000);
        assert!(limits.admit(&tally, 10_000) && !limits.reached(&tally));
    }
}
