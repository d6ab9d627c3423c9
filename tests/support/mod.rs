//! A book spider for the demo site, written as a user would, with knobs for the tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod chromium;
pub mod realweb;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use spider_sandbox::Sandbox;
use spiderling::prelude::*;

/// A product of the cookie shop (`spider_sandbox::ShopSite`).
#[derive(Item, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Product {
    #[css("h1.title")]
    pub title: String,
    #[css("p.price")]
    pub price: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Item)]
pub struct Book {
    #[css("h1.title")]
    pub title: String,
    #[css("p.price")]
    pub price: String,
    #[css("p.availability")]
    pub availability: String,
}

struct Css {
    title: Selector,
    price: Selector,
    availability: Selector,
    links: Selector,
}

/// How far the server ran ahead of parsing: requests received minus pages parsed.
#[derive(Default)]
pub struct Lag {
    site: Option<Arc<Sandbox>>,
    parsed: AtomicUsize,
    most: AtomicUsize,
}

impl Lag {
    pub fn watching(site: Arc<Sandbox>) -> Arc<Lag> {
        Arc::new(Lag { site: Some(site), ..Lag::default() })
    }

    pub fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

pub struct BookSpider {
    config: Config,
    css: Arc<Css>,
    burn: Duration,
    lag: Option<Arc<Lag>>,
}

impl BookSpider {
    pub fn new(config: Config) -> Self {
        let css = |s: &str| Selector::parse(s).unwrap();
        BookSpider {
            config,
            css: Arc::new(Css {
                title: css("h1.title"),
                price: css("p.price"),
                availability: css("p.availability"),
                links: css("a[href]"),
            }),
            burn: Duration::ZERO,
            lag: None,
        }
    }

    /// Spend `cpu` of busy CPU inside each page's parse job.
    pub fn burning(mut self, cpu: Duration) -> Self {
        self.burn = cpu;
        self
    }

    pub fn watching_lag(mut self, lag: Arc<Lag>) -> Self {
        self.lag = Some(lag);
        self
    }
}

impl SpiderConfig for BookSpider {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

#[async_trait]
impl Spider for BookSpider {
    type Item = Book;

    async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
        let css = self.css.clone();
        let burn = self.burn;
        let (book, links) = page
            .html(move |doc| {
                let started = Instant::now();
                while started.elapsed() < burn {
                    std::hint::spin_loop();
                }
                let book = doc.text(&css.title).map(|title| Book {
                    title,
                    price: doc.text(&css.price).unwrap_or_default(),
                    availability: doc.text(&css.availability).unwrap_or_default(),
                });
                (book, doc.links(&css.links))
            })
            .await?;
        if let Some(book) = book {
            cx.emit(book);
        }
        cx.follow_all(links);
        if let Some(lag) = &self.lag {
            let parsed = lag.parsed.fetch_add(1, Ordering::SeqCst) + 1;
            let received = lag.site.as_ref().map_or(0, |site| site.received());
            lag.most.fetch_max(received.saturating_sub(parsed), Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A listing page of the demo shop: the other type of item [`ShelfSpider`] finds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listing {
    /// Its number, `K` of `/catalogue/page-K.html`.
    pub page: usize,
    /// The books it lists.
    pub books: usize,
}

/// What [`ShelfSpider`] finds: books on their pages, listings on theirs.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Shelved {
    Book(Book),
    Listing(Listing),
}

/// The book spider with items of two types: a `Book` per book page, a `Listing` per
/// listing page, for the outputs that each take one type.
pub struct ShelfSpider(BookSpider);

impl ShelfSpider {
    pub fn new(config: Config) -> Self {
        ShelfSpider(BookSpider::new(config))
    }
}

impl SpiderConfig for ShelfSpider {
    fn config(&self) -> Config {
        self.0.config.clone()
    }
}

#[async_trait]
impl Spider for ShelfSpider {
    type Item = Shelved;

    async fn parse(&self, page: Page, cx: &mut Cx<Shelved>) -> Result {
        let css = self.0.css.clone();
        let listed = Selector::parse("h3 > a").unwrap();
        let (book, listed, links) = page
            .html(move |doc| {
                let book = doc.text(&css.title).map(|title| Book {
                    title,
                    price: doc.text(&css.price).unwrap_or_default(),
                    availability: doc.text(&css.availability).unwrap_or_default(),
                });
                (book, doc.select(&listed).count(), doc.links(&css.links))
            })
            .await?;
        if let Some(book) = book {
            cx.emit(Shelved::Book(book));
        }
        let number =
            page.url().path().strip_prefix("/catalogue/page-").and_then(|rest| rest.strip_suffix(".html"));
        if let Some(page) = number.and_then(|number| number.parse().ok()).filter(|_| listed > 0) {
            cx.emit(Shelved::Listing(Listing { page, books: listed }));
        }
        cx.follow_all(links);
        Ok(())
    }
}

/// The listings of the demo shop of `books` books, `per_page` a page.
pub fn expected_listings(books: usize, per_page: usize) -> Vec<Listing> {
    (1..=books.div_ceil(per_page))
        .map(|page| Listing { page, books: per_page.min(books - (page - 1) * per_page) })
        .collect()
}

/// The demo catalogue as the spider should scrape it.
pub fn expected_books(count: usize) -> Vec<Book> {
    let mut books: Vec<Book> = spider_sandbox::catalogue(count)
        .into_iter()
        .map(|b| Book { title: b.title, price: b.price, availability: b.availability })
        .collect();
    books.sort();
    books
}

/// Items of a JSON Lines file, sorted.
pub fn read_jsonl(path: &Path) -> Vec<Book> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut books: Vec<Book> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    books.sort();
    books
}

/// A config aimed at `site`, inside its domain, writing to `out` in `dir`.
pub fn config_for(site: &Sandbox, dir: &Path, out: &str) -> (Config, PathBuf) {
    let output = dir.join(out);
    let config = Config::new("books").start_url(site.url()).allowed_domain("127.0.0.1").output(&output);
    (config, output)
}

/// Every line of a JSON Lines file, parsed.
pub fn read_json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// This process's peak resident set in KiB, from /proc (Linux).
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// An example binary, built by `cargo test` beside the test binaries.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join(name)
}

/// Send SIGINT (Ctrl-C) to a process.
pub fn interrupt(pid: u32) {
    let sent = std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(sent.success());
}

/// A crawl of `site` inside its domain, 8 slots, no pause, no status line: the in-process
/// crawls of the tests of outputs.
pub fn quick_config(site: &Sandbox) -> Config {
    Config::new("books")
        .start_url(site.url())
        .allowed_domain("127.0.0.1")
        .concurrency(8)
        .per_host(8)
        .delay(Duration::ZERO)
        .progress(false)
}

/// A child crawl's command line: `outputs` (each after `-o`), `extra`, then a state file
/// in `dir`, `site` as the start and errors only in the log.
pub fn child_args(dir: &Path, site: &Sandbox, outputs: &[String], extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> = outputs.iter().flat_map(|output| ["-o".to_owned(), output.clone()]).collect();
    args.extend(extra.iter().cloned());
    args.extend([
        "--set".to_owned(),
        format!("state={}", dir.join("books.state").display()),
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--log-level".to_owned(),
        "error".to_owned(),
    ]);
    args
}

/// The examples serve their sites on fixed ports (books 8765, login and proxied 8767,
/// adaptive 8769), and the books example crawls the site already there when its port is
/// taken: two at once would crawl each other's, which ends with the process that serves
/// it. The tests that run an example take turns.
pub fn example_ports() -> std::sync::MutexGuard<'static, ()> {
    static PORTS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    PORTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The arguments that make this test binary run only the ignored test `test` of the
/// module `module` (its `module_path!()`): the name a test has in a binary that holds
/// many test files as modules, or in one of its own.
pub fn only_test(module: &str, test: &str) -> Vec<String> {
    let name = match module.split_once("::") {
        Some((_binary, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    };
    [name.as_str(), "--exact", "--ignored", "--nocapture", "--test-threads=1"].map(str::to_owned).to_vec()
}

/// This test binary again, to run only the ignored test `test` of `module` (its
/// `module_path!()`; a test that calls [`run_child_crawl`]): the books spider binary with
/// `args` as its command line, handed over in the variable `var`.
pub fn child_command(module: &str, test: &str, var: &str, args: &[String]) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(only_test(module, test)).env(var, args.join("\n"));
    command
}

/// Let a child crawl run until `site` has received `pages` more requests (or 30 s
/// passed), then SIGKILL it; `false` when it had finished by itself first.
pub fn kill_after(child: &mut std::process::Child, site: &Sandbox, pages: usize) -> bool {
    let base = site.received();
    let deadline = Instant::now() + Duration::from_secs(30);
    while site.received() < base + pages && Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if child.try_wait().unwrap().is_some() {
        return false;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    true
}

/// Wait for a child crawl, bounded; its exit status. One still running after `within`
/// is killed, and the test fails with what it wrote to a piped standard error.
pub fn finish(mut child: std::process::Child, within: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!("a child crawl did not finish in {within:?}: {}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run the child crawl of `test` (see [`child_command`]) again and again, each run
/// SIGKILLed once `site` has received `pages(round)` more requests, for `rounds` rounds or
/// until a run ends by itself; then once more, to its end. How many kills landed, and the
/// last run.
pub fn kill_and_resume(
    module: &str,
    test: &str,
    var: &str,
    args: &[String],
    site: &Sandbox,
    rounds: usize,
    pages: impl Fn(usize) -> usize,
) -> (usize, std::process::Output) {
    let mut kills = 0;
    for round in 0..rounds {
        let mut running = child_command(module, test, var, args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if !kill_after(&mut running, site, pages(round)) {
            break;
        }
        kills += 1;
    }
    (kills, child_command(module, test, var, args).output().unwrap())
}

/// Be the books spider binary a test started as a child process (this test binary again,
/// running one ignored test), with its command line in the variable `var`, one argument a
/// line; do nothing when `var` is not set. Exits with 0 when the crawl succeeded.
pub fn run_child_crawl(var: &str, concurrency: usize) {
    run_child_crawl_of(var, concurrency, BookSpider::new);
}

/// [`run_child_crawl`] with the spider `spider` makes of the child's config.
pub fn run_child_crawl_of<S: Spider>(var: &str, concurrency: usize, spider: impl FnOnce(Config) -> S) {
    let Ok(args) = std::env::var(var) else { return };
    let config = Config::new("books")
        .allowed_domain("127.0.0.1")
        .concurrency(concurrency)
        .per_host(concurrency)
        .progress(false);
    let args =
        std::iter::once(std::ffi::OsString::from("books")).chain(args.lines().map(std::ffi::OsString::from));
    let code = spiderling::cli::run(spider(config), args);
    std::process::exit(if code == std::process::ExitCode::SUCCESS { 0 } else { 1 });
}

/// The hostile site limiting each client IP to 40 requests a second, answered 429 without
/// a Retry-After beyond that; a client that keeps going through ten 429s in a second is
/// banned for a minute. Adaptive mode climbs past the limit and backs off.
pub fn per_ip_limited_site(pages: usize) -> spider_sandbox::HostileSite {
    let limit = spider_sandbox::IdentityLimit {
        requests: 40,
        per: Duration::from_secs(1),
        ban_after: 10,
        ban_for: Duration::from_secs(60),
    };
    spider_sandbox::HostileSite {
        pages,
        limit: Some(limit),
        silent_limit: true,
        ..spider_sandbox::HostileSite::empty()
    }
}

/// Every log line of this process from now on, at TRACE and without colour, for the tests
/// that look for a secret in what was logged. It installs the process-wide subscriber
/// once: the tests of one binary that call it share one log.
pub fn capture_logs() -> CapturedLog {
    // One subscriber per process: tests of one binary that each ask share its log.
    static CAPTURED: std::sync::OnceLock<CapturedLog> = std::sync::OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = CapturedLog::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            captured
        })
        .clone()
}

/// What [`capture_logs`] has captured so far.
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLog {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A small file system of its own (tmpfs) mounted on a temporary directory, for the tests
/// of a full disk; unmounted when dropped. Mounting needs root (CI runs as root).
pub struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `bytes`, or `None` (said on stderr) where this process may not mount one.
    pub fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::piped())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(SmallDisk { dir }),
            Ok(out) => {
                eprintln!(
                    "skipped: a tmpfs cannot be mounted here ({}); run as root, as CI does",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(error) => {
                eprintln!("skipped: `mount` cannot be run here ({error}); run as root, as CI does");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill the file system with `filler` until it is full, then give back `leave` bytes.
    pub fn fill_leaving(&self, leave: u64) {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0x5a_u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        while file.write_all(&block[..4096]).is_ok() {}
        drop(file);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len.saturating_sub(leave))
            .unwrap();
    }

    /// Give back all the room the filler took.
    pub fn free(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }

    /// The names of the files in it, but the filler.
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "filler")
            .collect();
        names.sort();
        names
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}
