//! `spiderling bench` is itself correct: on a small site every contender crawls every page
//! exactly once and writes every item, as the server saw it.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use serde_json::Value;

/// The small site's pages with its home page, and its books: each an item.
const PAGES: u64 = 301;
const BOOKS: u64 = 285;

/// `spiderling bench` with `args` on a site of 300 pages of 2 KiB at C = 8: its JSON
/// report, once the command succeeded and the report names that site.
fn bench_on_the_small_site(args: &[&str]) -> Value {
    let report = bench_of_300_pages(args);
    assert_eq!(report["setup"]["expected_pages"], PAGES);
    assert_eq!(report["setup"]["books"], BOOKS);
    report
}

/// `spiderling bench` with `args` and 300 pages of 2 KiB at C = 8: its JSON report, once
/// the command succeeded.
fn bench_of_300_pages(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["bench", "--pages", "300", "--page-kb", "2", "--concurrency", "8", "--json"])
        .args(args)
        .output()
        .unwrap();
    // A failed run says why in its row, on stdout.
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_contender_crawls_every_page_exactly_once() {
    let report = bench_on_the_small_site(&["--sample", "1000"]);
    let contenders = report["contenders"].as_array().unwrap();
    let names: Vec<&str> = contenders.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["spiderling", "spiderling-dom", "state", "rules", "identities", "bare", "sequential"]);
    for c in contenders {
        let name = &c["name"];
        assert_eq!(c["pages"], PAGES, "{name}: pages parsed");
        assert_eq!(c["server_pages"], PAGES, "{name}: pages the server answered");
        assert_eq!(c["server_duplicates"], 0, "{name}: a page fetched twice");
        assert_eq!(c["items"], BOOKS, "{name}: items written");
        assert!(c["pages_per_sec"].as_f64().unwrap() > 0.0, "{name}");
        assert!(c["peak_rss_mb"].as_f64().unwrap() > 0.0, "{name}");
        // The bench's spider streams every page of the generated site; forced to the DOM
        // it streams none, and the hand-written loops have no streaming engine.
        let streamed = match c["name"].as_str() {
            Some("spiderling" | "state" | "rules" | "identities") => PAGES,
            _ => 0,
        };
        assert_eq!(c["streamed_pages"], streamed, "{name}: pages read without a DOM");
    }
    assert!(report["ratios"]["spiderling_over_bare"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["spiderling_cpu_over_bare"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["dom_over_bare"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["state_over_memory"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["rules_cpu_over_bare"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["identities_cpu_over_bare"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["bare_over_sequential"].as_f64().unwrap() > 0.0);
}

/// The fleet bench on a tiny site: one and two workers sharing a crawl through a Redis the
/// bench starts, each run with every page answered once and the scale measured.
#[test]
fn the_fleet_bench_runs_every_count_with_every_page_once() {
    let report =
        bench_on_the_small_site(&["--workers", "1,2", "--latency-ms", "5", "--run-timeout-secs", "60"]);
    let runs = report["runs"].as_array().unwrap();
    let workers: Vec<u64> = runs.iter().map(|r| r["workers"].as_u64().unwrap()).collect();
    assert_eq!(workers, [1, 2]);
    for run in runs {
        let n = &run["workers"];
        assert!(run.get("failed").is_none(), "{n} workers: {}", run["failed"]);
        assert_eq!(run["pages"], PAGES, "{n} workers: pages the server answered");
        assert_eq!(run["duplicates"], 0, "{n} workers: a page fetched twice");
        assert_eq!(run["items"], BOOKS, "{n} workers: items written");
        let by_worker = run["pages_by_worker"].as_array().unwrap();
        assert_eq!(by_worker.len() as u64, n.as_u64().unwrap(), "a run per worker");
        assert!(run["pages_per_sec"].as_f64().unwrap() > 0.0, "{n} workers");
        assert!(run["scale"].as_f64().unwrap() > 0.0, "{n} workers");
        assert!(run["rounds"].as_u64().unwrap() > 0, "{n} workers: the fleet's rounds reached Redis");
    }
}

/// The fleet bench's crawl of many hosts: the site served three times, each copy a host of
/// its own, every copy crawled whole by two workers.
#[test]
fn the_fleet_bench_crawls_every_copy_of_the_site() {
    let report = bench_of_300_pages(&[
        "--workers",
        "2",
        "--sites",
        "3",
        "--latency-ms",
        "5",
        "--run-timeout-secs",
        "60",
    ]);
    // Each copy is a site of 100 pages: its home, 5 listings and 95 books.
    assert_eq!((&report["setup"]["expected_pages"], &report["setup"]["books"]), (&303.into(), &285.into()));
    let run = &report["runs"][0];
    assert!(run.get("failed").is_none(), "{}", run["failed"]);
    assert_eq!(run["pages"], 303, "pages the three copies answered together");
    assert_eq!(run["duplicates"], 0, "a page fetched twice");
    assert_eq!(run["items"], 285, "items written");
}

/// `--real-pages`: the shared real pages (beside the checkout, or `SPIDERLING_REALWEB`)
/// once each behind nginx: the articles spider reads every page with both engines, the
/// same items, most of them in one streaming pass, and with the main content as Markdown
/// besides the same items again; the bare loop reads every page too.
#[test]
fn the_real_pages_bench_crawls_every_page_with_each_contender() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = std::env::var_os("SPIDERLING_REALWEB").map(std::path::PathBuf::from).or_else(|| {
        manifest
            .ancestors()
            .skip(2)
            .take(2)
            .map(|dir| dir.join("shared/realweb/pages"))
            .find(|dir| dir.is_dir())
    });
    let Some(pages) = pages else {
        eprintln!("SKIPPED: the real pages were not found (shared/realweb/pages beside the checkout)");
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["bench", "--copies", "1", "--concurrency", "4", "--json", "--real-pages"])
        .arg(&pages)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|row| row["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["articles", "articles-dom", "articles-markdown", "articles-bare"]);
    let (stream, dom, markdown, bare) = (&rows[0], &rows[1], &rows[2], &rows[3]);
    assert_eq!(stream["pages"], 131, "the index and the 130 pages: {stream}");
    assert_eq!(dom["pages"], 131);
    assert_eq!(markdown["pages"], 131);
    assert_eq!(stream["items"], dom["items"], "both engines write the same items");
    assert_eq!(markdown["items"], stream["items"], "the Markdown is a field more, not an item less");
    assert!(stream["streamed_pages"].as_u64().unwrap() >= 118, "{stream}");
    assert_eq!(dom["streamed_pages"], 0);
    assert!(bare["pages"].as_u64().unwrap() >= 131, "{bare}");
}
