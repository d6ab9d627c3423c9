//! `<lastmod>` against `sitemap_since`: the W3C datetime grammar the protocol uses (a
//! year, a month, a day, or a day with a time and its zone) read as the latest moment it
//! may mean, so a date keeps its whole day.

use spider_settings::Date;

const DAY: i64 = 86_400;

/// The first second of a UTC day, before which a sitemap URL is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Since {
    /// Seconds since the epoch.
    cutoff: i64,
}

impl Since {
    pub(crate) fn new(day: Date) -> Self {
        Since { cutoff: day.days_since_epoch() * DAY }
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
    let (day, time) = match text.split_once('T') {
        Some((day, time)) => (day, Some(time)),
        None => (text, None),
    };
    let mut parts = day.split('-');
    let year: u16 = number(parts.next()?, 4)?;
    // Each part is optional, but one that is there must be two digits.
    let mut two_digits = || match parts.next() {
        Some(part) => number::<u8>(part, 2).map(Some),
        None => Some(None),
    };
    let month = two_digits()?;
    let day_of_month = two_digits()?;
    if parts.next().is_some() {
        return None;
    }
    let start = |month, day| Date::new(year, month, day).map(|date| date.days_since_epoch() * DAY);
    match (month, day_of_month, time) {
        (None, None, None) => Some(start(1, 1)? + days_in_year(year) * DAY - 1),
        (Some(month), None, None) => {
            let next =
                if month == 12 { start(1, 1)? + days_in_year(year) * DAY } else { start(month + 1, 1)? };
            start(month, 1).map(|_| next - 1)
        }
        (Some(month), Some(day), None) => Some(start(month, day)? + DAY - 1),
        (Some(month), Some(day), Some(time)) => Some(start(month, day)? + seconds_of_day(time)?),
        _ => None,
    }
}

/// `hh:mm`, `hh:mm:ss` or `hh:mm:ss.s`, then `Z`, `±hh:mm` or nothing: seconds from the
/// day's UTC midnight (negative or past a day when the zone moves it).
fn seconds_of_day(time: &str) -> Option<i64> {
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(at) => time.split_at(at),
        None => (time, ""),
    };
    let mut fields = clock.split(':');
    let hours: i64 = number(fields.next()?, 2)?;
    let minutes: i64 = number(fields.next()?, 2)?;
    let seconds: i64 = match fields.next() {
        // Fractions of a second say nothing a second does not.
        Some(seconds) => number(seconds.split('.').next()?, 2)?,
        None => 0,
    };
    if fields.next().is_some() || hours > 24 || minutes > 59 || seconds > 60 {
        return None;
    }
    let east = match offset {
        "" | "Z" | "z" => 0,
        _ => {
            let (sign, zone) = offset.split_at(1);
            let (zone_hours, zone_minutes) = zone.split_once(':').unwrap_or((zone, "00"));
            let minutes = number::<i64>(zone_hours, 2)? * 60 + number::<i64>(zone_minutes, 2)?;
            if sign == "-" {
                -minutes * 60
            } else {
                minutes * 60
            }
        }
    };
    Some(hours * 3600 + minutes * 60 + seconds - east)
}

/// Exactly `digits` ASCII digits as a number.
fn number<T: std::str::FromStr>(text: &str, digits: usize) -> Option<T> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

fn days_in_year(year: u16) -> i64 {
    if Date::new(year, 2, 29).is_some() {
        366
    } else {
        365
    }
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
