//! The state file's schema and what names its parts: the schema's text and the versions
//! this build reads, columns added to older files, the rows of the items files, and the
//! paths and URIs SQLite opens.

use std::path::{Path, PathBuf};

/// The version of the schema this build reads and writes. A file of version 1 (before
/// `seen_log`) or 2 (before the checksums, `sums.rs`) is upgraded when opened for a crawl;
/// a file of any other version is refused.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// The versions this build upgrades: their files lack only tables, columns and facts
/// made when opened.
const UPGRADED_VERSIONS: [u32; 2] = [1, 2];

/// Whether this build reads a file of schema version `found`.
pub(crate) fn reads_version(found: Option<&str>) -> bool {
    std::iter::once(SCHEMA_VERSION)
        .chain(UPGRADED_VERSIONS)
        .any(|version| found == Some(version.to_string().as_str()))
}

/// The schema, with its documentation.
pub(super) const SCHEMA: &str = include_str!("schema.sql");

/// Add `columns` (name and type) to `table` where it lacks them: a file made before
/// them reads on.
pub(crate) fn add_columns(
    conn: &rusqlite::Connection,
    table: &str,
    columns: &[(&str, &str)],
) -> rusqlite::Result<()> {
    let mut select = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    let names = select.query_map([], |row| row.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    for (name, kind) in columns {
        if !names.iter().any(|have| have == name) {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {name} {kind}"))?;
        }
    }
    Ok(())
}

/// The `files` row of the items file at `at` in `output`'s order: `output` for the first,
/// as before a crawl could write several, then `output 2`, `output 3`...
pub(crate) fn output_role(at: usize) -> String {
    match at {
        0 => "output".to_owned(),
        _ => format!("output {}", at + 1),
    }
}

/// The items files as the state file's `output` fact keeps them: a line each, its
/// absolute path and the type it takes (`?type=NAME`), so that a run that routes items
/// otherwise is told apart.
pub(super) fn output_fact(paths: &[String], files: &[spider_settings::ItemsFile]) -> String {
    let lines = paths.iter().zip(files).map(|(path, file)| match &file.item_type {
        Some(item_type) => format!("{path}?type={item_type}"),
        None => path.clone(),
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// The path of a file SQLite keeps beside the state file: `-wal`, `-shm`, `-journal`.
pub(crate) fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `path` as an SQLite URI with `query`, for the ways of opening it that only a URI can
/// ask for (read-only index, immutable); `None` off Unix, where the spelling differs.
pub(crate) fn uri(path: &Path, query: &str) -> Option<String> {
    if !cfg!(unix) {
        return None;
    }
    let absolute = std::path::absolute(path).ok()?;
    let mut uri = String::from("file://");
    for c in absolute.to_str()?.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push('?');
    uri.push_str(query);
    Some(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sqlite_uri_escapes_what_would_end_the_path() {
        let uri = uri(Path::new("/tmp/a %b?c#d.state"), "mode=ro&immutable=1").unwrap_or_default();
        assert_eq!(uri, "file:///tmp/a %25b%3fc%23d.state?mode=ro&immutable=1");
    }
}
