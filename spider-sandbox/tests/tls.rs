//! The TLS mode: a self-signed certificate a client trusts explicitly.

#![allow(clippy::unwrap_used)]

use reqwest::{Certificate, Client, StatusCode};
use spider_sandbox::{DemoSite, HostileSite, Sandbox};

fn trusting(site: &Sandbox) -> Client {
    let certificate = Certificate::from_pem(site.certificate_pem().unwrap().as_bytes()).unwrap();
    Client::builder().add_root_certificate(certificate).no_proxy().build().unwrap()
}

#[tokio::test]
async fn the_demo_serves_https_as_localhost_to_a_client_that_trusts_its_certificate() {
    let site = Sandbox::demo_tls(DemoSite { books: 10, per_page: 5, ..DemoSite::default() }).unwrap();
    let port = site.addr().port();
    assert_eq!(site.url(), format!("https://localhost:{port}/"));
    let client = trusting(&site);

    let home = client.get(site.url()).send().await.unwrap();
    assert_eq!(home.status(), StatusCode::OK);
    let home = home.text().await.unwrap();
    assert!(home.contains(&format!(r#"href="https://127.0.0.1:{port}/offsite.html""#)), "{home}");
    let listing = client.get(format!("{}catalogue/page-1.html", site.url())).send().await.unwrap();
    assert!(listing.text().await.unwrap().contains(&format!("HTTPS://localhost:{port}/catalogue/./book_")));
    // The certificate names 127.0.0.1 too, but that spelling is the demo's off-site trap.
    let other = client.get(format!("https://127.0.0.1:{port}/offsite.html")).send().await.unwrap();
    assert!(other.text().await.unwrap().contains("Another site entirely"));

    let seen = site.observed();
    assert_eq!(seen.pages().count(), 2);
    assert_eq!(seen.off_site(), 1);
    assert_eq!(seen.connections, 2, "one keep-alive TLS connection per name");
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let site = Sandbox::hostile_tls(HostileSite::empty()).unwrap();
    assert!(site.url().starts_with("https://localhost:"));

    let error = Client::builder().no_proxy().build().unwrap().get(site.url()).send().await.unwrap_err();

    assert!(error.is_connect(), "{error:?}");
    assert!(site.observed().hits.is_empty());
    assert_eq!(trusting(&site).get(site.url()).send().await.unwrap().status(), StatusCode::OK);
}

#[test]
fn plain_sites_have_no_certificate() {
    let site = Sandbox::demo(DemoSite::default()).unwrap();
    assert_eq!(site.certificate_pem(), None);
    assert!(site.url().starts_with("http://127.0.0.1:"));
}
