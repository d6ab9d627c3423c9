//! Setters for retries: how many, for which statuses, and the backoff between them.

use std::time::Duration;

use super::Config;
use crate::Backoff;
#[cfg(doc)]
use crate::DEFAULT_RETRY_STATUSES;

impl Config {
    /// Retries after the first attempt, for the retry statuses and transport errors
    /// (default 3).
    #[must_use]
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Statuses worth another attempt: 429 backs off its whole host, 403 is retried as a
    /// block, the rest as transient trouble; any other non-2xx is given up at once
    /// (default [`DEFAULT_RETRY_STATUSES`]).
    #[must_use]
    pub fn retry_statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.retry_statuses = statuses.into_iter().collect();
        self
    }

    /// Bounds of the wait before a retry: the first is `base`, each later one is drawn
    /// from `base..=3 × previous`, never above `cap`; a Retry-After is a floor
    /// (default 500 ms, 60 s).
    #[must_use]
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.backoff = Backoff { base, cap };
        self
    }
}
