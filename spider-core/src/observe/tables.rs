//! The reports of a state file and a fleet as a person reads them: dates, durations and
//! tables; and times as the stores keep them.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A unix time in milliseconds as RFC 3339, in the reports' JSON: the one format of every
/// time the crawl writes (the fields keep milliseconds in Rust).
pub(crate) fn rfc3339_ms<S: serde::Serializer>(ms: &i64, to: S) -> Result<S::Ok, S::Error> {
    let since = Duration::from_millis(u64::try_from(*ms).unwrap_or(0));
    to.serialize_str(&spider_settings::rfc3339(UNIX_EPOCH + since))
}

/// [`rfc3339_ms`] of a time that may be missing: `null` then.
pub(crate) fn rfc3339_ms_or_null<S: serde::Serializer>(ms: &Option<i64>, to: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => rfc3339_ms(ms, to),
        None => to.serialize_none(),
    }
}

/// A duration in seconds, readably: `0.42 s`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
pub(crate) fn elapsed(secs: f64) -> String {
    if secs < 60.0 {
        return format!("{secs:.prec$} s", prec = if secs < 1.0 { 2 } else { 1 });
    }
    let whole = Duration::from_secs_f64(secs).as_secs();
    if whole < 3600 {
        format!("{} min {:02} s", whole / 60, whole % 60)
    } else {
        format!("{} h {:02} min", whole / 3600, whole % 3600 / 60)
    }
}

/// Rows under a header, each column as wide as its widest cell; numbers (`true`) to the
/// right.
pub(crate) fn table(
    f: &mut fmt::Formatter<'_>,
    columns: &[(&str, bool)],
    rows: &[Vec<String>],
) -> fmt::Result {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (title, _))| {
            rows.iter()
                .filter_map(|row| row.get(i))
                .map(|cell| cell.chars().count())
                .fold(title.len(), usize::max)
        })
        .collect();
    let header: Vec<String> = columns.iter().map(|(title, _)| (*title).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::from("  ");
        for ((cell, (_, number)), width) in row.iter().zip(columns).zip(&widths) {
            line.push_str("  ");
            if *number {
                line.push_str(&format!("{cell:>width$}"));
            } else {
                line.push_str(&format!("{cell:<width$}"));
            }
        }
        writeln!(f, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Milliseconds since the unix epoch, as the state file and the cache keep times.
pub(crate) fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
