//! The wire a crawl sends, as the sandbox's fingerprint site reads it: HTTP/2 and its
//! stream caps, the crawl's own client refused for its TLS ClientHello, and (with the
//! `impersonate` feature) Chrome's and Firefox's wires let through, directly and through
//! the rotating gateway, and the ladder from the one to the other, resumed from a state
//! file. The site's rules are checked against Debian's headless Chromium.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::time::Duration;

use spider_sandbox::{DemoSite, FingerprintSite, Sandbox};
use spiderling::{CrawlStatus, Crawler};
use support::chromium::Chromium;
use support::BookSpider;

/// Chrome's JA4 and HTTP/2 fingerprint, as Chromium sends them and the Chrome profile
/// claims them.
const CHROME_JA4: &str = "t13d1516h2_8daaf6152771_d8a2da3f94cd";
/// Debian's Chromium 156: Chrome's hello with one extension more (51764).
const CHROMIUM_156_JA4: &str = "t13d1517h2_8daaf6152771_cb7bf5808d99";
const CHROME_H2: &str = "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p";

fn shop() -> DemoSite {
    DemoSite { books: 12, per_page: 4, ..DemoSite::default() }
}

/// The fingerprint site with its certificate written where a crawl can trust it.
fn fingerprint_site(dir: &Path) -> (Sandbox, std::path::PathBuf) {
    fingerprint_site_on(dir, false)
}

/// The same, offering HTTP/1.1 only when `http1_only`.
fn fingerprint_site_on(dir: &Path, http1_only: bool) -> (Sandbox, std::path::PathBuf) {
    let site = Sandbox::fingerprint(FingerprintSite { demo: shop(), http1_only }).unwrap();
    let ca = dir.join("sandbox-ca.pem");
    std::fs::write(&ca, site.certificate_pem().unwrap()).unwrap();
    (site, ca)
}

/// A crawl of `site`'s shop, trusting `ca`.
fn config(site: &Sandbox, ca: &Path, dir: &Path) -> spiderling::Config {
    spiderling::Config::new("books")
        .start_url(site.url())
        .allowed_domain("localhost")
        .output(dir.join("items.jsonl"))
        .ca_cert(ca)
}

#[test]
fn chromium_is_let_through_with_the_fingerprint_chrome_is_claimed_by() {
    let dir = tempfile::tempdir().unwrap();
    let (site, _) = fingerprint_site(dir.path());
    let chromium = Chromium::find();
    let echo = chromium.dump_dom_insecure(&format!("{}wire", site.url()));
    // Chromium shows the JSON as text in a <pre>.
    let json = &echo[echo.find('{').expect("a JSON echo")..=echo.rfind('}').unwrap()];
    let echo: serde_json::Value =
        serde_json::from_str(&json.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")).unwrap();
    assert_eq!(echo["verdict"], "let through as chromium", "{echo:#}");
    // Chrome's hello until 148, the one `impersonate = "chrome"` sends; Chromium 156's has
    // one extension more.
    let ja4 = echo["ja4"].as_str().unwrap_or_default();
    assert!([CHROME_JA4, CHROMIUM_156_JA4].contains(&ja4), "{echo:#}");
    assert_eq!(echo["h2"].as_str(), Some(CHROME_H2));
    assert_eq!(echo["http_version"], "HTTP/2");
    let home = chromium.dump_dom_insecure(&site.url());
    assert!(home.contains("Demo bookshop"), "the shop itself: {home}");
    // Chromium asks for /favicon.ico too, which the shop has not.
    assert!(site.observed().hits.iter().all(|hit| hit.status == 200 || hit.target == "/favicon.ico"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crawls_own_client_is_refused_for_its_tls_hello() {
    let dir = tempfile::tempdir().unwrap();
    let (site, ca) = fingerprint_site(dir.path());
    let summary =
        Crawler::new(BookSpider::new(config(&site, &ca, dir.path()).retries(1))).run().await.unwrap();

    assert_eq!(summary.counts.items, 0);
    let seen = site.observed();
    assert!(!seen.hits.is_empty());
    for hit in &seen.hits {
        assert_eq!(hit.status, 403, "{}", hit.target);
        let wire = hit.wire.as_ref().unwrap();
        assert_ne!(wire.ja4, CHROME_JA4);
        assert_eq!(hit.version, "HTTP/2", "the crawl's own client speaks HTTP/2 where it is offered");
    }
    assert_eq!(summary.counts.http2, summary.counts.answered());
    assert_eq!((summary.counts.impersonated, summary.counts.refused_plain), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_under_a_host_cap_of_four_never_has_more_than_four_streams() {
    let slow =
        DemoSite { books: 40, per_page: 10, latency: Duration::from_millis(40), ..DemoSite::default() };
    let site = Sandbox::demo_tls(slow).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("sandbox-ca.pem");
    std::fs::write(&ca, site.certificate_pem().unwrap()).unwrap();
    let config = config(&site, &ca, dir.path()).concurrency(16).per_host(4).delay(Duration::ZERO);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 40));
    let seen = site.observed();
    assert!(seen.hits.iter().all(|hit| hit.version == "HTTP/2"));
    assert!(seen.max_in_flight <= 4, "{} streams at once", seen.max_in_flight);
    assert!(seen.max_in_flight >= 3, "the cap was used: {} at most", seen.max_in_flight);
    assert!(seen.connections <= 2, "streams share a connection: {} connections", seen.connections);
}

#[cfg(feature = "impersonate")]
mod impersonated {
    use spider_sandbox::{GatewayConfig, MockGateway, RedisServer};
    use spiderling::prelude::*;
    use spiderling::{Impersonate, SpiderConfig};
    use support::{expected_books, read_jsonl};

    use super::*;

    const FIREFOX_JA4: &str = "t13d1717h2_5b57614c22b0_3cbfd9057e0d";
    const FIREFOX_H2: &str = "1:65536;2:0;4:131072;5:16384|12517377|0|m,p,a,s";

    /// Every one of `hits` was answered, and sent on Chrome's wire.
    fn all_chrome(hits: &[spider_sandbox::Hit]) {
        for hit in hits {
            assert!(hit.status < 400, "{} answered {}", hit.target, hit.status);
            assert_eq!(hit.wire.as_ref().unwrap().hello.ja4_unresumed(), CHROME_JA4, "{}", hit.target);
        }
    }

    /// Every hit of `site` was answered and sent with `ja4` and `h2`, each page once.
    fn all_sent_as(site: &Sandbox, ja4: &str, h2: &str) {
        let seen = site.observed();
        assert!(!seen.hits.is_empty());
        for hit in &seen.hits {
            let wire = hit.wire.as_ref().unwrap();
            assert!(hit.status < 400, "{} answered {}", hit.target, hit.status);
            assert_eq!(wire.hello.ja4_unresumed(), ja4, "{}", hit.target);
            assert_eq!(wire.h2_fingerprint().as_deref(), Some(h2));
        }
        assert!(seen.duplicates().is_empty(), "every page once: {:?}", seen.duplicates());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn chrome_and_firefox_profiles_get_every_page() {
        for (profile, ja4, h2, agent) in [
            (Impersonate::Chrome, CHROME_JA4, CHROME_H2, "Chrome/"),
            (Impersonate::Firefox, FIREFOX_JA4, FIREFOX_H2, "Firefox/"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (site, ca) = fingerprint_site(dir.path());
            let config = config(&site, &ca, dir.path()).impersonate(profile);
            let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

            assert_eq!(summary.status, CrawlStatus::Complete, "{profile:?}");
            assert_eq!(read_jsonl(&dir.path().join("items.jsonl")), expected_books(12), "{profile:?}");
            all_sent_as(&site, ja4, h2);
            let seen = site.observed();
            assert!(seen.hits.iter().all(|hit| hit.user_agent.as_deref().is_some_and(|a| a.contains(agent))));
            assert_eq!((summary.counts.impersonated, summary.counts.blocked), (summary.counts.answered(), 0));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn through_the_rotating_gateway_the_profile_keeps_its_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let (site, ca) = fingerprint_site(dir.path());
        let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
        let config = config(&site, &ca, dir.path())
            .impersonate(Impersonate::Chrome)
            .proxy(gateway.url_with_credentials());
        let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();

        assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 12));
        all_sent_as(&site, CHROME_JA4, CHROME_H2);
        let (seen, through) = (site.observed(), gateway.observed());
        assert!(through.requests.iter().all(|r| r.tunnel), "every request in a CONNECT tunnel");
        assert_eq!(through.requests.len(), seen.hits.len());
        assert_eq!(through.exits().len(), seen.hits.len(), "a new tunnel and exit per request");
        assert_eq!(seen.peers(), through.exits());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_ladder_climbs_on_a_refusal_and_a_resumed_crawl_starts_on_its_rung() {
        let dir = tempfile::tempdir().unwrap();
        let (site, ca) = fingerprint_site(dir.path());
        let state = dir.path().join("crawl.state");
        // Sticky identities, one per host slot: the second run's extra slots are identities
        // the first never made, which only the host's remembered rung makes Chrome's.
        let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
        let auto = || {
            config(&site, &ca, dir.path())
                .impersonate(Impersonate::Auto)
                .state(&state)
                .proxy(gateway.url_with_credentials())
                .sticky(true)
        };
        let first = Crawler::new(BookSpider::new(auto().per_host(1).max_pages(4))).run().await.unwrap();

        let seen = site.observed();
        let plain: Vec<_> = seen
            .hits
            .iter()
            .filter(|hit| hit.wire.as_ref().unwrap().hello.ja4_unresumed() != CHROME_JA4)
            .collect();
        assert_eq!(plain.len(), 1, "one refusal moves the host: {plain:?}");
        assert_eq!(plain[0].status, 403);
        assert_eq!(first.counts.refused_plain, 1);
        assert!(first.counts.items > 0 && first.counts.blocked == 1);
        let before = seen.hits.len();

        let second = Crawler::new(BookSpider::new(auto().per_host(3))).run().await.unwrap();
        assert_eq!(second.status, CrawlStatus::Complete);
        let seen = site.observed();
        assert!(seen.hits.len() > before, "the resumed crawl fetched the rest");
        all_chrome(&seen.hits[before..]);
        // A resumed crawl's counts are its runs' together: nothing was added to them.
        assert_eq!((second.counts.blocked, second.counts.refused_plain), (1, 1));
        assert_eq!(read_jsonl(&dir.path().join("items.jsonl")), expected_books(12));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fleet_worker_starts_on_the_rung_another_worker_found() {
        let dir = tempfile::tempdir().unwrap();
        let (site, ca) = fingerprint_site(dir.path());
        let redis = RedisServer::start().unwrap();
        let worker = |output: &str| {
            // `set` names every output of the worker: its own file instead of the helper's.
            config(&site, &ca, dir.path())
                .set("output", &dir.path().join(output).display().to_string())
                .unwrap()
                .impersonate(Impersonate::Auto)
                .frontier(redis.url())
                .handle_signals(false)
                .progress(false)
        };
        let first = Crawler::new(BookSpider::new(worker("a.jsonl").max_pages(4))).run().await.unwrap();
        assert_eq!(first.counts.refused_plain, 1, "the first worker met the refusal");
        let before = site.observed().hits.len();

        // A second worker, its own identities made afresh, joins the crawl.
        let second = Crawler::new(BookSpider::new(worker("b.jsonl"))).run().await.unwrap();
        let seen = site.observed();
        assert!(seen.hits.len() > before, "the second worker fetched the rest");
        all_chrome(&seen.hits[before..]);
        assert_eq!((second.counts.blocked, second.counts.refused_plain), (0, 0));
        assert!(seen.duplicates().is_empty(), "every page once: {:?}", seen.duplicates());
    }

    #[derive(Item, Serialize)]
    struct Title {
        #[css("h1.title")]
        title: String,
    }

    /// Listings on the crawl's own client, books on Chrome's wire.
    #[derive(Spider, Default)]
    #[spider(
        name = "mixed",
        start_urls = ["https://localhost/"],
        allowed_domains = ["localhost"],
        rule(allow = r"/catalogue/page-\d+\.html", follow),
        rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Title, impersonate = "chrome"),
    )]
    struct Mixed;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rule_sends_its_requests_with_its_own_profile() {
        let site = Sandbox::demo_tls(shop()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("sandbox-ca.pem");
        std::fs::write(&ca, site.certificate_pem().unwrap()).unwrap();
        let config = Mixed
            .config()
            .set("start_urls", &site.url())
            .unwrap()
            .ca_cert(&ca)
            .output(dir.path().join("items.jsonl"));
        let summary = Crawler::with_config(Mixed, config).run().await.unwrap();

        assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 12));
        let seen = site.observed();
        let (mut books, mut others) = (0, 0);
        for hit in &seen.hits {
            let chrome = hit.wire.as_ref().unwrap().hello.ja4_unresumed() == CHROME_JA4;
            if hit.target.contains("/book_") {
                books += 1;
                assert!(chrome, "a book on Chrome's wire: {}", hit.target);
                assert!(hit.user_agent.as_deref().is_some_and(|agent| agent.contains("Chrome/149")));
            } else {
                others += 1;
                assert!(!chrome, "the rest on the crawl's own client: {}", hit.target);
            }
        }
        assert_eq!(books, 12);
        assert!(others > 3, "home, robots.txt and the listings: {others}");
        assert_eq!(summary.counts.impersonated, 12);
    }

    /// The names of the headers Chromium writes over HTTP/1.1, as the site read them.
    fn chromium_http1_names() -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let (site, _) = fingerprint_site_on(dir.path(), true);
        let echo = Chromium::find().dump_dom_insecure(&format!("{}wire", site.url()));
        let json = &echo[echo.find('{').expect("a JSON echo")..=echo.rfind('}').unwrap()];
        let echo: serde_json::Value =
            serde_json::from_str(&json.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
                .unwrap();
        assert_eq!(echo["http_version"], "HTTP/1.1", "{echo:#}");
        echo["http1_names"].as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_http1_chrome_writes_the_names_chromium_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (site, ca) = fingerprint_site_on(dir.path(), true);
        let config = spiderling::Config::new("wire")
            .start_url(format!("{}wire", site.url()))
            .allowed_domain("localhost")
            .obey_robots(false)
            .ca_cert(&ca)
            .impersonate(Impersonate::Chrome);
        Crawler::new(BookSpider::new(config)).run().await.unwrap();
        let hit = site.observed().hits.into_iter().find(|hit| hit.target == "/wire").unwrap();
        let mut names = hit.wire.unwrap().http1_names.clone().unwrap();
        // Chromium sends `priority` over HTTP/2 only; the identity's headers are made before
        // the connection says which it speaks, so over HTTP/1.1 ours still has it, last.
        assert_eq!(names.pop().as_deref(), Some("priority"));
        assert_eq!(names, chromium_http1_names(), "Chromium's names, in its order and case");
    }
}
