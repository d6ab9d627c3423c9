//! Memory against hosts seen: what a broad crawl holds for each host it has met.
//!
//! ```sh
//! cargo bench -p spiderling --bench hosts_memory                      # 1,000, 10,000 and 100,000 hosts
//! cargo bench -p spiderling --bench hosts_memory -- 1000 20000        # or the counts given
//! ```
//!
//! One sandbox server in this process (the demo shop, ten books), and for each count N a
//! crawl in a child process of its own: N start URLs `http://hK.localhost:PORT/` (names
//! under `.localhost` are the loopback, resolved so by the crawl's own client), each host
//! visited once (`max_depth = 0`) after its robots.txt, paced per host name
//! (`politeness = "host"`), concurrency 32. The child prints its peak RSS (`VmHWM`), its
//! RSS at the end, everything of the process included, and the peak of the bytes its heap
//! held (a counting allocator, `stats_alloc`, sampled every 10 ms): RSS counts what the
//! allocator keeps from the system too. This process prints them beside each other. A
//! crawl that holds every host it has met grows by the same bytes with each; one that lets
//! go of idle hosts stays flat.

use std::alloc::System;
use std::io::Write;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

use spider_sandbox::{DemoSite, Sandbox};
use spiderling::prelude::*;

const CHILD: &str = "HOSTS_MEMORY_CHILD";

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes allocated and not yet freed, process-wide.
fn live_bytes() -> i64 {
    let stats = GLOBAL.stats();
    let allocated = i64::try_from(stats.bytes_allocated).unwrap_or(i64::MAX);
    let freed = i64::try_from(stats.bytes_deallocated).unwrap_or(i64::MAX);
    allocated - freed
}

struct Visit(Config);

impl SpiderConfig for Visit {
    fn config(&self) -> Config {
        self.0.clone()
    }
}

#[async_trait]
impl Spider for Visit {
    type Item = serde_json::Value;

    async fn parse(&self, _page: Page, _cx: &mut Cx<serde_json::Value>) -> Result {
        Ok(())
    }
}

/// `/proc/self/status`'s field `name`, in KiB.
fn status_kib(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The crawl of `hosts` hosts on the server at `port`: prints `pages peak_kib end_kib
/// heap_peak_kib`.
fn child(hosts: u64, port: u16) -> ExitCode {
    let dir = std::env::temp_dir().join(format!("spiderling-hosts-memory-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return ExitCode::FAILURE;
    }
    let list = dir.join("hosts.txt");
    // Written a line at a time: a list built in memory first would stay in the peaks.
    let written = std::fs::File::create(&list).and_then(|file| {
        let mut file = std::io::BufWriter::new(file);
        (0..hosts).try_for_each(|n| writeln!(file, "http://h{n}.localhost:{port}/"))?;
        file.flush()
    });
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    let configured = Config::new("hosts")
        .concurrency(32)
        .progress(false)
        .set("start_list", &list.display().to_string())
        .and_then(|c| c.set("max_depth", "0"))
        .and_then(|c| c.set("allowed_domains", "localhost"))
        .and_then(|c| c.set("politeness", "host"));
    let config = match configured {
        Ok(config) => config,
        Err(error) => {
            eprintln!("hosts_memory: {error}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("hosts_memory: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (heap_peak, done) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicBool::new(false)));
    let sampler = {
        let (heap_peak, done) = (heap_peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                heap_peak.fetch_max(live_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let summary = runtime.block_on(Crawler::new(Visit(config)).run());
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let _ = std::fs::remove_dir_all(&dir);
    match summary {
        Ok(summary) => {
            let heap_kib = heap_peak.load(Ordering::Relaxed) / 1024;
            println!("{} {} {} {heap_kib}", summary.counts.pages, status_kib("VmHWM:"), status_kib("VmRSS:"));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("hosts_memory: {error}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var(CHILD) {
        let mut parts = spec.split(' ').filter_map(|part| part.parse::<u64>().ok());
        let (Some(hosts), Some(port)) = (parts.next(), parts.next()) else { return ExitCode::FAILURE };
        return child(hosts, u16::try_from(port).unwrap_or(0));
    }
    let mut counts: Vec<u64> = std::env::args().skip(1).filter_map(|arg| arg.parse().ok()).collect();
    if counts.is_empty() {
        counts = vec![1_000, 10_000, 100_000];
    }
    let site = match Sandbox::demo(DemoSite { books: 10, per_page: 10, ..DemoSite::default() }) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("hosts_memory: cannot start the sandbox: {error}");
            return ExitCode::FAILURE;
        }
    };
    let Ok(exe) = std::env::current_exe() else { return ExitCode::FAILURE };
    println!("hosts_memory: one page and its robots.txt on each host, concurrency 32");
    println!(
        "{:>9} {:>9} {:>9} {:>10} {:>10} {:>13} {:>13}",
        "hosts", "pages", "seconds", "peak MB", "end MB", "heap peak MB", "peak B/host"
    );
    let mut failed = false;
    for hosts in counts {
        let started = Instant::now();
        let run = Command::new(&exe)
            .env(CHILD, format!("{hosts} {}", site.addr().port()))
            .stderr(Stdio::inherit())
            .output();
        let said =
            run.as_ref().map(|run| String::from_utf8_lossy(&run.stdout).into_owned()).unwrap_or_default();
        let numbers: Vec<u64> = said.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        let [pages, peak, end, heap] = numbers[..] else {
            eprintln!("hosts_memory: the crawl of {hosts} hosts failed: {run:?}");
            failed = true;
            continue;
        };
        println!(
            "{hosts:>9} {pages:>9} {:>9.1} {:>10.1} {:>10.1} {:>13.1} {:>13.0}",
            started.elapsed().as_secs_f64(),
            peak as f64 / 1024.0,
            end as f64 / 1024.0,
            heap as f64 / 1024.0,
            peak as f64 * 1024.0 / hosts as f64
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
