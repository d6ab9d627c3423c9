//! Properties of URL canonicalisation: idempotent, equivalent spellings collide,
//! different resources do not.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use reqwest::Method;
use spider_core::{canonical_url, fingerprint};
use url::Url;

fn segment() -> impl Strategy<Value = String> {
    "[a-z0-9._~-]{1,8}"
}

fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec(("[a-z]{1,5}", "[a-z0-9]{0,5}"), 0..5)
}

/// A URL spelled from parts: host, path segments, query pairs.
fn spell(host: &str, port: Option<u16>, segments: &[String], query: &[(String, String)]) -> String {
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    let path = segments.join("/");
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
    format!("http://{host}{port}/{path}{query}")
}

fn percent_encode_all(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02x}")).collect()
}

fn canonical(url: &str) -> String {
    canonical_url(&Url::parse(url).unwrap()).into_owned()
}

proptest! {
    #[test]
    fn canonicalising_twice_changes_nothing(
        host in "[a-z]{1,10}\\.example",
        segments in proptest::collection::vec(segment(), 0..4),
        query in pairs(),
        fragment in "[a-z]{0,6}",
    ) {
        let url = format!("{}#{fragment}", spell(&host, None, &segments, &query));
        let once = canonical(&url);
        prop_assert_eq!(canonical(&once), once);
    }

    #[test]
    fn equivalent_spellings_collide(
        host in "[a-z]{1,10}\\.example",
        segments in proptest::collection::vec(segment(), 1..4),
        query in pairs(),
        upper_host in any::<bool>(),
        default_port in any::<bool>(),
        encode_segment in any::<prop::sample::Index>(),
        fragment in "[a-z]{1,6}",
        shuffle_seed in any::<u64>(),
    ) {
        let plain = spell(&host, None, &segments, &query);

        let mut other_segments = segments.clone();
        let i = encode_segment.index(other_segments.len());
        other_segments[i] = percent_encode_all(&other_segments[i]);
        let mut other_query = query.clone();
        // Reorder the pairs: a rotation by a random amount.
        if !other_query.is_empty() {
            let by = (shuffle_seed as usize) % other_query.len();
            other_query.rotate_left(by);
        }
        let other_host = if upper_host { host.to_uppercase() } else { host.clone() };
        let port = default_port.then_some(80);
        let other = format!("{}#{fragment}", spell(&other_host, port, &other_segments, &other_query));

        let (a, b) = (Url::parse(&plain).unwrap(), Url::parse(&other).unwrap());
        prop_assert_eq!(canonical_url(&a), canonical_url(&b));
        prop_assert_eq!(fingerprint(&Method::GET, &a), fingerprint(&Method::GET, &b));
    }

    #[test]
    fn different_resources_do_not_collide(
        host in "[a-z]{1,10}\\.example",
        segments in proptest::collection::vec(segment(), 1..4),
        query in pairs(),
        extra in "[a-z0-9]{1,6}",
        which in 0..4u8,
    ) {
        let a = spell(&host, None, &segments, &query);
        let b = match which {
            0 => spell(&format!("x{host}"), None, &segments, &query),
            1 => {
                let mut s = segments.clone();
                s.push(extra.clone());
                spell(&host, None, &s, &query)
            }
            2 => {
                let mut q = query.clone();
                q.push(("zz".to_owned(), extra.clone()));
                spell(&host, None, &segments, &q)
            }
            _ => spell(&host, Some(8080), &segments, &query),
        };
        let (a, b) = (Url::parse(&a).unwrap(), Url::parse(&b).unwrap());
        prop_assert_ne!(fingerprint(&Method::GET, &a), fingerprint(&Method::GET, &b));
    }
}

#[test]
fn escapes_of_reserved_characters_are_kept_but_uppercased() {
    assert_eq!(canonical("http://h.example/a%2fb?q=%3d"), "http://h.example/a%2Fb?q=%3D");
    assert_eq!(canonical("http://h.example/a/b?"), "http://h.example/a/b");
    assert_eq!(canonical("http://h.example/?b=1&&a=2"), "http://h.example/?a=2&b=1");
}

#[test]
fn the_method_is_part_of_the_fingerprint() {
    let url = Url::parse("http://h.example/form").unwrap();
    assert_ne!(fingerprint(&Method::GET, &url), fingerprint(&Method::POST, &url));
}
