//! `spiderling state FILE` on real state files: one a frontier left unfinished, one a crawl
//! of the demo site killed with SIGKILL and resumed, one while its crawl runs; files that
//! are not state files are refused with exit code 2 and left as they were.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use spider_sandbox::{DemoSite, Sandbox};
use spiderling::scraper::Selector;
use spiderling::{
    async_trait, Config, Crawler, Cx, Frontier, Page, Request, Spider, SpiderConfig, StateFrontier,
};

fn spiderling(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spiderling")).args(args).output().unwrap()
}

fn state(path: &Path, more: &[&str]) -> Output {
    let mut args = vec!["state", path.to_str().unwrap()];
    args.extend(more);
    spiderling(&args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json(path: &Path) -> Value {
    let output = state(path, &["--json"]);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every file in `dir` with its bytes: what inspecting must leave as it was.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// The cells of the host table's row for `origin`.
fn host_row(text: &str, origin: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with(&format!("{origin} ")))
        .unwrap_or_else(|| panic!("no row for {origin}:\n{text}"));
    line.split_whitespace().map(str::to_owned).collect()
}

fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A state file of spider `shop` whose frontier was left with, per host:
/// `http://a.example:80` 3 queued, 2 in flight, 1 deferred by an hour;
/// `https://b.example:443` 2 queued, 1 in flight; `https://c.example:443` 1 queued.
fn unfinished_frontier(path: &Path) -> StateFrontier {
    let mut frontier = StateFrontier::open(path, &Config::new("shop")).unwrap();
    for url in (1..=6)
        .map(|i| format!("http://a.example/{i}"))
        .chain((1..=3).map(|i| format!("https://b.example/{i}")))
        .chain(["https://c.example/".to_owned()])
    {
        frontier.enqueue(Request::get(&url).unwrap()).unwrap();
    }
    let a: Vec<Request> = (0..3).map(|_| frontier.next("http://a.example:80").unwrap().unwrap()).collect();
    let retried = a.into_iter().next().unwrap();
    frontier.defer(retried, tokio::time::Instant::now() + Duration::from_secs(3600)).unwrap();
    frontier.next("https://b.example:443").unwrap().unwrap();
    frontier.commit().unwrap();
    frontier
}

#[test]
fn state_shows_queued_in_flight_and_deferred_per_host_most_queued_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shop.state");
    let before_ms = unix_ms();
    drop(unfinished_frontier(&path));
    let after_ms = unix_ms();
    let untouched = files(dir.path());

    let output = state(&path, &[]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.starts_with(&format!("state file {} (schema version 3)\n", path.display())), "{text}");
    assert!(text.contains("  spider    shop\n"), "{text}");
    assert!(text.contains("  status    new: no run has committed anything yet\n"), "{text}");
    assert!(text.contains("  output    none\n") && text.contains("  runs      none yet\n"), "{text}");
    assert!(
        text.contains(
            "  frontier  6 queued, 3 in flight (queued again on resume), 1 deferred (the first due "
        ),
        "{text}"
    );
    assert!(text.contains("  seen      10 requests\n"), "{text}");
    assert!(text.contains("  hosts     3, most queued first\n"), "{text}");
    // host, queued, in flight, deferred, next due (date, time, UTC), done, failed, robots.txt
    let a = host_row(&text, "http://a.example:80");
    assert_eq!(a[1..4], ["3", "2", "1"], "{text}");
    assert_eq!(a[6..], ["UTC", "0", "0", "not", "fetched", "yet"], "{text}");
    assert_eq!(host_row(&text, "https://b.example:443")[1..6], ["2", "1", "0", "-", "0"], "{text}");
    assert_eq!(host_row(&text, "https://c.example:443")[1..6], ["1", "0", "0", "-", "0"], "{text}");
    let at = |origin: &str| text.find(origin).unwrap();
    assert!(
        at("http://a.example") < at("https://b.example") && at("https://b.example") < at("https://c.example")
    );
    assert!(text.trim_end().ends_with("  failures  none"), "{text}");
    assert_eq!(files(dir.path()), untouched, "the file is left as it was, and no -wal or -shm is made");

    let report = json(&path);
    assert_eq!(report["spider"], "shop");
    assert_eq!(report["status"], "new");
    let created = report["created_at"].as_str().unwrap();
    assert!(
        created.len() == 24 && created.as_bytes()[10] == b'T' && created.ends_with('Z'),
        "RFC 3339: {created}"
    );
    assert_eq!((report["queued"].as_u64(), report["in_flight"].as_u64()), (Some(6), Some(3)));
    assert_eq!((report["deferred"].as_u64(), report["seen"].as_u64()), (Some(1), Some(10)));
    assert_eq!(report["runs"], Value::Array(Vec::new()));
    assert_eq!(report["outputs"], Value::Array(Vec::new()));
    let hosts = report["hosts"].as_array().unwrap();
    let origins: Vec<&str> = hosts.iter().map(|h| h["origin"].as_str().unwrap()).collect();
    assert_eq!(origins, ["http://a.example:80", "https://b.example:443", "https://c.example:443"]);
    let a = &hosts[0];
    assert_eq!([&a["queued"], &a["in_flight"], &a["deferred"], &a["done"]], [3, 2, 1, 0]);
    // RFC 3339 in UTC to the millisecond: text that sorts as the times do.
    let at =
        |ms: i64| spiderling::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64));
    let due = a["next_due"].as_str().unwrap();
    assert!((at(before_ms + 3_600_000).as_str()..=at(after_ms + 3_600_000).as_str()).contains(&due), "{due}");
    assert_eq!(report["next_due"], a["next_due"]);
    assert_eq!(hosts[1]["next_due"], Value::Null);
    assert_eq!(a["robots_status"], Value::Null);

    let text = stdout(&state(&path, &["--hosts", "1"]));
    assert!(text.contains("http://a.example:80") && !text.contains("https://b.example"), "{text}");
    assert!(text.contains("    … and 2 more hosts\n"), "{text}");
    assert_eq!(files(dir.path()), untouched);
}

#[test]
fn state_reads_the_last_commit_while_a_frontier_holds_the_crawl_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shop.state");
    let mut frontier = unfinished_frontier(&path);
    frontier.enqueue(Request::get("https://d.example/").unwrap()).unwrap(); // not committed
    let refused = StateFrontier::open(&path, &Config::new("shop")).unwrap_err();
    assert!(refused.to_string().contains("in use by another crawl"), "the lock is held: {refused}");

    let output = state(&path, &[]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert_eq!(host_row(&text, "http://a.example:80")[1..4], ["3", "2", "1"], "{text}");
    assert!(!text.contains("d.example") && text.contains("  frontier  6 queued"), "{text}");
    let report = json(&path);
    assert_eq!(report["seen"], 10, "what the holder has not committed is not seen");

    frontier.commit().unwrap();
    assert_eq!(json(&path)["seen"], 11, "and is once it is");
    drop(frontier);
    let mut again = StateFrontier::open(&path, &Config::new("shop")).unwrap();
    assert!(again.next("https://d.example:443").unwrap().is_some(), "the file is as the crawl left it");
}

#[test]
fn files_that_are_not_state_files_are_refused_with_exit_code_2_and_left_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.state");
    drop(unfinished_frontier(&real));
    let whole = std::fs::read(&real).unwrap();
    let other_version = dir.path().join("other-version.state");
    std::fs::write(&other_version, &whole).unwrap();
    let db = rusqlite::Connection::open(&other_version).unwrap();
    db.execute("UPDATE crawl SET value = '99' WHERE key = 'schema_version'", []).unwrap();
    drop(db);
    let foreign = dir.path().join("foreign.state");
    let db = rusqlite::Connection::open(&foreign).unwrap();
    db.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    drop(db);
    std::fs::remove_file(&real).unwrap();
    let cases = [
        (
            "garbage.state",
            Some(b"these are not the bytes of a database\n".repeat(20)),
            "not an SQLite database",
        ),
        ("empty.state", Some(Vec::new()), "is empty, so not a Spiderling state file"),
        ("truncated.state", Some(whole[..whole.len() / 2].to_vec()), "is truncated"),
        ("foreign.state", None, "is not a Spiderling state file (no such table: crawl)"),
        ("other-version.state", None, "has schema version 99, and this Spiderling reads version 3"),
        ("missing.state", None, "does not exist"),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        if let Some(bytes) = bytes {
            std::fs::write(&path, bytes).unwrap();
        }
        let untouched = files(dir.path());
        for json in [false, true] {
            let output = state(&path, if json { &["--json"] } else { &[] });
            assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
            let message = stderr(&output);
            assert!(
                message.starts_with(&format!("error: state file {}: ", path.display())),
                "{name}: {message}"
            );
            assert!(message.contains(expected), "{name}: {message}");
            assert!(stdout(&output).is_empty(), "{name}: {output:?}");
            assert_eq!(files(dir.path()), untouched, "{name} left byte for byte as it was, nothing made");
        }
    }
}

/// A FIFO named as a state file is refused at once: opened, it would block for ever.
#[test]
fn a_fifo_is_refused_at_once_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("crawl.state");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let output = state(&fifo, &[]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(stderr(&output).contains("is not a regular file, so not a state file"), "{output:?}");
}

/// The demo site's books, as the spider in these tests writes them.
#[derive(serde::Serialize)]
struct Book {
    title: String,
}

struct Books {
    config: Config,
    title: Arc<Selector>,
    links: Arc<Selector>,
}

impl Books {
    fn new(config: Config) -> Self {
        Books {
            config,
            title: Arc::new(Selector::parse("h1.title").unwrap()),
            links: Arc::new(Selector::parse("a[href]").unwrap()),
        }
    }
}

impl SpiderConfig for Books {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

#[async_trait]
impl Spider for Books {
    type Item = Book;

    async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> spiderling::Result {
        let (title, links) = (self.title.clone(), self.links.clone());
        let (title, links) = page.html(move |doc| (doc.text(&title), doc.links(&links))).await?;
        if let Some(title) = title {
            cx.emit(Book { title });
        }
        cx.follow_all(links);
        Ok(())
    }
}

/// The crawl of `site` into `dir`: `books.jsonl`, kept in `books.state`.
fn crawl_config(site: &str, dir: &Path) -> Config {
    Config::new("books")
        .start_url(site)
        .allowed_domain("127.0.0.1")
        .output(dir.join("books.jsonl"))
        .state(dir.join("books.state"))
        .concurrency(2)
        .per_host(2)
        .progress(false)
}

fn crawl(config: Config) -> spiderling::Summary {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(Crawler::new(Books::new(config)).run()).unwrap()
}

/// The variable that makes this test binary the crawl the kill test starts and kills:
/// the site's URL and the directory, a line each.
const CHILD: &str = "STATE_CLI_TEST_CHILD";

#[test]
#[ignore = "the crawl the kill test runs in a child process and kills"]
fn child_crawl() {
    let Ok(args) = std::env::var(CHILD) else { return };
    let (site, dir) = args.split_once('\n').unwrap();
    crawl(crawl_config(site, Path::new(dir)));
}

/// Wait until `site` has answered `requests`, or `stop` says to stop waiting.
fn until_received(site: &Sandbox, requests: usize, mut stop: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while site.received() < requests && !stop() {
        assert!(Instant::now() < deadline, "the crawl made {} requests in 30 s", site.received());
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_crawl_killed_with_sigkill_shows_a_run_running_or_killed_and_after_resuming_two_runs() {
    let demo =
        DemoSite { books: 60, per_page: 10, latency: Duration::from_millis(20), ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("books.state");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_crawl", "--exact", "--ignored", "--test-threads=1"])
        .env(CHILD, format!("{}\n{}", site.url(), dir.path().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    until_received(&site, 20, || child.try_wait().unwrap().is_some());
    assert!(child.try_wait().unwrap().is_none(), "the crawl is killed before it ends");
    child.kill().unwrap();
    child.wait().unwrap();
    let log = dir.path().join("books.state-wal");
    assert!(log.exists(), "the kill left the write-ahead log");
    let (file, logged) = (std::fs::read(&path).unwrap(), std::fs::read(&log).unwrap());

    let output = state(&path, &[]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("  status    running, or killed: its last run has not ended"), "{text}");
    // run, started (date, time, UTC), ended, status, pages, items
    let run =
        text.lines().find(|line| line.trim_start().starts_with("1  ")).unwrap_or_else(|| panic!("{text}"));
    let run: Vec<&str> = run.split_whitespace().collect();
    assert_eq!(run[3..8], ["UTC", "-", "running", "or", "killed"], "{text}");
    assert!(text.contains("  runs      1: "), "{text}");
    let origin = site.url().trim_end_matches('/').to_owned();
    assert_eq!(host_row(&text, &origin).last().map(String::as_str), Some("200"), "robots.txt: {text}");
    assert_eq!(std::fs::read(&path).unwrap(), file, "the state file is left as it was");
    assert_eq!(std::fs::read(&log).unwrap(), logged, "and its log too");

    let killed = json(&path);
    assert_eq!(killed["status"], "running");
    let runs = killed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((&runs[0]["ended_at"], &runs[0]["status"]), (&Value::Null, &Value::Null));
    let left = ["queued", "in_flight", "deferred"].map(|key| killed[key].as_u64().unwrap());
    assert!(left.iter().sum::<u64>() > 0, "the kill left requests in the frontier: {left:?}");
    let output = &killed["outputs"][0];
    assert_eq!(output["path"], dir.path().join("books.jsonl").display().to_string());
    let committed = output["items"].as_u64().unwrap();
    assert!(committed < 60, "{committed} items committed before the kill");
    assert!(output["on_disk"].as_u64().unwrap() >= output["bytes"].as_u64().unwrap());
    assert_eq!(killed["hosts"][0]["robots_status"], 200);

    let summary = crawl(crawl_config(&site.url(), dir.path()));
    assert_eq!(summary.counts.items, 60);
    let resumed = json(&path);
    assert_eq!(resumed["status"], "complete");
    let runs = resumed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["status"], Value::Null, "the killed run has no end");
    assert_eq!(runs[1]["status"], "complete");
    assert!(runs[1]["ended_at"].as_str().unwrap() >= runs[1]["started_at"].as_str().unwrap());
    assert_eq!(resumed["outputs"][0]["items"], 60, "every book written once");
    assert_eq!(resumed["totals"]["items"], 60);
    assert_eq!((&resumed["totals"]["failures"], &runs[1]["counts"]["failures"]), (&0.into(), &0.into()));
    let pages = resumed["totals"]["pages"].as_u64().unwrap();
    assert!(pages >= demo.expected_pages() as u64, "{pages} pages");
    assert_eq!(["queued", "in_flight", "deferred"].map(|key| resumed[key].as_u64()), [Some(0); 3]);
    let host = &resumed["hosts"][0];
    assert_eq!(resumed["hosts"].as_array().unwrap().len(), 1, "{resumed}");
    assert!(host["done"].as_u64().unwrap() >= demo.expected_pages() as u64, "{host}");
    assert_eq!(host["failed"], 0);
    assert_eq!(resumed["failures_by_reason"], serde_json::json!({}));

    let text = stdout(&state(&path, &[]));
    assert!(text.contains("  status    complete: the same command fetches nothing"), "{text}");
    assert!(text.contains("books.jsonl: 60 items, "), "{text}");
    assert!(text.contains("  runs      2: ") && text.contains(" 60 items, "), "{text}");
    // run, started (date, time, UTC), ended (date, time, UTC), status, pages, items
    let second =
        text.lines().find(|line| line.trim_start().starts_with("2  ")).unwrap_or_else(|| panic!("{text}"));
    let second: Vec<&str> = second.split_whitespace().collect();
    let items = runs[1]["counts"]["items"].to_string();
    assert_eq!([second[7], second[9]], ["complete", items.as_str()], "{text}");
}

#[test]
fn state_reads_a_crawl_while_it_runs_and_the_crawl_goes_on_undisturbed() {
    let demo =
        DemoSite { books: 30, per_page: 10, latency: Duration::from_millis(30), ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("books.state");
    let config = crawl_config(&site.url(), dir.path());
    let running = std::thread::spawn(move || crawl(config));
    until_received(&site, 8, || running.is_finished());

    let output = state(&path, &[]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("  status    running, or killed"), "{text}");
    assert!(text.contains(" running or killed "), "read while the run had not ended: {text}");

    let summary = running.join().unwrap();
    assert_eq!(summary.counts.items, 30, "the crawl went on undisturbed");
    let report = json(&path);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["outputs"][0]["items"], 30);
}
