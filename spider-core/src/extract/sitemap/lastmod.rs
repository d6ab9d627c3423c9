//! `<lastmod>` against `sitemap_since`: the W3C datetime grammar the protocol uses (a
//! year, a month, a day, or a day with a time and its zone) read as the latest moment it
//! may mean, so a date keeps its whole day.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// The first second of a UTC day, before which a sitemap URL is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Since {
    /// Seconds since the epoch.
    cutoff: i64,
}

impl Since {
    pub(crate) fn new(day: spider_settings::Date) -> Self {
        Since { cutoff: day.first_second() }
    }

    /// Whether a URL with this `<lastmod>` is kept: one that may be on or after the day.
    /// A `<lastmod>` that does not read as a W3C datetime says nothing, so it keeps the URL.
    pub(crate) fn keeps(&self, lastmod: &str) -> bool {
        latest_moment(lastmod).is_none_or(|moment| moment >= self.cutoff)
    }
}

/// The last second (since the epoch, UTC) that `text` may mean: `2025` is any time in
/// 2025, so its last second; `2025-12-31` its last second; `2025-12-31T23:30:00-01:00`
/// exactly that (fractions of a second dropped). A time without a zone is taken as UTC.
fn latest_moment(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some((_, time)) = text.split_once(['T', 't']) {
        // The W3C grammar's time has minutes at least, where ISO 8601 has `T10` too.
        if time.as_bytes().get(2) != Some(&b':') {
            return None;
        }
        let moment = match text.parse::<Timestamp>() {
            Ok(moment) => moment,
            Err(_) => utc(text.parse::<DateTime>().ok()?)?,
        };
        return Some(moment.as_second());
    }
    let mut parts = text.split('-');
    let year: i16 = number(parts.next()?, 4)?;
    // Each part is optional, but one that is there must be two digits.
    let mut two_digits = || match parts.next() {
        Some(part) => number::<i8>(part, 2).map(Some),
        None => Some(None),
    };
    let month = two_digits()?;
    let day_of_month = two_digits()?;
    if parts.next().is_some() {
        return None;
    }
    let last_day = match (month, day_of_month) {
        (None, None) => Date::new(year, 12, 31).ok()?,
        (Some(month), None) => Date::new(year, month, 1).ok()?.last_of_month(),
        (Some(month), Some(day)) => Date::new(year, month, day).ok()?,
        (None, Some(_)) => return None,
    };
    let last_second = Time::new(23, 59, 59, 0).ok()?;
    utc(last_day.to_datetime(last_second)).map(|moment| moment.as_second())
}

fn utc(time: DateTime) -> Option<Timestamp> {
    time.to_zoned(TimeZone::UTC).ok().map(|at| at.timestamp())
}

/// Exactly `digits` ASCII digits as a number.
fn number<T: std::str::FromStr>(text: &str, digits: usize) -> Option<T> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since(day: &str) -> Since {
        Since::new(spider_settings::parse_date(day).unwrap())
    }

    #[test]
    fn a_date_keeps_its_whole_day() {
        let new_year = since("2026-01-01");
        assert!(new_year.keeps("2026-01-01"));
        assert!(new_year.keeps("2026-03-15"));
        assert!(!new_year.keeps("2025-12-31"));
    }

    #[test]
    fn a_datetime_is_compared_in_utc() {
        let new_year = since("2026-01-01");
        assert!(new_year.keeps("2026-01-01T00:00:00Z"));
        assert!(!new_year.keeps("2025-12-31T23:59:59.999Z"));
        // 23:30 an hour west of Greenwich is already the new year in UTC...
        assert!(new_year.keeps("2025-12-31T23:30:00-01:00"));
        // ...and 00:30 an hour east of it is still the old one.
        assert!(!new_year.keeps("2026-01-01T00:30:00+01:00"));
        assert!(new_year.keeps("2026-01-01T10:15+02:00"));
        assert!(new_year.keeps("2026-01-01T10:15:00"));
    }

    #[test]
    fn a_year_or_a_month_may_mean_its_last_day() {
        let midsummer = since("2025-06-21");
        assert!(midsummer.keeps("2025"));
        assert!(midsummer.keeps("2025-06"));
        assert!(!midsummer.keeps("2025-05"));
        assert!(!midsummer.keeps("2024"));
        assert!(since("2024-12-31").keeps("2024"), "2024 is a leap year: its last day is the 366th");
        assert!(!since("2026-01-01").keeps("2025-12"));
    }

    #[test]
    fn what_does_not_read_as_a_date_keeps_the_url() {
        let new_year = since("2026-01-01");
        for odd in
            ["yesterday", "", "2025-13-01", "2025-02-30", "25-01-01", "2025-01-01T25:00Z", "2025-01-01T10"]
        {
            assert!(new_year.keeps(odd), "{odd:?}");
        }
    }
}
