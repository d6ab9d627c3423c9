//! The real pages (`shared/realweb/pages` beside the checkout: 130 pages as their sites
//! served them), served by a real nginx from a directory of links to them.

use std::path::{Path, PathBuf};

/// The folder of real pages: `SPIDERLING_REALWEB`, else `shared/realweb/pages` in the
/// checkout's parent or one above it (a CI clone may sit a level deeper). `None`, said
/// on stderr, when there is none: these tests then have nothing to read.
pub fn pages() -> Option<PathBuf> {
    let given = std::env::var_os("SPIDERLING_REALWEB").map(PathBuf::from);
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = given.or_else(|| {
        checkout
            .ancestors()
            .skip(1)
            .take(2)
            .map(|dir| dir.join("shared/realweb/pages"))
            .find(|dir| dir.is_dir())
    });
    if found.is_none() {
        eprintln!(
            "SKIPPED: the real pages were not found (shared/realweb/pages beside the checkout, or \
            SPIDERLING_REALWEB)"
        );
    }
    found
}

/// The real pages' names, sorted.
pub fn names(pages: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(pages)
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join("source.html").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A site root in `root`: `/` links every page as `/p/NAME.html`, each a link to its
/// `source.html`. Returns the paths linked.
pub fn site(pages: &Path, root: &Path) -> Vec<String> {
    std::fs::create_dir_all(root.join("p")).unwrap();
    let mut index = String::from("<!doctype html><html><body><h1>Real pages</h1><ul>\n");
    let mut paths = Vec::new();
    for name in names(pages) {
        let path = format!("/p/{name}.html");
        std::os::unix::fs::symlink(
            pages.join(&name).join("source.html"),
            root.join(format!("p/{name}.html")),
        )
        .unwrap();
        index.push_str(&format!("<li><a href=\"{path}\">{name}</a></li>\n"));
        paths.push(path);
    }
    index.push_str("</ul></body></html>\n");
    std::fs::write(root.join("index.html"), index).unwrap();
    paths
}
