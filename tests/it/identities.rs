//! Identities as the cookie shop sees them: cookies kept and sent back only where they
//! belong, a consent wall passed, honeypot links left alone, a blocked identity retired
//! with its cookies, one cookie and one exit per task, jars kept in the state file, user
//! agents with the headers of their browser.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use spider_sandbox::{GatewayConfig, Hit, MockGateway, Observed, Sandbox, ShopSite};
use spiderling::prelude::*;
use spiderling::{CrawlStatus, Summary};

use crate::support;

use support::Product;

/// Follows every link, a product from each page that has one; the consent wall is a block.
#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], block_markers = ["consent-wall"], follow = "a", item = Product)]
struct Shopper;

const PRODUCTS: usize = 4;

fn shop() -> Sandbox {
    Sandbox::shop(ShopSite { products: PRODUCTS, ..ShopSite::default() }).unwrap()
}

fn config(site: &Sandbox, dir: &Path, start: &str) -> Config {
    Shopper
        .config()
        .set("start_urls", &format!("{}{start}", site.url()))
        .unwrap()
        .output(dir.join("items.jsonl"))
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
}

async fn crawl(config: Config) -> Summary {
    Crawler::with_config(Shopper, config).run().await.unwrap()
}

fn on_site(seen: &Observed) -> Vec<&Hit> {
    seen.hits.iter().filter(|h| h.on_site).collect()
}

fn answered(seen: &Observed, target: &str) -> Vec<u16> {
    seen.hits.iter().filter(|h| h.on_site && h.target == target).map(|h| h.status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookies_go_back_to_the_shop_and_nowhere_else() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(config(&site, dir.path(), "").concurrency(1)).await;

    assert_eq!(
        (summary.status, summary.counts.items, summary.failures),
        (CrawlStatus::Complete, PRODUCTS as u64 + 1, 0)
    );
    let seen = site.observed();
    let hits = on_site(&seen);
    let home = hits.iter().position(|h| h.target == "/").unwrap();
    let visitors: BTreeSet<Option<&str>> = hits[home + 1..].iter().map(|h| h.cookie("visitor")).collect();
    assert_eq!(
        visitors.len(),
        1,
        "every request after the home page sends its one visitor cookie: {visitors:?}"
    );
    assert!(visitors.iter().all(Option::is_some));
    assert!(hits[..=home].iter().all(|h| h.cookie.is_none()), "nothing to send before the shop set it");
    assert!(hits.iter().all(|h| h.status == 200 || h.status == 404), "no wall, no refusal: {hits:?}");
    let checkout: Vec<&Hit> = hits.iter().filter(|h| h.target.starts_with("/checkout/")).copied().collect();
    assert_eq!(checkout.len(), 3);
    assert!(checkout[1..].iter().all(|h| h.cookie("cart").is_some() && h.status == 200), "{checkout:?}");
    assert!(
        hits.iter().filter(|h| !h.target.starts_with("/checkout")).all(|h| h.cookie("cart").is_none()),
        "Path=/checkout"
    );
    let elsewhere: Vec<&Hit> = seen.hits.iter().filter(|h| !h.on_site).collect();
    assert!(elsewhere.iter().any(|h| h.target == "/elsewhere"), "the other site was crawled too");
    assert!(elsewhere.iter().all(|h| h.cookie.is_none()), "the shop's cookie never goes to another site");
    // The honest default agent, with nothing claimed beside it.
    assert!(seen.hits.iter().all(|h| h.user_agent.as_deref().is_some_and(|a| a.starts_with("spiderling/"))));
    assert!(seen.hits.iter().all(|h| h.accept_language.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_links_are_never_requested_and_are_counted() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(config(&site, dir.path(), "")).await;

    let seen = site.observed();
    assert!(!seen.hits.iter().any(|h| h.target.starts_with("/trap/")), "no honeypot requested");
    assert_eq!(
        summary.counts.skipped_hidden, 4,
        "each of the four hidden links, on the one page that has them"
    );
    assert_eq!(summary.counts.items, PRODUCTS as u64 + 1);
    assert_eq!(summary.failures, 0);
}

/// Two rules that select the same links: each hidden link was counted once per rule.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    block_markers = ["consent-wall"],
    rule(css = "a", follow),
    rule(css = "a[href]", follow)
)]
struct TwoRules;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_link_two_rules_select_is_counted_once() {
    let site = shop();
    let config = TwoRules.config().set("start_urls", &site.url()).unwrap();
    let summary = Crawler::with_config(TwoRules, config).run().await.unwrap();
    assert!(!site.observed().hits.iter().any(|h| h.target.starts_with("/trap/")), "no honeypot requested");
    assert_eq!(summary.counts.skipped_hidden, 4, "each of the four hidden links once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consent_wall_is_passed_on_the_identity_that_got_its_cookie() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(config(&site, dir.path(), "product/2").max_depth(0)).await;

    assert_eq!((summary.counts.items, summary.failures), (1, 0));
    let seen = site.observed();
    let product: Vec<&Hit> = seen.hits.iter().filter(|h| h.target == "/product/2").collect();
    assert_eq!(product.len(), 2, "the wall, then the product: {product:?}");
    assert_eq!((product[0].status, product[0].cookie.as_deref()), (200, None));
    assert!(product[1].cookie("visitor").is_some(), "sent back with the cookie the wall set");
    assert_eq!(product[0].peer, product[1].peer);
    assert_eq!(summary.counts.blocked, 0, "a wall that hands out its cookie is no block");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_set_by_a_redirect_goes_with_its_next_hop() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let summary = crawl(config(&site, dir.path(), "welcome").max_depth(0)).await;

    assert_eq!((summary.counts.items, summary.failures), (1, 0));
    let seen = site.observed();
    let product: Vec<&Hit> = seen.hits.iter().filter(|h| h.target == "/product/1").collect();
    assert_eq!(product.len(), 1, "no consent wall: {product:?}");
    assert_eq!(product[0].status, 200);
    assert!(product[0].cookie("visitor").is_some());
}

fn gateway() -> MockGateway {
    MockGateway::start(GatewayConfig::default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_identity_is_retired_with_its_cookies() {
    let (site, gateway) = (shop(), gateway());
    let dir = tempfile::tempdir().unwrap();
    // Honeypots followed on purpose, each once (a 403 is not retried); one request at a
    // time, so nothing is in flight on an identity when it is retired.
    let config = config(&site, dir.path(), "")
        .follow_hidden(true)
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .concurrency(1)
        .retry_statuses([500]);
    let summary = crawl(config).await;

    let seen = site.observed();
    let hits = on_site(&seen);
    let bans: Vec<usize> = (0..hits.len()).filter(|&i| hits[i].target.starts_with("/trap/")).collect();
    assert_eq!(bans.len(), 4, "four honeypots");
    for &ban in &bans {
        let banned = hits[ban];
        for later in &hits[ban + 1..] {
            assert_ne!(later.peer, banned.peer, "a new exit after the ban at {}: {later:?}", banned.target);
            if let Some(visitor) = banned.cookie("visitor") {
                assert_ne!(
                    later.cookie("visitor"),
                    Some(visitor),
                    "the banned identity's cookie went with it"
                );
            }
        }
    }
    assert!(
        hits[bans[0]].cookie("visitor").is_some(),
        "the first trap was followed with the home page's cookie"
    );
    // After the bans, the task went on as fresh identities: every product, and the order.
    assert_eq!(summary.counts.items, PRODUCTS as u64 + 1, "{summary}");
    assert_eq!(summary.failures, 4, "only the honeypots, given up");
    let on_shop = |r: &&spider_sandbox::Proxied| r.target.starts_with(&site.url());
    let sessions: BTreeSet<String> =
        gateway.observed().requests.iter().filter(on_shop).filter_map(|r| r.session.clone()).collect();
    assert_eq!(sessions.len(), 5, "the first identity and one after each ban: {sessions:?}");
}

/// The shopper as one logical task: its start queued with a session key, which every
/// page it leads to inherits, as a checkout that needs one exit from its first step to its
/// last is written.
struct OneTask(String);

impl SpiderConfig for OneTask {
    fn config(&self) -> Config {
        Shopper.config()
    }
}

#[async_trait]
impl Spider for OneTask {
    type Item = Product;

    async fn start(&self, start: &mut Start<'_>) -> Result {
        start.queue(Request::get(&self.0)?.with_session("shopper"));
        Ok(())
    }

    async fn parse(&self, page: Page, cx: &mut Cx<Product>) -> Result {
        Shopper.parse(page, cx).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_keeps_one_cookie_and_one_exit() {
    let (site, gateway) = (shop(), gateway());
    let dir = tempfile::tempdir().unwrap();
    let mut sticky = config(&site, dir.path(), "").proxy(gateway.url_with_credentials()).sticky(true);
    sticky.start_urls.clear();
    let summary = Crawler::with_config(OneTask(site.url()), sticky).run().await.unwrap();

    assert_eq!((summary.counts.items, summary.failures), (PRODUCTS as u64 + 1, 0));
    let seen = site.observed();
    let hits = on_site(&seen);
    let peers: BTreeSet<IpAddr> = hits.iter().filter(|h| h.target != "/robots.txt").map(|h| h.peer).collect();
    assert_eq!(peers.len(), 1, "one task, one exit: {peers:?}");
    assert_eq!(
        answered(&seen, "/checkout/3"),
        [200],
        "the cart came back from the address it was opened from"
    );

    // Without sticky sessions each request leaves from its own exit, and the cart is refused.
    let (site, gateway) = (shop(), self::gateway());
    let dir = tempfile::tempdir().unwrap();
    let rotating = config(&site, dir.path(), "").proxy(gateway.url_with_credentials()).retries(0);
    crawl(rotating).await;
    assert_eq!(answered(&site.observed(), "/checkout/2"), [403]);
}

/// Follows the product links only: no checkout, no other site.
#[derive(Spider, Default)]
#[spider(start_urls = ["http://placeholder.invalid/"], block_markers = ["consent-wall"], follow = "li > \
    a", item = Product)]
struct Browser;

/// Sticky mode without a session key: each host slot is an identity of its own, one
/// request at a time, so a crawl from one start URL spreads over several exits, each with
/// the cookie its own consent wall gave it, and asks for no more cookies than it uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_identities_spread_over_the_slots_each_keeping_its_cookie_and_exit() {
    let site =
        Sandbox::shop(ShopSite { products: 60, latency: Duration::from_millis(20), ..ShopSite::default() })
            .unwrap();
    let gateway = gateway();
    let dir = tempfile::tempdir().unwrap();
    let config = Browser
        .config()
        .set("start_urls", &site.url())
        .unwrap()
        .output(dir.path().join("items.jsonl"))
        .proxy(gateway.url_with_credentials())
        .sticky(true)
        .concurrency(6)
        .per_host(6);
    let summary = Crawler::with_config(Browser, config).run().await.unwrap();

    assert_eq!((summary.counts.items, summary.failures), (60, 0), "{summary}");
    let seen = site.observed();
    let pages: Vec<&Hit> = on_site(&seen).into_iter().filter(|h| h.target != "/robots.txt").collect();
    let peers: BTreeSet<IpAddr> = pages.iter().map(|h| h.peer).collect();
    assert!((3..=6).contains(&peers.len()), "one exit per slot: {peers:?}");
    // A cookie, once given, always comes back from the exit it was given to.
    let mut exit_of = std::collections::HashMap::new();
    for hit in &pages {
        if let Some(visitor) = hit.cookie("visitor") {
            let exit = *exit_of.entry(visitor.to_owned()).or_insert(hit.peer);
            assert_eq!(exit, hit.peer, "the cookie {visitor} left from another exit");
        }
    }
    let tally = site.shop_tally().unwrap();
    assert_eq!(
        tally.cookies_issued, tally.cookies_used,
        "each identity's requests wait for its first answer's cookie: {tally:?}"
    );
    assert!(tally.cookies_issued <= 6, "one cookie per identity: {tally:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cookie_jars_are_kept_in_the_state_file() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("shop.state");
    let first = crawl(config(&site, dir.path(), "").state(&state).concurrency(1).max_pages(2)).await;
    assert_eq!(first.status, CrawlStatus::LimitReached);
    let before = site.observed().hits.len();
    let second = crawl(config(&site, dir.path(), "").state(&state).concurrency(1)).await;
    assert_eq!(second.status, CrawlStatus::Complete);

    let seen = site.observed();
    let home = seen.hits.iter().find(|h| h.target == "/").unwrap();
    assert_eq!(seen.hits.iter().filter(|h| h.target == "/").count(), 1);
    let resumed: Vec<&Hit> =
        seen.hits[before..].iter().filter(|h| h.on_site && h.target != "/robots.txt").collect();
    assert!(!resumed.is_empty());
    let visitors: BTreeSet<Option<&str>> = resumed.iter().map(|h| h.cookie("visitor")).collect();
    assert_eq!(visitors.len(), 1, "{visitors:?}");
    assert!(visitors.iter().all(Option::is_some), "the second run sends the cookie the first one got");
    assert!(home.cookie.is_none());
    assert!(resumed.iter().all(|h| h.status == 200), "no consent wall after the resume: {resumed:?}");
}

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// The identity keys in the attribute: the agent given there, the defaults spelled out.
#[derive(Spider, Default)]
#[spider(
    start_urls = ["http://placeholder.invalid/"],
    user_agents = ["Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"],
    cookies = true,
    follow_hidden = false,
    follow = "a",
    item = Product
)]
struct Firefox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_sends_its_agent_with_the_headers_of_its_browser() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let start =
        Firefox.config().set("start_urls", &site.url()).unwrap().output(dir.path().join("items.jsonl"));
    let summary = Crawler::with_config(Firefox, start).run().await.unwrap();
    assert_eq!(summary.counts.items, PRODUCTS as u64 + 1);
    let seen = site.observed();
    assert!(seen.hits.iter().all(|h| h.user_agent.as_deref() == Some(FIREFOX)));
    assert!(seen.hits.iter().all(|h| h.accept_language.as_deref() == Some("en-US,en;q=0.5")));

    // The crawl's own headers win over the agent's.
    let site = shop();
    crawl(config(&site, dir.path(), "").user_agents([FIREFOX]).header("Accept-Language", "de-DE")).await;
    assert!(site.observed().hits.iter().all(|h| h.accept_language.as_deref() == Some("de-DE")));
}
