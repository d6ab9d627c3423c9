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
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The real pages' folder, as the tests find it; `None` when there is none.
fn pages() -> Option<PathBuf> {
    let given = std::env::var_os("SPIDERLING_REALWEB").map(PathBuf::from);
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    given.or_else(|| {
        checkout
            .ancestors()
            .skip(1)
            .take(2)
            .map(|dir| dir.join("shared/realweb/pages"))
            .find(|dir| dir.is_dir())
    })
}

fn benches(c: &mut Criterion) {
    let Some(folder) = pages() else {
        eprintln!("SKIPPED: the real pages were not found (shared/realweb/pages beside the checkout, or SPIDERLING_REALWEB)");
        return;
    };
    let mut gzipped = Vec::new();
    let mut bytes = 0;
    for entry in std::fs::read_dir(folder).expect("the pages' folder").flatten() {
        let Ok(page) = std::fs::read(entry.path().join("source.html")) else { continue };
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
