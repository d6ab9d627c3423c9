//! A time as RFC 3339 text in UTC, to the millisecond: the one format of every time the
//! crawl writes (a `#[page(fetched_at)]` field, the failures file, a state file's report).

use std::time::SystemTime;

use jiff::Timestamp;

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ`; a time before 1970 reads as 1970-01-01.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let time = UNIX_EPOCH + Duration::from_millis(951_782_400_005);
/// assert_eq!(spider_settings::rfc3339(time), "2000-02-29T00:00:00.005Z");
/// ```
pub fn rfc3339(time: SystemTime) -> String {
    let stamp = Timestamp::try_from(time).unwrap_or(Timestamp::UNIX_EPOCH).max(Timestamp::UNIX_EPOCH);
    stamp.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A unix time in milliseconds as a person reads it in a report: `2025-06-01 14:03:22
/// UTC`; one out of jiff's range (past the year 9999) as the epoch.
///
/// # Examples
///
/// ```
/// assert_eq!(spider_settings::utc_date(951_782_400_005), "2000-02-29 00:00:00 UTC");
/// ```
pub fn utc_date(ms: i64) -> String {
    let stamp = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
    stamp.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(seconds: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis)
    }

    #[test]
    fn known_moments() {
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(951_782_400, 5)), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(at(1_735_689_599, 999)), "2024-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(at(4_107_542_400, 0)), "2100-03-01T00:00:00.000Z");
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(1)), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn dates_agree_with_http_dates_over_four_centuries() {
        const MONTHS: [&str; 12] =
            ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        // A step of a prime number of seconds lands on every kind of day and hour.
        for seconds in (0..253_402_300_799_u64).step_by(86_400 * 13 + 3_607) {
            let ours = rfc3339(at(seconds, 0));
            let http = httpdate::fmt_http_date(at(seconds, 0)); // "Sun, 06 Nov 1994 08:49:37 GMT"
            let month = MONTHS[ours[5..7].parse::<usize>().unwrap() - 1];
            let expected = format!("{} {month} {} {}", &ours[8..10], &ours[0..4], &ours[11..19]);
            assert_eq!(&http[5..25], expected, "{seconds}");
        }
    }
}
