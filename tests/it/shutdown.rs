//! Ctrl-C during a crawl: the example process stops cleanly and keeps what it scraped.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{example, interrupt};

#[test]
fn ctrl_c_leaves_complete_output_stats_and_failures_files() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("books.jsonl");
    let mut child = Command::new(example("books"))
        .args(["--set", "rps=100", "-o"])
        .arg(&output)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = stdout.next().unwrap().unwrap();
    assert!(first.starts_with("demo site at"), "{first}");
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(child.id());
    let status = child.wait().unwrap();
    let printed: Vec<String> = stdout.map(Result::unwrap).collect();

    assert_eq!(status.code(), Some(130), "interrupted exit code; printed {printed:?}");
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.ends_with('\n'), "the last line is complete");
    let items: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!items.is_empty() && items.len() < 1000, "{} items", items.len());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("books.stats.json")).unwrap()).unwrap();
    assert_eq!(stats["status"], "interrupted");
    assert_eq!(stats["items"].as_u64(), Some(items.len() as u64), "every item emitted is in the file");
    assert!(stats["unfinished"].as_u64().unwrap() > 0);
    assert!(dir.path().join("books.failures.jsonl").exists());
    assert!(printed.iter().any(|l| l.contains("interrupted")), "{printed:?}");
}
