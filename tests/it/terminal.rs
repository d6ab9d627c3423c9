//! Log lines as a person sees them: on a terminal, warnings are written above the live
//! status line, never through it, and in colour unless `NO_COLOR` is set; in a file or a
//! pipe, never a colour code.
//!
//! The books example runs with standard error on a real pseudo-terminal (`posix_openpt`), as
//! in a shell, and starts from pages the demo site does not have: each is given up with a
//! warning while the status line is on screen.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use spider_sandbox::{DemoSite, Sandbox};

/// Missing pages the crawl starts from, at 20 requests a second: a couple of seconds of
/// warnings, long enough for the status line to be drawn between them.
const MISSING: usize = 50;

/// The books example crawling only pages `site` does not have.
fn books(site: &Sandbox, dir: &Path) -> Command {
    let missing: Vec<String> = (0..MISSING).map(|i| format!("{}missing-{i}.html", site.url())).collect();
    let mut command = Command::new(support::example("books"));
    command
        .arg("--set")
        .arg(format!("start_urls={}", missing.join(",")))
        .args(["--set", "rps=20"])
        .arg("-o")
        .arg(dir.join("books.jsonl"))
        .env("TERM", "xterm-256color")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// Run `command` with standard error on a new pseudo-terminal; everything the terminal
/// received, once the command has exited.
fn on_terminal(mut command: Command) -> String {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let leader = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&leader).unwrap();
    unlockpt(&leader).unwrap();
    let name = ptsname(&leader, Vec::new()).unwrap();
    let follower = OpenOptions::new().read(true).write(true).open(name.to_str().unwrap()).unwrap();
    let mut leader = File::from(leader);
    command.stderr(Stdio::from(follower));
    let mut child = command.spawn().unwrap();
    // The command's copy of the follower is the last: reading ends (EIO) when it exits.
    drop(command);
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match leader.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
    let status = child.wait().unwrap();
    let received = String::from_utf8_lossy(&received).into_owned();
    // 3: complete, with the missing pages in the failures file.
    assert_eq!(status.code(), Some(3), "{received}");
    received
}

/// Whether `text` holds an SGR (colour) sequence: ESC [ digits and semicolons, then `m`.
fn has_colour(text: &str) -> bool {
    text.split('\u{1b}').skip(1).any(|rest| {
        rest.strip_prefix('[')
            .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ';'))
            .is_some_and(|rest| rest.starts_with('m'))
    })
}

/// What a line shows once the terminal has applied its carriage returns and line
/// clears: the text after the last of them.
fn visible(line: &str) -> &str {
    // The terminal ends each line it was sent with "\r\n".
    let line = line.strip_suffix('\r').unwrap_or(line);
    let after_return = line.rsplit('\r').next().unwrap_or(line);
    after_return.rsplit("\u{1b}[2K").next().unwrap_or(after_return)
}

#[test]
fn warnings_are_written_above_the_status_line_in_colour() {
    let _ports = support::example_ports();
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let received = on_terminal(books(&site, dir.path()));

    assert!(received.contains(" pages · "), "the status line was drawn: {received:?}");
    let warnings: Vec<&str> = received.split('\n').filter(|line| line.contains("giving up")).collect();
    assert_eq!(warnings.len(), MISSING, "{received:?}");
    for warning in &warnings {
        let shown = visible(warning);
        assert!(
            shown.contains("giving up") && !shown.contains(" pages · "),
            "a warning cut through the status line: {warning:?}"
        );
    }
    assert!(warnings.iter().all(|line| has_colour(line)), "on a terminal, in colour: {warnings:?}");
}

#[test]
fn no_colour_on_a_terminal_with_no_color_set() {
    let _ports = support::example_ports();
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut command = books(&site, dir.path());
    command.env("NO_COLOR", "1");
    let received = on_terminal(command);

    let warnings: Vec<&str> = received.split('\n').filter(|line| line.contains("giving up")).collect();
    assert_eq!(warnings.len(), MISSING, "{received:?}");
    assert!(!warnings.iter().any(|line| has_colour(line)), "{warnings:?}");
}

#[test]
fn no_colour_codes_in_a_log_file() {
    let _ports = support::example_ports();
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("crawl.log");
    let mut command = books(&site, dir.path());
    command.stderr(File::create(&log).unwrap());
    let status = command.status().unwrap();
    assert_eq!(status.code(), Some(3));

    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(written.matches("giving up").count(), MISSING, "{written}");
    assert!(!written.contains('\u{1b}'), "an escape code in the log file: {written:?}");
}
