//! Memory of the in-memory frontier at 1,000,000 URLs, counted by a global allocator that
//! wraps the system one (`stats_alloc`): the live bytes the frontier holds, divided by the
//! URLs it holds them for.
//!
//! - per *queued* request: 1,000,000 distinct URLs enqueued, none taken (the requests
//!   themselves, their queue and the seen-set);
//! - per *seen* URL: the same URLs all taken with `next`, so the frontier only remembers
//!   them (the seen-set, and whatever the queues kept). The target is under 64 bytes.
//!
//! Bytes are the sizes asked of the allocator, not what it rounds them up to. Exits with
//! failure when the seen-set misses the target.
//!
//! ```text
//! cargo bench -p spiderling --bench frontier_memory
//! ```

use std::alloc::System;
use std::process::ExitCode;

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

use spiderling::{Config, Enqueued, Frontier, MemoryFrontier, Request};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// URLs enqueued.
const URLS: u64 = 1_000_000;
/// The issue's target for a seen URL.
const TARGET_BYTES_PER_SEEN: f64 = 64.0;
/// The host of every URL, as the frontier keys its queue.
const HOST: &str = "http://127.0.0.1:8000";

/// Bytes allocated and not yet freed, process-wide.
fn live_bytes() -> i64 {
    let stats = GLOBAL.stats();
    let allocated = i64::try_from(stats.bytes_allocated).unwrap_or(i64::MAX);
    let freed = i64::try_from(stats.bytes_deallocated).unwrap_or(i64::MAX);
    allocated - freed
}

fn per_url(bytes: i64) -> f64 {
    bytes as f64 / URLS as f64
}

fn main() -> ExitCode {
    // `cargo bench -- NAME` passes NAME to every bench: run only when it names this one.
    let filters: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "frontier_memory".contains(f.as_str())) {
        return ExitCode::SUCCESS;
    }

    let config = Config::new("bench").allowed_domain("127.0.0.1");
    let before = live_bytes();
    let mut frontier = MemoryFrontier::new(&config);
    for i in 0..URLS {
        let url = format!("http://127.0.0.1:8000/book/{i}?ref=list&page={}", i % 50);
        let Ok(request) = Request::get(&url) else {
            eprintln!("frontier_memory: {url} does not parse");
            return ExitCode::FAILURE;
        };
        if !matches!(frontier.enqueue(request), Ok(Enqueued::Accepted(_))) {
            eprintln!("frontier_memory: {url} was not accepted");
            return ExitCode::FAILURE;
        }
    }
    let queued = live_bytes() - before;

    let mut taken = 0_u64;
    while let Ok(Some(request)) = frontier.next(HOST) {
        drop(request);
        taken += 1;
    }
    let seen = live_bytes() - before;
    if taken != URLS || frontier.has_pending() {
        eprintln!("frontier_memory: took {taken} of {URLS} requests");
        return ExitCode::FAILURE;
    }

    println!("frontier_memory: {URLS} distinct URLs, one host");
    println!(
        "  queued (enqueued, none taken): {:>12} bytes live, {:>7.1} B per queued request \
            (size_of::<Request>() = {} B)",
        queued,
        per_url(queued),
        std::mem::size_of::<Request>()
    );
    let met = per_url(seen) < TARGET_BYTES_PER_SEEN;
    println!(
        "  seen (all taken with next):    {:>12} bytes live, {:>7.1} B per seen URL (target < \
            {TARGET_BYTES_PER_SEEN} B: {})",
        seen,
        per_url(seen),
        if met { "met" } else { "MISSED" }
    );
    drop(frontier);
    if met {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
