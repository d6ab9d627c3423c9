//! Rate limits as real servers apply them: Debian's nginx with `limit_req` per client
//! address (answering 503, its default, or 429), and HAProxy's stick-table limit in front
//! of it. The servers' logs count what they answered; the tests assert every page came
//! back with default settings and in adaptive mode. The site is served under four host
//! names (`site-N.localhost`, the loopback as RFC 6761 has it) on the one server, whose
//! limit counts every name's requests together. And the budget hosts share
//! (`politeness`): the hosts of one registrable domain, whatever their address.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::future::Future;
use std::path::Path;
use std::time::Instant;

use spider_sandbox::{HaproxyLimit, HaproxyServer, NginxLimit, NginxServer, NginxSite};
use spiderling::prelude::*;
use spiderling::Summary;

/// A page's title.
#[derive(Item, Serialize, Debug)]
struct Titled {
    #[css("h1")]
    title: String,
}

/// Every page the index links, each parsed for its title.
#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], rule(allow = "/p/", parse = Titled))]
struct Pages;

/// Pages a host; four hosts.
const PAGES: usize = 50;
const HOSTS: usize = 4;
/// What the limiters allow each client address: 20 requests a second.
const ALLOWED: u32 = 20;

/// `PAGES` pages of a few kilobytes and an index linking them all.
fn site(root: &Path) {
    std::fs::create_dir_all(root.join("p")).unwrap();
    let mut index = String::from("<!doctype html><h1>Index</h1><ul>\n");
    for n in 1..=PAGES {
        let text = format!("<p>Paragraph {n} of a page a limiter stands in front of.</p>\n").repeat(40);
        std::fs::write(root.join(format!("p/{n}.html")), format!("<!doctype html><h1>Page {n}</h1>{text}"))
            .unwrap();
        index.push_str(&format!("<li><a href=\"/p/{n}.html\">{n}</a></li>\n"));
    }
    std::fs::write(root.join("index.html"), index + "</ul>\n").unwrap();
}

/// nginx's `limit_req` as the issue found it configured: 20 r/s per address, a burst of 10,
/// `nodelay`, refusing past it with `status`.
fn nginx(root: &Path, status: u16) -> NginxServer {
    let limit = NginxLimit { per_second: ALLOWED, burst: 10, nodelay: true, status };
    NginxServer::start(NginxSite { root: root.into(), gzip: true, limit: Some(limit) }).unwrap()
}

/// Crawl the site behind `port` under its four names.
async fn crawl(port: u16, adaptive: bool, dir: &Path) -> Summary {
    let starts: Vec<String> = (1..=HOSTS).map(|n| format!("http://site-{n}.localhost:{port}/")).collect();
    let config = Pages
        .config()
        .set("start_urls", &starts.join(","))
        .unwrap()
        .output(dir.join("items.jsonl"))
        .adaptive(adaptive);
    Crawler::with_config(Pages, config).run().await.unwrap()
}

/// The pages `nginx` served whole (200), each once however often it was asked, by host.
/// nginx logs a request once its answer is sent, so the crawl may have the last pages
/// before their lines are written: read until every page is there, or for 5 s.
fn served(nginx: &NginxServer) -> usize {
    let read = || {
        let logged = nginx.requests().unwrap();
        let pages: BTreeSet<(String, String)> = logged
            .into_iter()
            .filter(|logged| logged.status == 200 && logged.target.starts_with("/p/"))
            .map(|logged| (logged.host, logged.target))
            .collect();
        pages.len()
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    let mut served = read();
    while served < PAGES * HOSTS && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        served = read();
    }
    served
}

/// Run the crawls `runs` side by side; the server must have served every page of every
/// host, and the crawl have given none up.
async fn side_by_side(
    runs: impl IntoIterator<Item = impl Future<Output = (String, Summary, usize)> + Send + 'static>,
) {
    let mut crawls = tokio::task::JoinSet::new();
    for run in runs {
        crawls.spawn(run);
    }
    while let Some(joined) = crawls.join_next().await {
        let (what, summary, served) = joined.unwrap();
        println!("{what}; {summary}");
        assert_eq!(served, PAGES * HOSTS, "{what}: pages the server served whole");
        assert_eq!(
            (summary.counts.items as usize, summary.failures),
            (PAGES * HOSTS, 0),
            "{what}: {summary}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_limit_req_answering_503_or_429_loses_no_page_with_default_settings_or_adaptive() {
    let root = tempfile::tempdir().unwrap();
    site(root.path());
    // Four crawls side by side, each against an nginx of its own (a limit of its own).
    let runs = [(503, false), (503, true), (429, false), (429, true)].map(|(status, adaptive)| {
        let nginx = nginx(root.path(), status);
        async move {
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let summary = crawl(nginx.port(), adaptive, dir.path()).await;
            let took = started.elapsed();
            let refused = nginx.requests().unwrap().iter().filter(|logged| logged.status == status).count();
            let what =
                format!("nginx answering {status}, adaptive = {adaptive}: {took:?}, {refused} refused");
            (what, summary, served(&nginx))
        }
    });
    side_by_side(runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_stick_table_limit_loses_no_page_with_default_settings_or_adaptive() {
    let root = tempfile::tempdir().unwrap();
    site(root.path());
    // Each HAProxy in front of an nginx of its own, whose log says what got through.
    let runs = [false, true].map(|adaptive| {
        let limited = Limited::start(root.path(), "HAProxy 429");
        async move {
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let summary = crawl(limited.port(), adaptive, dir.path()).await;
            let haproxy = limited.front.as_ref().unwrap();
            let refused = haproxy.statuses().unwrap().iter().filter(|status| **status == 429).count();
            let what = format!("haproxy, adaptive = {adaptive}: {:?}, {refused} refused", started.elapsed());
            (what, summary, served(&limited.nginx))
        }
    });
    side_by_side(runs).await;
}

/// A spider of the demo shop's books.
#[derive(Item, Serialize, Debug)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(allow = r"/catalogue/book_\d+\.html$", parse = Book)
)]
struct Books;

/// The most requests the demo shop had in flight at once while two hosts of one
/// registrable domain (`a.shop.localhost`, `b.shop.localhost`, on the shop's one port)
/// were crawled with `per_host = 1` and `politeness = politeness`.
async fn most_in_flight(politeness: &str) -> (usize, Summary) {
    let demo = spider_sandbox::DemoSite {
        books: 12,
        per_page: 6,
        latency: std::time::Duration::from_millis(40),
        ..spider_sandbox::DemoSite::default()
    };
    let site = spider_sandbox::Sandbox::demo(demo).unwrap();
    let port = site.addr().port();
    let dir = tempfile::tempdir().unwrap();
    let starts = format!("http://a.shop.localhost:{port}/,http://b.shop.localhost:{port}/");
    let config = Books
        .config()
        .set("start_urls", &starts)
        .unwrap()
        .set("per_host", "1")
        .unwrap()
        // The shop links `localhost` too, a registrable domain of its own.
        .set("allowed_domains", "shop.localhost")
        .unwrap()
        .set("politeness", politeness)
        .unwrap()
        .output(dir.path().join("books.jsonl"));
    let summary = Crawler::with_config(Books, config).run().await.unwrap();
    (site.observed().max_in_flight, summary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_of_one_registrable_domain_share_one_budget_unless_told_otherwise() {
    let (shared, summary) = most_in_flight("domain").await;
    assert_eq!(summary.counts.items, 24, "both hosts' books: {summary}");
    assert_eq!(shared, 1, "per_host = 1 between a.shop.localhost and b.shop.localhost");
    let (apart, summary) = most_in_flight("host").await;
    assert_eq!(summary.counts.items, 24, "{summary}");
    assert_eq!(apart, 2, "a slot each with politeness = \"host\"");
}

/// A limiter (nginx's `limit_req`, or HAProxy's in front of an nginx), with the nginx
/// whose log says what got through.
struct Limited {
    nginx: NginxServer,
    /// In front of `nginx`, for HAProxy's limit.
    front: Option<HaproxyServer>,
}

impl Limited {
    fn start(root: &Path, limiter: &str) -> Limited {
        match limiter {
            "HAProxy 429" => {
                let nginx =
                    NginxServer::start(NginxSite { root: root.into(), gzip: true, limit: None }).unwrap();
                let behind = format!("127.0.0.1:{}", nginx.port()).parse().unwrap();
                let limit = HaproxyLimit { per_second: ALLOWED, status: 429 };
                Limited { nginx, front: Some(HaproxyServer::start(behind, limit).unwrap()) }
            }
            "nginx 429" => Limited { nginx: nginx(root, 429), front: None },
            _ => Limited { nginx: nginx(root, 503), front: None },
        }
    }

    fn port(&self) -> u16 {
        self.front.as_ref().map_or_else(|| self.nginx.port(), HaproxyServer::port)
    }
}

/// Spiderling, Scrapy and Crawlee, one at a time, each against a limiter of its own (nginx
/// answering 503 or 429, HAProxy), all with their default settings at C = 16: the pages
/// under /p/ the server served whole, and those a second as a share of the 20 allowed.
/// Run by `bench/rate-limits/run.sh`, which installs the two peers: `SCRAPY` is the
/// `scrapy` command, `CRAWLEE` the folder holding `pages.mjs` and its `node_modules`.
#[test]
#[ignore = "a benchmark against Scrapy and Crawlee: bash bench/rate-limits/run.sh"]
fn spiderling_scrapy_and_crawlee_against_the_same_limiters() {
    let scrapy = std::env::var("SCRAPY").expect("SCRAPY: the scrapy command (bench/rate-limits/run.sh)");
    let crawlee =
        std::env::var("CRAWLEE").expect("CRAWLEE: the folder of pages.mjs (bench/rate-limits/run.sh)");
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/rate-limits");
    let root = tempfile::tempdir().unwrap();
    site(root.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!(
        "| limiter | crawler | pages of {} | seconds | pages a second | share of the {ALLOWED} allowed |",
        PAGES * HOSTS
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for limiter in ["nginx 503", "nginx 429", "HAProxy 429"] {
        for crawler in ["Spiderling", "Scrapy", "Crawlee"] {
            let limited = Limited::start(root.path(), limiter);
            let port = limited.port();
            let starts: Vec<String> =
                (1..=HOSTS).map(|n| format!("http://site-{n}.localhost:{port}/")).collect();
            let dir = tempfile::tempdir().unwrap();
            let output = dir.path().join("items.jsonl");
            let started = Instant::now();
            match crawler {
                "Spiderling" => {
                    runtime.block_on(crawl(port, false, dir.path()));
                }
                "Scrapy" => {
                    let ran = std::process::Command::new(&scrapy)
                        .current_dir(dir.path())
                        .env("PYTHONPATH", &bench)
                        .env("PYTHONDONTWRITEBYTECODE", "1")
                        .args(["runspider", &bench.join("pages.py").display().to_string()])
                        .args(["-a", &format!("start_urls={}", starts.join(","))])
                        .args(["-O", &format!("{}:jsonlines", output.display())])
                        .args([
                            "-s",
                            "TWISTED_DNS_RESOLVER=pages.LoopbackResolver",
                            "-s",
                            "TELNETCONSOLE_ENABLED=False",
                        ])
                        .args(["-s", "CONCURRENT_REQUESTS=16", "-s", "LOG_LEVEL=WARNING"])
                        .output()
                        .unwrap();
                    assert!(ran.status.success(), "Scrapy: {}", String::from_utf8_lossy(&ran.stderr));
                }
                _ => {
                    let ran = std::process::Command::new("node")
                        .current_dir(dir.path())
                        .env("CRAWLEE_STORAGE_DIR", dir.path().join("storage"))
                        .arg(Path::new(&crawlee).join("pages.mjs"))
                        .args(["--starts", &starts.join(","), "--concurrency", "16"])
                        .args(["--output", &output.display().to_string()])
                        .output()
                        .unwrap();
                    assert!(ran.status.success(), "Crawlee: {}", String::from_utf8_lossy(&ran.stderr));
                }
            }
            let took = started.elapsed().as_secs_f64();
            let pages = served(&limited.nginx);
            let rate = pages as f64 / took;
            println!(
                "| {limiter} | {crawler} | {pages} | {took:.1} | {rate:.1} | {:.2} |",
                rate / f64::from(ALLOWED)
            );
        }
    }
}
