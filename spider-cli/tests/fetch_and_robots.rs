//! `spiderling fetch` and `spiderling robots` against the demo site, as a user runs them.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use spider_sandbox::{DemoSite, GatewayConfig, HostileSite, MockGateway, Sandbox};

fn spiderling(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spiderling")).args(args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn fetch_shows_what_each_selector_matches_and_the_server_saw_one_page() {
    let site = Sandbox::demo(DemoSite { books: 30, per_page: 10, ..DemoSite::default() }).unwrap();
    let url = format!("{}catalogue/book_3.html", site.url());
    let output = spiderling(&["fetch", &url, "--css", "h1.title", "--css", "p.price", "--css", "p.nothing"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    let book = &spider_sandbox::catalogue(3)[2];
    assert!(text.starts_with(&format!("200 {url} in ")), "{text}");
    assert!(text.contains(&format!("h1.title (1 match)\n  {}\n", book.title)), "{text}");
    assert!(text.contains(&format!("p.price (1 match)\n  {}\n", book.price)), "{text}");
    assert!(text.contains("p.nothing (0 matches)"), "{text}");
    assert!(text.contains("  block verdict: not blocked\n"), "{text}");
    let seen = site.observed();
    assert_eq!(seen.pages().count(), 1, "one page, no follow-ups");
    assert_eq!(seen.hits.len(), 2, "robots.txt first, then the page");
}

/// A URL's password is never printed: not with the page, not when there is none.
#[test]
fn fetch_never_prints_a_urls_password() {
    let site = Sandbox::demo(DemoSite { books: 3, per_page: 10, ..DemoSite::default() }).unwrap();
    let with_password = site.url().replacen("http://", "http://ann:hunter2@", 1);
    let page = spiderling(&["fetch", &with_password]);
    assert!(page.status.success(), "{page:?}");
    assert!(
        stdout(&page).starts_with(&format!("200 {} in ", site.url().replacen("http://", "http://***@", 1)))
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let none = spiderling(&["fetch", &format!("http://ann:hunter2@127.0.0.1:{port}/")]);
    assert!(!none.status.success());
    for output in [&page, &none] {
        let said = format!("{}{}", stdout(output), String::from_utf8_lossy(&output.stderr));
        assert!(!said.contains("hunter2"), "{said}");
    }
}

#[test]
fn fetch_goes_through_a_gateway_from_the_environment_with_a_country() {
    let site = Sandbox::demo(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let url = format!("{}catalogue/book_2.html", site.url());
    let output = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["fetch", &url, "--css", "h1.title", "--proxy", "env:FETCH_TEST_PROXY", "--geo", "DE"])
        .env("FETCH_TEST_PROXY", gateway.url_with_credentials())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains(&format!("via http://***@{}/ (2 requests", gateway.addr())), "{text}");
    assert!(!text.contains("sandbox-s3cret"), "{text}");
    let through = gateway.observed();
    assert_eq!(through.requests.len(), 2, "robots.txt and the page");
    assert!(through.requests.iter().all(|r| r.country.as_deref() == Some("de")));
    assert_eq!(site.observed().peers(), through.exits());
}

#[test]
fn fetch_takes_the_wire_keys_of_the_environment_and_leaves_a_crawls_own_alone() {
    let site = Sandbox::demo(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let items = dir.path().join("crawl.jsonl");
    let url = format!("{}catalogue/book_2.html", site.url());
    // What a shell left exported for a crawl: its start URLs and its output.
    let output = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["fetch", &url, "--css", "h1.title", "--set", "user_agent=fetch-test/2"])
        .env("SPIDERLING_START_URLS", format!("{}catalogue/book_4.html", site.url()))
        .env("SPIDERLING_OUTPUT", &items)
        .env("SPIDERLING_TIMEOUT", "nonsense")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "the timeout is a wire key, and not a duration: {output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("SPIDERLING_TIMEOUT"), "{output:?}");
    let output = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["fetch", &url, "--css", "h1.title", "--set", "user_agent=fetch-test/2"])
        .env("SPIDERLING_START_URLS", format!("{}catalogue/book_4.html", site.url()))
        .env("SPIDERLING_OUTPUT", &items)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(stdout(&output).starts_with(&format!("200 {url} in ")), "{output:?}");
    let seen = site.observed();
    let pages: Vec<&str> = seen.pages().map(|hit| hit.target.as_str()).collect();
    assert_eq!(pages, ["/catalogue/book_2.html"], "the URL given, not the crawl's");
    assert!(seen.hits.iter().all(|hit| hit.user_agent.as_deref() == Some("fetch-test/2")), "{:?}", seen.hits);
    assert!(!items.exists(), "the crawl's output is not written");

    let output = spiderling(&["fetch", &url, "--set", &format!("output={}", items.display())]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains(
            "--set output: a crawl's setting; this command takes only the retry, fetch, identity \
            and proxy keys"
        ),
        "{error}"
    );
    assert_eq!(site.observed().pages().count(), 1, "nothing sent after the refusal");
}

#[test]
fn fetch_gives_the_block_verdict_of_a_captcha_wall() {
    let site = Sandbox::hostile(HostileSite { captcha: 1, ..HostileSite::empty() }).unwrap();
    let url = format!("{}captcha/1", site.url());
    let output = spiderling(&["fetch", &url, "--block-marker", "g-recaptcha", "--css", "h1.title"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("block verdict: not blocked, after 1 blocked answers were retried"), "{text}");
    assert!(!text.contains("Are you a robot?"), "{text}");
}

#[test]
fn fetch_obeys_robots_and_says_so() {
    let site = Sandbox::demo(DemoSite { books: 10, per_page: 10, ..DemoSite::default() }).unwrap();
    let output = spiderling(&["fetch", &format!("{}private/a.html", site.url()), "--css", "h1"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("robots.txt disallows it"), "{output:?}");
    assert_eq!(site.observed().under("/private/"), 0);
}

#[test]
fn a_bad_selector_is_a_usage_error_before_any_request() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    // Each says what is wrong in words, never the parser's debug dump.
    for (css, problem) in [
        ("a[", "the selector ends too early"),
        ("a[=x]", "an attribute selector needs a name, as in `[href]`"),
        ("p..price", "a `.` must be followed by a class name"),
    ] {
        let output = spiderling(&["fetch", &site.url(), "--css", css]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim_end(), format!("error: --css: invalid CSS selector {css:?}: {problem}"));
    }
    assert!(site.observed().hits.is_empty());
}

#[test]
fn robots_says_what_is_allowed() {
    let site = Sandbox::demo(DemoSite {
        books: 10,
        per_page: 10,
        crawl_delay: Some(std::time::Duration::from_secs(2)),
        ..DemoSite::default()
    })
    .unwrap();
    let output = spiderling(&["robots", &site.url(), "/private/admin.html", "/catalogue/page-1.html"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("crawl-delay: 2s"), "{text}");
    assert!(text.contains(&format!("disallowed {}private/admin.html", site.url())), "{text}");
    assert!(text.contains(&format!("allowed    {}catalogue/page-1.html", site.url())), "{text}");
    assert_eq!(site.observed().hits.len(), 1, "only robots.txt");
}

#[test]
fn fetch_of_a_closed_port_says_the_connection_was_refused_and_the_whole_error() {
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let output = spiderling(&["fetch", &url, "--css", "h1"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("failed: robots.txt unavailable: connection refused ×1"), "{text}");
    let robots = format!("request to http://127.0.0.1:{port}/robots.txt failed: ");
    let line = text.lines().find(|line| line.contains(&robots)).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("Connection refused"), "the root of the chain, on the same line: {text}");
}

#[test]
fn fetch_of_a_redirect_off_the_web_says_why_there_is_no_page() {
    for target in ["javascript:alert(1)", "file:///etc/passwd", "ftp://127.0.0.1/x"] {
        let answer = format!(
            "HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let site = spider_sandbox::RawSite::start("127.0.0.1", move |_| answer.clone()).unwrap();
        let url = site.url().to_owned();
        let run = spiderling(&["fetch", &url, "--ignore-robots"]);
        let said = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{said}");
        assert!(said.contains("redirects to a URL that is not http(s)"), "{target}: {said}");
    }
}

/// `spiderling fetch URL | head` and `robots URL | true`: a reader that goes away before the
/// command writes ends it quietly, with exit code 0, and no panic on standard error.
#[test]
fn a_closed_pipe_ends_fetch_and_robots_quietly() {
    let site = Sandbox::demo(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let url = format!("{}catalogue/book_2.html", site.url());
    for args in [vec!["fetch", url.as_str(), "--css", "h1.title"], vec!["robots", url.as_str(), "/private/"]]
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_spiderling"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader closes its end before the command has fetched anything to write.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
    assert!(site.observed().pages().count() >= 1, "the page was fetched before the write");
}

/// `spiderling settings` lists every key with its default, and the value `--set` gives one.
#[test]
fn settings_lists_every_key_and_what_set_gives_it() {
    let output = spiderling(&["settings", "--set", "timeout=5s"]);
    assert!(output.status.success(), "{output:?}");
    let table = stdout(&output);
    assert!(
        table
            .lines()
            .any(|line| line.starts_with("timeout ") && line.contains(" 5s ") && line.contains("--set")),
        "{table}"
    );
    assert!(table.lines().any(|line| line.starts_with("retries ") && line.contains("default")), "{table}");
    assert!(table.lines().count() > 60, "{table}");
    let bad = spiderling(&["settings", "--set", "timout=5s"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("did you mean `timeout`?"), "{bad:?}");
}
