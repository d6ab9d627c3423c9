//! A crawl whose concurrency is above the soft limit of open files: connections past it
//! failed as "connection failed" (os error 24), as if the site were down.

#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;
use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};

const CHILD: &str = "FILE_LIMIT_TEST_CHILD_ARGS";

/// The spider binary the test below runs: this test binary again (see `support`).
#[test]
#[ignore = "the child process of the file-limit test, started by it"]
fn child_crawl() {
    support::run_child_crawl(CHILD, 2);
}

#[test]
fn a_crawl_above_the_soft_file_limit_raises_it_and_loses_no_request() {
    let demo =
        DemoSite { books: 300, per_page: 10, latency: Duration::from_millis(30), ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let args = [
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        "concurrency=64".to_owned(),
        "--set".to_owned(),
        "per_host=64".to_owned(),
        "--set".to_owned(),
        "retries=0".to_owned(),
    ];
    // The soft limit only, as a login shell's default often is; the hard one stays.
    let run = Command::new("sh")
        .arg("-c")
        .arg("ulimit -Sn 40 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args(["child_crawl", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, args.join("\n"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(!stderr.contains("os error 24") && !stderr.contains("too many open files"), "{stderr}");
    let fetched = site.observed().pages().count();
    assert_eq!(fetched, demo.expected_pages() + 1, "every page fetched: {stderr}");
}
