//! The crawl's own HTTP server (metrics, dashboard) under a hostile or careless client: it
//! died on its first failed accept (out of file descriptors), kept idle connections for
//! ever, and answered any `Host`, so a page elsewhere could read it through DNS rebinding.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, Sandbox};

const CHILD: &str = "METRICS_SERVER_TEST_CHILD_ARGS";

/// The spider binary the test below runs: this test binary again (see `support`).
#[test]
#[ignore = "the child process of the metrics-server test, started by it"]
fn child_crawl() {
    support::run_child_crawl(CHILD, 1);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One GET of `/metrics` with `host` as its Host header: the status, or `None` when the
/// server does not answer within 2 s.
fn get(port: u16, host: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn the_metrics_server_outlives_a_flood_of_idle_connections_and_answers_only_to_its_address() {
    let demo =
        DemoSite { books: 60, per_page: 10, latency: Duration::from_millis(500), ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let port = free_port();
    let args = [
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        format!("metrics=127.0.0.1:{port}"),
    ];
    // A hard limit of 160 files: the idle connections below exhaust it.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 160 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args(["child_crawl", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, args.join("\n"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(port, &format!("127.0.0.1:{port}")) != Some(200) {
        assert!(Instant::now() < deadline, "the metrics server never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(port, "evil.example"), Some(421), "a name that is not its own is refused");
    assert_eq!(get(port, &format!("localhost:{port}")), Some(200));

    let idle: Vec<TcpStream> =
        (0..300).filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok()).collect();
    // Idle connections are closed after the header timeout (10 s), and past the cap at
    // once; the server goes on accepting through it all.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answered = false;
    while Instant::now() < deadline {
        if get(port, &format!("127.0.0.1:{port}")) == Some(200) {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(idle);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(answered, "the metrics server stopped answering after the flood");
}
