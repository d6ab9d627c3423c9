//! The README's main job: the books example ends with every book of the catalogue in its
//! output exactly once, and exits 0, as the README shows it (its code, its summary, its
//! item); and what a spider binary's user reaches for first, through the example: `-o`
//! and `-O`, `settings`, `parse URL`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn the_books_example_writes_every_book_exactly_once() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("books.jsonl");
    let run = Command::new(support::example("books")).arg("-o").arg(&output).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let books = support::read_json_lines(&output);
    let titles: BTreeSet<&str> = books.iter().map(|b| b["title"].as_str().unwrap()).collect();
    let catalogue = spider_sandbox::catalogue(1000);
    assert_eq!(books.len(), catalogue.len(), "no duplicates");
    assert_eq!(titles, catalogue.iter().map(|b| b.title.as_str()).collect(), "no book missing");
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(printed.contains("books: 1051 pages, 1000 items"), "{printed}");
    the_readme_shows_what_the_example_printed_and_wrote(&printed, &books);
    // Its rules and its item (CSS, JSON-LD and page fields) all stream: every page is read
    // without a DOM, with no change to the example's code.
    assert!(printed.contains("streamed: 1,051 pages read in one pass without a DOM, 0 parsed"), "{printed}");

    // The same crawl read with the DOM, asked for at run time: the same items.
    let dom_output = dir.path().join("books-dom.jsonl");
    let run = Command::new(support::example("books"))
        .args(["--set", "extract=dom", "-o"])
        .arg(&dom_output)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(!printed.contains("streamed:"), "no page streamed: {printed}");
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("books-dom.stats.json")).unwrap()).unwrap();
    assert_eq!(
        (stats["streamed_pages"].as_u64(), stats["html_parses"].as_u64()),
        (Some(0), Some(1051)),
        "{stats}"
    );
    let by_url = |items: Vec<serde_json::Value>| -> std::collections::BTreeMap<String, serde_json::Value> {
        items.into_iter().map(|item| (item["url"].as_str().unwrap().to_owned(), item)).collect()
    };
    assert_eq!(
        by_url(support::read_json_lines(&dom_output)),
        by_url(books),
        "the same items from both engines"
    );
}

/// The README's first crawl is this one: its code is the example's, its summary the lines
/// the example printed (numbers aside: times and rates change), its item one the example wrote.
fn the_readme_shows_what_the_example_printed_and_wrote(printed: &str, books: &[serde_json::Value]) {
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/books.rs")).unwrap();
    let code = readme_block("\n## A spider\n", "```rust\n");
    assert!(code.contains("#[derive(Spider") && code.contains("#[derive(Item"), "{code}");
    assert!(example.contains(&code), "README's spider is not examples/books.rs as it is:\n{code}");

    readme_lines_were_printed("prints its settings to stderr, crawls the shop", printed);
    let item: serde_json::Value =
        serde_json::from_str(readme_block("Each line of `books.jsonl`", "```json\n").trim())
            .expect("README's item is JSON");
    let written = books.iter().find(|book| book["url"] == item["url"]).expect("README's item's URL crawled");
    assert_eq!(&item, written, "README's item is the one the example writes");
}

/// The text of README's first `fence` block after `after`.
fn readme_block(after: &str, fence: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let from = readme.find(after).unwrap_or_else(|| panic!("README has no {after:?}"));
    let open = from + readme[from..].find(fence).unwrap() + fence.len();
    let close = open + readme[open..].find("```").unwrap();
    readme[open..close].to_owned()
}

/// Every line of README's text block after `after` (but a `…` that stands for more) is a
/// line of `printed`, numbers aside: times, rates and ports change from run to run.
fn readme_lines_were_printed(after: &str, printed: &str) {
    let numberless = |line: &str| line.trim_end().chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
    let shown: Vec<String> = printed.lines().map(numberless).collect();
    for line in readme_block(after, "```text\n").lines().filter(|line| line.trim() != "…") {
        assert!(
            shown.contains(&numberless(line)),
            "README shows a line the example does not print: {line:?}\nprinted:\n{printed}"
        );
    }
}

#[test]
fn the_shelves_example_writes_each_type_to_its_own_file() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(support::example("shelves")).current_dir(dir.path()).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut books = csv::Reader::from_path(dir.path().join("books.csv")).unwrap();
    assert_eq!(books.headers().unwrap(), vec!["url", "title", "price"]);
    let titles: BTreeSet<String> = books.records().map(|row| row.unwrap()[1].to_owned()).collect();
    let catalogue = spider_sandbox::catalogue(1000);
    assert_eq!(titles, catalogue.iter().map(|b| b.title.clone()).collect(), "every book, once each");
    let listings = support::read_json_lines(&dir.path().join("listings.jsonl"));
    let pages: BTreeSet<&str> = listings.iter().map(|l| l["url"].as_str().unwrap()).collect();
    assert_eq!((listings.len(), pages.len()), (50, 50), "every listing page once");
    assert!(listings.iter().all(|l| l["books"] == 20 && l.get("title").is_none()), "listings only");
}

#[test]
fn the_proxied_example_finishes_through_the_gateway_what_the_limit_stops_direct() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("products.jsonl");
    let run = Command::new(support::example("proxied"))
        .arg("-o")
        .arg(&output)
        .env_remove("SHOP_PROXY")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{printed}{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(support::read_json_lines(&output).len(), 200, "{printed}");
    let seen = printed.lines().find(|line| line.starts_with("the site saw")).unwrap();
    let numbers: Vec<usize> =
        seen.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [_, direct, through, exits, ..] = numbers[..] else { panic!("{seen}") };
    assert!(direct >= 5 && through >= 150 && exits == through, "{seen}");
    assert!(printed.contains("proxy: ") && !printed.contains("sandbox-s3cret"), "{printed}");
}

#[test]
fn the_adaptive_example_climbs_backs_off_and_is_never_banned() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(support::example("adaptive")).current_dir(dir.path()).output().unwrap();
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{printed}{}", String::from_utf8_lossy(&run.stderr));
    assert!(printed.contains("adaptive: 301 pages, 300 items"), "{printed}");
    assert!(printed.contains("and 403 ×0"), "never banned: {printed}");
    // The table's "allowed/s" column climbs, then falls at least once.
    let allowed: Vec<f64> = printed
        .lines()
        .filter(|line| {
            line.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit()) && line.contains('s')
        })
        .filter_map(|line| line.split_whitespace().nth(2)?.parse().ok())
        .collect();
    assert!(allowed.len() >= 5, "{printed}");
    assert!(allowed.windows(2).any(|w| w[1] > w[0]), "climbs: {allowed:?}");
    assert!(allowed.windows(2).any(|w| w[1] < w[0]), "backs off: {allowed:?}");
}

#[test]
fn the_login_example_logs_in_then_crawls_the_members_area_and_the_api() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("members.jsonl");
    let run = Command::new(support::example("login")).arg("-o").arg(&output).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let found = support::read_json_lines(&output);
    let pages: BTreeSet<&str> = found.iter().filter_map(|f| f["page"].as_str()).collect();
    assert_eq!(pages, BTreeSet::from(["Members' page 1", "Members' page 2", "Members' page 3"]));
    let products: BTreeSet<u64> = found.iter().filter_map(|f| f["id"].as_u64()).collect();
    assert_eq!(products, (1..=30).collect(), "every product of the API's three pages");
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(printed.contains("login: 37 pages, 33 items"), "{printed}");
}

/// `-o` appends and `-O` overwrites, as in Scrapy: JSON Lines and CSV grow run after run
/// (one CSV header), a JSON array is refused an append and left as it was, and so is an
/// append to a file a new state file's crawl would write from its start.
#[test]
fn dash_o_appends_and_dash_capital_o_overwrites() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let books = |args: &[&str]| Command::new(support::example("books")).args(args).output().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let lines = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap().lines().count();

    let jsonl = path("books.jsonl");
    for (args, expected) in [(["-o", &jsonl], 1000), (["-o", &jsonl], 2000), (["-O", &jsonl], 1000)] {
        let run = books(&args);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        assert_eq!(lines("books.jsonl"), expected, "after {args:?}");
    }
    let csv = path("books.csv");
    for _ in 0..2 {
        assert!(books(&["-o", &csv]).status.success());
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 2001, "one header, then every book twice");
    assert_eq!(text.lines().filter(|line| line.starts_with("url,")).count(), 1);

    let json = path("books.json");
    assert!(books(&["-O", &json]).status.success());
    let before = std::fs::read(&json).unwrap();
    let run = books(&["-o", &json]);
    assert_eq!(run.status.code(), Some(2));
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(
        said.contains("holds a JSON array, which takes no more items after its `]`: overwrite it with -O"),
        "{said}"
    );
    assert_eq!(std::fs::read(&json).unwrap(), before, "left as it was");

    let state = path("books.state");
    let run = books(&["-o", &jsonl, "--set", &format!("state={state}")]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr)
        .contains("while a new state file's crawl writes its output from the start"));
    assert!(!dir.path().join("books.state").exists(), "nothing made");
    assert_eq!(lines("books.jsonl"), 1000, "left as it was");
    let run = books(&["-O", &jsonl, "--set", &format!("state={state}")]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(lines("books.jsonl"), 1000);
}

/// Bad settings and flags are refused before anything is fetched or made, with exit code
/// 2 and the setting named: a file in a folder that does not exist (items, a table's
/// SQLite file, a state file, a report: none is made), a state file that is a FIFO, a
/// `ca_cert` that holds no certificate, a log filter that does not parse. Before, the
/// table waited out `store_patience` and exited 5, the state file's folder was made,
/// the report failed at the end, the FIFO blocked, and the others were taken.
#[test]
fn bad_settings_are_refused_before_the_crawl_with_exit_code_2() {
    let _ports = support::example_ports();
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let missing = at("missing/folder");
    std::fs::write(at("garbage.pem"), "not a certificate\n").unwrap();
    assert!(Command::new("mkfifo").arg(at("fifo.state")).status().unwrap().success());
    let items = at("items.jsonl");
    let cases: [(Vec<String>, &str); 7] = [
        (vec!["-O".into(), format!("sqlite://{missing}/x.db?table=t")], "the folder"),
        (vec!["-O".into(), format!("{missing}/items.jsonl")], "the folder"),
        (vec!["-O".into(), items.clone(), "--set".into(), format!("state={missing}/s.state")], "state = "),
        (vec!["-O".into(), items.clone(), "--report".into(), format!("{missing}/r.html")], "report = "),
        (
            vec!["-O".into(), items.clone(), "--set".into(), format!("state={}", at("fifo.state"))],
            "not a regular file",
        ),
        (
            vec!["-O".into(), items.clone(), "--set".into(), format!("ca_cert={}", at("garbage.pem"))],
            "holds no BEGIN CERTIFICATE",
        ),
        (
            vec!["-O".into(), items.clone(), "--log-level".into(), "garbage(((".into()],
            "is not a level or a RUST_LOG filter",
        ),
    ];
    for (args, said) in cases {
        let run = Command::new(support::example("books")).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!dir.path().join("missing").exists(), "{args:?}: no folder made");
        assert!(!dir.path().join("items.jsonl").exists(), "{args:?}: nothing crawled");
    }
    // `none`, as `settings` shows an empty list, clears one: not a domain named "none".
    let run = Command::new(support::example("books"))
        .args(["-O", &items, "--set", "allowed_domains=none"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(std::fs::read_to_string(&items).unwrap().lines().count(), 1000);
}

/// `settings` lists every key: the value in force and where it came from, the spider's
/// attribute, an environment variable or `--set`; `--set help` points to it.
#[test]
fn settings_says_each_keys_value_and_where_it_came_from() {
    let _ports = support::example_ports();
    let run = Command::new(support::example("books"))
        .args(["settings", "--set", "rps=5"])
        .env("SPIDERLING_TIMEOUT", "7s")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let table = String::from_utf8_lossy(&run.stdout);
    let line = |key: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|line| line.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("{key}: {table}"));
        line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).map(str::to_owned).collect()
    };
    assert_eq!(line("rps")[..3], ["rps", "5", "--set"]);
    assert_eq!(line("timeout")[..3], ["timeout", "7s", "env SPIDERLING_TIMEOUT"]);
    assert_eq!(line("per_host")[..3], ["per_host", "16", "the spider"]);
    assert_eq!(line("name")[..3], ["name", "books", "the spider"]);
    assert_eq!(line("retries")[..3], ["retries", "3", "default"]);
    assert!(line("retries")[3].contains("whole number · default 3"), "{:?}", line("retries"));
    for key in spider_settings::KEYS {
        assert!(
            table.lines().any(|line| line.starts_with(&format!("{} ", key.name))),
            "{} missing",
            key.name
        );
    }

    let help = Command::new(support::example("books")).args(["--set", "help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&help.stderr).contains("the `settings` command lists every key"));
}

/// `parse URL`, as Scrapy's `scrapy parse`: one page through the crawl's stack, the rule
/// that takes it, its items as JSON, the links each rule follows and those dropped and
/// why, the engine that read it; the site receives that page and robots.txt, nothing more.
#[test]
fn parse_shows_what_the_spider_makes_of_one_live_page() {
    let _ports = support::example_ports();
    let site = spider_sandbox::Sandbox::demo(spider_sandbox::DemoSite::default()).unwrap();
    let parse = |path: &str| {
        let run = Command::new(support::example("books"))
            .args(["parse", &format!("{}{path}", site.url())])
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let base = site.url();
    let listing = parse("catalogue/page-1.html");
    for line in [
        format!("200 {base}catalogue/page-1.html · read in one streaming pass, without a DOM"),
        "rule 1 takes this page".to_owned(),
        "items (0):".to_owned(),
        format!("  rule 1   {base}catalogue/page-2.html?sort=title&order=asc"),
        format!("  rule 2   {base}catalogue/book_1.html"),
        format!("  another spelling of a link followed: {base}catalogue/%62ook_1.html"),
        format!("  no rule followed it: {base}private/page-1.html"),
    ] {
        assert!(listing.lines().any(|printed| printed == line), "no {line:?} in:\n{listing}");
    }
    assert!(listing.contains("  out of scope (allowed_domains): http://localhost:"), "{listing}");
    readme_lines_were_printed("runs the latter in the crate it is started in", &listing);

    let book = parse("catalogue/book_3.html");
    assert!(book.contains("rule 2 takes this page\nitems (1):\n"), "{book}");
    let item: serde_json::Value =
        serde_json::from_str(book.lines().find(|line| line.starts_with("  {")).unwrap().trim()).unwrap();
    let expected = &spider_sandbox::catalogue(3)[2];
    assert_eq!(item["title"], expected.title.as_str());
    assert_eq!(item["url"], format!("{base}catalogue/book_3.html"));
    assert!(book.contains("links to follow (0):"), "{book}");

    let seen = site.observed();
    assert_eq!(seen.pages().count(), 2, "the two pages asked for, nothing they link to");
}
