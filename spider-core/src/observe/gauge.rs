//! The gauges of a running crawl: block rate over a sliding window, pages per second,
//! latency percentiles, and what admission is doing, published once a second as a
//! [`Live`] snapshot for the progress line, the metrics endpoint and any watcher.
//!
//! The block rate is the share of answers judged blocked (see [`Answer`](crate::Answer))
//! among those received in the last [`WINDOW`]: a gauge that moves while the crawl runs,
//! not a total discovered at the end.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::observe::counters::Counts;

/// The span of the sliding windows.
pub const WINDOW: Duration = Duration::from_secs(10);

/// Answers within a sliding span of time: how many, how many blocked.
///
/// Answers within [`GRAIN`] of each other are kept together, so a window holds at most
/// span / grain entries however fast the answers come: the crawl's own window, which
/// every answer reaches, held one entry an answer (1.6 MB at 6,600 answers a second).
#[derive(Debug)]
pub(crate) struct Window {
    span: Duration,
    /// When each grain began, its answers, and the blocked among them.
    grains: VecDeque<(Instant, u32, u32)>,
    answered: usize,
    blocked: usize,
}

/// How close in time answers are to be kept as one entry of a [`Window`].
const GRAIN: Duration = Duration::from_millis(10);

impl Window {
    pub(crate) fn new(span: Duration) -> Self {
        Window { span, grains: VecDeque::new(), answered: 0, blocked: 0 }
    }

    pub(crate) fn record(&mut self, now: Instant, blocked: bool) {
        self.expire(now);
        match self.grains.back_mut() {
            Some((began, answered, in_it)) if now < *began + GRAIN => {
                *answered += 1;
                *in_it += u32::from(blocked);
            }
            _ => self.grains.push_back((now, 1, u32::from(blocked))),
        }
        self.answered += 1;
        self.blocked += usize::from(blocked);
    }

    pub(crate) fn expire(&mut self, now: Instant) {
        while let Some(&(began, answered, blocked)) = self.grains.front() {
            if began + self.span > now {
                break;
            }
            self.grains.pop_front();
            self.answered -= answered as usize;
            self.blocked -= blocked as usize;
        }
    }

    pub(crate) fn answered(&self) -> usize {
        self.answered
    }

    /// The blocked answers among them.
    pub(crate) fn blocked(&self) -> usize {
        self.blocked
    }

    /// Blocked answers over all answers; 0 with no answers.
    pub(crate) fn block_rate(&self) -> f64 {
        if self.answered == 0 {
            0.0
        } else {
            self.blocked as f64 / self.answered as f64
        }
    }

    /// Answers that were not blocks among those since `from` (to a [`GRAIN`]).
    pub(crate) fn good_since(&self, from: Instant) -> usize {
        let recent = self.grains.iter().rev().take_while(|(began, _, _)| *began >= from);
        recent.map(|&(_, answered, blocked)| (answered - blocked) as usize).sum()
    }

    /// Answers that were not blocks, per second of the span.
    pub(crate) fn good_per_second(&self) -> f64 {
        (self.answered - self.blocked) as f64 / self.span.as_secs_f64()
    }
}

/// The latest fetch latencies, for percentiles.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    recent: VecDeque<Duration>,
}

impl Latencies {
    const KEPT: usize = 2048;

    pub(crate) fn record(&mut self, latency: Duration) {
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(latency);
    }

    /// The 50th, 90th, 95th and 99th percentiles, in milliseconds.
    pub(crate) fn percentiles(&self) -> [f64; 4] {
        let mut sorted: Vec<Duration> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        [0.50, 0.90, 0.95, 0.99].map(|q| {
            let at = ((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1);
            sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e3)
        })
    }
}

/// One host in a [`Live`] snapshot.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct HostLive {
    /// The host key, `scheme://host:port`.
    pub host: String,
    /// Blocked answers over answers in the window.
    pub block_rate: f64,
    /// Answers in the window.
    pub answered: usize,
    /// Requests it may have in flight now (adaptive mode moves this).
    pub limit: usize,
    /// Requests per second it may start now, when adaptive mode paces it.
    pub rate_per_sec: Option<f64>,
    /// Paused by its circuit breaker: too many blocks.
    pub tripped: bool,
}

/// The figures of a running crawl, as of its last second.
///
/// # Examples
///
/// ```no_run
/// # async fn demo<S: spider_core::Spider>(spider: S) {
/// let crawler = spider_core::Crawler::new(spider);
/// let mut live = crawler.live();
/// tokio::spawn(async move {
///     while live.changed().await.is_ok() {
///         let now = live.borrow().clone();
///         eprintln!("{} pages, {:.1}/s, block rate {:.1}%", now.counts.pages, now.pages_per_sec, now.block_rate * 100.0);
///     }
/// });
/// crawler.run().await.ok();
/// # }
/// ```
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Live {
    /// Every counter so far (see [`Counts`]), with the seconds since the crawl started.
    #[serde(flatten)]
    pub counts: Counts,
    /// Requests given up so far.
    pub failures: u64,
    /// Answers that were not blocks, per second, over the window.
    pub pages_per_sec: f64,
    /// Blocked answers over answers, over the window, all hosts.
    pub block_rate: f64,
    /// Fetch latency percentiles of the latest answers, in milliseconds.
    pub latency_p50_ms: f64,
    /// 90th percentile.
    pub latency_p90_ms: f64,
    /// 95th percentile.
    pub latency_p95_ms: f64,
    /// 99th percentile.
    pub latency_p99_ms: f64,
    /// Requests in flight.
    pub in_flight: usize,
    /// Requests waiting in the frontier (retries included).
    pub queued: usize,
    /// The global concurrency limit.
    pub concurrency_limit: usize,
    /// Bytes through proxy gateways so far.
    pub proxy_bytes: u64,
    /// Their price at `proxy_price_per_gb`.
    pub proxy_spend: f64,
    /// The `proxy_budget`, if any.
    pub proxy_budget: Option<f64>,
    /// Items written to the state file's outbox that some table does not hold yet: more
    /// than a second's items while a table is down.
    pub items_held: u64,
    /// The 50 hosts with the most answers in the window, busiest first.
    pub hosts: Vec<HostLive>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_window_forgets_what_is_older_than_its_span() {
        let mut window = Window::new(Duration::from_secs(10));
        let start = Instant::now();
        window.record(start, true);
        tokio::time::advance(Duration::from_secs(5)).await;
        for _ in 0..3 {
            window.record(Instant::now(), false);
        }
        assert_eq!(window.answered(), 4);
        assert!((window.block_rate() - 0.25).abs() < 1e-9);
        tokio::time::advance(Duration::from_secs(5)).await;
        window.expire(Instant::now());
        assert_eq!((window.answered(), window.block_rate()), (3, 0.0));
        assert!((window.good_per_second() - 0.3).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_holds_a_bounded_number_of_entries_however_fast_the_answers_come() {
        let mut window = Window::new(Duration::from_secs(10));
        for n in 0..100_000u32 {
            window.record(Instant::now(), n % 10 == 0);
            tokio::time::advance(Duration::from_micros(200)).await;
        }
        assert_eq!(window.answered(), 50_000, "the last 10 s of answers, one every 0.2 ms");
        assert!((window.block_rate() - 0.1).abs() < 1e-3);
        assert!(window.grains.len() <= 1_001, "{} entries", window.grains.len());
    }

    #[test]
    fn percentiles_of_the_latest_latencies() {
        let mut latencies = Latencies::default();
        for ms in 1..=100 {
            latencies.record(Duration::from_millis(ms));
        }
        assert_eq!(latencies.percentiles(), [50.0, 90.0, 95.0, 99.0]);
        assert_eq!(Latencies::default().percentiles(), [0.0; 4]);
    }
}
