//! The in-memory frontier, per URL: admitting a new URL, turning away another spelling of a
//! seen one, and popping the next request of a host.
//!
//! Requests are built outside the timed part (parsing a URL is the caller's cost, not the
//! frontier's), so each figure is what `enqueue` or `next` alone costs for one URL.
//!
//! ```text
//! cargo bench -p spiderling --bench frontier
//! ```

// A bench may stop at a broken set-up: there is nothing to measure then.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use spiderling::{Config, Enqueued, Frontier, MemoryFrontier, Request};

/// The one host of the bench's URLs, as the frontier keys its queue.
const HOST: &str = "http://127.0.0.1:8000";

/// Distinct URLs seen by the duplicate bench before it starts.
const SEEN: u64 = 10_000;

/// The URL of book `i`, spelled the way a listing page links it.
fn url(i: u64) -> String {
    format!("http://127.0.0.1:8000/book/{i}?ref=list&page={}", i % 50)
}

/// Another spelling of [`url`]: host in capitals, query pairs swapped, a fragment.
fn other_spelling(i: u64) -> String {
    format!("HTTP://127.0.0.1:8000/book/{i}?page={}&ref=list#reviews", i % 50)
}

fn request(text: &str) -> Request {
    Request::get(text).expect("the bench's URLs parse")
}

fn config() -> Config {
    Config::new("bench").allowed_domain("127.0.0.1")
}

fn enqueue_new(frontier: &mut MemoryFrontier, from: u64, count: u64) {
    for i in from..from + count {
        let accepted = frontier.enqueue(request(&url(i)));
        assert!(matches!(accepted, Ok(Enqueued::Accepted(_))), "book {i} is new");
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("frontier");

    // A fresh frontier per sample, so the figure is the amortised cost of a growing
    // seen-set (its rehashing included) and a growing queue.
    group.bench_function("enqueue_new", |b| {
        b.iter_custom(|iters| {
            let requests: Vec<Request> = (0..iters).map(|i| request(&url(i))).collect();
            let mut frontier = MemoryFrontier::new(&config());
            let start = Instant::now();
            for request in requests {
                let _ = black_box(frontier.enqueue(request));
            }
            let elapsed = start.elapsed();
            assert_eq!(frontier.len() as u64, iters);
            elapsed
        });
    });

    // One frontier that has seen SEEN books and queues none of them; each duplicate is
    // another spelling, so it is canonicalised and hashed before it is turned away.
    let mut seen = MemoryFrontier::new(&config());
    enqueue_new(&mut seen, 0, SEEN);
    while let Ok(Some(_)) = seen.next(HOST) {}
    group.bench_function("enqueue_duplicate", |b| {
        b.iter_custom(|iters| {
            let requests: Vec<Request> = (0..iters).map(|i| request(&other_spelling(i % SEEN))).collect();
            let start = Instant::now();
            for request in requests {
                let _ = black_box(seen.enqueue(request));
            }
            let elapsed = start.elapsed();
            assert!(!seen.has_pending(), "every spelling was a duplicate");
            elapsed
        });
    });

    // `iters` requests queued for one host, then popped one by one (a binary heap of
    // `iters` entries: highest priority first, then arrival order).
    group.bench_function("next", |b| {
        b.iter_custom(|iters| {
            let mut frontier = MemoryFrontier::new(&config());
            enqueue_new(&mut frontier, 0, iters);
            let mut popped = Vec::with_capacity(usize::try_from(iters).unwrap_or(0));
            let start = Instant::now();
            for _ in 0..iters {
                popped.push(frontier.next(black_box(HOST)));
            }
            let elapsed = start.elapsed();
            assert!(popped.iter().all(|p| matches!(p, Ok(Some(_)))) && !frontier.has_pending());
            elapsed
        });
    });

    group.finish();
}

criterion_group! {
    name = frontier;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(frontier);
