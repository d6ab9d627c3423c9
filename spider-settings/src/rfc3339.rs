//! A time as RFC 3339 text in UTC, to the millisecond: the one format of every time the
//! crawl writes (a `#[page(fetched_at)]` field, the failures file, a state file's report).
//! Written here rather than pulled in with a date crate: it is one conversion.

use std::time::{SystemTime, UNIX_EPOCH};

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
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    // At most u64::MAX / 86,400 days: an i64 holds it.
    let (year, month, day) = civil_date(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60,
        since.subsec_millis()
    )
}

/// The Gregorian date `days` after 1970-01-01 (before it, when negative).
///
/// Counted from 0000-03-01, so that each year ends with February and its leap day: the
/// days fall into 400-year cycles of 146,097 days, a cycle's years into years of 365 days
/// (with a leap day every fourth year but the hundredth ones, and the four-hundredth
/// year's back), and a year's days into months of five-month rhythms of 153 days.
///
/// # Examples
///
/// ```
/// assert_eq!(spider_settings::civil_date(0), (1970, 1, 1));
/// assert_eq!(spider_settings::civil_date(11_016), (2000, 2, 29));
/// ```
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    const DAYS_TO_1970: i64 = 719_468; // from 0000-03-01 to 1970-01-01
    const CYCLE: i64 = 146_097; // days in 400 years
    let days = days + DAYS_TO_1970;
    let (cycle, day_of_cycle) = (days.div_euclid(CYCLE), days.rem_euclid(CYCLE));
    let year_of_cycle =
        (day_of_cycle - day_of_cycle / 1460 + day_of_cycle / 36_524 - day_of_cycle / (CYCLE - 1)) / 365;
    let day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle / 4 - year_of_cycle / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = cycle * 400 + year_of_cycle + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
