//! The grammar of a calendar date, `YYYY-MM-DD`, as `sitemap_since` takes it.

use std::fmt;

/// A day of the proleptic Gregorian calendar, checked: the month is 1 to 12 and the day
/// exists in that month.
///
/// # Examples
///
/// ```
/// let date = spider_settings::parse_date("2026-01-01").unwrap();
/// assert_eq!(date.to_string(), "2026-01-01");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(jiff::civil::Date);

impl Date {
    /// The date of `year`, `month` (1–12) and `day`, when it exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_settings::Date;
    /// assert!(Date::new(2024, 2, 29).is_some());
    /// assert!(Date::new(2025, 2, 29).is_none());
    /// ```
    pub fn new(year: u16, month: u8, day: u8) -> Option<Date> {
        let year = i16::try_from(year).ok()?;
        let (month, day) = (i8::try_from(month).ok()?, i8::try_from(day).ok()?);
        jiff::civil::Date::new(year, month, day).ok().map(Date)
    }

    /// Its first second, in seconds since 1970-01-01 UTC (negative before).
    ///
    /// # Examples
    ///
    /// ```
    /// let date = spider_settings::parse_date("2026-01-01").unwrap();
    /// assert_eq!(date.first_second(), 20_454 * 86_400);
    /// ```
    pub fn first_second(&self) -> i64 {
        let midnight = self.0.to_datetime(jiff::civil::Time::midnight());
        midnight.to_zoned(jiff::tz::TimeZone::UTC).map_or(0, |at| at.timestamp().as_second())
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Parse a date written `YYYY-MM-DD`, such as `2026-01-01`.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// assert!(spider_settings::parse_date("2026-01-31").is_ok());
/// assert!(spider_settings::parse_date("2026-02-31").unwrap_err().contains("no day 31"));
/// assert!(spider_settings::parse_date("1 Jan 2026").unwrap_err().contains("YYYY-MM-DD"));
/// ```
pub fn parse_date(text: &str) -> Result<Date, String> {
    let text = text.trim();
    let bad = || format!("`{text}` is not a date; write it as YYYY-MM-DD, such as `2026-01-01`");
    let mut parts = text.split('-');
    let (Some(year), Some(month), Some(day), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let digits = |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_digit());
    if !(digits(year, 4) && digits(month, 2) && digits(day, 2)) {
        return Err(bad());
    }
    let (Ok(year), Ok(month), Ok(day)) = (year.parse(), month.parse(), day.parse()) else {
        return Err(bad());
    };
    Date::new(year, month, day).ok_or_else(|| match month {
        1..=12 => format!("`{text}` is not a date: month {month} has no day {day}"),
        _ => format!("`{text}` is not a date: there is no month {month}; write 01 to 12"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_seconds_match_known_dates() {
        let days = |y, m, d| Date::new(y, m, d).map(|date| date.first_second() / 86_400);
        assert_eq!(days(1970, 1, 1), Some(0));
        assert_eq!(days(2000, 3, 1), Some(11_017));
        assert_eq!(days(2025, 1, 1), Some(20_089));
        assert_eq!(days(2024, 12, 31).zip(days(2025, 1, 1)).map(|(a, b)| b - a), Some(1));
        assert_eq!(days(2024, 2, 29).zip(days(2024, 3, 1)).map(|(a, b)| b - a), Some(1));
        assert_eq!(Date::new(1969, 12, 31).map(|date| date.first_second()), Some(-86_400));
    }

    #[test]
    fn only_real_dates_in_the_one_spelling_parse() {
        assert_eq!(parse_date(" 2026-01-01 ").map(|d| d.to_string()), Ok("2026-01-01".to_owned()));
        for bad in ["2026-1-1", "2026/01/01", "2026-01-01T00:00", "26-01-01", "", "2026-13-01", "2026-00-10"]
        {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
        assert!(parse_date("2026-13-01").unwrap_err().contains("no month 13"));
    }
}
