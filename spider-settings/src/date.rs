//! The grammar of a calendar date, `YYYY-MM-DD`, as `sitemap_since` takes it; and the
//! arithmetic that turns a date into a day count, which the sitemap reader also uses to
//! compare `<lastmod>` values with it.

use std::fmt;

/// A day of the proleptic Gregorian calendar, checked: the month is 1 to 12 and the day
/// exists in that month.
///
/// # Examples
///
/// ```
/// let date = spider_settings::parse_date("2026-01-01").unwrap();
/// assert_eq!(date.days_since_epoch(), 20_454);
/// assert_eq!(date.to_string(), "2026-01-01");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: u16,
    month: u8,
    day: u8,
}

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
        let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days_in_month = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days_in_month).contains(&day).then_some(Date { year, month, day })
    }

    /// Days from 1970-01-01 to this date; negative before it.
    pub fn days_since_epoch(&self) -> i64 {
        // Counted in eras of 400 years starting on 1 March, where leap days fall at the
        // end of a year and every era has the same number of days.
        let march_based = if self.month <= 2 { i64::from(self.year) - 1 } else { i64::from(self.year) };
        let era = march_based.div_euclid(400);
        let year_of_era = march_based - era * 400;
        let month_from_march = (i64::from(self.month) + 9) % 12;
        let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(self.day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
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
    fn day_counts_match_known_dates() {
        let days = |y, m, d| Date::new(y, m, d).map(|date| date.days_since_epoch());
        assert_eq!(days(1970, 1, 1), Some(0));
        assert_eq!(days(1969, 12, 31), Some(-1));
        assert_eq!(days(2000, 3, 1), Some(11_017));
        assert_eq!(days(2025, 1, 1), Some(20_089));
        assert_eq!(days(2024, 12, 31).zip(days(2025, 1, 1)).map(|(a, b)| b - a), Some(1));
        assert_eq!(days(2024, 2, 29).zip(days(2024, 3, 1)).map(|(a, b)| b - a), Some(1));
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
