//! A headless Chromium for the tests that need a real browser: the dashboard's, and the
//! wire's, whose fingerprint site is checked against what Chromium sends.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A headless Chromium that can be started.
pub struct Chromium {
    program: String,
}

impl Chromium {
    /// `$CHROMIUM`, else the first of the usual names that starts; the test fails with how
    /// to install one when none does.
    pub fn find() -> Chromium {
        let named = std::env::var("CHROMIUM").ok();
        let candidates =
            named.into_iter().chain(["chromium", "chromium-browser", "google-chrome"].map(String::from));
        for program in candidates {
            let started = Command::new(&program)
                .args(["--headless=new", "--no-sandbox", "--version"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            if let Ok(child) = started {
                if let Some(status) = wait_bounded(child, Duration::from_secs(30)).0 {
                    if status.success() {
                        return Chromium { program };
                    }
                }
            }
        }
        panic!(
            "no Chromium could be started (tried $CHROMIUM, chromium, chromium-browser, google-chrome); \
             the dashboard's and the wire's tests need one: on Debian or Ubuntu `apt-get install -y \
             chromium`, elsewhere install Chromium or Chrome and set CHROMIUM to its path"
        );
    }

    /// The DOM of `url` once its scripts ran for three seconds of the page's time.
    pub fn dump_dom(&self, url: &str) -> String {
        self.run(&["--dump-dom", url])
    }

    /// As [`dump_dom`](Self::dump_dom), of a site whose certificate Chromium does not
    /// know: the sandbox's own, made at its start.
    pub fn dump_dom_insecure(&self, url: &str) -> String {
        self.run(&["--ignore-certificate-errors", "--dump-dom", url])
    }

    /// With `SPIDERLING_SCREENSHOTS=DIR` (`docs/screenshots.sh`), a picture of `url` as a
    /// laptop shows it, saved as DIR/`name`.
    pub fn screenshot(&self, url: &str, name: &str) {
        let Some(dir) = std::env::var_os("SPIDERLING_SCREENSHOTS") else { return };
        let path = std::path::Path::new(&dir).join(name);
        self.run(&[&format!("--screenshot={}", path.display()), "--window-size=1280,1000", url]);
        assert!(path.exists(), "{} written", path.display());
    }

    /// The browser on `args`, with a profile of its own, killed if it takes more than a
    /// minute; what it printed.
    pub fn run(&self, args: &[&str]) -> String {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(&self.program)
            .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("--virtual-time-budget=3000")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} did not start: {e}", self.program));
        let (status, out) = wait_bounded(child, Duration::from_secs(60));
        assert!(status.is_some_and(|s| s.success()), "{} {args:?} failed or timed out", self.program);
        out
    }
}

/// Wait for `child` up to `limit`, reading its output; killed at the limit.
fn wait_bounded(
    mut child: std::process::Child,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String) {
    let reader = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        })
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    (status, reader.map(|r| r.join().unwrap_or_default()).unwrap_or_default())
}
