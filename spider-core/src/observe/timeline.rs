//! The crawl's figures second by second, kept for the dashboard and the report: the last
//! ten minutes at full resolution for the live page, the whole crawl at a resolution that
//! halves whenever it reaches its cap, so a crawl of days costs the same memory as one of
//! an hour. Also the adaptive controllers' cuts, as marked events, and a few examples of
//! each reason requests were given up for.
//!
//! Kept only when `dashboard` or `report` asks for it: the dispatcher records into it as it
//! publishes each [`Live`] snapshot, and the dashboard reads it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::observe::gauge::{HostLive, Live};

/// Points of the live page: ten minutes of one a second.
const RECENT: usize = 600;
/// Points of the whole crawl before its resolution halves.
const WHOLE: usize = 1800;
/// Busiest hosts recorded in each point.
const HOSTS_PER_POINT: usize = 5;
/// Events kept; older ones are forgotten first.
const EVENTS: usize = 2000;
/// Examples kept of each failure reason.
const EXAMPLES: usize = 3;

/// One second of the crawl.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Point {
    /// Seconds since the crawl started.
    pub(crate) t: f64,
    /// Totals so far.
    pub(crate) pages: u64,
    pub(crate) items: u64,
    pub(crate) requests: u64,
    pub(crate) retries: u64,
    pub(crate) failures: u64,
    pub(crate) blocked: u64,
    /// Rates over the sliding window, or since the previous point for items.
    pub(crate) pages_per_sec: f64,
    pub(crate) items_per_sec: f64,
    pub(crate) block_rate: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) queued: usize,
    pub(crate) in_flight: usize,
    pub(crate) proxy_spend: f64,
    /// The busiest hosts: block rate and adaptive limits.
    pub(crate) hosts: Vec<HostPoint>,
}

/// One host in a [`Point`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct HostPoint {
    pub(crate) host: String,
    pub(crate) block_rate: f64,
    pub(crate) limit: usize,
    pub(crate) rate: Option<f64>,
}

/// What the adaptive controller did to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EventKind {
    /// Block rate above the target: slots and rate cut.
    Cut,
    /// Mostly blocks: the circuit breaker paused the host.
    Tripped,
}

/// An adaptive change, marked on the charts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Event {
    pub(crate) t: f64,
    pub(crate) host: String,
    pub(crate) kind: EventKind,
    /// The host's limits after the change.
    pub(crate) limit: usize,
    pub(crate) rate: f64,
    pub(crate) block_rate: Option<f64>,
}

/// A request given up: its URL and what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Example {
    pub(crate) url: String,
    pub(crate) message: String,
}

/// The recorded crawl.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    recent: VecDeque<Point>,
    whole: Vec<Point>,
    /// Seconds between the points of `whole` (but its last, which moves with the crawl).
    stride: f64,
    events: VecDeque<Event>,
    examples: BTreeMap<String, Vec<Example>>,
    /// The latest snapshot, for the hosts table and the statuses.
    latest: Live,
}

impl Timeline {
    /// Append a second's snapshot to both series.
    pub(crate) fn record(&mut self, live: &Live) {
        let point = self.point(live);
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(point.clone());
        self.keep(point);
        self.latest = live.clone();
    }

    fn point(&self, live: &Live) -> Point {
        let items_per_sec = match self.recent.back() {
            Some(last) if live.counts.elapsed_secs > last.t => {
                live.counts.items.saturating_sub(last.items) as f64 / (live.counts.elapsed_secs - last.t)
            }
            _ => 0.0,
        };
        Point {
            t: (live.counts.elapsed_secs * 1e3).round() / 1e3,
            pages: live.counts.pages,
            items: live.counts.items,
            requests: live.counts.requests,
            retries: live.counts.retries,
            failures: live.failures,
            blocked: live.counts.blocked,
            pages_per_sec: live.pages_per_sec,
            items_per_sec,
            block_rate: live.block_rate,
            p50_ms: live.latency_p50_ms,
            p95_ms: live.latency_p95_ms,
            p99_ms: live.latency_p99_ms,
            queued: live.queued,
            in_flight: live.in_flight,
            proxy_spend: live.proxy_spend,
            hosts: live.hosts.iter().take(HOSTS_PER_POINT).map(HostPoint::from).collect(),
        }
    }

    /// The whole crawl's series: its last point is always the newest second, and is
    /// replaced by the next unless it is a stride past the point before it; at the cap
    /// every other point goes and the stride doubles.
    fn keep(&mut self, point: Point) {
        // The last point stays only if it is a stride past the one before it.
        if let [.., before, last] = self.whole.as_slice() {
            if last.t - before.t < self.stride {
                self.whole.pop();
            }
        }
        self.whole.push(point);
        if self.whole.len() > WHOLE {
            let last = self.whole.pop();
            self.whole = std::mem::take(&mut self.whole).into_iter().step_by(2).collect();
            self.whole.extend(last);
            self.stride = if self.stride == 0.0 { 2.0 } else { self.stride * 2.0 };
        }
    }

    /// An adaptive change to a host.
    pub(crate) fn event(&mut self, event: Event) {
        if self.events.len() == EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// A request given up: kept as an example when its reason has fewer than three.
    pub(crate) fn failure(&mut self, reason: &str, url: &str, message: String) {
        let examples = self.examples.entry(reason.to_owned()).or_default();
        if examples.len() < EXAMPLES {
            examples.push(Example { url: url.to_owned(), message });
        }
    }
}

/// What the dashboard and the report read.
#[cfg(feature = "observe")]
impl Timeline {
    /// The last ten minutes, one point a second.
    pub(crate) fn recent(&self) -> impl Iterator<Item = &Point> {
        self.recent.iter()
    }

    /// The whole crawl, at the resolution its length allows.
    pub(crate) fn whole(&self) -> &[Point] {
        &self.whole
    }

    /// The events since `t` seconds.
    pub(crate) fn events_since(&self, t: f64) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(move |event| event.t >= t)
    }

    pub(crate) fn examples(&self, reason: &str) -> &[Example] {
        self.examples.get(reason).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn latest(&self) -> &Live {
        &self.latest
    }
}

impl From<&HostLive> for HostPoint {
    fn from(host: &HostLive) -> Self {
        HostPoint {
            host: host.host.clone(),
            block_rate: host.block_rate,
            limit: host.limit,
            rate: host.rate_per_sec,
        }
    }
}

/// The timeline shared by the dispatcher, which records, and the dashboard, which reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder(Arc<Mutex<Timeline>>);

impl Recorder {
    /// The timeline, to record into or read; a panic elsewhere while it was held does
    /// not make it unreadable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Timeline> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(all(test, feature = "observe"))]
mod tests {
    use super::*;
    use crate::observe::counters::Counts;

    fn second(t: f64, items: u64) -> Live {
        Live {
            counts: Counts { elapsed_secs: t, items, pages: items, ..Counts::default() },
            ..Live::default()
        }
    }

    #[test]
    fn the_live_series_keeps_ten_minutes_and_items_per_second_come_from_the_last_point() {
        let mut timeline = Timeline::default();
        for t in 0..700 {
            timeline.record(&second(f64::from(t), u64::try_from(t).unwrap_or(0) * 3));
        }
        let recent: Vec<&Point> = timeline.recent().collect();
        assert_eq!(recent.len(), RECENT);
        assert_eq!((recent[0].t, recent[599].t), (100.0, 699.0));
        assert!(recent.iter().all(|p| (p.items_per_sec - 3.0).abs() < 1e-9));
        assert_eq!(timeline.latest().counts.items, 699 * 3);
    }

    #[test]
    fn the_whole_series_halves_its_resolution_at_the_cap_and_keeps_the_newest_second() {
        let mut timeline = Timeline::default();
        // Ten hours, one point a second.
        let seconds = 36_000;
        for t in 0..=seconds {
            timeline.record(&second(f64::from(t), 0));
            assert!(timeline.whole().len() <= WHOLE, "bounded at {t} s");
        }
        let whole = timeline.whole();
        assert_eq!(whole.first().map(|p| p.t), Some(0.0), "the start stays");
        assert_eq!(whole.last().map(|p| p.t), Some(f64::from(seconds)), "the newest second stays");
        // 36,000 s in at most 1,800 points: 32 s apart, evenly but for the moving tail.
        let gaps: Vec<f64> = whole.windows(2).map(|w| w[1].t - w[0].t).collect();
        let (last_gap, spaced) = gaps.split_last().unwrap_or((&0.0, &[]));
        assert!(spaced.iter().all(|gap| (*gap - 32.0).abs() < 1e-9), "{:?}", &gaps[..5]);
        assert!(*last_gap <= 32.0);
        assert!(whole.len() > WHOLE / 2, "{} points: no more thinned than needed", whole.len());
    }

    #[test]
    fn events_are_bounded_and_read_from_a_time_and_failures_keep_three_examples() {
        let mut timeline = Timeline::default();
        for i in 0..EVENTS + 10 {
            timeline.event(Event {
                t: i as f64,
                host: "http://a.example:80".to_owned(),
                kind: EventKind::Cut,
                limit: 4,
                rate: 8.0,
                block_rate: Some(0.1),
            });
        }
        assert_eq!(timeline.events_since(0.0).count(), EVENTS);
        assert_eq!(timeline.events_since(0.0).next().map(|e| e.t), Some(10.0), "the oldest go first");
        assert_eq!(timeline.events_since(EVENTS as f64).count(), 10);
        for i in 0..5 {
            timeline.failure("status", &format!("http://a.example/{i}"), format!("404 #{i}"));
        }
        let urls: Vec<&str> = timeline.examples("status").iter().map(|e| e.url.as_str()).collect();
        assert_eq!(urls, ["http://a.example/0", "http://a.example/1", "http://a.example/2"]);
        assert!(timeline.examples("timeout").is_empty());
    }

    #[test]
    fn a_point_holds_the_busiest_hosts_only() {
        let hosts = (0..8)
            .map(|i| HostLive {
                host: format!("http://h{i}.example:80"),
                block_rate: 0.0,
                answered: 8 - i,
                limit: 2,
                rate_per_sec: Some(3.0),
                tripped: false,
            })
            .collect();
        let mut timeline = Timeline::default();
        timeline.record(&Live { hosts, ..Live::default() });
        let point = timeline.recent().next().cloned();
        let names: Vec<String> =
            point.map(|p| p.hosts.into_iter().map(|h| h.host).collect()).unwrap_or_default();
        assert_eq!(names.len(), HOSTS_PER_POINT);
        assert_eq!(names[0], "http://h0.example:80");
    }
}
