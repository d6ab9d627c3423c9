//! `spiderling fleet REDIS_URL` against a real redis-server: crawls seeded with the keys
//! workers write (two workers, a crawl done, one stalled), a Redis out of reach, one that
//! refuses the password (never printed), and a real crawl of the books example through
//! the fleet, read once it is done.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// A redis-server of this test's own on a free port, without persistence; killed on drop.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Redis {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("redis-server must be installed for these tests: {e}"));
        let redis = Redis { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// One command through redis-cli; its reply.
    fn cli(&self, args: &[&str]) -> String {
        let output =
            Command::new("redis-cli").args(["-p", &self.port.to_string()]).args(args).output().unwrap();
        let reply = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success() && !reply.starts_with("ERR"), "redis-cli {args:?}: {reply}");
        reply
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A port nothing listens on, for the moment.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spiderling(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spiderling")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let output = spiderling(&args);
    assert!(output.status.success(), "{}{}", text(&output.stdout), text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A worker's heartbeat as a worker writes it.
fn beat(ago_ms: u64, pages: u64, ended: bool) -> String {
    serde_json::json!({
        "pid": 1000 + pages, "at_ms": unix_ms() - ago_ms, "requests": pages + pages / 10,
        "pages": pages, "items": pages / 2, "blocked": pages / 20, "failures": 1,
        "elapsed_secs": 4.0, "connected": true, "ended": ended,
    })
    .to_string()
}

/// The cells of the row that starts with `first`.
fn row(text: &str, first: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with(first))
        .unwrap_or_else(|| panic!("no row for {first}:\n{text}"));
    line.split_whitespace().map(str::to_owned).collect()
}

/// Three crawls as workers leave them: `shop` running with two workers, `books` done,
/// `news` stalled (its one worker silent for a minute).
fn seed(redis: &Redis) {
    let created = (unix_ms() - 60_000).to_string();
    for (id, spider) in [("shop", "shop"), ("books", "books"), ("news", "news_spider")] {
        redis.cli(&["SADD", "spiderling:crawls", id]);
        redis.cli(&["HSET", &format!("spiderling:{{{id}}}:meta"), "spider", spider, "created_ms", &created]);
    }
    let p = "spiderling:{shop}";
    redis.cli(&["HSET", &format!("{p}:workers"), "alpha:1:0000000a", &beat(300, 400, false)]);
    redis.cli(&["HSET", &format!("{p}:workers"), "beta:2:0000000b", &beat(800, 200, false)]);
    redis.cli(&["SADD", &format!("{p}:mine:alpha:1:0000000a"), "7", "8", "9"]);
    redis.cli(&["SADD", &format!("{p}:mine:beta:2:0000000b"), "10"]);
    redis.cli(&["ZADD", &format!("{p}:leases"), "1", "7", "1", "8", "1", "9", "1", "10"]);
    redis.cli(&["ZADD", &format!("{p}:deferred"), "1", "11", "1", "12"]);
    redis.cli(&["SET", &format!("{p}:queued"), "1234"]);
    redis.cli(&["RPUSH", &format!("{p}:failures"), "{\"url\":\"https://shop.example/x\"}"]);
    redis.cli(&[
        "HSET",
        &format!("{p}:stats"),
        "requests",
        "660",
        "pages",
        "600",
        "items",
        "300",
        "blocked",
        "33",
        "duplicates",
        "4500",
        "seen",
        "5",
        "failure:http_404",
        "1",
    ]);

    let p = "spiderling:{books}";
    redis.cli(&["HSET", &format!("{p}:workers"), "gamma:3:0000000c", &beat(5_000, 1051, true)]);
    redis.cli(&["HSET", &format!("{p}:stats"), "requests", "1053", "pages", "1051", "items", "1000"]);
    redis.cli(&["SET", &format!("{p}:queued"), "0"]);
    redis.cli(&["SET", &format!("{p}:done"), &unix_ms().to_string()]);

    let p = "spiderling:{news}";
    redis.cli(&["HSET", &format!("{p}:workers"), "delta:4:0000000d", &beat(60_000, 10, false)]);
    redis.cli(&["SET", &format!("{p}:queued"), "17"]);
}

#[test]
fn every_crawl_with_its_workers_and_whether_it_runs_is_done_or_stalled() {
    let redis = Redis::start();
    seed(&redis);
    let before = redis.cli(&["DBSIZE"]);
    let url = redis.url();
    let output = spiderling(&["fleet", &url]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{out}{}", text(&output.stderr));
    assert!(
        out.starts_with(&format!("fleet {url}: 3 crawls\n\ncrawl books (spider books, created ")),
        "{out}"
    );

    let shop = &out[out.find("crawl shop").unwrap()..];
    let alpha = row(shop, "alpha:1:0000000a");
    assert_eq!(alpha[1], "1400", "pid: {shop}");
    assert_eq!((alpha[2].as_str(), alpha[5].as_str()), ("seen", "ago"), "{shop}");
    // leases, pages, items, pages/s (400 in 4 s), blocked (20 of 440).
    assert_eq!(alpha[6..], ["3", "400", "200", "100.0", "4.5%"], "{shop}");
    assert_eq!(row(shop, "beta:2:0000000b")[6..], ["1", "200", "100", "50.0", "4.5%"], "{shop}");
    assert!(shop.contains("  status    running\n"), "{shop}");
    assert!(shop.contains("  frontier  1,234 queued, 4 leased, 2 waiting for retry\n"), "{shop}");
    assert!(shop.contains("  seen      5 requests\n  failures  1 request given up\n"), "{shop}");
    assert!(shop.contains("  totals    660 requests, 600 pages, 300 items, 0 retries, 33 blocked"), "{shop}");
    assert!(
        shop.contains("  rate      150.0 pages/s from 2 live workers; 5.0% of requests blocked"),
        "{shop}"
    );

    let books = &out[out.find("crawl books").unwrap()..out.find("crawl news").unwrap()];
    assert_eq!(row(books, "gamma:3:0000000c")[2], "ended", "{books}");
    assert!(books.contains("  status    done at "), "{books}");
    assert!(books.contains("  rate      0.0 pages/s from 0 live workers"), "{books}");

    let news = &out[out.find("crawl news (spider news_spider").unwrap()..out.find("crawl shop").unwrap()];
    let delta = row(news, "delta:4:0000000d");
    assert_eq!(delta[2..4], ["silent", "for"], "{news}");
    assert!(news.contains("  status    stalled: no worker heard from in 10.0 s"), "{news}");
    assert!(news.contains("  frontier  17 queued, 0 leased, 0 waiting for retry\n"), "{news}");

    let report = json(&["fleet", &url]);
    let ids: Vec<&str> =
        report["crawls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["books", "news", "shop"]);
    let status: Vec<&str> =
        report["crawls"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["done", "stalled", "running"]);
    assert_eq!(report["crawls"][1]["workers"][0]["state"], "silent");

    // Reading wrote nothing.
    assert_eq!(redis.cli(&["DBSIZE"]), before);
}

#[test]
fn one_crawl_by_its_id_and_an_unknown_one_names_those_there_are() {
    let redis = Redis::start();
    seed(&redis);
    let url = redis.url();
    let shop = json(&["fleet", &url, "--crawl", "shop"]);
    assert_eq!(shop["address"], url.as_str());
    let crawls = shop["crawls"].as_array().unwrap();
    assert_eq!(crawls.len(), 1);
    let crawl = &crawls[0];
    assert_eq!((crawl["id"].as_str(), crawl["spider"].as_str()), (Some("shop"), Some("shop")));
    assert_eq!((crawl["queued"].as_u64(), crawl["leased"].as_u64()), (Some(1234), Some(4)));
    assert_eq!((crawl["deferred"].as_u64(), crawl["seen"].as_u64()), (Some(2), Some(5)));
    assert_eq!(crawl["totals"]["duplicates"], 4500);
    assert_eq!(crawl["totals"]["failures_by_reason"], serde_json::json!({"http_404": 1}));
    assert_eq!(crawl["totals"]["failures"], 1, "the total beside the reasons");
    assert_eq!(crawl["pages_per_sec"], 150.0);
    assert_eq!(crawl["block_rate"], 0.05);
    let workers = crawl["workers"].as_array().unwrap();
    let pages: Vec<(&str, u64, u64)> = workers
        .iter()
        .map(|w| (w["id"].as_str().unwrap(), w["pages"].as_u64().unwrap(), w["leases"].as_u64().unwrap()))
        .collect();
    assert_eq!(pages, [("alpha:1:0000000a", 400, 3), ("beta:2:0000000b", 200, 1)]);
    assert!(workers.iter().all(|w| w["state"] == "live" && w["heard_secs_ago"].as_f64().unwrap() < 10.0));

    let output = spiderling(&["fleet", &url, "--crawl", "shops"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("holds no crawl \"shops\"; the crawls it holds: books, news, shop"), "{err}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_redis_out_of_reach_is_exit_code_2_with_its_address() {
    let url = format!("redis://127.0.0.1:{}/0", free_port());
    let output = spiderling(&["fleet", &url]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("cannot read the fleet's Redis at {url}: ")), "{err}");
    assert!(err.contains("is redis-server running there?"), "{err}");

    let output = spiderling(&["fleet", "http://127.0.0.1:6379"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("is not a Redis URL"), "{}", text(&output.stderr));
}

#[test]
fn a_password_is_never_printed_right_or_wrong() {
    let redis = Redis::start();
    seed(&redis);
    redis.cli(&["CONFIG", "SET", "requirepass", "right-pass-5150"]);
    let at = format!("127.0.0.1:{}/0", redis.port);

    let wrong = spiderling(&["fleet", &format!("redis://:wrong-pass-8086@{at}")]);
    let printed = format!("{}{}", text(&wrong.stdout), text(&wrong.stderr));
    assert_eq!(wrong.status.code(), Some(2), "{printed}");
    assert!(printed.contains(&format!("redis://***@{at}")), "{printed}");
    assert!(printed.contains("it refused the password the address gives; give it in the URL"), "{printed}");
    assert!(!printed.contains("wrong-pass-8086"), "{printed}");

    let none = spiderling(&["fleet", &format!("redis://{at}")]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none.stderr));
    let said = text(&none.stderr);
    assert!(said.contains("it wants a password, and the address gives none; give it in the URL"), "{said}");
    assert!(!said.contains("Transaction aborted") && !said.contains("Index"), "{said}");

    for json in [false, true] {
        let mut args = vec!["fleet".to_owned(), format!("redis://:right-pass-5150@{at}"), "--crawl".into()];
        args.push("shop".into());
        if json {
            args.push("--json".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let right = spiderling(&args);
        let printed = format!("{}{}", text(&right.stdout), text(&right.stderr));
        assert!(right.status.success(), "{printed}");
        assert!(
            printed.contains(&format!("redis://***@{at}")) && printed.contains("alpha:1:0000000a"),
            "{printed}"
        );
        assert!(!printed.contains("right-pass-5150"), "{printed}");
    }

    // From the environment, as a password is best kept out of `ps`.
    let from_env = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["fleet", "env:FLEET_TEST_REDIS", "--crawl", "books"])
        .env("FLEET_TEST_REDIS", format!("redis://:right-pass-5150@{at}"))
        .output()
        .unwrap();
    let printed = text(&from_env.stdout);
    assert!(from_env.status.success() && printed.contains("status    done"), "{printed}");
    assert!(!printed.contains("right-pass-5150"), "{printed}");
}

/// The books example, an example of the workspace's root package: `cargo test
/// --workspace` builds it, `cargo test -p spider-cli` does not, so it is built here then.
fn books_example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let books = profile.join("examples").join("books");
    if !books.exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--example", "books", "-p", "spiderling"]);
        if profile.ends_with("release") {
            build.arg("--release");
        }
        let built = build.env("CARGO_TARGET_DIR", profile.parent().unwrap()).status().unwrap();
        assert!(built.success(), "cargo build --example books failed");
    }
    books
}

#[test]
fn the_books_example_crawled_through_the_fleet_reads_as_done() {
    let books = books_example();
    let redis = Redis::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let crawl = Command::new(books)
        .args(["--set", &format!("frontier={url}"), "-o"])
        .arg(dir.path().join("books.jsonl"))
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = crawl.id().to_string();
    let crawl = crawl.wait_with_output().unwrap();
    let printed = format!("{}{}", text(&crawl.stdout), text(&crawl.stderr));
    assert!(crawl.status.success(), "the books example (it serves 127.0.0.1:8765): {printed}");
    assert!(printed.contains("books: 1051 pages, 1000 items"), "{printed}");
    // The worker's settings say which of its limits are the fleet's, not its own.
    assert!(printed.contains("concurrency = 16 · per_host = 16 for the whole fleet"), "{printed}");

    let output = spiderling(&["fleet", &url]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{out}{}", text(&output.stderr));
    println!("{out}");
    assert!(out.contains(&format!("fleet {url}: 1 crawl\n\ncrawl books (spider books, created ")), "{out}");
    assert!(out.contains("  status    done at "), "{out}");
    assert!(out.contains("  limits    per_host = 16 for the whole fleet\n"), "{out}");
    assert!(out.contains("  frontier  0 queued, 0 leased, 0 waiting for retry\n"), "{out}");
    assert!(out.contains(", 1,051 pages, 1,000 items, "), "{out}");
    let worker = out.lines().nth(4).unwrap().split_whitespace().collect::<Vec<_>>();
    assert_eq!((worker[1], worker[2]), (pid.as_str(), "ended"), "{out}");
    assert_eq!(worker[6..9], ["0", "1,051", "1,000"], "{out}");

    let report = json(&["fleet", &url, "--crawl", "books"]);
    let crawl = &report["crawls"][0];
    assert_eq!(crawl["status"], "done");
    assert_eq!(
        (crawl["totals"]["pages"].as_u64(), crawl["totals"]["items"].as_u64()),
        (Some(1051), Some(1000))
    );
    assert_eq!(crawl["workers"][0]["state"], "ended");
    // Times in RFC 3339, as in every file the crawl writes.
    let rfc3339 = |t: &serde_json::Value| t.as_str().is_some_and(|t| t.len() == 24 && t.ends_with('Z'));
    assert!(rfc3339(&crawl["created_at"]) && rfc3339(&crawl["workers"][0]["heard_at"]), "{crawl}");
}

/// `--merge OUT` writes the committed part of each output once, and the report names the
/// tail a killed worker left past it.
#[test]
fn merge_writes_what_the_fleet_committed_of_each_output_and_the_report_names_the_tails() {
    let redis = Redis::start();
    seed(&redis);
    let dir = tempfile::tempdir().unwrap();
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    // a: two lines committed, and a third a killed worker wrote past them.
    std::fs::write(&a, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
    std::fs::write(&b, "{\"n\":3}\n").unwrap();
    for (path, bytes, items) in [(&a, 16, 2), (&b, 8, 1)] {
        let value = format!("{{\"bytes\":{bytes},\"items\":{items},\"worker\":\"w\",\"at_ms\":1}}");
        redis.cli(&["HSET", "spiderling:{shop}:outputs", &format!("{here}:{}", path.display()), &value]);
    }
    let url = format!("redis://127.0.0.1:{}/0", redis.port);

    let report = spiderling(&["fleet", &url, "--crawl", "shop"]);
    let printed = text(&report.stdout);
    assert!(
        printed.contains(&format!("{here}:{}: 2 items committed (16 B); 8 B past them", a.display())),
        "{printed}"
    );
    assert!(printed.contains(&format!("{here}:{}: 1 item committed (8 B)\n", b.display())), "{printed}");

    let out = dir.path().join("all.jsonl");
    let merged = spiderling(&["fleet", &url, "--crawl", "shop", "--merge", &out.display().to_string()]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    assert!(text(&merged.stdout).contains("3 items from 2 outputs written once"), "{}", text(&merged.stdout));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");

    let all = spiderling(&["fleet", &url, "--merge", &out.display().to_string()]);
    assert_eq!(all.status.code(), Some(2), "three crawls: which one");
    assert!(text(&all.stderr).contains("name it with --crawl"), "{}", text(&all.stderr));
}
