//! Proxy routing, observed by the mock gateway and by the sites behind it.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use spider_sandbox::{DemoSite, GatewayConfig, HostileSite, IdentityLimit, MockGateway, Sandbox};
use spiderling::prelude::*;
use spiderling::{CrawlStatus, Crawler, Error, Request, Route};
use support::{config_for, BookSpider};

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn small_shop() -> DemoSite {
    DemoSite { books: 10, per_page: 5, ..DemoSite::default() }
}

#[allow(clippy::unwrap_used)]
fn gateway() -> MockGateway {
    MockGateway::start(GatewayConfig::default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_mode_gives_every_request_a_new_connection_and_exit() {
    let (site, gateway) = (Sandbox::demo(small_shop()).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let config = config.proxy(gateway.url_with_credentials());
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 10));
    let (seen, through) = (site.observed(), gateway.observed());
    let n = seen.hits.len();
    assert!(n > small_shop().books, "the whole shop: {n} requests");
    assert_eq!(through.requests.len(), n, "every request went through the gateway");
    assert_eq!(through.connections, n, "one connection per request");
    assert_eq!(through.exits().len(), n, "one exit identity per request");
    assert_eq!(seen.peers(), through.exits(), "the site saw the gateway's exits, and only them");
    assert!(!seen.peers().contains(&LOCAL));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_mode_keeps_one_exit_per_slot() {
    let shop = DemoSite { books: 40, per_page: 10, ..DemoSite::default() };
    let (site, gateway) = (Sandbox::demo(shop).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    // Four slots on the host: four identities, each with its own session and exit.
    let config = Config::new("books")
        .start_url(format!("{}catalogue/page-1.html", site.url()))
        .start_url(format!("{}catalogue/page-3.html", site.url()))
        .allowed_domain("127.0.0.1")
        .output(dir.path().join("items.jsonl"))
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .per_host(4);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 40));
    let through = gateway.observed();
    let mut exits_of: BTreeMap<&str, BTreeSet<IpAddr>> = BTreeMap::new();
    for request in through.requests.iter().filter(|r| !r.target.ends_with("/robots.txt")) {
        let session = request.session.as_deref().expect("every page request carries its slot's session");
        exits_of.entry(session).or_default().insert(request.exit);
    }
    assert!((2..=4).contains(&exits_of.len()), "a session per slot: {exits_of:?}");
    assert!(exits_of.values().all(|exits| exits.len() == 1), "one exit per session: {exits_of:?}");
    assert!(through.connections < through.requests.len() / 2, "a session's connection is kept alive");
    let exits: BTreeSet<IpAddr> = exits_of.values().flatten().copied().collect();
    assert_eq!(exits.len(), exits_of.len(), "each session its own identity");
    let page_peers: BTreeSet<IpAddr> = site.observed().pages().map(|hit| hit.peer).collect();
    assert_eq!(page_peers, exits, "the site saw each slot from its own identity");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_session_is_replaced_by_one_with_a_new_identity() {
    let limit = IdentityLimit {
        requests: 4,
        per: Duration::from_secs(60),
        ban_after: 100,
        ban_for: Duration::from_secs(60),
    };
    let hostile = HostileSite { pages: 12, limit: Some(limit), ..HostileSite::empty() };
    let (site, gateway) = (Sandbox::hostile(hostile).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    // One request at a time, so nothing is in flight on a session when it is retired.
    let config = config
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .concurrency(1)
        .retries(10)
        .backoff(Duration::from_millis(10), Duration::from_millis(50));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 12));
    let seen = site.observed();
    assert!(seen.answered(429) > 0, "the limit did bite");
    let through = gateway.observed();
    let mut sessions: Vec<&str> = Vec::new();
    let mut exit_of: BTreeMap<&str, IpAddr> = BTreeMap::new();
    for request in through.requests.iter().filter(|r| !r.target.ends_with("/robots.txt")) {
        let session = request.session.as_deref().unwrap();
        if !sessions.contains(&session) {
            sessions.push(session);
        }
        assert_eq!(*exit_of.entry(session).or_insert(request.exit), request.exit, "a session keeps its exit");
    }
    // 13 pages (the home page and 12 items) at 4 per identity: at least four sessions.
    assert!(sessions.len() >= 4, "sessions: {sessions:?}");
    let exits: BTreeSet<IpAddr> = exit_of.values().copied().collect();
    assert_eq!(exits.len(), sessions.len(), "every replacement has a new identity");
    let throttled: BTreeSet<IpAddr> = seen.hits.iter().filter(|h| h.status == 429).map(|h| h.peer).collect();
    assert!(!throttled.is_empty());
    for exit in &throttled {
        let mut after_429 = seen.hits.iter().skip_while(|h| !(h.peer == *exit && h.status == 429)).skip(1);
        assert!(after_429.all(|h| h.peer != *exit), "{exit} was used again after its 429");
    }
}

/// The book spider, sending `/catalogue/book_2.html` out as French whatever the rules say.
struct Routing(BookSpider);

impl SpiderConfig for Routing {
    fn config(&self) -> Config {
        self.0.config()
    }
}

#[async_trait]
impl Spider for Routing {
    type Item = support::Book;

    async fn parse(&self, page: Page, cx: &mut Cx<support::Book>) -> Result {
        self.0.parse(page, cx).await
    }

    fn route(&self, request: &Request) -> Route {
        if request.url().path() == "/catalogue/book_2.html" {
            Route::Proxy { geo: Some("fr".to_owned()) }
        } else {
            Route::Auto
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geo_rules_pick_the_exit_country_per_host_and_the_hook_overrides_them() {
    let (site, gateway) = (Sandbox::demo(small_shop()).unwrap(), gateway());
    let port = site.addr().port();
    let dir = tempfile::tempdir().unwrap();
    // The gateway resolves every name to 127.0.0.1, so `shop.de` is the same sandbox.
    let config = Config::new("books")
        .start_url(format!("http://shop.de:{port}/catalogue/book_1.html"))
        .start_url(format!("http://127.0.0.1:{port}/catalogue/book_2.html"))
        .start_url(format!("http://127.0.0.1:{port}/catalogue/book_3.html"))
        .max_depth(0)
        .output(dir.path().join("items.jsonl"))
        .proxy(gateway.url_with_credentials())
        .geo("us")
        .geo_rule("*.de", "de");
    let summary = Crawler::new(Routing(BookSpider::new(config))).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 3));
    let through = gateway.observed();
    let country_of = |target: &str| {
        let countries: BTreeSet<Option<&str>> = through
            .requests
            .iter()
            .filter(|r| r.target.contains(target))
            .map(|r| r.country.as_deref())
            .collect();
        countries
    };
    assert_eq!(country_of("shop.de"), BTreeSet::from([Some("de")]), "pages and robots.txt of *.de");
    assert_eq!(country_of("/book_3.html"), BTreeSet::from([Some("us")]));
    let robots = format!("127.0.0.1:{port}/robots.txt");
    assert_eq!(country_of(&robots), BTreeSet::from([Some("us")]));
    assert_eq!(country_of("/book_2.html"), BTreeSet::from([Some("fr")]), "the spider's route hook");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_go_through_the_gateway_in_a_connect_tunnel() {
    let (site, gateway) = (Sandbox::demo_tls(small_shop()).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("sandbox-ca.pem");
    std::fs::write(&ca, site.certificate_pem().unwrap()).unwrap();
    let config = Config::new("books")
        .start_url(site.url())
        .allowed_domain("localhost")
        .output(dir.path().join("items.jsonl"))
        .proxy(gateway.url_with_credentials())
        .ca_cert(&ca);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 10));
    let through = gateway.observed();
    assert!(!through.requests.is_empty());
    assert!(through.requests.iter().all(|r| r.tunnel), "every request was a CONNECT tunnel");
    assert_eq!(through.exits().len(), through.requests.len(), "a new tunnel and exit per request");
    assert_eq!(site.observed().peers(), through.exits());
}

/// Five requests per identity every 3 s; a client that keeps going while throttled is banned.
fn rate_limited_site() -> HostileSite {
    let limit = IdentityLimit {
        requests: 5,
        per: Duration::from_secs(3),
        ban_after: 3,
        ban_for: Duration::from_secs(60),
    };
    HostileSite { pages: 30, limit: Some(limit), ..HostileSite::empty() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_identity_limit_stops_a_direct_crawl_but_not_a_rotating_one() {
    let dir = tempfile::tempdir().unwrap();
    let quick =
        |config: Config| config.retries(2).backoff(Duration::from_millis(10), Duration::from_millis(50));

    // The direct crawl is throttled, then banned for a minute, which it slows down for and
    // waits out: it is given 10 s, where the rotating crawl needs one or two.
    let direct_site = Sandbox::hostile(rate_limited_site()).unwrap();
    let (config, output) = config_for(&direct_site, dir.path(), "direct.jsonl");
    let direct = Crawler::new(BookSpider::new(quick(config).handle_signals(false))).run();
    let finished = tokio::time::timeout(Duration::from_secs(10), direct).await.is_ok();
    let seen = direct_site.observed();
    let written = std::fs::read_to_string(output).map_or(0, |text| text.lines().count());
    assert!(!finished && written < 30, "direct: {written} items within 10 s");
    assert!(seen.answered(429) + seen.answered(403) > 0, "the site throttled or banned the direct crawl");
    assert_eq!(seen.peers(), BTreeSet::from([LOCAL]));

    let (site, gateway) = (Sandbox::hostile(rate_limited_site()).unwrap(), gateway());
    let (config, _) = config_for(&site, dir.path(), "rotating.jsonl");
    let rotating = Crawler::new(BookSpider::new(quick(config).proxy(gateway.url_with_credentials())))
        .run()
        .await
        .unwrap();
    let seen = site.observed();
    assert_eq!((rotating.status, rotating.counts.items), (CrawlStatus::Complete, 30));
    assert_eq!(seen.answered(429) + seen.answered(403), 0, "no identity came near the limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_climbs_from_direct_to_the_gateway_when_blocked() {
    let (site, gateway) = (Sandbox::hostile(rate_limited_site()).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("SPIDERLING_TEST_CLIMB_PROXY", gateway.url_with_credentials());
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let config = config
        .proxy("direct > env:SPIDERLING_TEST_CLIMB_PROXY")
        .concurrency(2)
        .retries(5)
        .backoff(Duration::from_millis(10), Duration::from_millis(50));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 30));
    let seen = site.observed();
    let direct = seen.hits.iter().filter(|h| h.peer == LOCAL).count();
    let proxied = gateway.observed().requests.len();
    println!("direct {direct}, through the gateway {proxied}");
    assert!((5..=25).contains(&direct), "the cheap tier was tried first, and left when it blocked: {direct}");
    assert!(proxied >= 10, "the rest went through the gateway: {proxied}");
    assert_eq!(direct + proxied, seen.hits.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_gateway_in_the_pool_is_benched_and_the_crawl_goes_on() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (site, gateway) = (Sandbox::demo(small_shop()).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let pool = format!("http://{dead}, {}", gateway.url_with_credentials());
    let config = config.proxy(pool).retries(5).backoff(Duration::from_millis(10), Duration::from_millis(50));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items, summary.failures), (CrawlStatus::Complete, 10, 0));
    let proxy = summary.proxy.unwrap();
    assert!(proxy.gateways[0].benched >= 1, "{:?}", proxy.gateways);
    assert_eq!(gateway.observed().requests.len(), site.observed().hits.len());
}

/// A gateway that refuses every connection is the route's trouble: said as "proxy
/// unreachable", naming the gateway with its credentials hidden, never as the site's
/// robots.txt being unavailable; the site receives nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_refuses_connections_is_named_not_taken_for_the_sites_robots() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let site = Sandbox::demo(small_shop()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let config = config
        .proxy(format!("http://shopper:pa55word@{dead}"))
        .retries(2)
        .backoff(Duration::from_millis(10), Duration::from_millis(50));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    let reasons: Vec<&String> = summary.counts.failures_by_reason.keys().collect();
    assert_eq!(reasons, ["proxy unreachable: connection refused"], "{summary}");
    let example = &summary.failure_examples["proxy unreachable: connection refused"];
    assert!(example.contains(&format!("(gateway http://***@{dead}/)")), "{example}");
    let failures = std::fs::read_to_string(dir.path().join("items.failures.jsonl")).unwrap();
    assert!(failures.contains("proxy unreachable: connection refused"), "{failures}");
    for text in [example.as_str(), failures.as_str(), &summary.to_string()] {
        assert!(!text.contains("pa55word") && !text.contains("robots.txt unavailable"), "{text}");
    }
    assert!(site.observed().hits.is_empty(), "nothing reached the site");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_407_stops_the_crawl_at_once_as_a_configuration_error() {
    let site = Sandbox::demo(small_shop()).unwrap();
    let tls = Sandbox::demo_tls(small_shop()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, tls.certificate_pem().unwrap()).unwrap();
    for target in [&site, &tls] {
        let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
        let wrong = gateway.url_with_credentials().replace("sandbox-s3cret", "not-the-password");
        let config = Config::new("books").start_url(target.url()).proxy(wrong).ca_cert(&ca);
        let error = Crawler::new(BookSpider::new(config)).run().await.unwrap_err();
        assert!(matches!(error, Error::ProxyAuth { .. }), "{error}");
        assert_eq!(error.exit_code(), std::process::ExitCode::from(2));
        let message = error.to_string();
        assert!(message.contains("407") && !message.contains("not-the-password"), "{message}");
        assert_eq!(gateway.observed().rejected, 1, "no retry storm");
        assert!(target.observed().hits.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_stops_admission_and_keeps_what_was_scraped() {
    let shop = DemoSite { books: 300, per_page: 10, ..DemoSite::default() };
    let (site, gateway) = (Sandbox::demo(shop).unwrap(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    // 100,000 per GB: 10 KB costs 1.00.
    let config = config
        .proxy(gateway.url_with_credentials())
        .proxy_price_per_gb(100_000.0)
        .proxy_budget(10.0)
        .concurrency(4);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!(summary.status, CrawlStatus::BudgetReached);
    assert_eq!(summary.exit_code(), std::process::ExitCode::from(4));
    assert!(summary.unfinished > 0);
    let proxy = summary.proxy.clone().unwrap();
    assert!(proxy.spend >= 10.0, "{proxy:?}");
    let through = gateway.observed();
    let wire = through.bytes_from_clients + through.bytes_to_clients;
    println!("counted {} bytes, the gateway {wire}; {} requests", proxy.bytes, through.requests.len());
    assert!(through.requests.len() < 200, "stopped early: {} of 331 requests", through.requests.len());
    let ratio = proxy.bytes as f64 / wire as f64;
    assert!((0.8..1.25).contains(&ratio), "the count is close to the gateway's: {ratio:.2}");
    assert_eq!(
        support::read_jsonl(&output).len() as u64,
        summary.counts.items,
        "every item scraped was written"
    );
    assert!(summary.counts.items > 0);
}
