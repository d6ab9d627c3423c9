//! The rendering tier on real headless Chromium against the client-rendered shop: what the
//! site received (pages, API calls, scripts, images) and what the output holds.

#![cfg(feature = "render")]
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use spider_sandbox::{GatewayConfig, MockGateway, Observed, RenderedSite, Sandbox};
use spiderling::prelude::*;
use spiderling::Summary;

/// A product as the shop shows it, whichever way the page was built.
#[derive(Item, serde::Serialize)]
struct Product {
    #[css("h1.name")]
    name: String,
    #[css("p.price")]
    price: String,
    #[page(url)]
    url: String,
    #[page(rendered)]
    rendered: bool,
}

/// What the output holds of a product.
#[derive(Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    name: String,
    price: String,
    url: String,
    rendered: bool,
}

/// Every page rendered: the listing's "load more" clicked until it is gone.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    render = "always",
    delay = "0ms",
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Always;

/// The answer as sent first; a browser only for pages lacking their item or links.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    allowed_domains = ["127.0.0.1"],
    render = "auto",
    delay = "0ms",
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Auto;

/// One crawl at a time: each starts browsers, and two machines' worth of them on two cores
/// would make every timing in here a guess; the kill test must kill only its own.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn crawl<S: Spider>(spider: S, site: &Sandbox, dir: &Path, settings: &[(&str, &str)]) -> Summary {
    let mut config = spider.config().set("start_urls", &site.url()).unwrap().output(dir.join("out.jsonl"));
    for (key, value) in settings {
        config = config.set(key, value).unwrap();
    }
    Crawler::with_config(spider, config).run().await.unwrap()
}

fn rows(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    let mut rows: Vec<Row> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    rows.sort();
    rows
}

/// What the site received, by kind.
fn kinds(seen: &Observed) -> BTreeMap<&'static str, usize> {
    let mut kinds = BTreeMap::new();
    for hit in &seen.hits {
        *kinds.entry(RenderedSite::kind(&hit.target)).or_default() += 1;
    }
    kinds
}

/// The names of the shop's products, client-rendered and whole.
fn names(site: &RenderedSite) -> Vec<String> {
    let rendered = (1..=site.product_count()).map(|id| RenderedSite::product(id).0);
    let mut names: Vec<String> =
        rendered.chain((1..=site.plain_count()).map(|id| RenderedSite::product(1000 + id).0)).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_product_of_the_client_rendered_shop_once_when_every_page_is_rendered() {
    let _serial = SERIAL.lock().await;
    let shop = RenderedSite::new().products(12).page_size(5).plain(3).delay_ms(700);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Always, &site, dir.path(), &[]).await;

    let rows = rows(dir.path());
    let mut got: Vec<String> = rows.iter().map(|row| row.name.clone()).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once: {summary}");
    assert!(rows.iter().all(|row| row.rendered), "every page was read as the browser rendered it");
    let seen = kinds(&site.observed());
    // Home, the two listings, every product page: each document once, fetched by the crawl.
    let pages = 3 + shop.product_count() + shop.plain_count();
    assert_eq!(seen.get("page"), Some(&pages), "{seen:?}");
    assert_eq!(seen.get("script"), Some(&pages), "each rendered page loaded the script: {seen:?}");
    // The listing's pages, one per click, and one product each.
    assert_eq!(seen.get("api"), Some(&(shop.list_pages() + shop.product_count())), "{seen:?}");
    assert_eq!(seen.get("image"), None, "images refused: {seen:?}");
    assert_eq!(summary.counts.rendered, pages as u64);
    assert_eq!(summary.counts.render_actions, shop.list_pages() as u64 - 1, "one click per page left");
    assert!(summary.counts.subrequests_refused >= pages as u64, "a logo per page refused");
    assert_eq!(summary.failures, 0, "{summary}");

    // Cookies both ways. The home page's `visitor` cookie, set on the crawl's own client,
    // is seen by the product pages' script in `document.cookie`; the `consent` cookie that
    // script sets reaches the documents the crawl fetches after the first product's render.
    let hits = site.observed().hits;
    let api: Vec<_> = hits.iter().filter(|hit| hit.target.starts_with("/api/product/")).collect();
    assert!(api.iter().all(|hit| hit.target.contains("visitor%3Dv1")), "the script saw the jar's cookie");
    let consented =
        |hit: &&spider_sandbox::Hit| hit.cookie.as_deref().is_some_and(|c| c.contains("consent=yes"));
    let first_render = api.iter().map(|hit| hit.at).min().unwrap();
    let documents: Vec<_> = hits.iter().filter(|hit| RenderedSite::kind(&hit.target) == "page").collect();
    assert!(documents.iter().filter(|hit| hit.at < first_render).all(|hit| !consented(hit)), "none before");
    assert!(documents.iter().any(consented), "the browser's cookie came back to the crawl's own client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_ceiling_holds_over_the_browsers_requests_too() {
    let _serial = SERIAL.lock().await;
    let shop = RenderedSite::new().products(4).page_size(2).plain(0).delay_ms(0);
    let site = Sandbox::rendered(shop).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // 300 a minute: one every 200 ms, pages, scripts, style sheets and API calls alike.
    let summary = crawl(Always, &site, dir.path(), &[("rpm", "300")]).await;
    assert_eq!(summary.counts.items, 4, "{summary}");

    let arrivals = arrivals(&site.observed());
    assert!(
        summary.counts.subrequests >= 10,
        "scripts, styles and API calls came through the crawl: {summary}"
    );
    assert_spaced(&arrivals, Duration::from_millis(200));
}

/// Every request the server saw, by arrival: when, and its target.
fn arrivals(seen: &Observed) -> Vec<(Duration, String)> {
    let mut arrivals: Vec<(Duration, String)> =
        seen.hits.iter().map(|hit| (hit.at, hit.target.clone())).collect();
    arrivals.sort();
    arrivals
}

/// That `arrivals` (sorted) kept to a rate ceiling of one start every `spacing`. The gate
/// makes good up to 250 ms of a late waiter's missed slots (`throttle/rate.rs`); in a
/// fleet, a leased request that leaves more than 25 ms after the start its lease gave (it
/// waited for a slot while the worker's pages rendered) takes a fresh one (CI once saw
/// five within 452 ms when it did not). So two starts may go back to back, and any five
/// in a row span three spacings at least. The server stamps arrivals, up to 100 ms late
/// on a busy machine (CI saw five within 650 and 727 ms against the four spacings this
/// asked before). Requests of the browser let past the ceiling would come tens within a
/// few milliseconds.
fn assert_spaced(arrivals: &[(Duration, String)], spacing: Duration) {
    for (i, window) in arrivals.windows(5).enumerate() {
        let span = window[4].0 - window[0].0;
        assert!(
            span + Duration::from_millis(100) >= spacing * 3,
            "requests {i}..{} within {span:?}: {arrivals:?}",
            i + 4
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browsers_requests_keep_robots_txt_and_per_host() {
    let _serial = SERIAL.lock().await;
    // Every answer takes 150 ms, so requests the browser makes at once overlap at the server;
    // robots.txt disallows the style sheet every page links.
    let shop = RenderedSite::new()
        .products(4)
        .page_size(2)
        .plain(2)
        .delay_ms(0)
        .latency_ms(150)
        .disallow("/style.css");
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Always, &site, dir.path(), &[("per_host", "1"), ("concurrency", "4")]).await;
    let seen = site.observed();
    assert_eq!(summary.counts.items, 6, "{summary}");
    assert_eq!(rows(dir.path()).into_iter().map(|row| row.name).collect::<Vec<_>>(), names(&shop));
    let kinds = kinds(&seen);
    assert_eq!(kinds.get("style"), None, "the Disallowed style sheet was never sent: {kinds:?}");
    assert!(kinds.get("script").is_some_and(|n| *n >= 6), "the browsers' other requests went: {kinds:?}");
    assert_eq!(seen.max_in_flight, 1, "never more in flight at the host than per_host: {kinds:?}");
}

#[test]
fn the_browser_runs_in_its_sandbox_when_the_crawl_is_not_root() {
    use std::os::unix::process::CommandExt;

    let _serial = SERIAL.blocking_lock();
    let shop = RenderedSite::new().products(6).page_size(6).plain(0).delay_ms(300);
    let site = Sandbox::rendered(shop).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-o".to_owned(),
        dir.path().join("out.jsonl").display().to_string(),
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--log-level".to_owned(),
        "warn".to_owned(),
    ];
    let mut command = crate::support::child_command(module_path!(), "child_crawl", CHILD, &args);
    command.stdout(Stdio::null()).stderr(Stdio::piped()).env("HOME", dir.path());
    if runs_as_root() {
        // The crawl as `nobody`, in a folder it may write.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        command.uid(65534).gid(65534);
    }
    let mut child = command.spawn().unwrap();
    // While the products render, what its browser was started with.
    let marker = format!("spiderling-browser-{}-", child.id());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut browsers: Vec<String> = Vec::new();
    while browsers.is_empty() && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        browsers = command_lines().into_iter().filter(|line| line.contains(&marker)).collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(!browsers.is_empty(), "a browser was seen running: {log}");
    for line in &browsers {
        assert!(!line.contains("--no-sandbox"), "started in its sandbox: {line}");
    }
    assert!(!log.contains("sandbox"), "nothing said of a sandbox: {log}");
    assert_eq!(rows(dir.path()).len(), 6, "{log}");
}

#[test]
fn a_fleets_rate_ceiling_holds_over_its_browsers_requests() {
    let _serial = SERIAL.blocking_lock();
    let shop = RenderedSite::new().products(8).page_size(4).plain(0).delay_ms(0);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let redis = spider_sandbox::RedisServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Two workers, 300 a minute between them: one start every 200 ms.
    let worker = |n: usize| {
        let args = [
            "-o".to_owned(),
            dir.path().join(format!("worker-{n}.jsonl")).display().to_string(),
            "--set".to_owned(),
            format!("start_urls={}", site.url()),
            "--set".to_owned(),
            format!("frontier={}", redis.url()),
            "--set".to_owned(),
            "rpm=300".to_owned(),
            "--set".to_owned(),
            "concurrency=2".to_owned(),
            "--log-level".to_owned(),
            "error".to_owned(),
        ];
        let mut command = crate::support::child_command(module_path!(), "child_crawl", CHILD, &args);
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let workers = [worker(1), worker(2)];
    for child in workers {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut got: Vec<String> = (1..=2)
        .flat_map(|n| {
            std::fs::read_to_string(dir.path().join(format!("worker-{n}.jsonl")))
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .map(|line| serde_json::from_str::<Row>(&line).unwrap().name)
        .collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once across the workers");
    let seen = site.observed();
    let kinds = kinds(&seen);
    assert!(
        kinds.get("api").is_some_and(|n| *n >= 8),
        "the browsers' requests came through the fleet: {kinds:?}"
    );
    assert_spaced(&arrivals(&seen), Duration::from_millis(200));
}

/// Whether this test runs as root.
fn runs_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|line| line.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// Every process's command line, its arguments joined by spaces.
fn command_lines() -> Vec<String> {
    let entries = std::fs::read_dir("/proc").unwrap().flatten();
    let lines = entries.filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok());
    lines.map(|line| String::from_utf8_lossy(&line).replace('\0', " ")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_mid_crawl_is_replaced_and_nothing_is_lost() {
    let _serial = SERIAL.lock().await;
    let shop = RenderedSite::new().products(16).page_size(8).plain(0).delay_ms(400);
    let site = std::sync::Arc::new(Sandbox::rendered(shop.clone()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let watched = site.clone();
    // SIGKILL this process's browsers while they render: once the third product's script
    // has called the API.
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let hits = watched.observed().hits;
            if hits.iter().filter(|hit| hit.target.starts_with("/api/product/")).count() >= 3 {
                let killed = kill_browsers();
                if killed > 0 {
                    return killed;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        0
    });
    // Two pages at a time, so most are rendered after the kill.
    let summary = crawl(Always, &site, dir.path(), &[("concurrency", "2")]).await;
    assert!(killer.join().unwrap() > 0, "a browser was killed");

    let mut got: Vec<String> = rows(dir.path()).into_iter().map(|row| row.name).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once: {summary}");
    assert!(summary.counts.browsers_replaced >= 1, "{summary}");
    assert_eq!(summary.failures, 0, "the pages it was rendering were tried again: {summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_identity_renders_through_its_own_exit() {
    let _serial = SERIAL.lock().await;
    let shop = RenderedSite::new().products(9).page_size(9).plain(0).delay_ms(0);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let proxy = gateway.url_with_credentials();
    let settings = [("proxy", proxy.as_str()), ("sticky", "true"), ("per_host", "3")];
    let summary = crawl(Always, &site, dir.path(), &settings).await;
    assert_eq!(summary.counts.items, 9, "{summary}");

    // A product page's script fetched its product from the exit its document came from:
    // the browser's requests wear the page's identity.
    let through = gateway.observed();
    let exit_of = |path: &str| -> BTreeSet<IpAddr> {
        through
            .requests
            .iter()
            .filter(|request| request.target.contains(path))
            .map(|request| request.exit)
            .collect()
    };
    for id in 1..=shop.product_count() {
        let document = exit_of(&format!("/product/{id}"));
        let api = exit_of(&format!("/api/product/{id}?"));
        assert_eq!(document.len(), 1, "{id}: {document:?}");
        assert_eq!(api, document, "product {id}'s API call left from its page's exit");
    }
    let exits: BTreeSet<IpAddr> = through.requests.iter().map(|request| request.exit).collect();
    assert!(exits.len() >= 2, "the slots' identities, each its exit: {exits:?}");
    assert_eq!(site.observed().peers(), exits, "nothing reached the site but through the gateway");
}

/// SIGKILL every browser this process started; how many.
fn kill_browsers() -> usize {
    let marker = format!("spiderling-browser-{}-", std::process::id());
    let mut killed = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline);
        // The browser itself, not its renderers, which name the same profile folder.
        if cmdline.contains(&marker) && !cmdline.contains("--type=") {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if Command::new("kill")
                .args(["-9", &pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
            {
                killed += 1;
            }
        }
    }
    killed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_renders_only_the_pages_that_lack_their_item_or_links_as_sent() {
    let _serial = SERIAL.lock().await;
    let shop = RenderedSite::new().products(10).page_size(5).plain(10).delay_ms(700);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(Auto, &site, dir.path(), &[]).await;

    let rows = rows(dir.path());
    let mut got: Vec<String> = rows.iter().map(|row| row.name.clone()).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once: {summary}");
    for row in &rows {
        assert_eq!(row.rendered, row.url.contains("/product/"), "only the client-rendered pages: {row:?}");
    }
    let seen = kinds(&site.observed());
    // The script is loaded only by a page in the browser: the listing and its products.
    let rendered = 1 + shop.product_count();
    assert_eq!(seen.get("script"), Some(&rendered), "{seen:?}");
    assert_eq!(
        seen.get("page"),
        Some(&(3 + shop.product_count() + shop.plain_count())),
        "each page once: {seen:?}"
    );
    assert_eq!(summary.counts.rendered, rendered as u64, "{summary}");
    assert!(summary.counts.rendered_learnt > 0, "the product rule learnt: {summary}");
    assert_eq!(summary.failures, 0, "{summary}");
}

/// The variable that makes this test binary the crawler the state-file test starts and
/// kills: the spider binary's arguments, one a line.
const CHILD: &str = "RENDER_TEST_CHILD_ARGS";

#[test]
#[ignore = "the child process of the state-file test, started by it"]
fn child_crawl() {
    let Ok(args) = std::env::var(CHILD) else { return };
    let args =
        std::iter::once(std::ffi::OsString::from("always")).chain(args.lines().map(std::ffi::OsString::from));
    let code = spiderling::cli::run(Always, args);
    std::process::exit(if code == std::process::ExitCode::SUCCESS { 0 } else { 1 });
}

#[test]
fn a_rendering_crawl_killed_with_sigkill_and_resumed_writes_every_item_once() {
    let _serial = SERIAL.blocking_lock();
    let shop = RenderedSite::new().products(24).page_size(12).plain(6).delay_ms(150);
    let site = Sandbox::rendered(shop.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-o".to_owned(),
        dir.path().join("out.jsonl").display().to_string(),
        "--set".to_owned(),
        format!("state={}", dir.path().join("shop.state").display()),
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        "concurrency=4".to_owned(),
        "--log-level".to_owned(),
        "error".to_owned(),
    ];
    let child = || {
        let mut command = crate::support::child_command(module_path!(), "child_crawl", CHILD, &args);
        command.stdout(Stdio::null()).stderr(Stdio::null());
        command
    };
    // Killed twice while its browsers render (after 6 product API calls each time).
    let mut killed = Vec::new();
    for calls in [6, 6] {
        let api =
            || site.observed().hits.iter().filter(|hit| hit.target.starts_with("/api/product/")).count();
        let (base, mut running) = (api(), child().spawn().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        while api() < base + calls && Instant::now() < deadline && running.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(running.try_wait().unwrap().is_none(), "killed mid-crawl, not after it");
        killed.push(running.id());
        running.kill().unwrap();
        running.wait().unwrap();
    }
    let last = child().stdout(Stdio::piped()).stderr(Stdio::piped()).output().unwrap();
    assert!(last.status.success(), "the last run finishes: {}", String::from_utf8_lossy(&last.stderr));

    let mut got: Vec<String> = rows(dir.path()).into_iter().map(|row| row.name).collect();
    got.sort();
    assert_eq!(got, names(&shop), "every product once across the three runs");
    // The killed runs' browsers went with them: their reapers killed them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = || killed.iter().map(|pid| browsers_of(*pid)).sum::<usize>();
    while left() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(left(), 0, "no browser of a killed crawl is left running");
    // Nor their profiles: the reapers removed them.
    let profiles = || {
        let markers: Vec<String> = killed.iter().map(|pid| format!("spiderling-browser-{pid}-")).collect();
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|entry| markers.iter().any(|m| entry.file_name().to_string_lossy().starts_with(m)))
            .count()
    };
    while profiles() > 0 && Instant::now() < deadline + Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(profiles(), 0, "no profile folder of a killed crawl is left");
}

/// The browser processes (any of their processes) of the crawl process `pid`.
fn browsers_of(pid: u32) -> usize {
    let marker = format!("spiderling-browser-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            !zombie && String::from_utf8_lossy(&cmdline).contains(&marker)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_item_never_appears_is_read_as_it_stands_and_kept_as_a_screenshot() {
    let _serial = SERIAL.lock().await;
    // The products are written 3 s after their script runs; the render waits 1 s.
    let shop = RenderedSite::new().products(2).page_size(5).plain(0).delay_ms(3000);
    let site = Sandbox::rendered(shop).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let shots = dir.path().join("shots");
    let settings = [("render_timeout", "1s"), ("screenshot_failures", shots.to_str().unwrap())];
    let summary = crawl(Always, &site, dir.path(), &settings).await;

    assert_eq!(summary.counts.items, 0, "no product appeared in time: {summary}");
    assert_eq!(summary.counts.render_timeouts, 2, "{summary}");
    let pngs: Vec<_> = std::fs::read_dir(&shots).unwrap().flatten().map(|entry| entry.path()).collect();
    assert_eq!(pngs.len(), 2, "a screenshot per product page: {pngs:?}");
    for png in &pngs {
        assert!(std::fs::read(png).unwrap().starts_with(b"\x89PNG"), "{}", png.display());
        assert!(png.file_name().unwrap().to_string_lossy().starts_with("127.0.0.1-"));
    }
}
