//! Counts and sizes as a person reads them, for the summary and the reports.

/// A count with thousands separators: `41,203`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Bytes in the unit that keeps them readable: `812 B`, `81.2 kB`, `3.4 MB`, `1.20 GB`.
pub(crate) fn size(bytes: u64) -> String {
    let n = bytes as f64;
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{:.1} kB", n / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} MB", n / 1e6),
        _ => format!("{:.2} GB", n / 1e9),
    }
}
