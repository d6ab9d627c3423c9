//! `spiderling probe URL` against the hostile site's per-IP limit, as a user runs it.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use std::process::{Command, Output};
use std::time::Duration;

use spider_sandbox::{HostileSite, IdentityLimit, Sandbox};

fn spiderling(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spiderling")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn probe_prints_the_ramp_and_the_line_to_paste_without_a_ban() {
    let limit = IdentityLimit {
        requests: 10,
        per: Duration::from_secs(1),
        ban_after: 10,
        ban_for: Duration::from_secs(60),
    };
    let site =
        Sandbox::hostile(HostileSite { pages: 1, limit: Some(limit), ..HostileSite::empty() }).unwrap();
    let url = format!("{}page/1", site.url());
    let output = spiderling(&["probe", &url, "--for", "12s", "--start-rps", "4", "--step", "1s"]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("probing {url}: up to 12s or 3000 requests, from 4/s, 1s a step")),
        "{stderr}"
    );
    assert!(
        stdout.starts_with("  rate/s  slots  sent  blocked  errors  got/s  p50 ms  verdict\n"),
        "{stdout}"
    );
    assert!(stdout.contains("     4.0 "), "the first step's rate: {stdout}");
    let line = stdout.lines().find(|l| l.starts_with("#[spider(concurrency = ")).unwrap_or_default();
    let rps: u64 =
        line.split("rps = ").nth(1).and_then(|r| r.trim_end_matches(")]").parse().ok()).unwrap_or(0);
    assert!((1..=10).contains(&rps), "at most the limit of 10/s: {stdout}");
    assert!(stdout.contains("margin: 90 % of"), "{stdout}");
    assert_eq!(site.observed().answered(403), 0, "never banned: {stdout}");
}

#[test]
fn a_bad_url_is_a_usage_error_and_an_unreachable_one_a_failure() {
    let output = spiderling(&["probe", "not a url"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("\"not a url\" is not an absolute http(s) URL"), "{output:?}");
    let output = spiderling(&["probe", "https://example.com/", "--for", "soon"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("not a duration"), "{output:?}");

    // A port nobody listens on: the first request fails, and the probe stops there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let output = spiderling(&["probe", &format!("http://127.0.0.1:{port}/"), "--ignore-robots"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        text(&output.stderr).contains(&format!("error: request to http://127.0.0.1:{port}/ failed")),
        "{output:?}"
    );
}
