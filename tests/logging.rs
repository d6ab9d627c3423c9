//! What a spider binary prints under its default log filter.

#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;

const CHILD: &str = "LOGGING_TEST_CHILD_ARGS";

/// The spider binary the test below runs: this test binary again (see `support`).
#[test]
#[ignore = "the child process of the logging test, started by it"]
fn child_crawl() {
    support::run_child_crawl(CHILD, 2);
}

/// html5ever warned "foster parenting not implemented" for every page it foster-parents
/// (text or a link straight inside a `<table>`): one line a page under the default filter.
#[test]
fn a_page_the_tree_builder_foster_parents_prints_no_warning_of_the_parser() {
    let table = r#"<table>stray <a href="/b">b</a><tr><td>cell</td></tr></table>"#;
    let site = spider_sandbox::FixedSite::new().answer("/", Some("text/html"), table).answer(
        "/b",
        Some("text/html"),
        table,
    );
    let site = spider_sandbox::Sandbox::fixed(site).unwrap();
    let args = [
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        "extract=dom".to_owned(),
    ];
    let run = Command::new(std::env::current_exe().unwrap())
        .args(["child_crawl", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, args.join("\n"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(site.observed().under("/b"), 1, "the crawl read the pages: {stderr}");
    assert!(!stderr.contains("foster parenting"), "{stderr}");
}
