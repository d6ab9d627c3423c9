//! Admission, observed by the server: the global and per-host caps, the rate ceiling,
//! politeness pauses, and hosts that do not wait on each other.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::{Config, Crawler};
use support::{config_for, BookSpider};

/// The CPU-hog test takes this for writing and every other test here for reading: the
/// hog's crawl and its server then have their cores to themselves, as a server starved by
/// a neighbouring test stamps arrivals late and bunches them (52 in 950 ms at `rps = 50`
/// on a loaded CI machine), while the other tests still run side by side.
static ALONE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_never_sees_more_than_concurrency_requests_at_once() {
    let _shared = ALONE.read().await;
    let demo =
        DemoSite { books: 60, per_page: 20, latency: Duration::from_millis(30), ..DemoSite::default() };
    let site = Sandbox::demo(demo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    Crawler::new(BookSpider::new(config.concurrency(4).per_host(32))).run().await.unwrap();
    assert_eq!(site.observed().max_in_flight, 4, "the cap holds, and the crawl uses it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_gets_its_own_cap_and_a_slow_host_does_not_slow_a_fast_one() {
    let _shared = ALONE.read().await;
    let slow = Sandbox::demo(DemoSite {
        books: 10,
        per_page: 10,
        latency: Duration::from_millis(600),
        ..DemoSite::default()
    })
    .unwrap();
    let fast = Sandbox::demo(DemoSite { books: 200, per_page: 20, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = Config::new("two hosts")
        .start_url(slow.url())
        .start_url(fast.url())
        .allowed_domain("127.0.0.1")
        .concurrency(8)
        .per_host(2)
        .output(dir.path().join("books.jsonl"));
    Crawler::new(BookSpider::new(config)).run().await.unwrap();

    let (slow, fast) = (slow.observed(), fast.observed());
    assert_eq!(slow.max_in_flight, 2, "the slow host fills its two slots, no more");
    assert!(fast.max_in_flight <= 2, "fast host saw {}", fast.max_in_flight);
    assert_eq!(fast.pages().count(), 200 + 10 + 1 + 1);
    // The fast host is done before the slow one has served half its pages.
    let fast_done = fast.started + fast.hits.last().unwrap().at;
    let slow_pages: Vec<_> = slow.pages().map(|h| slow.started + h.at).collect();
    assert!(
        fast_done < slow_pages[slow_pages.len() / 2],
        "fast host finished {:?} after the slow host's middle page",
        fast_done - slow_pages[slow_pages.len() / 2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_ceiling_holds_in_every_window_and_is_mostly_used() {
    let _shared = ALONE.read().await;
    let rate = 20;
    let site = Sandbox::demo(DemoSite { books: 40, per_page: 20, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    Crawler::new(BookSpider::new(config.concurrency(16).per_host(16).rps(rate))).run().await.unwrap();

    let used = held_and_used(&site, rate, Duration::from_millis(50));
    assert!(used >= 0.85 * f64::from(rate), "only {used:.1} requests/s of {rate}");
}

/// No second (less `jitter`) held more than `rate` of the requests `site` received, and the
/// rate they came at over the crawl. The gate spaces requests exactly 1/rate apart and lets
/// `rate` of them into any second, so its busiest seconds are full to the last slot; a
/// request that leaves or is stamped `jitter` later than the one a second after it puts
/// `rate + 1` into a window that much shorter, which must not count as a breach.
fn held_and_used(site: &Sandbox, rate: u32, jitter: Duration) -> f64 {
    let seen = site.observed();
    let window = Duration::from_secs(1) - jitter;
    let most = seen.max_in_window(window);
    assert!(most <= rate as usize, "{most} requests within {window:?}");
    let span = seen.hits.last().unwrap().at - seen.hits.first().unwrap().at;
    (seen.hits.len() - 1) as f64 / span.as_secs_f64()
}

/// Beside a CPU hog of four spinning threads on the crawl's core, the crawl's timers fire
/// late; the ceiling makes good what they lose (a gate that lost them ran at 41 a second),
/// and still never goes over. The site has the other core, as a remote site has its own
/// machine: starved beside the hog, it stamped arrivals late by its own lateness (up to
/// 117 ms), and their bunching was counted against the crawl. Four hogs, not more: with
/// eight and one more busy process on the machine, the crawl was short of CPU to parse
/// its pages, which is not what this measures.
#[test]
fn the_rate_ceiling_is_used_beside_a_cpu_hog_and_still_holds() {
    let _alone = ALONE.blocking_write();
    let rate = 50;
    let demo = DemoSite { books: 240, per_page: 40, ..DemoSite::default() };
    // The server's thread is started on core 1 and keeps its affinity; the crawl, its
    // runtime and the hog are started here, on core 0.
    let site = std::thread::spawn(move || {
        pin_to_core(1);
        Sandbox::demo(demo)
    })
    .join()
    .unwrap()
    .unwrap();
    pin_to_core(0);
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hogs: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            // Bounded by the flag, and by a minute should the crawl never end.
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && started.elapsed() < Duration::from_secs(60)
                {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let crawled =
        runtime.block_on(Crawler::new(BookSpider::new(config.concurrency(16).per_host(16).rps(rate))).run());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for hog in hogs {
        hog.join().unwrap();
    }
    crawled.unwrap();

    // Beside the hog a request may be written out well after its pass (its task waits for
    // the core), and the server, though on a core of its own, shares it with whatever
    // else the machine runs: 52 arrived within 950 ms on a loaded CI machine, and at most
    // 50 within 800 ms here with one more spinning process. That the catch-up never puts
    // a second over the ceiling is pinned on a paused clock, in the gate's own tests (a
    // gate without its window check sent 103 in a second there, and passed here).
    let used = held_and_used(&site, rate, Duration::from_millis(200));
    assert!(used >= 0.85 * f64::from(rate), "only {used:.1} requests/s of {rate} beside the hog");
}

/// Keeps the calling thread, and the threads it starts from now on, to the `nth` core it
/// may run on (a container may allow cores other than the first ones); with fewer cores
/// than that, or off Linux, everything shares them as before.
fn pin_to_core(nth: usize) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
        let allowed = sched_getaffinity(None).unwrap();
        let mut cores = (0..CpuSet::MAX_CPU).filter(|core| allowed.is_set(*core));
        if cores.clone().count() > 1 {
            if let Some(core) = cores.nth(nth) {
                let mut one = CpuSet::new();
                one.set(core);
                sched_setaffinity(None, &one).unwrap();
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nth;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn politeness_pauses_are_jittered_within_the_delay_range() {
    let _shared = ALONE.read().await;
    let site = Sandbox::demo(DemoSite { books: 12, per_page: 12, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "books.jsonl");
    let (min, max) = (Duration::from_millis(50), Duration::from_millis(150));
    Crawler::new(BookSpider::new(config.per_host(1).delay_range(min, max))).run().await.unwrap();

    let gaps = site.observed().gaps();
    assert!(gaps.len() >= 13, "{gaps:?}");
    assert!(gaps.iter().all(|gap| *gap >= min), "a pause shorter than {min:?}: {gaps:?}");
    let (shortest, longest) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
    assert!(*longest - *shortest >= Duration::from_millis(30), "no jitter: {gaps:?}");
}
