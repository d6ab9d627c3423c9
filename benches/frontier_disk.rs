//! The state file's frontier (`StateFrontier`, SQLite on disk) at 10,000,000 URLs over
//! 10,000 hosts: peak RSS, which should stay flat while the frontier grows, and what a URL
//! costs to enqueue, to turn away as a duplicate, and to take back out.
//!
//! - enqueue: N distinct URLs (`https://shop-{h}.example/catalogue/item-{i}.html?ref=list&sort=price`),
//!   found as a crawl finds them: 20 links per page, each page on a host drawn at random
//!   from 10,000, so every host's queue grows a little at a time; a commit every 100,000
//!   URLs, as a crawl's checkpoints would. Every 1,000,000 a line: URLs so far, the rate
//!   over that million and overall, `VmRSS` and `VmHWM`, and the state file's size (the
//!   main file and its `-wal`). Each URL's text is formatted and parsed inside the timing,
//!   as a crawl's links are; the cost of that alone is printed first.
//! - duplicates: 100,000 URLs already enqueued, spread over all N, in another spelling
//!   (`HTTPS://SHOP-{h}.EXAMPLE:443/…?sort=price&ref=list#reviews`), canonicalised and
//!   turned away.
//! - next + finish: 100,000 requests taken with `next` and finished, host after host
//!   round the 10,000, a commit every 1,000.
//!
//! Peak RSS is `VmHWM` of this process, everything included, against a target of 150 MB
//! (MB = 2^20 bytes, as in `spiderling bench`); the run exits with failure when it is
//! missed, or when enqueueing takes longer than 30 minutes (it then stops there). The state
//! file lives in a temporary directory, deleted at the end.
//!
//! ```text
//! cargo bench -p spiderling --bench frontier_disk              # 10,000,000 URLs
//! cargo bench -p spiderling --bench frontier_disk -- 1000000   # or N
//! FRONTIER_DISK_URLS=1000000 cargo bench -p spiderling --bench frontier_disk
//! ```

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use spiderling::{Config, Enqueued, Error, Frontier, Request, StateFrontier};

/// URLs enqueued unless told otherwise.
const DEFAULT_URLS: u64 = 10_000_000;
/// Hosts the URLs are spread over.
const HOSTS: u64 = 10_000;
/// Links found on one page, all of its host.
const LINKS_PER_PAGE: u64 = 20;
/// URLs between two commits while enqueueing.
const COMMIT_EVERY: u64 = 100_000;
/// URLs between two progress lines.
const REPORT_EVERY: u64 = 1_000_000;
/// Duplicate spellings enqueued, and requests taken out with next + finish.
const SAMPLE: u64 = 100_000;
/// Requests taken between two commits while taking them out.
const TAKE_COMMIT_EVERY: u64 = 1_000;
/// The issue's target for peak RSS, in KiB (150 MB).
const TARGET_PEAK_KIB: u64 = 150 * 1024;
/// The longest the enqueueing may take before the run stops and fails.
const MAX_ENQUEUE: Duration = Duration::from_secs(30 * 60);
/// The variable that sets N when no argument does.
const URLS_VAR: &str = "FRONTIER_DISK_URLS";

/// The host of the page that found URL `i`: pages of `LINKS_PER_PAGE` links, each on a
/// host drawn by a fixed hash of the page's number (splitmix64), so the run is the same
/// every time.
fn host_of(i: u64) -> u64 {
    let mut z = (i / LINKS_PER_PAGE).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % HOSTS
}

fn url(i: u64) -> String {
    format!("https://shop-{}.example/catalogue/item-{i}.html?ref=list&sort=price", host_of(i))
}

/// Another spelling of [`url`]`(i)`: the same request once canonicalised.
fn duplicate_url(i: u64) -> String {
    format!("HTTPS://SHOP-{}.EXAMPLE:443/catalogue/item-{i}.html?sort=price&ref=list#reviews", host_of(i))
}

/// The frontier's key of host `h`.
fn host_key(h: u64) -> String {
    format!("https://shop-{h}.example:443")
}

/// What `/proc/self/status` says of this process's memory, in KiB.
#[derive(Debug, Clone, Copy)]
struct Memory {
    /// Resident now.
    rss: u64,
    /// Resident at the most (peak RSS).
    hwm: u64,
    /// Of `rss`, anonymous memory: the heap, with SQLite's page cache.
    anon: u64,
    /// Of `rss`, pages of mapped files: the binary, and the log's index (`-shm`).
    file: u64,
}

fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Memory { rss: field("VmRSS:"), hwm: field("VmHWM:"), anon: field("RssAnon:"), file: field("RssFile:") }
}

/// The state file's bytes on disk: the main file and its write-ahead log.
fn file_bytes(path: &Path) -> (u64, u64) {
    let len = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    (len(path), len(Path::new(&wal)))
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn mb_bytes(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn rate(count: u64, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64().max(1e-9)
}

/// `12345678` as `12,345,678`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn per_second(rate: f64) -> String {
    format!("{}/s", thousands(rate.round() as u64))
}

/// N from the first numeric argument (`1000000`, `1_000_000` or `1,000,000`), else from
/// `FRONTIER_DISK_URLS`, else the default; `None` when the other arguments name another
/// bench (`cargo bench -- NAME` passes NAME to every bench).
fn urls_to_enqueue() -> Result<Option<u64>, String> {
    let mut urls = None;
    let mut filters = Vec::new();
    for arg in std::env::args().skip(1).filter(|arg| !arg.starts_with('-')) {
        let digits: String = arg.chars().filter(|c| !matches!(c, '_' | ',')).collect();
        match digits.parse::<u64>() {
            Ok(n) => urls = Some(n),
            Err(_) => filters.push(arg),
        }
    }
    if !filters.is_empty() && !filters.iter().any(|f| "frontier_disk".contains(f.as_str())) {
        return Ok(None);
    }
    let urls = match (urls, std::env::var(URLS_VAR)) {
        (Some(n), _) => n,
        (None, Ok(value)) => {
            value.trim().parse().map_err(|_| format!("{URLS_VAR}={value} is not a count"))?
        }
        (None, Err(_)) => DEFAULT_URLS,
    };
    if urls == 0 {
        return Err("N must be at least 1".to_owned());
    }
    Ok(Some(urls))
}

fn main() -> ExitCode {
    let urls = match urls_to_enqueue() {
        Ok(Some(urls)) => urls,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("frontier_disk: {message}");
            return ExitCode::FAILURE;
        }
    };
    let dir = match tempfile::Builder::new().prefix("frontier_disk-").tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("frontier_disk: cannot make a temporary directory: {error}");
            return ExitCode::FAILURE;
        }
    };
    let path = dir.path().join("bench.state");
    let outcome = run(&path, urls);
    if let Err(error) = dir.close() {
        eprintln!("frontier_disk: cannot delete the temporary directory: {error}");
        return ExitCode::FAILURE;
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("frontier_disk: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The whole run; `Ok(false)` when a target is missed.
fn run(path: &Path, urls: u64) -> Result<bool, String> {
    let failed = |what: &str, error: Error| format!("{what}: {error}");
    let rss_start = memory().rss;
    println!(
        "frontier_disk: {} URLs over {} hosts ({LINKS_PER_PAGE} links a page), a commit every {}; state file \
            in {}",
        thousands(urls),
        thousands(HOSTS),
        thousands(COMMIT_EVERY),
        path.parent().map_or_else(String::new, |p| p.display().to_string())
    );

    // What building a request costs the bench before the frontier sees it.
    let building = urls.min(REPORT_EVERY);
    let started = Instant::now();
    for i in 0..building {
        let request = Request::get(&url(i)).map_err(|e| failed("a URL does not parse", e))?;
        std::hint::black_box(request);
    }
    println!(
        "  formatting and parsing {} URLs alone: {}",
        thousands(building),
        per_second(rate(building, started.elapsed()))
    );

    let config = Config::new("frontier_disk");
    let mut frontier = StateFrontier::open(path, &config).map_err(|e| failed("opening the state file", e))?;
    let rss_open = memory().rss;
    println!("  VmRSS {:.1} MB at start, {:.1} MB with the state file open", mb(rss_start), mb(rss_open));
    println!(
        "  {:>12} {:>22} {:>12} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7}",
        "URLs",
        "this million",
        "overall",
        "VmRSS MB",
        "VmHWM MB",
        "anon MB",
        "file MB",
        "state MB",
        "wal MB",
        "total MB",
        "B/URL"
    );

    let started = Instant::now();
    let mut last = (0_u64, started);
    let mut enqueued = 0_u64;
    let mut stopped_early = false;
    for i in 0..urls {
        let url = url(i);
        let request = Request::get(&url).map_err(|e| failed(&format!("{url} does not parse"), e))?;
        match frontier.enqueue(request) {
            Ok(Enqueued::Accepted(_)) => enqueued += 1,
            Ok(other) => return Err(format!("{url} was not accepted: {other:?}")),
            Err(error) => return Err(failed("enqueue", error)),
        }
        if enqueued.is_multiple_of(COMMIT_EVERY) || enqueued == urls {
            frontier.commit().map_err(|e| failed("commit", e))?;
        }
        if enqueued.is_multiple_of(REPORT_EVERY) || enqueued == urls {
            let now = Instant::now();
            let now_memory = memory();
            let (main, wal) = file_bytes(path);
            println!(
                "  {:>12} {:>22} {:>12} {:>9.1} {:>9.1} {:>8.1} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>7.1}",
                thousands(enqueued),
                format!(
                    "{} in {:.1} s",
                    per_second(rate(enqueued - last.0, now - last.1)),
                    (now - last.1).as_secs_f64()
                ),
                per_second(rate(enqueued, now - started)),
                mb(now_memory.rss),
                mb(now_memory.hwm),
                mb(now_memory.anon),
                mb(now_memory.file),
                mb_bytes(main),
                mb_bytes(wal),
                mb_bytes(main + wal),
                (main + wal) as f64 / enqueued as f64
            );
            last = (enqueued, now);
            if now - started > MAX_ENQUEUE && enqueued < urls {
                stopped_early = true;
                break;
            }
        }
    }
    let enqueue_time = started.elapsed();
    frontier.commit().map_err(|e| failed("commit", e))?;
    let hwm_enqueued = memory().hwm;
    let (main_enqueued, wal_enqueued) = file_bytes(path);

    // Duplicates: other spellings of URLs spread over all that were enqueued.
    let duplicates = SAMPLE.min(enqueued);
    let stride = (enqueued / duplicates.max(1)).max(1);
    let started = Instant::now();
    for k in 0..duplicates {
        let url = duplicate_url(k * stride + stride / 2);
        let request = Request::get(&url).map_err(|e| failed(&format!("{url} does not parse"), e))?;
        match frontier.enqueue(request) {
            Ok(Enqueued::Duplicate) => {}
            Ok(other) => return Err(format!("{url} was not turned away as a duplicate: {other:?}")),
            Err(error) => return Err(failed("enqueue", error)),
        }
    }
    frontier.commit().map_err(|e| failed("commit", e))?;
    let duplicate_time = started.elapsed();

    // next + finish, host after host.
    let keys: Vec<String> = (0..HOSTS).map(host_key).collect();
    let wanted = SAMPLE.min(enqueued);
    let mut taken = 0_u64;
    let started = Instant::now();
    'rounds: loop {
        let mut any = false;
        for key in &keys {
            let Some(request) = frontier.next(key).map_err(|e| failed("next", e))? else { continue };
            let Some(ticket) = request.ticket() else {
                return Err(format!("{} came out of the state file without a ticket", request.url()));
            };
            frontier.finish(ticket).map_err(|e| failed("finish", e))?;
            any = true;
            taken += 1;
            if taken.is_multiple_of(TAKE_COMMIT_EVERY) {
                frontier.commit().map_err(|e| failed("commit", e))?;
            }
            if taken == wanted {
                break 'rounds;
            }
        }
        if !any {
            break;
        }
    }
    frontier.commit().map_err(|e| failed("commit", e))?;
    let take_time = started.elapsed();
    if frontier.len() as u64 != enqueued - taken {
        return Err(format!("{} left queued, not {}", frontier.len(), enqueued - taken));
    }

    let started = Instant::now();
    drop(frontier);
    let close_time = started.elapsed();
    let Memory { rss: rss_end, hwm, .. } = memory();
    let (main_closed, _) = file_bytes(path);
    // A resume checks the whole file before it leans on it: its structure and checksums.
    let started = Instant::now();
    drop(StateFrontier::open(path, &config).map_err(|e| failed("opening the state file again", e))?);
    let reopen_time = started.elapsed();

    let met = hwm < TARGET_PEAK_KIB;
    println!("frontier_disk: {} URLs enqueued over {} hosts", thousands(enqueued), thousands(HOSTS));
    if stopped_early {
        println!("  STOPPED after {:.0} s, before {} URLs", MAX_ENQUEUE.as_secs_f64(), thousands(urls));
    }
    println!(
        "  peak RSS (VmHWM): {:.1} MB (after enqueueing {:.1} MB; target < {} MB: {})",
        mb(hwm),
        mb(hwm_enqueued),
        TARGET_PEAK_KIB / 1024,
        if met { "met" } else { "MISSED" }
    );
    println!(
        "  enqueue: {} in {:.1} s, with a commit every {}",
        per_second(rate(enqueued, enqueue_time)),
        enqueue_time.as_secs_f64(),
        thousands(COMMIT_EVERY)
    );
    println!(
        "  duplicate: {} spellings turned away, {} ({:.2} s)",
        thousands(duplicates),
        per_second(rate(duplicates, duplicate_time)),
        duplicate_time.as_secs_f64()
    );
    println!(
        "  next + finish: {} requests over {} hosts, {} ({:.2} s), a commit every {}",
        thousands(taken),
        thousands(HOSTS.min(taken)),
        per_second(rate(taken, take_time)),
        take_time.as_secs_f64(),
        thousands(TAKE_COMMIT_EVERY)
    );
    println!(
        "  state file after enqueueing: {:.1} MB + {:.1} MB wal = {:.1} B per URL; closed (log checkpointed \
            in {:.1} s): {:.1} MB = {:.1} B per URL",
        mb_bytes(main_enqueued),
        mb_bytes(wal_enqueued),
        (main_enqueued + wal_enqueued) as f64 / enqueued as f64,
        close_time.as_secs_f64(),
        mb_bytes(main_closed),
        main_closed as f64 / enqueued as f64
    );
    println!(
        "  opened again (the whole file checked) in {:.2} s, with {} URLs queued",
        reopen_time.as_secs_f64(),
        thousands(enqueued - taken)
    );
    println!("  VmRSS at the end: {:.1} MB", mb(rss_end));
    Ok(met && !stopped_early)
}
