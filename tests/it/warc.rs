//! WARC archives: warcio, an independent reader, accepts what a crawl writes, its index
//! agrees with ours, and every page's payload reads back as the site served it; after
//! SIGKILLs and resumes, the archive holds each page once.

#![allow(clippy::unwrap_used)] // test code

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::Crawler;
use support::BookSpider;

const CHILD: &str = "WARC_TEST_CHILD_ARGS";

#[test]
#[ignore = "the child process of the kill test, started by it"]
fn child_crawl() {
    support::run_child_crawl(CHILD, 4);
}

/// warcio, from `WARCIO`, PATH, or the checkout's `.ci/venv` (`bash .ci/run` installs it).
fn warcio() -> PathBuf {
    if let Some(program) = std::env::var_os("WARCIO") {
        return PathBuf::from(program);
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join("warcio")).find(|p| p.is_file()));
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/warcio");
    on_path.or_else(|| venv.is_file().then_some(venv)).unwrap_or_else(|| {
        panic!("these tests need warcio: .ci/venv/bin/pip install warcio, or run bash .ci/run")
    })
}

fn run(program: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{} {args:?}: {}", program.display(), String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The files of the archive named `warc`: itself, then `NAME-00001.warc.gz` and on.
fn archive_files(warc: &Path) -> Vec<PathBuf> {
    let stem = warc.file_name().unwrap().to_string_lossy().trim_end_matches(".warc.gz").to_owned();
    let numbered = (1..).map(|n| warc.with_file_name(format!("{stem}-{n:05}.warc.gz")));
    std::iter::once(warc.to_owned()).chain(numbered).take_while(|file| file.exists()).collect()
}

/// The response records warcio's index lists in every file of the archive `warc`, by
/// URL: their files' names and offsets.
fn responses_in_archive(warc: &Path) -> BTreeMap<String, Vec<(String, u64)>> {
    let mut all: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for file in archive_files(warc) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for (url, offsets) in warcio_responses(&file) {
            all.entry(url).or_default().extend(offsets.into_iter().map(|offset| (name.clone(), offset)));
        }
    }
    all
}

/// warcio's check of every file of the archive: what it found wrong, if anything.
fn warcio_check_all(warc: &Path) -> String {
    archive_files(warc)
        .iter()
        .map(|file| {
            String::from_utf8_lossy(&run(&warcio(), &["check", &file.display().to_string()]))
                .trim()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// The response records warcio's index lists, by URL: their offsets.
fn warcio_responses(warc: &Path) -> BTreeMap<String, Vec<u64>> {
    let index =
        run(&warcio(), &["index", "-f", "warc-type,warc-target-uri,offset", &warc.display().to_string()]);
    let mut responses: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&index).lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        if entry["warc-type"] == "response" {
            let offset = entry["offset"].as_str().unwrap().parse().unwrap();
            responses.entry(entry["warc-target-uri"].as_str().unwrap().to_owned()).or_default().push(offset);
        }
    }
    responses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warcio_accepts_the_archive_and_every_payload_reads_back_as_served() {
    let site = Sandbox::demo(DemoSite { books: 20, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("crawl.warc.gz");
    let config = support::quick_config(&site).warc(&warc);
    let summary = Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    assert_eq!(summary.counts.items, 20);
    let checked = run(&warcio(), &["check", "-v", &warc.display().to_string()]);
    let checked = String::from_utf8_lossy(&checked);
    assert!(checked.contains("digest pass") && !checked.contains("fail"), "{checked}");

    let responses = warcio_responses(&warc);
    let pages: Vec<String> = site
        .observed()
        .pages()
        .map(|hit| format!("{}{}", site.url().trim_end_matches('/'), hit.target))
        .collect();
    assert!(pages.len() >= 23, "{pages:?}");
    for page in &pages {
        assert_eq!(responses.get(page).map(Vec::len), Some(1), "{page} once in the archive: {responses:?}");
    }
    // Our own index names the same records at the same offsets.
    let ours = std::fs::read_to_string(dir.path().join("crawl.cdxj")).unwrap();
    for line in ours.lines() {
        let json: serde_json::Value = serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let url = json["url"].as_str().unwrap();
        let offset: u64 = json["offset"].as_str().unwrap().parse().unwrap();
        assert_eq!(responses.get(url), Some(&vec![offset]), "{line}");
    }
    assert_eq!(ours.lines().count(), responses.len());
    // Byte for byte: each payload as warcio extracts it, against the site's answer now.
    // A redirect is archived as the redirect: not followed here either.
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for (url, offsets) in &responses {
        let payload =
            run(&warcio(), &["extract", "--payload", &warc.display().to_string(), &offsets[0].to_string()]);
        let served = client.get(url).send().await.unwrap().bytes().await.unwrap();
        assert!(payload == served, "{url}: the archived payload differs from what the site serves");
    }
}

#[test]
fn killed_again_and_again_the_archive_holds_each_page_once() {
    let site = Sandbox::demo(DemoSite {
        books: 150,
        per_page: 10,
        latency: Duration::from_millis(10),
        ..DemoSite::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("crawl.warc.gz");
    let outputs = [dir.path().join("books.jsonl").display().to_string()];
    // Files of about 40 kB: the kills land in several, and before and after rotations.
    let extra =
        ["--set", &format!("warc={}", warc.display()), "--set", "warc_max_bytes=40000"].map(str::to_owned);
    let args = support::child_args(dir.path(), &site, &outputs, &extra);
    let (kills, last) =
        support::kill_and_resume(module_path!(), "child_crawl", CHILD, &args, &site, 4, |round| {
            8 + (round * 9) % 20
        });
    assert!(kills >= 3, "only {kills} kills landed");
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    let checked = warcio_check_all(&warc);
    assert!(checked.is_empty(), "warcio check: {checked}");
    assert!(archive_files(&warc).len() >= 3, "{:?}", archive_files(&warc));
    let responses = responses_in_archive(&warc);
    let twice: Vec<_> = responses.iter().filter(|(_, offsets)| offsets.len() > 1).collect();
    assert!(twice.is_empty(), "after {kills} kills, pages archived twice: {twice:?}");
    // Every book page is there: the crawl's 150 items came from 150 archived answers.
    assert_eq!(responses.keys().filter(|url| url.contains("/catalogue/book_")).count(), 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_warc_max_bytes_the_archive_goes_on_in_new_files_each_whole_and_indexed() {
    let site = Sandbox::demo(DemoSite { books: 40, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("crawl.warc.gz");
    let config = support::quick_config(&site).warc(&warc).warc_max_bytes(20_000);
    Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap();
    let files = archive_files(&warc);
    assert!(files.len() >= 3, "{files:?}");
    for file in &files {
        let checked = run(&warcio(), &["check", "-v", &file.display().to_string()]);
        let checked = String::from_utf8_lossy(&checked);
        assert!(
            checked.contains("digest pass") && !checked.contains("fail"),
            "{}: {checked}",
            file.display()
        );
    }
    let responses = responses_in_archive(&warc);
    let pages: Vec<String> = site
        .observed()
        .pages()
        .map(|hit| format!("{}{}", site.url().trim_end_matches('/'), hit.target))
        .collect();
    for page in &pages {
        assert_eq!(responses.get(page).map(Vec::len), Some(1), "{page} once in the archive: {responses:?}");
    }
    // One index for the whole archive, each line naming the file and offset warcio finds.
    let ours = std::fs::read_to_string(dir.path().join("crawl.cdxj")).unwrap();
    for line in ours.lines() {
        let json: serde_json::Value = serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let (url, file) = (json["url"].as_str().unwrap(), json["filename"].as_str().unwrap().to_owned());
        let offset: u64 = json["offset"].as_str().unwrap().parse().unwrap();
        assert_eq!(responses.get(url), Some(&vec![(file, offset)]), "{line}");
    }
    assert_eq!(ours.lines().count(), responses.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revalidated_crawl_archives_each_304_as_a_not_modified_revisit() {
    let site = Sandbox::demo(DemoSite { books: 10, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("again.warc.gz");
    let config = support::quick_config(&site).cache(dir.path().join("cache"));
    Crawler::with_config(BookSpider::new(config.clone()), config.clone()).run().await.unwrap();
    let again = config.revalidate(true).warc(&warc);
    let summary = Crawler::with_config(BookSpider::new(again.clone()), again).run().await.unwrap();
    assert!(summary.counts.revalidated > 10, "{:?}", summary.counts);
    let checked = run(&warcio(), &["check", &warc.display().to_string()]);
    assert!(String::from_utf8_lossy(&checked).trim().is_empty(), "{}", String::from_utf8_lossy(&checked));
    let index = run(&warcio(), &["index", "-f", "warc-type,warc-profile", &warc.display().to_string()]);
    let not_modified = String::from_utf8_lossy(&index)
        .lines()
        .filter(|line| line.contains("\"revisit\"") && line.contains("revisit/server-not-modified"))
        .count();
    assert_eq!(not_modified as u64, summary.counts.revalidated, "{}", String::from_utf8_lossy(&index));
}

/// The cache's answers, from its file: how many, the bytes of body it holds itself, and
/// how many name a record of the archive instead.
fn cache_rows(cache: &Path) -> (u64, u64, u64) {
    let conn = rusqlite::Connection::open(cache).unwrap();
    conn.query_row("SELECT count(*), coalesce(sum(length(body)), 0), count(warc) FROM answers", [], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_archive_the_cache_keeps_its_bodies_there_and_answers_from_it() {
    let books = 40;
    let site = Sandbox::demo(DemoSite { books, per_page: 10, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (warc, cache) = (dir.path().join("crawl.warc.gz"), dir.path().join("crawl.cache"));
    let crawl = |out: &str, revalidate: bool| {
        let config = support::quick_config(&site)
            .warc(&warc)
            .cache(&cache)
            .revalidate(revalidate)
            .output(dir.path().join(out));
        Crawler::with_config(BookSpider::new(config.clone()), config).run()
    };
    let first = crawl("first.jsonl", false).await.unwrap();
    let received = site.received();
    let (rows, body_bytes, in_archive) = cache_rows(&cache);
    assert!(rows >= first.counts.pages, "{rows} answers kept");
    assert_eq!((body_bytes, in_archive), (0, rows), "every body is in the archive, none in the cache");

    let second = crawl("second.jsonl", false).await.unwrap();
    assert_eq!(site.received(), received, "the second run sent nothing");
    assert_eq!(second.counts.from_cache, rows);
    let expected = support::expected_books(books);
    assert_eq!(support::read_jsonl(&dir.path().join("second.jsonl")), expected, "parsed from the archive");
    // The archive the cache reads from was left whole; the second run's goes on after it.
    assert_eq!(archive_files(&warc).len(), 2, "{:?}", archive_files(&warc));
    assert!(warcio_check_all(&warc).is_empty());

    // Revalidated: each 304 parsed from the archive's payload.
    let third = crawl("third.jsonl", true).await.unwrap();
    assert!(third.counts.revalidated + 1 >= rows, "{third}");
    assert_eq!(support::read_jsonl(&dir.path().join("third.jsonl")), expected);
}

#[test]
fn killed_with_a_cache_in_the_archive_a_later_run_answers_every_page_from_it() {
    let site = Sandbox::demo(DemoSite {
        books: 120,
        per_page: 10,
        latency: Duration::from_millis(10),
        ..DemoSite::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (warc, cache) = (dir.path().join("crawl.warc.gz"), dir.path().join("crawl.cache"));
    let outputs = [dir.path().join("books.jsonl").display().to_string()];
    let extra = [
        "--set",
        &format!("warc={}", warc.display()),
        "--set",
        "warc_max_bytes=30000",
        "--set",
        &format!("cache={}", cache.display()),
    ]
    .map(str::to_owned);
    let args = support::child_args(dir.path(), &site, &outputs, &extra);
    let (kills, last) =
        support::kill_and_resume(module_path!(), "child_crawl", CHILD, &args, &site, 4, |round| {
            10 + (round * 13) % 30
        });
    assert!(kills >= 3, "only {kills} kills landed");
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    assert_eq!(support::read_jsonl(&dir.path().join("books.jsonl")).len(), 120);

    // A new crawl from the cache: the cache is committed with each checkpoint, so it
    // holds every answer the state file counts as fetched, and every body it reads comes
    // from a record the kills and resumes left as it was.
    let received = site.received();
    let again: Vec<String> = args
        .iter()
        .map(|arg| arg.replace("books.jsonl", "again.jsonl").replace("books.state", "again.state"))
        .collect();
    let run = support::child_command(module_path!(), "child_crawl", CHILD, &again).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(support::read_jsonl(&dir.path().join("again.jsonl")), support::expected_books(120));
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("again.stats.json")).unwrap()).unwrap();
    assert_eq!((stats["failures"].as_u64(), stats["requests"].as_u64()), (Some(0), Some(0)), "{stats}");
    assert_eq!(site.received(), received, "nothing fetched: every answer was in the cache");
}
