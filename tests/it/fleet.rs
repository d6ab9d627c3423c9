//! Many workers, one crawl: worker processes sharing a real Redis (`frontier =
//! "redis://…"`) crawl the demo site with every page fetched once and every item written
//! once across their outputs, lose nothing when one is killed or Redis restarts, and hold
//! one rpm, one per-host limit and one proxy budget between them, as the site and the
//! gateway count what they receive.

#![allow(clippy::unwrap_used)] // the helpers below are test code too

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use spider_sandbox::{DemoSite, GatewayConfig, MockGateway, RedisServer, Sandbox};
use spiderling::Config;
use support::{expected_books, read_jsonl, Book, BookSpider};

/// The variable that makes this test binary a worker the other tests start.
const WORKER: &str = "FLEET_TEST_WORKER_ARGS";

/// Slots of each worker.
const CONCURRENCY: usize = 4;

/// A worker of the fleet: this test binary again, running only this test, with the
/// spider binary's command line in `WORKER` (one argument a line).
#[test]
#[ignore = "a worker process of the fleet tests, started by them"]
fn fleet_worker() {
    support::run_child_crawl(WORKER, CONCURRENCY);
}

fn worker_command(site: &Sandbox, frontier: &str, output: &Path, extra: &[&str]) -> Command {
    let mut args = vec![
        "--set".to_owned(),
        format!("start_urls={}", site.url()),
        "--set".to_owned(),
        format!("frontier={frontier}"),
        "-o".to_owned(),
        output.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let mut command = support::child_command(module_path!(), "fleet_worker", WORKER, &args);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

fn start_workers(
    site: &Sandbox,
    frontier: &str,
    dir: &Path,
    count: usize,
    extra: &[&str],
) -> Vec<(Child, PathBuf)> {
    (0..count)
        .map(|i| {
            let output = dir.join(format!("worker-{i}.jsonl"));
            (worker_command(site, frontier, &output, extra).spawn().unwrap(), output)
        })
        .collect()
}

/// Wait for a worker, bounded: a test never hangs on one.
fn finish(child: Child, within: Duration) -> Output {
    let deadline = Instant::now() + within;
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!("a worker did not finish in {within:?}: {}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Wait for every worker to succeed, each within `within`: the items each wrote.
fn items_by_worker(workers: Vec<(Child, PathBuf)>, within: Duration) -> Vec<Vec<Book>> {
    let finished = workers.into_iter().map(|(child, output)| (finish(child, within), output));
    finished
        .map(|(run, output)| {
            assert_success(&run);
            read_jsonl(&output)
        })
        .collect()
}

fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "a worker failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A worker run in this process (`Crawler::with_config`), for tests that watch its gauges;
/// its stats go into `dir`.
fn in_process_worker(site: &Sandbox, redis: &RedisServer, dir: &Path, name: &str) -> Config {
    Config::new("books")
        .start_url(site.url())
        .allowed_domain("127.0.0.1")
        .frontier(redis.url())
        .concurrency(CONCURRENCY)
        .retries(1)
        .handle_signals(false)
        .progress(false)
        .stats(dir.join(format!("{name}.stats.json")))
}

/// A test's folder under the system's temporary one, removed with what it holds when the
/// test is done with it (a failed test's too: the panic drops it).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("spiderling-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn site(latency_ms: u64) -> (Sandbox, DemoSite) {
    let demo = DemoSite { latency: Duration::from_millis(latency_ms), ..DemoSite::default() };
    (Sandbox::demo(demo.clone()).unwrap(), demo)
}

#[test]
fn three_workers_fetch_every_page_once_and_write_every_item_once() {
    let (site, demo) = site(15);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("three");
    // Three workers of four slots each, and a per-host limit of six for the fleet.
    let workers = start_workers(&site, &redis.url(), &dir, 3, &["--set", "per_host=6"]);
    let by_worker = items_by_worker(workers, Duration::from_secs(120));
    let wrote: Vec<usize> = by_worker.iter().map(Vec::len).collect();
    let items: Vec<Book> = by_worker.into_iter().flatten().collect();
    let observed = site.observed();
    assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
    // Every page, and the redirect's first hop.
    assert_eq!(observed.pages().count(), demo.expected_pages() + 1, "every page is fetched");
    assert_eq!(observed.under("/robots.txt"), 1, "robots.txt is fetched once for the fleet");
    assert!(observed.max_in_flight <= 6, "per_host holds for the fleet: {} at once", observed.max_in_flight);
    assert!(wrote.iter().all(|n| *n > 0), "every worker took part: {wrote:?}");
    let expected = expected_books(demo.books);
    assert_eq!(items.len(), expected.len(), "every item is written once across the outputs");
    let unique: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert_eq!(unique.len(), expected.len());
}

/// Managed Redis speaks TLS: two workers over `rediss://` to a real `redis-server
/// --tls-port` that asks for a client certificate fetch every page once and write every
/// item once, the CA and the client certificate named in the URL. A wrong CA, or no client
/// certificate, is a configuration error before any request, said as a TLS problem.
/// Before, `rediss://` was taken and failed with the client library's "feature is not
/// enabled", and the advice to start redis-server.
#[test]
fn two_workers_over_tls_with_a_client_certificate_write_every_item_once() {
    let (site, demo) = site(5);
    let redis = RedisServer::start_tls(true).unwrap();
    let dir = temp_dir("tls");
    let ca = redis.ca_file().unwrap();
    let (cert, key) = redis.client_files().unwrap();
    let tls = format!(
        "{}?cacert={}&cert={}&key={}",
        redis.tls_url().unwrap(),
        ca.display(),
        cert.display(),
        key.display()
    );
    let workers = start_workers(&site, &tls, &dir, 2, &[]);
    let items: Vec<Book> = items_by_worker(workers, Duration::from_secs(120)).into_iter().flatten().collect();
    let observed = site.observed();
    assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
    assert_eq!(items.len(), expected_books(demo.books).len(), "every item once across the outputs");
    assert_eq!(
        redis.command(&["EXISTS", "spiderling:{books}:meta"]).unwrap(),
        ":1",
        "the crawl lived in this Redis"
    );

    let before = site.received();
    let stranger = dir.join("stranger.pem");
    std::fs::write(&stranger, std::fs::read(redis.client_files().unwrap().0).unwrap()).unwrap();
    let refused = [
        (
            format!(
                "{}?cacert={}&cert={}&key={}",
                redis.tls_url().unwrap(),
                stranger.display(),
                cert.display(),
                key.display()
            ),
            "certificate",
        ),
        (format!("{}?cacert={}", redis.tls_url().unwrap(), ca.display()), "over TLS (rediss://)"),
    ];
    for (frontier, said) in refused {
        let run = worker_command(&site, &frontier, &dir.join("refused.jsonl"), &[]).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{frontier}: {stderr}");
        assert!(
            stderr.contains("configuration error: cannot use the fleet's Redis at rediss://"),
            "{stderr}"
        );
        assert!(stderr.contains(said), "{stderr}");
        assert!(!stderr.contains("start it (redis-server)"), "{stderr}");
    }
    assert_eq!(site.received(), before, "nothing is fetched");
}

#[test]
fn a_worker_killed_mid_crawl_loses_nothing() {
    let (site, demo) = site(10);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("kill");
    let lease = ["--set", "lease=2s"];
    let workers = start_workers(&site, &redis.url(), &dir, 2, &lease);
    let (pages_at_kill, killed_output, survivor_output) = kill_one_of_two(&site, workers);

    let observed = site.observed();
    let fetched: BTreeSet<String> = observed.pages().map(|h| h.resource()).collect();
    assert_eq!(fetched.len(), demo.expected_pages() + 1, "every page is fetched despite the kill");
    let twice: usize = observed.duplicates().values().map(|n| n - 1).sum();
    // What the killed worker held: its slots, and the requests leased for them.
    assert!(twice <= 2 * CONCURRENCY, "{twice} pages fetched again after the kill");
    let mut items = read_jsonl(&killed_output);
    items.extend(read_jsonl(&survivor_output));
    let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert_eq!(titles.len(), demo.books, "no item is lost");
    assert!(items.len() - demo.books <= 2 * CONCURRENCY, "{} items written twice", items.len() - demo.books);
    assert!(pages_at_kill < demo.expected_pages(), "the kill came mid-crawl");

    // What the fleet committed of each output holds every item once; what the killed
    // worker wrote past it is named, and left out of the merge.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let report = runtime.block_on(spiderling::FleetReport::read(&redis.url(), Some("books"))).unwrap();
    let crawl = &report.crawls[0];
    assert_eq!(crawl.outputs.len(), 2, "{:?}", crawl.outputs);
    let killed_file = crawl.outputs.iter().find(|o| Path::new(&o.path) == killed_output).unwrap();
    let extra = items.len() - demo.books;
    assert_eq!(
        killed_file.tail.is_some_and(|tail| tail > 0),
        extra > 0,
        "{killed_file:?}, {extra} items twice"
    );
    assert!(report.to_string().contains("left out by --merge") == (extra > 0), "{report}");
    let merged = dir.join("merged.jsonl");
    assert_eq!(crawl.merge(&merged).unwrap(), demo.books as u64);
    assert_eq!(read_jsonl(&merged), expected_books(demo.books), "every item once, in one file");
}

/// A worker killed mid-crawl and started again on the same output emptied it, losing the
/// items of every page the fleet had counted as its; and what it wrote after its last
/// report was written again by the others. Its file is now cut back to what the fleet
/// committed with its requests' ends: across the outputs, every item exactly once.
#[test]
fn a_killed_worker_started_again_on_its_output_keeps_what_was_committed_and_nothing_twice() {
    let (site, demo) = site(10);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("rejoin");
    let mut workers = start_workers(&site, &redis.url(), &dir, 2, &["--set", "lease=2s"]);
    wait_for_pages(&site, 150);
    let (mut killed, killed_output) = workers.remove(0);
    killed.kill().unwrap();
    killed.wait().unwrap();
    let written_at_kill = read_jsonl(&killed_output).len();
    let again = worker_command(&site, &redis.url(), &killed_output, &["--set", "lease=2s"]).spawn().unwrap();
    let (survivor, survivor_output) = workers.remove(0);
    assert_success(&finish(survivor, Duration::from_secs(120)));
    assert_success(&finish(again, Duration::from_secs(120)));

    let mut items = read_jsonl(&killed_output);
    items.extend(read_jsonl(&survivor_output));
    let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert!(written_at_kill > 0, "the killed worker had written items");
    assert_eq!(titles.len(), demo.books, "no item is lost");
    assert_eq!(items.len(), demo.books, "no item twice: {} extra", items.len() - demo.books);
}

#[test]
fn the_crawl_survives_a_redis_restart() {
    let (site, demo) = site(10);
    let mut redis = RedisServer::start().unwrap();
    let dir = temp_dir("restart");
    let workers = start_workers(&site, &redis.url(), &dir, 2, &[]);
    let started = Instant::now();
    while site.observed().pages().count() < 200 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let pages_before = site.observed().pages().count();
    redis.restart().unwrap();
    let mut items = Vec::new();
    let mut logs = String::new();
    for (child, output) in workers {
        let run = finish(child, Duration::from_secs(120));
        assert_success(&run);
        logs.push_str(&String::from_utf8_lossy(&run.stderr));
        items.extend(read_jsonl(&output));
    }
    assert!(pages_before < demo.expected_pages(), "the restart came mid-crawl");
    assert!(logs.contains("lost Redis"), "the workers say they lost Redis: {logs}");
    assert!(logs.contains("Redis is back"), "and that it came back");
    let observed = site.observed();
    assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
    assert_eq!(observed.pages().count(), demo.expected_pages() + 1, "no page is lost");
    assert_eq!(items.len(), demo.books, "every item is written once");
}

/// Wait, bounded, until the site has answered `pages` pages.
fn wait_for_pages(site: &Sandbox, pages: usize) {
    let started = Instant::now();
    while site.observed().pages().count() < pages && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Once the site has served 150 pages, SIGKILL the first of two workers (no chance to give
/// anything back) and wait for the other to succeed: the pages served at the kill, and
/// the two outputs, killed first.
fn kill_one_of_two(site: &Sandbox, workers: Vec<(Child, PathBuf)>) -> (usize, PathBuf, PathBuf) {
    wait_for_pages(site, 150);
    let mut workers = workers.into_iter();
    let (Some((mut killed, killed_output)), Some((survivor, survivor_output))) =
        (workers.next(), workers.next())
    else {
        panic!("two workers");
    };
    killed.kill().unwrap();
    killed.wait().unwrap();
    let pages_at_kill = site.observed().pages().count();
    assert_success(&finish(survivor, Duration::from_secs(120)));
    (pages_at_kill, killed_output, survivor_output)
}

/// What a worker that stopped because Redis lost writes prints.
const LOST: &str = "Redis lost part of this crawl";

/// A worker's end, bounded, which must be a failure: what it printed on stderr.
fn failed(child: Child) -> String {
    let run = finish(child, Duration::from_secs(60));
    let said = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(!run.status.success(), "a worker reported success after Redis went back: {said}");
    said
}

/// Redis's default persistence is snapshots, so a restart is usually one. Two workers, a
/// snapshot, more crawling, then Redis killed and started from the snapshot: the workers
/// took the stale crawl and renewed its leases for ever, and a worker started later ended
/// with exit 0 and items missing. Now every worker stops with the reason, and a late one
/// is refused.
#[test]
fn a_redis_restored_from_an_older_snapshot_stops_every_worker_with_the_reason() {
    let (site, demo) = site(10);
    let mut redis = RedisServer::start().unwrap();
    let dir = temp_dir("snapshot");
    let workers = start_workers(&site, &redis.url(), &dir, 2, &[]);
    wait_for_pages(&site, 100);
    assert_eq!(redis.command(&["SAVE"]).unwrap(), "+OK");
    let at_snapshot = site.observed().pages().count();
    wait_for_pages(&site, at_snapshot + 150);
    redis.kill();
    redis.start_again().unwrap();
    assert!(site.observed().pages().count() < demo.expected_pages(), "the restore came mid-crawl");

    for (child, _) in workers {
        let said = failed(child);
        assert!(said.contains(LOST) && said.contains("another crawl_id"), "{said}");
    }
    let late = worker_command(&site, &redis.url(), &dir.join("late.jsonl"), &[]).output().unwrap();
    let said = String::from_utf8_lossy(&late.stderr);
    assert!(!late.status.success() && said.contains(LOST), "a worker joining later is refused: {said}");
}

/// After Redis came back empty, a worker started within a fraction of a second seeded the
/// crawl again and, while the old workers waited out their reconnection backoff, crawled
/// it all and ended with exit 0: items written twice across the outputs, and a crawl
/// reported done. Every worker now stops with the reason, whoever reaches Redis first:
/// the old workers know their crawl by a mark it was made with, and a crawl just made
/// does not end before they could have come back.
#[test]
fn a_redis_back_empty_and_seeded_again_by_a_worker_joining_at_once_stops_every_worker() {
    let (site, demo) = site(10);
    let mut redis = RedisServer::start().unwrap();
    let dir = temp_dir("reseeded");
    let workers = start_workers(&site, &redis.url(), &dir, 2, &[]);
    wait_for_pages(&site, 150);
    redis.kill();
    let _ = std::fs::remove_file(redis.dir().join("dump.rdb"));
    // Down for long enough that the old workers' reconnection backoff has grown past a
    // second: the worker that joins has the crawl to itself for that long.
    std::thread::sleep(Duration::from_millis(3500));
    redis.start_again().unwrap();
    let joined = worker_command(&site, &redis.url(), &dir.join("joined.jsonl"), &[]).spawn().unwrap();
    assert!(site.observed().pages().count() < demo.expected_pages(), "Redis went mid-crawl");

    for child in workers.into_iter().map(|(child, _)| child).chain([joined]) {
        let said = failed(child);
        assert!(said.contains(LOST) && said.contains("another crawl_id"), "{said}");
    }
}

fn signal(child: &Child, name: &str) {
    let sent = Command::new("kill").args([name, &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill {name}");
}

/// A worker stopped (SIGSTOP) for longer than its lease, then continued, wrote the items
/// of the pages it had in flight, whose requests another worker had taken meanwhile. Now a
/// worker not heard from for that long writes no page it finishes after, and gives back
/// what it held. Slow pages, so that the pause finds every slot mid-fetch: before, each
/// of them was written twice.
#[test]
fn a_worker_paused_past_its_lease_writes_nothing_another_worker_took() {
    let demo =
        DemoSite { books: 200, per_page: 20, latency: Duration::from_millis(300), ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("paused");
    let mut workers = start_workers(&site, &redis.url(), &dir, 2, &["--set", "lease=3s"]);
    wait_for_pages(&site, 40);
    signal(&workers[0].0, "-STOP");
    // Past the lease, while the other worker takes the paused one's requests.
    std::thread::sleep(Duration::from_secs(6));
    signal(&workers[0].0, "-CONT");
    let mut items = Vec::new();
    for (child, output) in workers.drain(..) {
        assert_success(&finish(child, Duration::from_secs(120)));
        items.extend(read_jsonl(&output));
    }
    let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert_eq!(titles.len(), demo.books, "no item is lost");
    // A page whose end was on its way to Redis at the very moment of the pause (a few
    // milliseconds of each 300) is written by both, and cut out of the paused worker's
    // file (the next test makes sure of that moment).
    assert_eq!(items.len(), demo.books, "every item once across the two files");
}

/// A TCP forwarder to Redis that can be cut: while cut, no byte goes either way and every
/// connection stays open, as a network partition leaves them.
struct Partition {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Partition {
    fn to(redis: &RedisServer) -> Partition {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = std::sync::Arc::new(AtomicBool::new(false));
        let upstream = redis.port();
        let flag = cut.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                for (mut from, mut to) in
                    [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)]
                {
                    let flag = flag.clone();
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let mut buffer = [0u8; 16 * 1024];
                        loop {
                            while flag.load(Ordering::Relaxed) {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            match from.read(&mut buffer) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    while flag.load(Ordering::Relaxed) {
                                        std::thread::sleep(Duration::from_millis(5));
                                    }
                                    if to.write_all(&buffer[..n]).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Partition { port, cut }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn set(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A worker cut off from Redis past its lease, still finishing and writing the pages it
/// had in flight while it held their leases, as far as it knew: another worker fetched
/// those pages again and wrote their items, and the cut-off worker's round came back void
/// once Redis was in reach. Before, the stretch of its file holding those items stayed in
/// it (the fleet's count and merge left it out, the file did not): items twice across the
/// outputs. Now Redis leaves the stretch uncommitted and the worker cuts it out of its file
/// before it commits more.
#[test]
fn a_worker_cut_off_past_its_lease_cuts_what_another_worker_wrote_out_of_its_file() {
    let demo =
        DemoSite { books: 200, per_page: 20, latency: Duration::from_millis(300), ..DemoSite::default() };
    let site = Sandbox::demo(demo.clone()).unwrap();
    let redis = RedisServer::start().unwrap();
    let partition = Partition::to(&redis);
    let dir = temp_dir("cut");
    let lease = ["--set", "lease=3s"];
    let mut workers = start_workers(&site, &partition.url(), &dir, 1, &lease);
    let output = dir.join("worker-other.jsonl");
    let other = worker_command(&site, &redis.url(), &output, &lease).spawn().unwrap();
    workers.push((other, output));
    wait_for_pages(&site, 40);
    partition.set(true);
    // Past the lease, while the other worker takes the cut-off one's requests.
    std::thread::sleep(Duration::from_secs(6));
    partition.set(false);
    let mut items = Vec::new();
    let mut logs = String::new();
    for (child, output) in workers.drain(..) {
        let run = finish(child, Duration::from_secs(120));
        assert_success(&run);
        logs.push_str(&String::from_utf8_lossy(&run.stderr));
        items.extend(read_jsonl(&output));
    }
    let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert_eq!(titles.len(), demo.books, "no item is lost");
    let void = "the fleet had given one of these requests to another worker";
    assert!(logs.contains(void), "the cut-off worker's round was void: {logs}");
    assert_eq!(items.len(), demo.books, "every item once across the two files");
    // And what Redis counts committed of each file is what the files hold.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let report = runtime.block_on(spiderling::FleetReport::read(&redis.url(), Some("books"))).unwrap();
    let merged = dir.join("merged.jsonl");
    assert_eq!(report.crawls[0].merge(&merged).unwrap(), demo.books as u64);
    let merged: BTreeSet<_> = read_jsonl(&merged).into_iter().map(|b| b.title).collect();
    assert_eq!(merged, titles, "the merge holds every item once");
}

/// A worker killed mid-crawl held its requests until their leases ran out: with the
/// default lease of 60 s the others sat idle for most of a minute at the end. A worker not
/// heard from for ten idle rounds is taken for dead and its requests taken back.
#[test]
fn a_killed_workers_requests_are_taken_back_in_seconds_not_at_the_end_of_its_lease() {
    let (site, demo) = site(10);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("dead");
    let mut workers = start_workers(&site, &redis.url(), &dir, 2, &[]);
    wait_for_pages(&site, 150);
    let (mut killed, killed_output) = workers.remove(0);
    killed.kill().unwrap();
    killed.wait().unwrap();
    let at_kill = Instant::now();
    let (survivor, survivor_output) = workers.remove(0);
    assert_success(&finish(survivor, Duration::from_secs(120)));
    let after_kill = at_kill.elapsed();
    assert!(
        after_kill < Duration::from_secs(40),
        "the survivor took {after_kill:?} after the kill (lease 60 s)"
    );
    let mut items = read_jsonl(&killed_output);
    items.extend(read_jsonl(&survivor_output));
    let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
    assert_eq!(titles.len(), demo.books, "no item is lost");
}

#[test]
fn three_workers_hold_one_rpm_between_them() {
    // 1,800 a minute: the demo site's 1,051 pages take about 35 s. Redis spaces the starts
    // evenly (no burst), so every ten seconds hold a sixth of the rpm, and three such
    // windows of the crawl are measured.
    const RPM: usize = 1800;
    let (site, demo) = site(5);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("rpm");
    let workers = start_workers(&site, &redis.url(), &dir, 3, &["--set", &format!("rpm={RPM}")]);
    let mut items = 0;
    for (child, output) in workers {
        assert_success(&finish(child, Duration::from_secs(180)));
        items += read_jsonl(&output).len();
    }
    assert_eq!(items, demo.books);
    let observed = site.observed();
    // Each worker's copy of Redis's clock and its own sending move an arrival by
    // milliseconds, so the site's ten seconds are measured 100 ms short: one start more
    // than a sixth of the rpm in them is a start given too early.
    let most = observed.max_in_window(Duration::from_secs(10) - Duration::from_millis(100));
    assert!(most <= RPM / 6, "{most} requests in ten seconds, over the fleet's rpm = {RPM}");
    assert!(most * 10 >= RPM / 6 * 9, "only {most} requests in the busiest ten seconds: the rpm is not used");
}

/// A crawl an earlier Spiderling made keeps its keys under `spiderling:CRAWL:` (no hash
/// tag) and its seen-set as a set of hex fingerprints, which this one does not read:
/// joining it would crawl every page again. A worker is refused before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_an_earlier_spiderling_made_is_refused_before_any_request() {
    let (site, _) = site(0);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("old-seen");
    let config = in_process_worker(&site, &redis, &dir, "old-seen");
    let old = format!("spiderling:{}", config.fleet_crawl());
    redis.command(&["HSET", &format!("{old}:meta"), "spider", "books"]).unwrap();
    redis.command(&["SADD", &format!("{old}:seen"), "0123456789abcdef0123456789abcdef"]).unwrap();
    let error =
        spiderling::Crawler::with_config(BookSpider::new(config.clone()), config).run().await.unwrap_err();
    assert!(error.to_string().contains("was made by an earlier Spiderling"), "{error}");
    assert_eq!(site.received(), 0, "nothing is fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_workers_blocks_slow_every_worker_of_the_fleet_for_that_host() {
    let site = Sandbox::demo(DemoSite {
        books: 100,
        per_page: 20,
        latency: Duration::from_millis(10),
        ..DemoSite::default()
    })
    .unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("adaptive");
    let worker = |name: &str| in_process_worker(&site, &redis, &dir, name).adaptive(true);
    // Adaptive mode on both. One worker takes a book out of stock (one in seven) for a
    // block; the other sees none, so on its own its controller would only ever raise.
    let strict = spiderling::Crawler::with_config(
        BookSpider::new(worker("adapt-strict")),
        worker("adapt-strict").block_marker("Out of stock"),
    );
    let calm = spiderling::Crawler::with_config(BookSpider::new(worker("adapt-calm")), worker("adapt-calm"));
    let mut live = calm.live();
    let watch = tokio::spawn(async move {
        let mut rates = Vec::new();
        while live.changed().await.is_ok() {
            let rate = live.borrow().hosts.first().and_then(|host| host.rate_per_sec);
            if let Some(rate) = rate {
                if rates.last() != Some(&rate) {
                    rates.push(rate);
                }
            }
        }
        rates
    });
    let both = async { tokio::join!(strict.run(), calm.run()) };
    let (strict, calm) = tokio::time::timeout(Duration::from_secs(150), both).await.unwrap();
    let (strict, calm) = (strict.unwrap(), calm.unwrap());
    assert!(strict.counts.blocked > 0, "the strict worker blocks pages");
    assert_eq!(calm.counts.blocked, 0, "the calm worker blocks none itself");
    let rates = watch.await.unwrap();
    let cut = rates.windows(2).any(|pair| pair[1] < pair[0]);
    assert!(cut, "the calm worker's rate for the host was cut by the other's blocks: {rates:?}");
}

#[test]
fn the_proxy_budget_is_the_fleets_and_stops_every_worker() {
    // 50 requests a second for the fleet: a worker hears the fleet's spend about once a
    // second, so the budget is passed by about a second of traffic at most.
    const BUDGET_BYTES: u64 = 150_000;
    let (site, _) = site(0);
    let gateway = MockGateway::start(GatewayConfig::default()).unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("budget");
    // At 1,000,000 per GB, a byte costs 0.001.
    let budget = format!("proxy_budget={}", BUDGET_BYTES as f64 / 1000.0);
    let proxy = format!("proxy={}", gateway.url_with_credentials());
    let extra = ["--set", &proxy, "--set", "proxy_price_per_gb=1000000", "--set", &budget, "--set", "rps=50"];
    let workers = start_workers(&site, &redis.url(), &dir, 3, &extra);
    for (child, _) in workers {
        let output = finish(child, Duration::from_secs(120));
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(printed.contains("proxy budget reached"), "every worker stops at the budget: {printed}");
    }
    let through = gateway.observed();
    let wire = through.bytes_from_clients + through.bytes_to_clients;
    println!("{wire} bytes through the gateway for a budget of {BUDGET_BYTES}");
    // Each worker on a budget of its own would have spent three times it.
    assert!(wire >= BUDGET_BYTES * 9 / 10, "the budget was spent: {wire} bytes");
    assert!(wire < BUDGET_BYTES * 2, "{wire} bytes through the gateway for a fleet budget of {BUDGET_BYTES}");
    assert!(site.observed().pages().count() < 1000, "the crawl stopped before the site's end");
}

#[test]
fn an_unreachable_or_refusing_redis_is_a_configuration_error_before_any_request() {
    let _ports = support::example_ports();
    let (site, _) = site(0);
    let dir = temp_dir("refused");
    let output = dir.join("out.jsonl");
    let closed = RedisServer::start().unwrap();
    let url = closed.url();
    drop(closed);
    let run = Command::new(support::example("books"))
        .args(["--set", &format!("frontier={url}"), "-o"])
        .arg(&output)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "a configuration error: {stderr}");
    assert!(stderr.contains("cannot use the fleet's Redis"), "{stderr}");
    assert!(!output.exists(), "no file is touched");

    let redis = RedisServer::start().unwrap();
    redis.command(&["CONFIG", "SET", "requirepass", "s3cret-pw"]).unwrap();
    let wrong = redis.url().replace("redis://", "redis://:wrong-pw@");
    let mut args = vec!["--set".to_owned(), format!("start_urls={}", site.url())];
    args.extend(["--set".to_owned(), format!("frontier={wrong}")]);
    let run = support::child_command(module_path!(), "fleet_worker", WORKER, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("cannot use the fleet's Redis at redis://***@"), "{stderr}");
    assert!(stderr.contains("it refused the password the address gives"), "{stderr}");
    assert!(!stderr.contains("wrong-pw"), "the password is never printed: {stderr}");

    // No password at all: redis-rs words it as an aborted transaction; the worker says what is wrong.
    let mut args = vec!["--set".to_owned(), format!("start_urls={}", site.url())];
    args.extend(["--set".to_owned(), format!("frontier={}", redis.url())]);
    let run = support::child_command(module_path!(), "fleet_worker", WORKER, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("it wants a password, and the address gives none; give it in the URL"),
        "{stderr}"
    );
    assert!(!stderr.contains("Transaction aborted"), "{stderr}");
    assert_eq!(site.received(), 0, "nothing is fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_worker_shows_the_fleets_block_rate() {
    let (site, _) = site(20);
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("gauge");
    let worker = |name: &str| in_process_worker(&site, &redis, &dir, name).per_host(2 * CONCURRENCY);
    // One worker takes every book page for a block ("In stock" is on each); the other
    // sees none, and shows the fleet's block rate all the same.
    let strict = spiderling::Crawler::with_config(
        BookSpider::new(worker("strict")),
        worker("strict").block_marker("In stock"),
    );
    let calm = spiderling::Crawler::with_config(BookSpider::new(worker("calm")), worker("calm"));
    let mut live = calm.live();
    let watch = tokio::spawn(async move {
        let mut most: f64 = 0.0;
        while live.changed().await.is_ok() {
            most = most.max(live.borrow().block_rate);
        }
        most
    });
    let (strict, calm) = tokio::join!(strict.run(), calm.run());
    let (strict, calm) = (strict.unwrap(), calm.unwrap());
    assert!(strict.counts.blocked > 0, "the strict worker blocks pages");
    assert_eq!(calm.counts.blocked, 0, "the calm worker blocks none itself");
    let shown = watch.await.unwrap();
    assert!(shown > 0.05, "the calm worker's gauge shows the fleet's blocks: {shown}");
}

/// The part of the crawl's `parts` a host key falls in: FNV-1a of its text, as the
/// workers place hosts.
fn part_of(host: &str, parts: u64) -> u64 {
    let hash = host.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % parts
}

/// The last page a site served, since `from`.
fn last_page(site: &Sandbox, from: Instant) -> Duration {
    let observed = site.observed();
    let last = observed.pages().map(|hit| hit.at).max().unwrap_or_default();
    (observed.started + last).saturating_duration_since(from)
}

#[test]
fn a_part_left_without_a_worker_draws_one_from_a_busy_part() {
    // The crawl in two parts on one Redis: a slow shop in one, a small one in the other.
    let slow = DemoSite { books: 1000, latency: Duration::from_millis(100), ..DemoSite::default() };
    let small = DemoSite { books: 20, ..DemoSite::default() };
    let a = Sandbox::demo(slow.clone()).unwrap();
    let part_a = part_of(a.url().trim_end_matches('/'), 2);
    let b = std::iter::repeat_with(|| Sandbox::demo(small.clone()).unwrap())
        .take(100)
        .find(|b| part_of(b.url().trim_end_matches('/'), 2) != part_a)
        .unwrap();
    let redis = RedisServer::start().unwrap();
    let dir = temp_dir("drain");
    let two = ["--set", "partitions=2", "--set", "lease=2s"];
    let started = Instant::now();
    let busy = start_workers(&a, &redis.url(), &dir, 2, &two);
    wait_for_pages(&a, 20);
    // A third worker queues the small shop's start in its part, and is killed: that part
    // has work and no worker, while the slow shop's part has two.
    let output = dir.join("killed.jsonl");
    let mut third = worker_command(&b, &redis.url(), &output, &two).spawn().unwrap();
    let seq = format!("spiderling:{{books/{}}}:seq", 1 - part_a);
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis.command(&["GET", &seq]).unwrap().trim_start_matches(['$', ':']).parse::<u64>().unwrap_or(0)
        == 0
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    third.kill().unwrap();
    third.wait().unwrap();
    for (child, _) in busy {
        assert_success(&finish(child, Duration::from_secs(180)));
    }
    for (site, demo) in [(&a, &slow), (&b, &small)] {
        let pages: BTreeSet<String> = site.observed().pages().map(|h| h.resource()).collect();
        assert_eq!(pages.len(), demo.expected_pages() + 1, "every page of each shop is fetched");
    }
    let (slow_done, small_done) = (last_page(&a, started), last_page(&b, started));
    assert!(
        small_done + Duration::from_secs(10) < slow_done,
        "the small shop ({small_done:?}) was crawled while the slow one ({slow_done:?}) still had work"
    );
}

/// The fleet on a Redis Cluster of three masters, each with a replica: the crawl is split
/// into a part per master by host, each part's keys under one hash tag, so each round is
/// one script on one master; a write a worker acts on is on a replica first.
mod cluster {
    use super::*;
    use spider_sandbox::RedisCluster;

    /// The crawl's own record, in the crawl's slot: the parts' tags are there.
    const CRAWL_KEY: &str = "spiderling:{books}:meta";

    fn cluster() -> RedisCluster {
        RedisCluster::start(3, 1).unwrap()
    }

    #[test]
    fn three_workers_fetch_every_page_once_write_every_item_once_and_hold_one_rpm() {
        // 30 requests a second for the fleet: the demo site's 1,051 pages take 35 s.
        const RPM: usize = 1800;
        let (site, demo) = site(5);
        let cluster = cluster();
        let dir = temp_dir("cluster-three");
        let workers = start_workers(&site, &cluster.url(), &dir, 3, &["--set", &format!("rpm={RPM}")]);
        let by_worker = items_by_worker(workers, Duration::from_secs(180));
        let wrote: Vec<usize> = by_worker.iter().map(Vec::len).collect();
        let items: Vec<Book> = by_worker.into_iter().flatten().collect();
        let observed = site.observed();
        assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
        assert_eq!(observed.pages().count(), demo.expected_pages() + 1, "every page is fetched");
        assert!(wrote.iter().all(|n| *n > 0), "every worker took part: {wrote:?}");
        assert_eq!(items.len(), demo.books, "every item is written once across the outputs");
        let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
        assert_eq!(titles.len(), demo.books);
        // Starts are spaced evenly: any ten seconds (less 100 ms of arrival jitter) hold
        // at most a sixth of the minute's.
        let most = observed.max_in_window(Duration::from_secs(10) - Duration::from_millis(100));
        assert!(most <= RPM / 6, "{most} requests in ten seconds, over the fleet's rpm = {RPM}");
        assert!(most * 10 >= RPM / 6 * 9, "only {most} requests in the busiest ten seconds");
    }

    /// A Redis Cluster over TLS that asks clients for a certificate, as managed clusters
    /// serve one: the nodes talk TLS to each other and give clients their TLS ports. Two
    /// workers through `rediss+cluster://` with the CA and a client certificate fetch
    /// every page once and write every item once. Before, such a URL was read and handed
    /// to the client library, and never tried.
    #[test]
    fn two_workers_over_a_tls_cluster_with_a_client_certificate_write_every_item_once() {
        let (site, demo) = site(5);
        let cluster = RedisCluster::start_tls(3, 1).unwrap();
        assert!(cluster.url().starts_with("rediss+cluster://"), "{}", cluster.url());
        let (cert, key) = cluster.client_files().unwrap();
        let frontier = format!(
            "{}?cacert={}&cert={}&key={}",
            cluster.url(),
            cluster.ca_file().unwrap().display(),
            cert.display(),
            key.display()
        );
        let dir = temp_dir("cluster-tls");
        let workers = start_workers(&site, &frontier, &dir, 2, &[]);
        let items: Vec<Book> =
            items_by_worker(workers, Duration::from_secs(120)).into_iter().flatten().collect();
        let observed = site.observed();
        assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
        assert_eq!(observed.pages().count(), demo.expected_pages() + 1, "every page is fetched");
        assert_eq!(items.len(), demo.books, "every item is written once across the outputs");
        let master = cluster.master_of(CRAWL_KEY).unwrap();
        assert_eq!(
            cluster.command(master, &["EXISTS", CRAWL_KEY]).unwrap(),
            ":1",
            "the crawl lived in this cluster"
        );
    }

    #[test]
    fn a_master_killed_mid_crawl_and_its_replica_promoted_loses_nothing() {
        let (site, demo) = site(10);
        let mut cluster = cluster();
        let dir = temp_dir("cluster-failover");
        let workers = start_workers(&site, &cluster.url(), &dir, 3, &[]);
        wait_for_pages(&site, 200);
        // The master of the part that holds the site's host.
        let tags = part_tags(&cluster);
        let tag = &tags[part_of(site.url().trim_end_matches('/'), tags.len() as u64) as usize];
        let key = format!("spiderling:{{{tag}}}:meta");
        let master = cluster.master_of(&key).unwrap();
        cluster.kill(master);
        let pages_at_kill = site.observed().pages().count();
        let promoted = cluster.wait_for_failover(&key, master, Duration::from_secs(30)).unwrap();
        let mut items = Vec::new();
        let mut logs = String::new();
        for (child, output) in workers {
            let run = finish(child, Duration::from_secs(180));
            assert_success(&run);
            logs.push_str(&String::from_utf8_lossy(&run.stderr));
            items.extend(read_jsonl(&output));
        }
        assert_ne!(promoted, master);
        assert!(pages_at_kill < demo.expected_pages(), "the kill came mid-crawl");
        assert!(logs.contains("lost Redis"), "the workers say they lost Redis: {logs}");
        let observed = site.observed();
        assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
        assert_eq!(observed.pages().count(), demo.expected_pages() + 1, "no page is lost");
        assert_eq!(items.len(), demo.books, "every item is written once");
        let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
        assert_eq!(titles.len(), demo.books);
    }

    #[test]
    fn a_worker_killed_mid_crawl_loses_nothing() {
        let (site, demo) = site(10);
        let cluster = cluster();
        let dir = temp_dir("cluster-kill");
        let workers = start_workers(&site, &cluster.url(), &dir, 2, &["--set", "lease=2s"]);
        let (pages_at_kill, killed_output, survivor_output) = kill_one_of_two(&site, workers);

        let observed = site.observed();
        let fetched: BTreeSet<String> = observed.pages().map(|h| h.resource()).collect();
        assert_eq!(fetched.len(), demo.expected_pages() + 1, "every page is fetched despite the kill");
        assert!(pages_at_kill < demo.expected_pages(), "the kill came mid-crawl");
        let twice: usize = observed.duplicates().values().map(|n| n - 1).sum();
        assert!(twice <= 2 * CONCURRENCY, "{twice} pages fetched again after the kill");
        // The committed part of the outputs, merged: every item once.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let report = runtime.block_on(spiderling::FleetReport::read(&cluster.url(), Some("books"))).unwrap();
        let merged = dir.join("merged.jsonl");
        assert_eq!(report.crawls[0].merge(&merged).unwrap(), demo.books as u64);
        assert_eq!(read_jsonl(&merged), expected_books(demo.books), "every item once, in one file");
        let mut items = read_jsonl(&killed_output);
        items.extend(read_jsonl(&survivor_output));
        let titles: BTreeSet<_> = items.iter().map(|b| b.title.clone()).collect();
        assert_eq!(titles.len(), demo.books, "no item is lost");
    }

    /// Demo sites of `books` books each, one in each of three parts, in the parts' order.
    fn one_site_a_part(demo: &DemoSite) -> Vec<Sandbox> {
        let mut sites: Vec<Option<Sandbox>> = vec![None, None, None];
        for _ in 0..200 {
            let site = Sandbox::demo(demo.clone()).unwrap();
            let part = part_of(site.url().trim_end_matches('/'), 3) as usize;
            if sites[part].is_none() {
                sites[part] = Some(site);
            }
            if sites.iter().all(Option::is_some) {
                break;
            }
        }
        sites.into_iter().map(Option::unwrap).collect()
    }

    fn start_urls(sites: &[Sandbox]) -> String {
        format!("start_urls={}", sites.iter().map(Sandbox::url).collect::<Vec<_>>().join(","))
    }

    /// The crawl's parts' tags, as the first worker recorded them in the crawl's slot.
    fn part_tags(cluster: &RedisCluster) -> Vec<String> {
        let master = cluster.master_of(CRAWL_KEY).unwrap();
        let json = cluster.command(master, &["HGET", CRAWL_KEY, "parts"]).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    fn assert_every_page_once(sites: &[Sandbox], demo: &DemoSite) {
        for site in sites {
            let observed = site.observed();
            assert_eq!(observed.duplicates(), Default::default(), "no page is fetched twice");
            assert_eq!(
                observed.pages().count(),
                demo.expected_pages() + 1,
                "every page of every host is fetched"
            );
        }
    }

    #[test]
    fn a_crawl_of_three_hosts_spreads_over_the_three_masters_and_holds_one_rpm() {
        // 30 requests a second for the fleet: three sites of 106 pages take 11 s.
        const RPM: usize = 1800;
        let demo = DemoSite { books: 100, latency: Duration::from_millis(5), ..DemoSite::default() };
        let sites = one_site_a_part(&demo);
        let cluster = cluster();
        let dir = temp_dir("cluster-parts");
        let extra = ["--set", &start_urls(&sites), "--set", &format!("rpm={RPM}")];
        let workers = start_workers(&sites[0], &cluster.url(), &dir, 3, &extra);
        let items: Vec<Book> =
            items_by_worker(workers, Duration::from_secs(180)).into_iter().flatten().collect();
        assert_every_page_once(&sites, &demo);
        assert_eq!(items.len(), 3 * demo.books, "every item of every host is written once");
        // Each master holds the seen-set of its part's host: the crawl is spread.
        let tags = part_tags(&cluster);
        assert_eq!(tags.len(), 3, "one part per master: {tags:?}");
        let mut masters: Vec<u16> = tags
            .iter()
            .map(|tag| cluster.master_of(&format!("spiderling:{{{tag}}}:meta")).unwrap())
            .collect();
        masters.sort_unstable();
        masters.dedup();
        assert_eq!(masters.len(), 3, "the parts are on three masters");
        for tag in &tags {
            let master = cluster.master_of(&format!("spiderling:{{{tag}}}:meta")).unwrap();
            let seen = cluster.command(master, &["EXISTS", &format!("spiderling:{{{tag}}}:seq")]).unwrap();
            assert_eq!(seen, ":1", "part {tag} queued its host's pages on its master");
        }
        // One rate between every worker in every part: any ten seconds (less 100 ms of
        // arrival jitter) hold at most a sixth of the minute's.
        let mut arrivals: Vec<Instant> = sites
            .iter()
            .flat_map(|site| {
                let observed = site.observed();
                observed.hits.iter().map(|hit| observed.started + hit.at).collect::<Vec<_>>()
            })
            .collect();
        arrivals.sort_unstable();
        let window = Duration::from_secs(10) - Duration::from_millis(100);
        let most = (0..arrivals.len())
            .map(|i| arrivals[i..].iter().take_while(|at| **at - arrivals[i] <= window).count())
            .max()
            .unwrap_or(0);
        assert!(most <= RPM / 6, "{most} requests in ten seconds, over the fleet's rpm = {RPM}");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let report = runtime.block_on(spiderling::FleetReport::read(&cluster.url(), Some("books"))).unwrap();
        let crawl = &report.crawls[0];
        assert_eq!(crawl.status, spiderling::FleetStatus::Done, "the last worker found every part empty");
        assert_eq!(crawl.totals.items, 3 * demo.books as u64, "the totals are summed over the parts");
    }

    #[test]
    fn a_crawl_in_parts_loses_nothing_to_a_killed_master_or_a_killed_worker() {
        let demo = DemoSite { books: 300, latency: Duration::from_millis(10), ..DemoSite::default() };
        let sites = one_site_a_part(&demo);
        let mut cluster = cluster();
        let dir = temp_dir("cluster-parts-kill");
        let extra = ["--set", &start_urls(&sites), "--set", "lease=2s"];
        let mut workers = start_workers(&sites[0], &cluster.url(), &dir, 3, &extra);
        let served = || sites.iter().map(|site| site.observed().pages().count()).sum::<usize>();
        let started = Instant::now();
        while served() < 150 && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        // A worker SIGKILLed: its leases go back to its part.
        let (mut killed, killed_output) = workers.remove(0);
        killed.kill().unwrap();
        killed.wait().unwrap();
        // And the master of the first host's part, its replica promoted.
        let tag = part_tags(&cluster)[0].clone();
        let key = format!("spiderling:{{{tag}}}:meta");
        let master = cluster.master_of(&key).unwrap();
        cluster.kill(master);
        let at_kill = served();
        let promoted = cluster.wait_for_failover(&key, master, Duration::from_secs(30)).unwrap();
        let mut outputs = vec![killed_output];
        for (child, output) in workers {
            assert_success(&finish(child, Duration::from_secs(180)));
            outputs.push(output);
        }
        assert_ne!(promoted, master);
        assert!(at_kill < 3 * demo.expected_pages(), "the kills came mid-crawl");
        for site in &sites {
            let fetched: BTreeSet<String> = site.observed().pages().map(|h| h.resource()).collect();
            assert_eq!(fetched.len(), demo.expected_pages() + 1, "every page of every host is fetched");
        }
        let twice: usize = sites
            .iter()
            .map(|site| site.observed().duplicates().values().map(|n| n - 1).sum::<usize>())
            .sum();
        // What the killed worker held, and what each worker of the killed master's part
        // held through the failover, when it took longer than their leases: at most
        // every worker's concurrency and lookahead once.
        let held = CONCURRENCY + CONCURRENCY.div_ceil(2);
        assert!(twice <= 3 * held, "{twice} pages fetched again after the kills");
        // The committed parts of the outputs, merged: every item once.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let report = runtime.block_on(spiderling::FleetReport::read(&cluster.url(), Some("books"))).unwrap();
        let merged = dir.join("merged.jsonl");
        assert_eq!(report.crawls[0].merge(&merged).unwrap(), 3 * demo.books as u64, "every item once");
    }
}
