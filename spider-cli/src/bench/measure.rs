//! What a contender measures about itself: fetch latencies, CPU time, peak memory, and
//! the parse cost every contender pays the same way.

use std::path::Path;
use std::time::{Duration, Instant};

/// What one contender's run came to, as its process prints it for the parent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Run {
    /// HTML pages fetched and parsed (robots.txt and redirects left out).
    pub(crate) pages: usize,
    /// Of those, pages Spiderling read with its streaming engine, without a DOM (0 for
    /// the hand-written loops).
    #[serde(default)]
    pub(crate) streamed_pages: usize,
    /// Lines in the items file once the crawl is over.
    pub(crate) items: usize,
    /// From the first request to the items file flushed.
    pub(crate) elapsed_secs: f64,
    pub(crate) latency_p50_ms: f64,
    pub(crate) latency_p99_ms: f64,
    /// User and system CPU time of the whole process over the crawl, every thread.
    pub(crate) cpu_secs: f64,
    /// The process's peak resident set (`VmHWM`), start-up included.
    pub(crate) peak_rss_kb: u64,
}

impl Run {
    /// The run of a crawl that began at `started` with `cpu` seconds used, and wrote its
    /// items to `output`.
    pub(crate) fn finished(
        pages: usize,
        output: &Path,
        started: Instant,
        cpu: f64,
        mut latencies: Latencies,
    ) -> Run {
        Run {
            pages,
            streamed_pages: 0,
            items: lines_in(output),
            elapsed_secs: started.elapsed().as_secs_f64(),
            latency_p50_ms: latencies.percentile_ms(0.50),
            latency_p99_ms: latencies.percentile_ms(0.99),
            cpu_secs: cpu_seconds() - cpu,
            peak_rss_kb: peak_rss_kb(),
        }
    }
}

/// Fetch times, from sending the request to the whole body read.
#[derive(Debug, Default)]
pub(crate) struct Latencies(Vec<Duration>);

impl Latencies {
    pub(crate) fn record(&mut self, latency: Duration) {
        self.0.push(latency);
    }

    /// The `q` quantile (nearest rank) in milliseconds; 0 without samples.
    pub(crate) fn percentile_ms(&mut self, q: f64) -> f64 {
        self.0.sort_unstable();
        let at = ((self.0.len() as f64 * q).ceil() as usize).saturating_sub(1);
        self.0.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    }
}

/// The parse threads the Spiderling contender runs with, and that the report's parse bound
/// divides by: one per core, as Spiderling's default, but set explicitly so that the
/// report cannot assume a count the crawl did not use.
pub(crate) fn parse_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU seconds (user + system, all threads) this process has used so far, read from
/// `/proc/self/stat` (no `unsafe` for `getrusage`); its clock ticks are `USER_HZ`, which
/// Linux fixes at 100 for user space. 0 where there is no `/proc`.
pub(crate) fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name may hold spaces; the fields after it start with the state (field 3),
    // so utime (14) and stime (15) are the 12th and 13th after the closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// This process's peak resident set in KiB (`VmHWM` in `/proc/self/status`); 0 where
/// there is no `/proc`.
pub(crate) fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Burn `cost` of CPU on this thread: the stand-in for a spider's own work on a page,
/// spun rather than slept so it costs what real parsing would.
pub(crate) fn spin(cost: Duration) {
    let end = Instant::now() + cost;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// Lines in the items file: the items a contender actually wrote.
pub(crate) fn lines_in(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |bytes| bytes.iter().filter(|b| **b == b'\n').count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut latencies = Latencies::default();
        for ms in (1..=100).rev() {
            latencies.record(Duration::from_millis(ms));
        }
        assert_eq!(latencies.percentile_ms(0.5), 50.0);
        assert_eq!(latencies.percentile_ms(0.99), 99.0);
        assert_eq!(Latencies::default().percentile_ms(0.5), 0.0);
    }

    #[test]
    fn this_process_has_a_peak_and_spends_cpu() {
        let before = cpu_seconds();
        spin(Duration::from_millis(50));
        assert!(cpu_seconds() > before);
        assert!(peak_rss_kb() > 0);
    }
}
