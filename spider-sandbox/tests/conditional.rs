//! The demo site's validators and conditional requests, through reqwest, as a cache
//! revalidating a page would send them.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, UNIX_EPOCH};

use reqwest::header::{ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use reqwest::redirect::Policy;
use reqwest::{Client, Response, StatusCode};
use spider_sandbox::{DemoSite, Sandbox};

const BOOK: &str = "catalogue/book_3.html";

fn small_demo() -> DemoSite {
    DemoSite { books: 10, per_page: 5, ..DemoSite::default() }
}

/// A client that does not follow redirects, so a 301 is seen as itself.
fn client() -> Client {
    Client::builder().no_proxy().redirect(Policy::none()).build().unwrap()
}

fn header(response: &Response, name: reqwest::header::HeaderName) -> String {
    response.headers().get(&name).unwrap_or_else(|| panic!("no {name}")).to_str().unwrap().to_owned()
}

/// The page's ETag and Last-Modified, from an unconditional GET.
async fn validators(client: &Client, url: &str) -> (String, String) {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    (header(&response, ETAG), header(&response, LAST_MODIFIED))
}

#[tokio::test]
async fn a_page_has_a_stable_strong_etag_and_the_sites_last_modified_date() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());

    let (etag, last_modified) = validators(&client, &url).await;
    assert_eq!(validators(&client, &url).await, (etag.clone(), last_modified.clone()), "stable");
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2, "strong and quoted: {etag}");
    assert_eq!(last_modified, "Wed, 01 Jan 2025 00:00:00 GMT");
    let (listing, _) = validators(&client, &format!("{}catalogue/page-1.html", site.url())).await;
    let (robots, _) = validators(&client, &format!("{}robots.txt", site.url())).await;
    assert!(listing != etag && robots != etag && robots != listing);

    for bodiless in ["catalogue/latest", "nowhere.html"] {
        let response = client.get(format!("{}{bodiless}", site.url())).send().await.unwrap();
        assert!(!response.status().is_success(), "{bodiless}");
        assert!(!response.headers().contains_key(ETAG), "{bodiless}: {:?}", response.headers());
    }
}

#[tokio::test]
async fn if_none_match_with_the_current_etag_is_answered_304_with_the_validators_and_no_body() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());
    let (etag, last_modified) = validators(&client, &url).await;

    for value in [etag.clone(), format!(r#""stale", W/{etag}"#), "*".to_owned()] {
        let response = client.get(&url).header(IF_NONE_MATCH, &value).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED, "{value}");
        assert_eq!(header(&response, ETAG), etag);
        assert_eq!(header(&response, LAST_MODIFIED), last_modified);
        assert!(response.bytes().await.unwrap().is_empty());
    }
    let head = client.head(&url).header(IF_NONE_MATCH, &etag).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::NOT_MODIFIED);
    let post = client.post(&url).header(IF_NONE_MATCH, &etag).send().await.unwrap();
    assert_eq!(post.status(), StatusCode::PRECONDITION_FAILED, "RFC 9110 §13.2.2: not a GET or HEAD");
}

#[tokio::test]
async fn a_wrong_etag_is_answered_200_with_the_page() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());
    let (etag, _) = validators(&client, &url).await;

    let response = client.get(&url).header(IF_NONE_MATCH, r#""0123456789abcdef""#).send().await.unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, ETAG), etag);
    assert!(response.text().await.unwrap().contains("<h1 class=\"title\">"));
}

#[tokio::test]
async fn if_modified_since_at_last_modified_is_304_and_an_earlier_date_is_200() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());
    let (_, last_modified) = validators(&client, &url).await;

    let same = client.get(&url).header(IF_MODIFIED_SINCE, &last_modified).send().await.unwrap();
    assert_eq!(same.status(), StatusCode::NOT_MODIFIED);
    assert!(same.bytes().await.unwrap().is_empty());
    let earlier =
        client.get(&url).header(IF_MODIFIED_SINCE, "Tue, 31 Dec 2024 23:59:59 GMT").send().await.unwrap();
    assert_eq!(earlier.status(), StatusCode::OK);
    assert!(!earlier.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn if_none_match_wins_over_if_modified_since() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());
    let (etag, last_modified) = validators(&client, &url).await;

    let stale_tag = client
        .get(&url)
        .header(IF_NONE_MATCH, r#""stale""#)
        .header(IF_MODIFIED_SINCE, &last_modified)
        .send()
        .await
        .unwrap();
    assert_eq!(stale_tag.status(), StatusCode::OK, "the date would say 304, the tag decides");
    let old_date = client
        .get(&url)
        .header(IF_NONE_MATCH, &etag)
        .header(IF_MODIFIED_SINCE, "Sat, 01 Jan 2000 00:00:00 GMT")
        .send()
        .await
        .unwrap();
    assert_eq!(old_date.status(), StatusCode::NOT_MODIFIED, "the date would say 200, the tag decides");
}

#[tokio::test]
async fn revalidations_are_recorded_as_conditional_hits_answered_304() {
    let site = Sandbox::demo(small_demo()).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());
    let (etag, last_modified) = validators(&client, &url).await;

    client.get(&url).header(IF_NONE_MATCH, &etag).send().await.unwrap();
    client.get(&url).header(IF_MODIFIED_SINCE, &last_modified).send().await.unwrap();
    client.get(&url).header(IF_NONE_MATCH, r#""stale""#).send().await.unwrap();

    let seen = site.observed();
    let asked: Vec<(bool, u16)> = seen.hits.iter().map(|h| (h.conditional, h.status)).collect();
    assert_eq!(asked, [(false, 200), (true, 304), (true, 304), (true, 200)]);
    assert_eq!(seen.conditional().count(), 3);
    assert_eq!(seen.answered(304), 2);
    assert_eq!(seen.revalidated(), 2);
    assert_eq!(
        seen.duplicates().get("/catalogue/book_3.html"),
        Some(&4),
        "a revalidation is still a request"
    );
}

#[tokio::test]
async fn sites_whose_pages_differ_give_the_same_page_different_etags() {
    let (plain, padded) = (
        Sandbox::demo(small_demo()).unwrap(),
        Sandbox::demo(DemoSite { page_bytes: 4096, ..small_demo() }).unwrap(),
    );
    let client = client();

    let (plain_tag, _) = validators(&client, &format!("{}{BOOK}", plain.url())).await;
    let (padded_tag, _) = validators(&client, &format!("{}{BOOK}", padded.url())).await;
    assert_ne!(plain_tag, padded_tag);
    // And the one site's tag does not revalidate the other's page.
    let response =
        client.get(format!("{}{BOOK}", padded.url())).header(IF_NONE_MATCH, &plain_tag).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_site_may_set_its_last_modified_date() {
    let moved = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let site = Sandbox::demo(DemoSite { last_modified: moved, ..small_demo() }).unwrap();
    let client = client();
    let url = format!("{}{BOOK}", site.url());

    let (_, last_modified) = validators(&client, &url).await;
    assert_eq!(last_modified, "Sun, 09 Sep 2001 01:46:40 GMT");
    let after =
        client.get(&url).header(IF_MODIFIED_SINCE, "Wed, 01 Jan 2025 00:00:00 GMT").send().await.unwrap();
    assert_eq!(after.status(), StatusCode::NOT_MODIFIED);
}
