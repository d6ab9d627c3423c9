//! The mock gateway against real sandbox sites, through reqwest's proxy support.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use reqwest::{Certificate, Client, Proxy, StatusCode};
use spider_sandbox::{DemoSite, GatewayConfig, HostileSite, IdentityLimit, MockGateway, Sandbox};

const PASSWORD: &str = "sandbox-s3cret";

/// A fresh client (so a fresh connection to the gateway) logging in as `user`.
fn client(gateway: &MockGateway, user: &str, password: &str) -> Client {
    Client::builder()
        .proxy(Proxy::all(gateway.url()).unwrap().basic_auth(user, password))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn small_demo() -> Sandbox {
    Sandbox::demo(DemoSite { books: 10, per_page: 5, ..DemoSite::default() }).unwrap()
}

async fn status_of(client: &Client, url: &str) -> StatusCode {
    client.get(url).send().await.unwrap().status()
}

#[tokio::test]
async fn each_new_client_connection_leaves_through_a_new_exit() {
    let site = small_demo();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();

    for _ in 0..3 {
        assert_eq!(status_of(&client(&gateway, "sandbox", PASSWORD), &site.url()).await, StatusCode::OK);
    }

    let log = gateway.observed();
    assert_eq!(log.connections, 3);
    assert_eq!(log.requests_per_connection(), BTreeMap::from([(0, 1), (1, 1), (2, 1)]));
    assert_eq!(log.exits().len(), 3, "{log:?}");
    assert!(log.requests.iter().all(|r| !r.tunnel && r.target == site.url() && r.session.is_none()));
    assert!(!log.exits().contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "an exit is never the direct identity");
    let seen = site.observed();
    assert_eq!(seen.peers(), log.exits(), "the site sees the exits as its clients");
    assert_eq!(seen.pages().count(), 3);
}

#[tokio::test]
async fn a_keep_alive_connection_keeps_its_exit() {
    let site = small_demo();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let client = client(&gateway, "sandbox", PASSWORD);

    for book in 1..=3 {
        let url = format!("{}catalogue/book_{book}.html", site.url());
        assert_eq!(status_of(&client, &url).await, StatusCode::OK);
    }

    let log = gateway.observed();
    assert_eq!(log.connections, 1);
    assert_eq!(log.requests_per_connection(), BTreeMap::from([(0, 3)]));
    assert_eq!(log.exits().len(), 1);
    let exit = log.requests[0].exit;
    assert_eq!(site.observed().by_peer(), BTreeMap::from([(exit, 3)]));
}

#[tokio::test]
async fn a_session_pins_its_exit_across_connections() {
    let site = small_demo();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();

    for user in ["sandbox-session-a", "sandbox-session-a", "sandbox-session-b"] {
        assert_eq!(status_of(&client(&gateway, user, PASSWORD), &site.url()).await, StatusCode::OK);
    }

    let log = gateway.observed();
    assert_eq!(log.connections, 3);
    let exits: Vec<IpAddr> = log.requests.iter().map(|r| r.exit).collect();
    assert_eq!(exits[0], exits[1], "session a on two connections");
    assert_ne!(exits[0], exits[2], "session b has its own");
    assert_eq!(log.requests[2].session.as_deref(), Some("b"));
    assert_eq!(site.observed().by_peer(), BTreeMap::from([(exits[0], 2), (exits[2], 1)]));
}

#[tokio::test]
async fn wrong_credentials_get_407_and_reach_nothing() {
    let site = small_demo();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();

    let response = client(&gateway, "sandbox", "guess").get(site.url()).send().await.unwrap();

    assert_eq!(response.status(), StatusCode::PROXY_AUTHENTICATION_REQUIRED);
    assert_eq!(response.headers()["proxy-authenticate"], r#"Basic realm="sandbox""#);
    let log = gateway.observed();
    assert_eq!(log.rejected, 1);
    assert!(log.requests.is_empty());
    assert!(site.observed().hits.is_empty(), "nothing reached the site");
    for user in ["someone", "sandbox-city-paris"] {
        assert_eq!(
            status_of(&client(&gateway, user, PASSWORD), &site.url()).await,
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "{user}"
        );
    }
    assert_eq!(gateway.observed().rejected, 3);
}

#[tokio::test]
async fn the_username_picks_the_country_and_names_reach_the_sandbox_on_site() {
    let site = small_demo();
    let port = site.addr().port();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let german = client(&gateway, "sandbox-country-de", PASSWORD);

    let page = german.get(format!("http://shop.de:{port}/catalogue/book_1.html")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains(r#"<h1 class="title">"#), "the real page, not a stub");
    let listing = german.get(format!("http://shop.de:{port}/catalogue/page-1.html")).send().await.unwrap();
    let listing = listing.text().await.unwrap();
    assert!(
        listing.contains(&format!("HTTP://shop.de:{port}/catalogue/./book_")),
        "links in the host asked for"
    );
    assert_eq!(status_of(&german, &format!("http://localhost:{port}/")).await, StatusCode::OK);

    let log = gateway.observed();
    assert_eq!(log.countries(), ["de".to_owned()].into());
    assert!(log.requests.iter().all(|r| r.country.as_deref() == Some("de")));
    assert_eq!(log.for_target("shop.de").len(), 2);
    assert_eq!(log.for_target(&format!("SHOP.DE:{port}")).len(), 2);
    assert_eq!(log.for_target("localhost").len(), 1);
    let seen = site.observed();
    assert_eq!(seen.pages().count(), 2, "a dotted name with the site's port is on-site");
    assert!(seen.pages().all(|hit| hit.host == format!("shop.de:{port}")));
    assert_eq!(seen.off_site(), 1, "localhost stays the demo's off-site trap");
}

#[tokio::test]
async fn connect_tunnels_to_the_tls_site_and_counts_the_bytes() {
    let site = Sandbox::demo_tls(DemoSite { books: 10, per_page: 5, ..DemoSite::default() }).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let certificate = Certificate::from_pem(site.certificate_pem().unwrap().as_bytes()).unwrap();
    let client = Client::builder()
        .add_root_certificate(certificate)
        .proxy(Proxy::all(gateway.url()).unwrap().basic_auth("sandbox", PASSWORD))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();

    let response = client.get(site.url()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap();
    assert!(body.contains("Demo bookshop"), "{body}");

    let log = gateway.observed();
    assert_eq!(log.requests.len(), 1);
    let tunnel = &log.requests[0];
    assert!(tunnel.tunnel);
    assert_eq!(tunnel.target, format!("localhost:{}", site.addr().port()));
    assert!(log.bytes_from_clients > 0);
    assert!(log.bytes_to_clients > body.len() as u64, "the tunnelled page is counted");
    let seen = site.observed();
    assert_eq!(seen.pages().count(), 1);
    assert_eq!(seen.peers(), [tunnel.exit].into());
}

#[tokio::test]
async fn addresses_off_loopback_are_refused_without_connecting() {
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let client = client(&gateway, "sandbox", PASSWORD);

    let refused = client.get("http://10.0.0.1/").send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(refused.text().await.unwrap().contains("127.0.0.0/8"));
    // A connection attempt would have ended in 502 (or a timeout), not 403.
    assert_eq!(status_of(&client, "http://[2001:db8::1]:8080/").await, StatusCode::FORBIDDEN);
    assert_eq!(gateway.observed().for_target("10.0.0.1").len(), 1);
}

#[tokio::test]
async fn an_unreachable_target_is_502() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();

    let status =
        status_of(&client(&gateway, "sandbox", PASSWORD), &format!("http://127.0.0.1:{closed}/")).await;

    assert_eq!(status, StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn rotating_exits_are_separate_identities_to_the_hostile_site() {
    let limit = IdentityLimit {
        requests: 2,
        per: Duration::from_secs(60),
        ban_after: 10,
        ban_for: Duration::from_secs(60),
    };
    let site =
        Sandbox::hostile(HostileSite { pages: 3, limit: Some(limit), ..HostileSite::empty() }).unwrap();
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let page = |i: usize| format!("{}page/{i}", site.url());

    for _ in 0..3 {
        let fresh = client(&gateway, "sandbox", PASSWORD);
        assert_eq!(status_of(&fresh, &page(1)).await, StatusCode::OK);
        assert_eq!(status_of(&fresh, &page(2)).await, StatusCode::OK);
    }
    let one = client(&gateway, "sandbox", PASSWORD);
    assert_eq!(status_of(&one, &page(1)).await, StatusCode::OK);
    assert_eq!(status_of(&one, &page(2)).await, StatusCode::OK);
    assert_eq!(status_of(&one, &page(3)).await, StatusCode::TOO_MANY_REQUESTS, "the limit is per exit");

    assert_eq!(site.observed().peers().len(), 4);
}
