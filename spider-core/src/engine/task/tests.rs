//! A task's answers turned into outcomes, without the network: a redirect's next hop or
//! the failure it is, and a sitemap's URLs as requests.

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, LOCATION};
use reqwest::{StatusCode, Version};
use spider_settings::Config;

use super::*;
use crate::engine::test_crawl::shared;

fn get(url: &str) -> Request {
    Request::get(url).unwrap_or_else(|e| panic!("{e}"))
}

/// An answer of `status`, redirecting to `location` when there is one.
fn answer(status: u16, location: Option<&'static str>) -> Fetched {
    let mut headers = HeaderMap::new();
    if let Some(location) = location {
        headers.insert(LOCATION, HeaderValue::from_static(location));
    }
    Fetched {
        status: StatusCode::from_u16(status).unwrap_or_else(|e| panic!("{e}")),
        headers,
        body: Bytes::new(),
        sent: 0,
        received: 0,
        version: Version::HTTP_11,
        peer: None,
    }
}

/// The reason a failed outcome gives, as the failures file writes it.
fn reason(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Failed { failure, .. } => failure.reason.as_str(),
        _ => panic!("not a failure"),
    }
}

#[test]
fn a_redirect_is_the_next_hop_until_the_limit_and_a_failure_past_it_or_without_a_target() {
    let shared = shared(&Config::new("redirects"));
    let first = get("https://a.example/old");
    let Outcome::Redirect(next) = redirect(&shared, &first, &answer(301, Some("/new"))) else {
        panic!("followed")
    };
    assert_eq!((next.url().as_str(), next.redirects), ("https://a.example/new", 1));
    let back = redirect(&shared, &next, &answer(302, Some("/old")));
    assert_eq!(reason(&back), Reason::RedirectLoop.as_str(), "back where it came from");
    assert_eq!(reason(&redirect(&shared, &first, &answer(302, None))), Reason::BadRedirect.as_str());
    let mut last = next;
    last.redirects = shared.max_redirects;
    let past = redirect(&shared, &last, &answer(302, Some("/newer")));
    assert_eq!(reason(&past), Reason::TooManyRedirects.as_str());
}

#[tokio::test]
async fn a_sitemaps_urls_are_requests_one_level_deeper_and_a_broken_one_keeps_what_came_before() {
    let shared = shared(&Config::new("sitemaps"));
    let listing = Bytes::from_static(
        b"<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
          <url><loc>https://a.example/p/1</loc></url><url><loc>https://a.example/p/2</loc></url></urlset>",
    );
    let request = Request::sitemap(get("https://a.example/sitemap.xml").url().clone());
    let Outcome::Sitemap { follows, failed } = sitemap::read(&shared, request, listing).await else {
        panic!("read")
    };
    let urls: Vec<(&str, u32)> = follows.iter().map(|r| (r.url().as_str(), r.depth())).collect();
    assert_eq!(urls, [("https://a.example/p/1", 1), ("https://a.example/p/2", 1)]);
    assert!(failed.is_none());
    let cut = Bytes::from_static(
        b"<urlset \
            xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://a.example/p/1</loc></url><url><loc",
    );
    let request = Request::sitemap(get("https://a.example/cut.xml").url().clone());
    let Outcome::Sitemap { follows, failed } = sitemap::read(&shared, request, cut).await else {
        panic!("read")
    };
    assert_eq!(follows.len(), 1, "the URL before the break is taken");
    let (url, _, _, failure) = failed.unwrap_or_else(|| panic!("the break is a failure"));
    assert_eq!(url.as_str(), "https://a.example/cut.xml");
    assert!(
        failure.error.as_deref().is_some_and(|e| e.contains("the 1 URLs before it were taken")),
        "{failure:?}"
    );
}
