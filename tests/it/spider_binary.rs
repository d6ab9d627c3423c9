//! A spider binary as its users run it, in a child process (this test binary again, see
//! `support::run_child_crawl`): what it prints under its default log filter, how it starts
//! under a low open-file limit, and its metrics server under a hostile or careless client.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, Sandbox};

const CHILD: &str = "SPIDER_BINARY_TEST_CHILD_ARGS";

/// The spider binary the tests below run.
#[test]
#[ignore = "the child process of the tests below, started by them"]
fn child_crawl() {
    support::run_child_crawl(CHILD, 1);
}

/// The spider binary with `args`; under `sh -c "ulimit LIMIT && exec ..."` when `limit`
/// gives the `ulimit` arguments.
fn spider_binary(args: &[String], limit: Option<&str>) -> Command {
    let me = std::env::current_exe().unwrap();
    let mut command = match limit {
        Some(limit) => {
            let mut sh = Command::new("sh");
            sh.arg("-c").arg(format!("ulimit {limit} && exec \"$0\" \"$@\"")).arg(me);
            sh
        }
        None => Command::new(me),
    };
    command.args(support::only_test(module_path!(), "child_crawl")).env(CHILD, args.join("\n"));
    command
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
    let run = spider_binary(&args, None).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(site.observed().under("/b"), 1, "the crawl read the pages: {stderr}");
    assert!(!stderr.contains("foster parenting"), "{stderr}");
}

/// What a crawl logs is named after Spiderling, not after its modules (once
/// `spider_core::engine::start_list`), and a start list's line of another scheme is
/// warned of with its number, as a line that does not parse is.
#[test]
fn logs_carry_the_spiderling_target_and_a_start_lines_other_scheme_is_warned_of() {
    let site = Sandbox::demo(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let url = format!("{}catalogue/book_1.html", site.url());
    std::fs::write(&list, format!("{url}\nftp://127.0.0.1/catalogue/book_2.html\nnot a url\n")).unwrap();
    let args = [
        "--set".to_owned(),
        format!("start_urls={url}"),
        "--start-urls".to_owned(),
        list.display().to_string(),
    ];
    let run = spider_binary(&args, None).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let warned: Vec<&str> = stderr.lines().filter(|line| line.contains("start list: skipped")).collect();
    assert_eq!(warned.len(), 2, "{stderr}");
    assert!(warned[0].contains(" WARN spiderling: ") && warned[0].contains("line=2"), "{stderr}");
    assert!(warned[0].contains("a ftp: URL; a crawl fetches only http and https"), "{stderr}");
    assert!(warned[1].contains("line=3"), "{stderr}");
    assert!(!stderr.contains("spider_core"), "{stderr}");
    assert!(String::from_utf8_lossy(&run.stdout).contains("skipped 2 lines that are not http(s) URLs"));
}

/// A crawl whose concurrency is above the soft limit of open files: connections past it
/// failed as "connection failed" (os error 24), as if the site were down.
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
    let run = spider_binary(&args, Some("-Sn 40")).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(!stderr.contains("os error 24") && !stderr.contains("too many open files"), "{stderr}");
    let fetched = site.observed().pages().count();
    assert_eq!(fetched, demo.expected_pages() + 1, "every page fetched: {stderr}");
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

/// The demo shop, slow enough that a crawl of it outlasts a test of its metrics server.
fn slow_site() -> Sandbox {
    let demo =
        DemoSite { books: 60, per_page: 10, latency: Duration::from_millis(500), ..DemoSite::default() };
    Sandbox::demo(demo).unwrap()
}

/// The spider binary crawling `site` with its metrics served (under the file limit
/// `ulimit`, if any), once they answer; and their port.
fn crawl_serving_metrics(site: &Sandbox, ulimit: Option<&str>) -> (std::process::Child, u16) {
    let port = free_port();
    let args = [
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        format!("metrics=127.0.0.1:{port}"),
    ];
    let child = spider_binary(&args, ulimit).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(port, &format!("127.0.0.1:{port}")) != Some(200) {
        assert!(Instant::now() < deadline, "the metrics server never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}

/// Idle connections as many as the server serves at once do not keep a scrape out: the
/// oldest is closed for the newest.
#[test]
fn the_metrics_server_answers_at_once_while_its_every_connection_is_held_idle() {
    let site = slow_site();
    let (mut child, port) = crawl_serving_metrics(&site, None);
    // As many connections as it serves at once, each saying nothing.
    let idle: Vec<TcpStream> = (0..64).filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok()).collect();
    assert_eq!(idle.len(), 64);
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    let status = get(port, &format!("127.0.0.1:{port}"));
    let took = asked.elapsed();
    drop(idle);
    child.kill().unwrap();
    child.wait().unwrap();
    // Before, it was refused until an idle connection's header timeout (10 s) freed a place.
    assert_eq!(status, Some(200), "a scrape while 64 idle connections are held");
    assert!(took < Duration::from_secs(3), "answered in {took:?}");
}

/// The crawl's own HTTP server died on its first failed accept (out of file descriptors),
/// kept idle connections for ever, and answered any `Host`, so a page elsewhere could read
/// it through DNS rebinding.
#[test]
fn the_metrics_server_outlives_a_flood_of_idle_connections_and_answers_only_to_its_address() {
    let site = slow_site();
    // A hard limit of 160 files: the idle connections below exhaust it.
    let (mut child, port) = crawl_serving_metrics(&site, Some("-n 160"));
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
