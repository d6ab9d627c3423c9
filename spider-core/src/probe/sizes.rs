//! The probe's arithmetic: how long a step lasts and how many requests it plans, the
//! slots a rate needs, whether a step is clean, latency percentiles, the rate achieved,
//! and requests per minute.

use std::time::Duration;

use tokio::time::Instant;

use super::tuning::MIN_STEP_REQUESTS;

/// How long a step at `rps` lasts: `step`, or long enough for a few requests.
pub(super) fn step_length(step: Duration, rps: f64) -> Duration {
    step.max(Duration::from_secs_f64(MIN_STEP_REQUESTS / rps))
}

/// The most requests a step of `length` at `rps` sends: one at its start, then one a
/// spacing.
pub(super) fn planned_requests(rps: f64, length: Duration) -> u64 {
    (rps * length.as_secs_f64()).floor() as u64 + 1
}

/// Slots enough for `rps` when each request takes `latency` (Little's law), plus one so
/// a slow answer does not hold the pace back; within `cap`.
pub(super) fn slots_for(rps: f64, latency: Duration, cap: usize) -> usize {
    let needed = (rps * latency.as_secs_f64()).ceil() as usize + 1;
    needed.clamp(1, cap.max(1))
}

/// Whether `troubled` answers of `requests` stay within the target share.
pub(super) fn is_clean(troubled: u64, requests: u64, target: f64) -> bool {
    troubled as f64 <= target * requests as f64
}

/// The nearest-rank percentile `q` of sorted `values`.
pub(super) fn percentile(sorted: &[Duration], q: f64) -> Option<Duration> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// The rate requests left at: intervals over the time they spanned.
pub(super) fn achieved(sent_at: &[Instant]) -> Option<f64> {
    let span = sent_at.last()?.duration_since(*sent_at.first()?).as_secs_f64();
    (span > 0.0).then(|| (sent_at.len() - 1) as f64 / span)
}

/// Requests per minute for `rps`, rounded down: never above the rate found.
pub(super) fn rpm_of(rps: f64) -> u64 {
    (rps * 60.0).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates() {
        assert_eq!(slots_for(20.0, Duration::from_millis(1), 16), 2);
        assert_eq!(slots_for(20.0, Duration::from_millis(300), 16), 7);
        assert_eq!(slots_for(200.0, Duration::from_secs(1), 16), 16, "within the cap");
        assert_eq!(slots_for(1.0, Duration::ZERO, 0), 1);
        assert_eq!(step_length(Duration::from_secs(3), 20.0), Duration::from_secs(3));
        assert_eq!(step_length(Duration::from_secs(3), 0.5), Duration::from_secs(6), "at least 3 requests");
        assert_eq!(planned_requests(20.0, Duration::from_millis(1500)), 31);
        assert_eq!(rpm_of(17.9999), 1079, "rounded down, never up");
        let ms = |n| Duration::from_millis(n);
        assert_eq!(percentile(&[ms(1), ms(2), ms(3), ms(4)], 0.5), Some(ms(2)));
        assert_eq!(percentile(&[ms(1), ms(2), ms(3), ms(4)], 0.9), Some(ms(4)));
        assert_eq!(percentile(&[], 0.9), None);
        let start = Instant::now();
        assert_eq!(achieved(&[start, start + ms(500), start + ms(1000)]), Some(2.0));
        assert_eq!(achieved(&[start]), None);
        assert!(is_clean(0, 5, 0.01) && !is_clean(1, 50, 0.01) && is_clean(1, 100, 0.01));
    }
}
