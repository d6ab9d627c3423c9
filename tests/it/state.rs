//! The state file: a crawl stopped by Ctrl-C or killed with SIGKILL goes on where it
//! stopped, with every item in the output exactly once; a state file that is not this
//! crawl's is refused before anything is fetched or any file is touched.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{Crawler, Error};
use support::{config_for, expected_books, BookSpider};

/// The variable that makes this test binary the crawler the other tests start and kill.
const CHILD: &str = "STATE_TEST_CHILD_ARGS";
/// The seed of the kill tests' random moments: `STATE_TEST_SEED` to try others.
fn seed(default: u64) -> u64 {
    std::env::var("STATE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Slots of the child's crawl: the most pages a kill may make it fetch twice.
const CONCURRENCY: usize = 4;

/// The crawl the kill tests run in a child process: this test binary again, running only
/// this test, with the spider binary's command line in `CHILD` (one argument a line).
#[test]
#[ignore = "the child process of the kill tests, started by them"]
fn child_crawl() {
    support::run_child_crawl(CHILD, CONCURRENCY);
}

fn spawn_child(args: &[String]) -> Child {
    support::child_command(module_path!(), "child_crawl", CHILD, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Crawl `site` in a child process killed with SIGKILL `kills` times at seeded random
/// moments (from right after the start to some dozens of pages in), resumed each time,
/// then let it finish.
fn crawl_killed_and_resumed(site: &Sandbox, output: &str, seed: u64, kills: usize, extra: &[&str]) -> Killed {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = [
        "-o",
        &dir.path().join(output).display().to_string(),
        "--set",
        &format!("state={}", dir.path().join("books.state").display()),
        "--set",
        &format!("start_urls={}", site.url()),
        "--log-level",
        "error",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut made, mut early, mut resumed_on_items) = (0, 0, 0);
    let held_items = || std::fs::metadata(dir.path().join(output)).is_ok_and(|meta| meta.len() > 0);
    for _ in 0..kills {
        resumed_on_items += usize::from(held_items());
        let mut child = spawn_child(&args);
        // A kill during start-up now and then; otherwise some pages into the run.
        let pages = if rng.random_bool(0.2) { 0 } else { rng.random_range(1..=40) };
        let base = site.received();
        let deadline = Instant::now() + Duration::from_secs(30);
        while site.received() < base + pages && Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..=30)));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        made += 1;
        early += usize::from(pages == 0);
    }
    resumed_on_items += usize::from(held_items());
    let last = support::child_command(module_path!(), "child_crawl", CHILD, &args).output().unwrap();
    assert!(
        last.status.success(),
        "the last run finishes the crawl: {}\n{}",
        String::from_utf8_lossy(&last.stdout),
        String::from_utf8_lossy(&last.stderr)
    );
    Killed { dir, kills: made, early, resumed_on_items }
}

/// What the kill tests left.
struct Killed {
    dir: tempfile::TempDir,
    /// SIGKILLs sent to a running crawl.
    kills: usize,
    /// Of those, sent right after the start, perhaps before the run left any trace.
    early: usize,
    /// Runs started again on an output file that held items already.
    resumed_on_items: usize,
}

/// Pages the site answered more than once, as fetches beyond the first.
fn repeats(site: &Sandbox) -> (usize, BTreeMap<String, usize>) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for hit in site.observed().pages() {
        *counts.entry(hit.resource()).or_default() += 1;
    }
    let repeated = counts.values().map(|n| n - 1).sum();
    counts.retain(|_, n| *n > 1);
    (repeated, counts)
}

fn slow_site(books: usize) -> (DemoSite, Sandbox) {
    let demo = DemoSite { books, per_page: 10, latency: Duration::from_millis(15), ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    (demo, site)
}

fn stats(dir: &Path, name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
}

#[test]
fn killed_with_sigkill_again_and_again_every_item_is_written_exactly_once() {
    let (demo, site) = slow_site(300);
    let seed = seed(0x5eed_0001);
    let Killed { dir, kills, early, .. } = crawl_killed_and_resumed(&site, "books.jsonl", seed, 6, &[]);
    assert!(kills >= 3, "seed {seed:#x}: only {kills} kills landed before the crawl ended");

    let text = std::fs::read_to_string(dir.path().join("books.jsonl")).unwrap();
    assert!(text.ends_with('\n'), "no partial line");
    let mut books: Vec<support::Book> =
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    books.sort();
    assert_eq!(books, expected_books(demo.books), "seed {seed:#x}: every book, each once");

    let observed = site.observed();
    let fetched: BTreeSet<String> = observed.pages().map(|hit| hit.resource()).collect();
    assert_eq!(fetched.len(), demo.expected_pages() + 1, "every page (and the redirect hop) fetched");
    let (repeated, which) = repeats(&site);
    assert!(
        repeated <= kills * CONCURRENCY,
        "seed {seed:#x}: {repeated} pages fetched again after {kills} kills of a crawl of {CONCURRENCY} \
            slots: {which:?}"
    );

    let stats = stats(dir.path(), "books.stats.json");
    assert_eq!(stats["status"], "complete");
    assert_eq!(stats["items"], 300, "the stats count the whole crawl");
    let runs = stats["runs"].as_u64().unwrap() as usize;
    assert!(
        (kills + 1 - early..=kills + 1).contains(&runs),
        "{runs} runs after {kills} kills ({early} early)"
    );
    let failures = std::fs::read_to_string(dir.path().join("books.failures.jsonl")).unwrap_or_default();
    assert_eq!(failures, "", "no request lost or given up");
}

#[test]
fn a_killed_csv_crawl_has_its_header_once_and_every_row_once() {
    let (demo, site) = slow_site(200);
    let seed = seed(0x5eed_0002);
    // With the files synced at each checkpoint, as a crawl that must survive a power loss.
    let Killed { dir, kills, .. } =
        crawl_killed_and_resumed(&site, "books.csv", seed, 4, &["--set", "state_sync=true"]);
    assert!(kills >= 2, "seed {seed:#x}: only {kills} kills landed before the crawl ended");

    let text = std::fs::read_to_string(dir.path().join("books.csv")).unwrap();
    assert_eq!(text.matches("title,price,availability").count(), 1, "one header");
    assert!(text.starts_with("title,price,availability\n"));
    let mut books: Vec<support::Book> =
        csv::Reader::from_reader(text.as_bytes()).deserialize().map(Result::unwrap).collect();
    books.sort();
    assert_eq!(books, expected_books(demo.books), "seed {seed:#x}: every row, each once");
    let (repeated, which) = repeats(&site);
    assert!(repeated <= kills * CONCURRENCY, "seed {seed:#x}: {repeated} fetched again: {which:?}");
}

/// A compressed items file killed four times and resumed: read whole by `decode` (every
/// member, or frame, whole: a cut-off one would fail to decode), every book once.
fn a_killed_compressed_crawl_is_whole(file: &str, seed: u64, decode: fn(&[u8]) -> std::io::Result<String>) {
    let (demo, site) = slow_site(200);
    let seed = self::seed(seed);
    let Killed { dir, kills, resumed_on_items, .. } = crawl_killed_and_resumed(&site, file, seed, 4, &[]);
    assert!(kills >= 2, "seed {seed:#x}: only {kills} kills landed before the crawl ended");
    assert!(
        resumed_on_items >= 2,
        "seed {seed:#x}: {resumed_on_items} runs went on from a file that held items"
    );
    let text = decode(&std::fs::read(dir.path().join(file)).unwrap()).unwrap();
    let mut books: Vec<support::Book> =
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    books.sort();
    assert_eq!(books, expected_books(demo.books), "seed {seed:#x}: every book, each once");
    assert!(dir.path().join("books.stats.json").exists(), "the stats file beside it is books.stats.json");
}

#[test]
fn a_killed_gzipped_crawl_is_one_whole_gzip_file_with_every_item_once() {
    a_killed_compressed_crawl_is_whole("books.jsonl.gz", 0x5eed_0005, |bytes| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(bytes), &mut text).map(|_| text)
    });
}

#[test]
fn a_killed_zstd_crawl_is_one_whole_zstd_file_with_every_item_once() {
    a_killed_compressed_crawl_is_whole("books.jsonl.zst", 0x5eed_0004, |bytes| {
        zstd::stream::decode_all(bytes).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    });
}

/// The books example run as the README says, with `run` its arguments.
fn books_example(args: &[&str], state: &Path, output: &Path) -> (i32, String, String) {
    let run = Command::new(support::example("books"))
        .args(args)
        .arg("--set")
        .arg(format!("state={}", state.display()))
        .arg("-o")
        .arg(output)
        .output()
        .unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (run.status.code().unwrap_or(-1), text(&run.stdout), text(&run.stderr))
}

#[test]
fn ctrl_c_pauses_the_same_command_goes_on_and_a_finished_crawl_says_so() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let (state, output) = (dir.path().join("books.state"), dir.path().join("books.jsonl"));
    let first = Command::new(support::example("books"))
        .args(["--set", "rps=200", "--set"])
        .arg(format!("state={}", state.display()))
        .arg("-o")
        .arg(&output)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    support::interrupt(first.id());
    let paused = first.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&paused.stdout);
    assert_eq!(paused.status.code(), Some(130), "{printed}");
    let line = printed.lines().find(|l| l.contains("paused:")).unwrap_or_else(|| panic!("{printed}"));
    assert!(line.ends_with("queued; run the same command to go on"), "{line}");
    let first_items = support::read_json_lines(&output).len();
    assert!(first_items > 0 && first_items < 1000, "{first_items} items before the pause");

    let (code, printed, _) = books_example(&["--set", "rps=200"], &state, &output);
    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("books: 1051 pages, 1000 items") && printed.contains("over 2 runs"),
        "{printed}"
    );
    let titles: BTreeSet<String> =
        support::read_json_lines(&output).iter().map(|b| b["title"].as_str().unwrap().to_owned()).collect();
    assert_eq!(support::read_json_lines(&output).len(), 1000, "no book twice");
    assert_eq!(titles.len(), 1000, "every book");

    let before = std::fs::read(&output).unwrap();
    let (code, printed, _) = books_example(&[], &state, &output);
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("already complete: 1,051 pages, 1,000 items over 2 runs"), "{printed}");
    assert_eq!(std::fs::read(&output).unwrap(), before, "the output is left as it was");

    let (code, printed, logged) = books_example(&["--fresh"], &state, &output);
    assert_eq!(code, 0, "{printed}");
    assert!(logged.contains("discarding") && logged.contains("over 2 runs"), "{logged}");
    assert!(printed.contains("books: 1051 pages, 1000 items") && !printed.contains("runs"), "{printed}");
    assert_eq!(support::read_json_lines(&output).len(), 1000);

    // The key does what the flag does.
    let (code, printed, logged) =
        books_example(&["--set", "fresh=true", "--set", "rps=200"], &state, &output);
    assert_eq!(code, 0, "{printed}");
    assert!(logged.contains("discarding"), "{logged}");
    assert!(printed.contains("books: 1051 pages, 1000 items") && !printed.contains("runs"), "{printed}");
}

/// A finished crawl of `site` keeping its state in `dir`, and the state file's path.
async fn finished_crawl(site: &Sandbox, dir: &Path) -> PathBuf {
    let (config, _) = config_for(site, dir, "books.jsonl");
    let state = dir.join("books.state");
    Crawler::new(BookSpider::new(config.state(&state))).run().await.unwrap();
    state
}

/// What a refused run must leave as it was: the site's record, the files in `dir`.
fn untouched<'a>(site: &'a Sandbox, dir: &Path) -> impl Fn() + 'a {
    let received = site.received();
    let read = |dir: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .map(|path| {
                let bytes = std::fs::read(&path).unwrap();
                (path, bytes)
            })
            .collect()
    };
    let (files, dir) = (read(dir), dir.to_owned());
    move || {
        assert_eq!(site.received(), received, "nothing fetched");
        assert_eq!(read(&dir), files, "no file touched, none made");
    }
}

fn refusal(result: Result<spiderling::Summary, Error>) -> String {
    let error = result.unwrap_err();
    assert!(matches!(error, Error::State { .. }), "{error:?}");
    assert_eq!(error.exit_code(), std::process::ExitCode::from(2));
    error.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_of_another_spider_output_or_schema_is_refused_before_anything_is_touched() {
    let site = Sandbox::demo(DemoSite { books: 20, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = finished_crawl(&site, dir.path()).await;
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    let check = untouched(&site, dir.path());

    let other_spider = config.clone().set("name", "news").unwrap().state(&state);
    let message = refusal(Crawler::new(BookSpider::new(other_spider)).run().await);
    assert!(message.contains("belongs to the spider \"books\", not \"news\""), "{message}");

    let other_output = config.clone().output(dir.path().join("other.jsonl")).state(&state);
    let message = refusal(Crawler::new(BookSpider::new(other_output)).run().await);
    assert!(message.contains("was written for") && message.contains("books.jsonl"), "{message}");
    assert!(message.contains("other.jsonl") && message.contains("--fresh"), "{message}");
    check();

    // The same file, now of one type only: its items would be another crawl's.
    let typed = format!("{}?type=Book", dir.path().join("books.jsonl").display());
    let retyped = config.clone().set("output", &typed).unwrap().state(&state);
    let message = refusal(Crawler::new(BookSpider::new(retyped)).run().await);
    assert!(message.contains("books.jsonl?type=Book"), "{message}");
    check();

    let db = rusqlite::Connection::open(&state).unwrap();
    db.execute("UPDATE crawl SET value = '99' WHERE key = 'schema_version'", []).unwrap();
    drop(db);
    let check = untouched(&site, dir.path());
    let message = refusal(Crawler::new(BookSpider::new(config.state(&state))).run().await);
    assert!(message.contains("schema version 99") && message.contains("reads version 3"), "{message}");
    check();
}

/// `--fresh` discards this spider's own state file only: another spider's, or a file that
/// is no state file (a path typed wrong), is refused with its spider named and left as it
/// was, and `--fresh --force` discards it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_refuses_another_spiders_file_and_a_stranger_and_force_discards_them() {
    let site = Sandbox::demo(DemoSite { books: 20, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = finished_crawl(&site, dir.path()).await;
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let check = untouched(&site, dir.path());
    let news = config.clone().set("name", "news").unwrap().state(&state).fresh(true);
    let message = refusal(Crawler::new(BookSpider::new(news.clone())).run().await);
    assert!(
        message.contains("belongs to the spider \"books\", not \"news\" (23 pages done, 20 items"),
        "{message}"
    );
    assert!(message.contains("add --force to discard it"), "{message}");
    check();

    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes, not a state file\n").unwrap();
    let stranger = config.clone().state(&notes).fresh(true);
    let message = refusal(Crawler::new(BookSpider::new(stranger.clone())).run().await);
    assert!(message.contains("is not a Spiderling state file; --fresh discards only"), "{message}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes, not a state file\n");

    std::fs::remove_file(&output).unwrap();
    let summary = Crawler::new(BookSpider::new(news.force(true))).run().await.unwrap();
    assert_eq!(summary.counts.items, 20, "news started over on the file it was given");
    let summary = Crawler::new(BookSpider::new(stranger.force(true))).run().await.unwrap();
    assert_eq!(summary.counts.items, 20);
    assert_eq!(support::read_jsonl(&output), expected_books(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_empty_truncated_and_foreign_files_are_refused_and_left_as_they_were() {
    let site = Sandbox::demo(DemoSite { books: 200, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let real = finished_crawl(&site, dir.path()).await;
    let whole = std::fs::read(&real).unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");

    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("garbage.state", b"these are not the bytes of a database\n".repeat(20), "not an SQLite database"),
        ("empty.state", Vec::new(), "is empty"),
        ("truncated.state", whole[..whole.len() / 2].to_vec(), "is truncated"),
        ("foreign.state", std::fs::read(&foreign).unwrap(), "is not a Spiderling state file"),
    ];
    assert!(whole.len() > 3 * 4096, "the state file spans pages: {} bytes", whole.len());
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let check = untouched(&site, dir.path());
        let message = refusal(Crawler::new(BookSpider::new(config.clone().state(&path))).run().await);
        assert!(message.contains(expected) && message.contains(name), "{name}: {message}");
        check();
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} left as it was");
        // What the refusal says to do works: none of these is this spider's own file.
        assert!(message.contains("--fresh --force"), "{name}: {message}");
        let advised = config.clone().state(&path).fresh(true).force(true);
        assert_eq!(Crawler::new(BookSpider::new(advised)).run().await.unwrap().counts.items, 200, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_in_use_by_a_running_crawl_is_refused() {
    let demo =
        DemoSite { books: 30, per_page: 10, latency: Duration::from_millis(100), ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let state = dir.path().join("books.state");
    let running = tokio::spawn(Crawler::new(BookSpider::new(config.clone().state(&state))).run());
    while site.received() < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let (second, _) = config_for(&site, dir.path(), "books.jsonl");
    let message = refusal(Crawler::new(BookSpider::new(second.state(&state))).run().await);
    assert!(message.contains("in use by another crawl"), "{message}");
    running.await.unwrap().unwrap();
    assert_eq!(support::read_jsonl(&output), expected_books(30), "the running crawl went on undisturbed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_crawl_is_already_complete_unless_a_new_start_url_arrives() {
    let site = Sandbox::demo(DemoSite { books: 20, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = finished_crawl(&site, dir.path()).await;
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let received = site.received();

    let again = Crawler::new(BookSpider::new(config.clone().state(&state))).run().await.unwrap();
    assert_eq!(again.status, spiderling::CrawlStatus::AlreadyComplete);
    assert_eq!((again.counts.items, again.runs), (20, 1));
    assert_eq!(site.received(), received, "nothing fetched");

    let new = format!("{}catalogue/book_3.html?edition=2", site.url());
    let more = Crawler::new(BookSpider::new(config.start_url(&new).state(&state))).run().await.unwrap();
    assert_eq!(more.status, spiderling::CrawlStatus::Complete);
    assert_eq!((more.runs, more.counts.items), (2, 21), "{more}");
    let fetched: Vec<String> =
        site.observed().hits[received..].iter().map(|hit| hit.target.clone()).collect();
    assert_eq!(fetched, ["/catalogue/book_3.html?edition=2"], "only the new page; robots.txt was remembered");
    assert_eq!(support::read_json_lines(&output).len(), 21);
}

/// Two processes starting at once on a new file each built a file of their own, renamed it
/// into place and locked their own: the loser saw "database is locked", and now and then
/// both ran and wrote every item twice. Two opens at once, many times over: one opens, the
/// other is told the file is in use (exit 2).
#[test]
fn two_crawls_starting_at_once_on_a_new_state_file_one_runs_and_the_other_is_told_it_is_in_use() {
    for trial in 0..100 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("books.state");
        let start = std::sync::Barrier::new(2);
        let open = || {
            start.wait();
            spiderling::StateFrontier::open(&path, &spiderling::Config::new("books"))
        };
        let (first, second) = std::thread::scope(|scope| {
            let first = scope.spawn(open);
            let second = scope.spawn(open);
            (first.join().unwrap(), second.join().unwrap())
        });
        let (_opened, refused) = match (first, second) {
            (Ok(opened), Err(refused)) | (Err(refused), Ok(opened)) => (opened, refused),
            (first, second) => {
                panic!("trial {trial}: one open and one refusal, not {first:?} and {second:?}")
            }
        };
        assert!(matches!(refused, Error::State { .. }), "trial {trial}: {refused:?}");
        assert!(refused.to_string().contains("in use by another crawl"), "trial {trial}: {refused}");
        assert_eq!(refused.exit_code(), std::process::ExitCode::from(2));
    }
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A refusal used to close a read-write connection, which copies the log into the file and
/// deletes it. A crawl killed with its log beside the file, refused for another output and
/// another spider: the file, its log and the log's index stay byte for byte, and the right
/// command then finishes the crawl with every book once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_state_file_is_left_byte_for_byte_with_its_log_and_the_crawl_goes_on_after() {
    let (demo, site) = slow_site(300);
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let state = dir.path().join("books.state");
    let args: Vec<String> = vec![
        "-o".into(),
        output.display().to_string(),
        "--set".into(),
        format!("state={}", state.display()),
        "--set".into(),
        format!("start_urls={}", site.url()),
        "--log-level".into(),
        "error".into(),
    ];
    let mut child = spawn_child(&args);
    let deadline = Instant::now() + Duration::from_secs(30);
    while site.received() < 60 && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sidecar(&state, "-wal").exists() && sidecar(&state, "-shm").exists(), "the kill left the log");

    let check = untouched(&site, dir.path());
    let other_output = config.clone().output(dir.path().join("other.jsonl")).state(&state);
    let message = refusal(Crawler::new(BookSpider::new(other_output)).run().await);
    assert!(message.contains("was written for"), "{message}");
    let other_spider = config.clone().set("name", "news").unwrap().state(&state);
    let message = refusal(Crawler::new(BookSpider::new(other_spider)).run().await);
    assert!(message.contains("belongs to the spider"), "{message}");
    check();

    Crawler::new(BookSpider::new(config.state(&state))).run().await.unwrap();
    assert_eq!(support::read_jsonl(&output), expected_books(demo.books), "every book, each once");
}

/// A damaged page of the seen set let a crawl start, then stopped every run with "database
/// disk image is malformed" and no word of what to do. It is found at open: refused
/// (exit 2), left as it was, and `--fresh` starts over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_page_is_found_at_open_and_the_file_refused_with_what_to_do() {
    let site = Sandbox::demo(DemoSite { books: 200, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = finished_crawl(&site, dir.path()).await;
    let (root, page_size) = {
        let db = rusqlite::Connection::open(&state).unwrap();
        let root: i64 = db
            .query_row("SELECT rootpage FROM sqlite_master WHERE name = 'seen'", [], |row| row.get(0))
            .unwrap();
        let page_size: i64 = db.query_row("PRAGMA page_size", [], |row| row.get(0)).unwrap();
        (usize::try_from(root).unwrap(), usize::try_from(page_size).unwrap())
    };
    let mut bytes = std::fs::read(&state).unwrap();
    bytes[(root - 1) * page_size..root * page_size].fill(0xa5);
    std::fs::write(&state, &bytes).unwrap();

    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let check = untouched(&site, dir.path());
    let message = refusal(Crawler::new(BookSpider::new(config.clone().state(&state))).run().await);
    assert!(message.contains("is damaged") && message.contains("--fresh"), "{message}");
    check();

    let fresh = config.state(&state).set("fresh", "true").unwrap();
    Crawler::new(BookSpider::new(fresh)).run().await.unwrap();
    assert_eq!(support::read_jsonl(&output), expected_books(200));
}

/// A state file whose committed length of the output is not the length written (64 bytes
/// short, as a damaged file had it) is refused before anything is touched: the output no
/// longer ends there as it did. Before, the crawl cut the output mid-line and went on
/// (exit 0, "1000 items", and a broken line in the file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_length_the_output_does_not_end_at_is_refused() {
    let site = Sandbox::demo(DemoSite { books: 60, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let state = dir.path().join("books.state");
    let config = config.state(&state).concurrency(1);
    Crawler::new(BookSpider::new(config.clone().max_pages(30))).run().await.unwrap();
    let written = std::fs::metadata(&output).unwrap().len();
    assert!(written > 64, "the first run wrote items");
    let db = rusqlite::Connection::open(&state).unwrap();
    db.execute("UPDATE files SET bytes = bytes - 64 WHERE role = 'output'", []).unwrap();
    drop(db);

    let check = untouched(&site, dir.path());
    let error = Crawler::new(BookSpider::new(config.clone())).run().await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, Error::Config(_)), "{error:?}");
    assert!(message.contains("does not end at byte") && message.contains("--fresh"), "{message}");
    check();
}

/// Creation on a full disk left a half-made file that the next run refused, and an orphan
/// log; a kill during creation left a temporary file nothing removed. Now a failed creation
/// leaves nothing, the next open removes what a killed one left, and once there is room
/// the file is made.
#[test]
fn a_state_file_created_on_a_full_disk_leaves_nothing_and_is_made_once_there_is_room() {
    let Some(disk) = support::SmallDisk::mount(1 << 20) else { return };
    let path = disk.path().join("books.state");
    let config = spiderling::Config::new("books");
    // What a creation killed before its rename leaves.
    std::fs::write(disk.path().join(".books.state.new-4242"), b"half a database").unwrap();
    std::fs::write(disk.path().join(".books.state.new-4242-journal"), b"and its journal").unwrap();
    disk.fill_leaving(16 * 1024);

    let error = spiderling::StateFrontier::open(&path, &config).unwrap_err();
    assert!(matches!(error, Error::Store { .. } | Error::Io { .. }), "{error:?}");
    assert_eq!(disk.files(), Vec::<String>::new(), "no state file, log or temporary file left");

    disk.free();
    let mut frontier = spiderling::StateFrontier::open(&path, &config).unwrap();
    use spiderling::Frontier;
    frontier.enqueue(spiderling::Request::get("https://books.example/a").unwrap()).unwrap();
    frontier.commit().unwrap();
    drop(frontier);
    let mut again = spiderling::StateFrontier::open(&path, &config).unwrap();
    assert!(again.next("https://books.example:443").unwrap().is_some(), "what was committed is there");
}

/// When the disk filled, the commit failed, but the end of the run still recorded the
/// output's length outside the failed transaction: the resumed crawl wrote items twice.
/// Crawls stopped by a full disk at different moments, each resumed once there is room:
/// every book once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_stopped_by_a_full_disk_goes_on_once_there_is_room_and_writes_every_book_once() {
    let Some(disk) = support::SmallDisk::mount(64 << 20) else { return };
    let site = Sandbox::demo(DemoSite { books: 300, per_page: 10, ..DemoSite::default() }).unwrap();
    for (trial, leave_kib) in [128_u64, 256, 384, 512, 768, 1024, 1536].into_iter().enumerate() {
        for name in disk.files() {
            std::fs::remove_file(disk.path().join(name)).unwrap();
        }
        let (config, output) = config_for(&site, disk.path(), "books.jsonl");
        let config = config.state(disk.path().join("books.state"));
        disk.fill_leaving(leave_kib * 1024);
        let stopped = Crawler::new(BookSpider::new(config.clone())).run().await;
        assert!(stopped.is_err(), "trial {trial}: the full disk stops the crawl: {stopped:?}");
        disk.free();
        let resumed = Crawler::new(BookSpider::new(config)).run().await;
        assert!(resumed.is_ok(), "trial {trial} ({leave_kib} KiB): {resumed:?}");
        let written = support::read_jsonl(&output);
        let twice = written.windows(2).filter(|pair| pair[0] == pair[1]).count();
        let missing = expected_books(300).iter().filter(|book| !written.contains(book)).count();
        assert_eq!((missing, twice), (0, 0), "trial {trial} ({leave_kib} KiB): books missing, books twice");
        assert_eq!(written.len(), 300);
    }
}

/// Without a state file, a full disk left half a line at the end of the output, and the
/// error printed last named the stats file (refused by the same disk), not the output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_without_a_state_file_leaves_whole_lines_and_names_the_output() {
    let Some(disk) = support::SmallDisk::mount(8 << 20) else { return };
    let site = Sandbox::demo(DemoSite { books: 1000, per_page: 20, ..DemoSite::default() }).unwrap();
    for leave_kib in [24_u64, 56, 88] {
        for name in disk.files() {
            std::fs::remove_file(disk.path().join(name)).unwrap();
        }
        let (config, output) = config_for(&site, disk.path(), "books.jsonl");
        disk.fill_leaving(leave_kib * 1024);
        let error = Crawler::new(BookSpider::new(config)).run().await.unwrap_err();
        disk.free();
        assert!(error.to_string().contains("books.jsonl"), "{leave_kib} KiB: {error}");
        let text = std::fs::read_to_string(&output).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "{leave_kib} KiB: half a line at the end");
        for line in text.lines() {
            assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "{leave_kib} KiB: {line}");
        }
    }
}

/// Random damage in a state file's pages (a disk's bad sector, a copy cut short and
/// patched) went unnoticed by the file's structural check in 20 of 21 files: the crawl
/// went on from a frontier or seen-set that was not the one written. Each of 21 files,
/// damaged at a seeded random place of a random page, is now either refused at open as
/// damaged, or, where the damage hit nothing the crawl reads, resumed to every book once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_damaged_at_random_is_refused_or_resumed_to_every_book_once() {
    let site = Sandbox::demo(DemoSite { books: 200, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let state = dir.path().join("books.state");
    Crawler::new(BookSpider::new(config.clone().state(&state).max_pages(60))).run().await.unwrap();
    let page_size = 4096;
    let (pristine, written) = (std::fs::read(&state).unwrap(), std::fs::read(&output).unwrap());
    let pages = pristine.len() / page_size;
    let mut rng = SmallRng::seed_from_u64(seed(58));
    let mut outcomes = Vec::new();
    for _ in 0..21 {
        let mut bytes = pristine.clone();
        // Where the page holds something: damage to its free space harms nothing.
        let (page, at) = loop {
            let page = rng.random_range(1..pages);
            let at = page * page_size + rng.random_range(0..page_size - 16);
            if pristine[at..at + 16].iter().filter(|b| **b != 0).count() > 8 {
                break (page, at);
            }
        };
        rng.fill(&mut bytes[at..at + 16]);
        std::fs::write(&state, &bytes).unwrap();
        std::fs::write(&output, &written).unwrap();
        let outcome = match Crawler::new(BookSpider::new(config.clone().state(&state))).run().await {
            Err(error) if error.to_string().contains("is damaged") => "refused".to_owned(),
            Ok(_) if support::read_jsonl(&output) == expected_books(200) => "every book once".to_owned(),
            Ok(_) => {
                format!("page {page} byte {at}: exit 0 with {} items", support::read_jsonl(&output).len())
            }
            Err(error) => format!("page {page} byte {at}: {error}"),
        };
        outcomes.push(outcome);
    }
    let wrong: Vec<_> = outcomes.iter().filter(|o| *o != "refused" && *o != "every book once").collect();
    assert!(wrong.is_empty(), "{wrong:#?}\nall: {outcomes:?}");
}

/// A file of schema version 2, made before the checksums, is given them when opened and
/// goes on: every book once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_of_version_2_gets_its_checksums_and_goes_on() {
    let site = Sandbox::demo(DemoSite { books: 100, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "books.jsonl");
    let state = dir.path().join("books.state");
    let config = config.state(&state);
    Crawler::new(BookSpider::new(config.clone().max_pages(30))).run().await.unwrap();
    let db = rusqlite::Connection::open(&state).unwrap();
    db.execute_batch(
        "UPDATE requests SET sum = NULL; DELETE FROM crawl WHERE key = 'seen_sum'; \
         UPDATE crawl SET value = '2' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(db);

    Crawler::new(BookSpider::new(config.clone().max_pages(30))).run().await.unwrap();
    let db = rusqlite::Connection::open(&state).unwrap();
    let fact = |key: &str| -> String {
        db.query_row("SELECT value FROM crawl WHERE key = ?1", [key], |row| row.get(0)).unwrap()
    };
    assert_eq!(fact("schema_version"), "3");
    assert_eq!(fact("seen_sum").len(), 32);
    let unsummed: i64 =
        db.query_row("SELECT count(*) FROM requests WHERE sum IS NULL", [], |row| row.get(0)).unwrap();
    let queued: i64 = db.query_row("SELECT count(*) FROM requests", [], |row| row.get(0)).unwrap();
    assert!(queued > 0 && unsummed == 0, "{unsummed} of {queued} requests without a sum");
    drop(db);

    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(support::read_jsonl(&output), expected_books(100), "every book, each once");
}
