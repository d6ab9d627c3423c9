//! The README renders as written: every table ends before the text that follows it, and
//! each row has as many cells as its header. A line of prose straight after a table's last
//! row is taken into the table by Markdown renderers (GitHub's among them), cutting it off
//! from the rows above, as once happened to the exit codes.
#![allow(clippy::unwrap_used)]

/// The cells of a table row, `None` for a line that is not one.
fn cells(line: &str) -> Option<usize> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    // `\|` is a pipe inside a cell, and a pipe inside inline code is one too.
    let mut count = 1;
    let mut in_code = false;
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '`' => in_code = !in_code,
            '|' if !in_code && !escaped => count += 1,
            _ => {}
        }
        escaped = false;
    }
    Some(count)
}

#[test]
fn every_readme_table_is_whole_and_ends_at_a_blank_line() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let mut in_fence = false;
    let mut header: Option<(usize, usize)> = None;
    let mut tables = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        match (cells(line), header) {
            (Some(n), None) => {
                header = Some((i + 1, n));
                tables += 1;
            }
            (Some(n), Some((at, expected))) => {
                assert_eq!(
                    n,
                    expected,
                    "README.md line {}: {n} cells in a table whose header (line {at}) has {expected}",
                    i + 1
                );
            }
            (None, Some((at, _))) => {
                assert!(
                    line.trim().is_empty(),
                    "README.md line {}: text straight after the table of line {at} is read as part of it; leave a blank line: {line:?}",
                    i + 1
                );
                header = None;
            }
            (None, None) => {}
        }
    }
    assert!(tables >= 3, "the README's tables were found: {tables}");
}
