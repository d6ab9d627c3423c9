//! Inflating the real pages (`shared/realweb/pages` beside the checkout, or
//! `SPIDERLING_REALWEB`) as a server sends them: each page gzipped at level 1, nginx's
//! default `gzip_comp_level`, and inflated by `flate2`, the inflater reqwest's `gzip`
//! decoding runs on (through `async-compression`). Which backend that is, is the
//! workspace's choice in `Cargo.toml`; this bench compares one build against another.
//!
//! ```text
//! cargo bench -p spiderling --bench inflate
//! ```

// A bench may stop at a broken set-up: there is nothing to measure then.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::io::{Read, Write};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The real pages, found as the tests find them.
#[path = "../tests/support/realweb.rs"]
#[allow(dead_code, clippy::unwrap_used)]
mod realweb;

fn benches(c: &mut Criterion) {
    let Some(folder) = realweb::pages() else { return };
    let mut gzipped = Vec::new();
    let mut bytes = 0;
    for name in realweb::names(&folder) {
        let page = std::fs::read(folder.join(name).join("source.html")).expect("a real page");
        bytes += page.len();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        encoder.write_all(&page).expect("gzip into memory");
        gzipped.push(encoder.finish().expect("gzip into memory"));
    }
    let mut group = c.benchmark_group("inflate");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("real_pages", |b| {
        let mut out = Vec::with_capacity(4 << 20);
        b.iter(|| {
            for page in &gzipped {
                out.clear();
                flate2::read::GzDecoder::new(&page[..]).read_to_end(&mut out).expect("the page inflates");
                black_box(&out);
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = inflate;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(inflate);
