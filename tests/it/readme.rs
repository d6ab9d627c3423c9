//! The README renders as written: every table ends before the text that follows it, and
//! each row has as many cells as its header. A line of prose straight after a table's last
//! row is taken into the table by Markdown renderers (GitHub's among them), cutting it off
//! from the rows above, as once happened to the exit codes.
#![allow(clippy::unwrap_used)]

/// The cells of a table row, `None` for a line that is not one.
fn cells(line: &str) -> Option<usize> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    // `\|` is a pipe inside a cell; GitHub splits a cell at any other, inline code too.
    let mut count = 1;
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '|' if !escaped => count += 1,
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
                    "README.md line {}: text straight after the table of line {at} is read as part of it; \
                        leave a blank line: {line:?}",
                    i + 1
                );
                header = None;
            }
            (None, None) => {}
        }
    }
    assert!(tables >= 3, "the README's tables were found: {tables}");
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// What `text` writes in backticks, each span once.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The lines of the README section headed `heading`, up to the next heading of its level.
fn section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let start = readme.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("README has no `{heading}`"));
    let level = heading.split(' ').next().unwrap_or("##");
    let rest = &readme[start + heading.len() + 2..];
    let end = rest.find(&format!("\n{level} ")).unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn the_settings_table_is_the_settings_own_and_every_key_readme_names_is_one() {
    let readme = readme();
    let settings = section(&readme, "## Settings");
    let table = spider_settings::markdown();
    assert!(
        settings.contains(&table),
        "README's `## Settings` must hold the settings' own table, as spider_settings::markdown() writes \
            it:\n{table}"
    );
    for (name, _) in spider_settings::CODE_ONLY {
        assert!(
            settings.contains(&format!("`{name}`")),
            "README's `## Settings` says why `{name}` is code only"
        );
    }
    // The other tables of keys (`| key | ...`) name only keys there are.
    let mut in_keys = false;
    for line in readme.lines() {
        if line.starts_with("| key |") {
            in_keys = true;
            continue;
        }
        if !line.starts_with('|') {
            in_keys = false;
        }
        if !in_keys || line.starts_with("| ---") {
            continue;
        }
        for name in quoted(line.split('|').nth(1).unwrap_or_default()) {
            assert!(
                spider_settings::find(name).is_some(),
                "README names `{name}` as a key, and there is none: {line}"
            );
        }
    }
}

#[test]
fn every_failure_reason_is_in_readme_and_readme_lists_no_other() {
    let readme = readme();
    let listed = section(&readme, "### Why a request was given up");
    let reasons: Vec<&str> = spiderling::Reason::all().map(spiderling::Reason::as_str).collect();
    for reason in &reasons {
        assert!(
            listed.contains(&format!("`{reason}`")),
            "README does not list the failure reason `{reason}`"
        );
    }
    for line in listed.lines().filter(|line| line.starts_with("| `")) {
        for named in quoted(line.split('|').nth(1).unwrap_or_default()) {
            assert!(
                reasons.contains(&named),
                "README lists `{named}`, which is no reason a request is given up for"
            );
        }
    }
}
