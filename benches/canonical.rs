//! Canonical URLs and request fingerprints on the spellings a crawl meets most: a plain
//! path, a query to sort, a fragment to drop, percent-escapes to normalise, and a host in
//! capitals (which the `url` crate already lowercases when it parses).
//!
//! ```text
//! cargo bench -p spiderling --bench canonical
//! ```

// A bench may stop at a broken set-up: there is nothing to measure then.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spiderling::reqwest::Method;
use spiderling::url::Url;
use spiderling::{canonical_url, fingerprint};

/// Each case's name, its URL, and its canonical form (checked once before timing).
const CASES: [(&str, &str, &str); 5] = [
    ("plain", "http://127.0.0.1:8000/book/123", "http://127.0.0.1:8000/book/123"),
    (
        "query",
        "http://127.0.0.1:8000/book/123?ref=list&page=4",
        "http://127.0.0.1:8000/book/123?page=4&ref=list",
    ),
    ("fragment", "http://127.0.0.1:8000/book/123#reviews", "http://127.0.0.1:8000/book/123"),
    (
        "percent",
        "http://127.0.0.1:8000/%7Eshop/caf%c3%a9/a%2fb?q=%41%2c",
        "http://127.0.0.1:8000/~shop/caf%C3%A9/a%2Fb?q=A%2C",
    ),
    (
        "upper_host",
        "HTTP://Books.Example:80/Catalogue/Page-2.html",
        "http://books.example/Catalogue/Page-2.html",
    ),
];

fn benches(c: &mut Criterion) {
    let urls: Vec<(&str, Url)> = CASES
        .iter()
        .map(|&(name, text, canonical)| {
            let url = Url::parse(text).expect("the bench's URLs parse");
            assert_eq!(canonical_url(&url), canonical, "{name}");
            (name, url)
        })
        .collect();

    let mut group = c.benchmark_group("canonical_url");
    for (name, url) in &urls {
        group.bench_with_input(BenchmarkId::from_parameter(name), url, |b, url| {
            b.iter(|| canonical_url(black_box(url)).len());
        });
    }
    group.finish();

    let mut group = c.benchmark_group("fingerprint");
    let get = Method::GET;
    for (name, url) in &urls {
        group.bench_with_input(BenchmarkId::from_parameter(name), url, |b, url| {
            b.iter(|| fingerprint(&get, black_box(url)));
        });
    }
    group.finish();
}

criterion_group! {
    name = canonical;
    config = Criterion::default().measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(canonical);
