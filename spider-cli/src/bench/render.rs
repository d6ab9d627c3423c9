//! `spiderling bench --rendered`: the rendering tier on the client-rendered shop, half its
//! products built by script and half served whole. Each contender runs as a child process
//! of this binary; the parent samples the resident memory of the child's whole process
//! tree, browsers included, every 100 ms, and counts what the site received.
//!
//! Contenders: `render-always` (every page in the browser) and `render-auto` (the answer
//! as sent first, the browser only where it lacks the item or the links), the same spider;
//! with `--crawlee SCRIPT`, Crawlee's PlaywrightCrawler running that script under `node`
//! on the same shop, measured the same way (`bench/crawlee/`).

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use spider_sandbox::{RenderedSite, Sandbox};
use spiderling::prelude::*;

use super::measure::{cpu_seconds, lines_in, peak_rss_kb, Run};

/// A product, whichever way its page was built.
#[derive(Item, Serialize)]
struct Product {
    #[page(url)]
    url: String,
    #[css("h1.name")]
    name: String,
    #[css("p.price")]
    price: String,
}

#[derive(Spider, Default)]
#[spider(
    name = "bench-rendered",
    start_urls = ["http://127.0.0.1/"],
    allowed_domains = ["127.0.0.1"],
    rule(css = "a.product", allow = r"/product/\d+$", parse = Product),
    rule(css = "a.plain", allow = r"/plain/\d+$", parse = Product),
    rule(allow = ["/list/$", "/plain/$"], follow, click = "button.more"),
)]
struct Shop;

/// What the parent saw of one contender.
#[derive(Debug, serde::Serialize)]
struct Measured {
    contender: &'static str,
    pages: usize,
    items: usize,
    rendered: usize,
    elapsed_secs: f64,
    pages_per_sec: f64,
    /// The peak of the sum of the resident memory of the contender's processes.
    peak_tree_rss_mb: f64,
    /// The same peak over the first and the second half of the pages the site served:
    /// flat memory has them alike.
    first_half_peak_mb: f64,
    second_half_peak_mb: f64,
}

/// The bench's settings.
pub(super) struct Setup {
    pub(super) pages: usize,
    pub(super) concurrency: usize,
    pub(super) json: bool,
    pub(super) only: Option<&'static str>,
    pub(super) crawlee: Option<std::path::PathBuf>,
}

/// The contenders' names, and the render mode each runs with (Crawlee renders every page).
const CONTENDERS: [(&str, &str); 3] =
    [("render-always", "always"), ("render-auto", "auto"), ("crawlee", "always")];

/// Serve the half-rendered shop, run each contender on a fresh one, print the results.
pub(super) fn run(setup: &Setup) -> ExitCode {
    let mut rows = Vec::new();
    let wanted = |name: &str| match setup.only {
        Some(only) => only == name,
        None => name != "crawlee" || setup.crawlee.is_some(),
    };
    for (name, mode) in CONTENDERS.iter().filter(|(name, _)| wanted(name)) {
        // Half the products client-rendered, half served whole, 100 to a click of "load more":
        // 5,000 products take 25 clicks, within the 50 a render allows.
        let half = (setup.pages / 2).max(1);
        let shop = RenderedSite::new().products(half).plain(half).page_size(100).delay_ms(0);
        let site = match Sandbox::rendered(shop) {
            Ok(site) => site,
            Err(error) => {
                eprintln!("error: cannot serve the rendered shop on 127.0.0.1: {error}");
                return ExitCode::FAILURE;
            }
        };
        match measure(name, mode, &site, setup) {
            Ok(row) => rows.push(row),
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    if setup.json {
        spiderling::outln!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
    } else {
        spiderling::outln!(
            "rendered bench: {} products (half built by script), concurrency {}",
            setup.pages,
            setup.concurrency
        );
        spiderling::outln!(
            "{:<14} {:>6} {:>6} {:>9} {:>9} {:>8} {:>10} {:>11} {:>11}",
            "contender",
            "pages",
            "items",
            "rendered",
            "wall s",
            "pages/s",
            "peak MB",
            "1st half",
            "2nd half"
        );
        for row in &rows {
            spiderling::outln!(
                "{:<14} {:>6} {:>6} {:>9} {:>9.1} {:>8.1} {:>10.0} {:>11.0} {:>11.0}",
                row.contender,
                row.pages,
                row.items,
                row.rendered,
                row.elapsed_secs,
                row.pages_per_sec,
                row.peak_tree_rss_mb,
                row.first_half_peak_mb,
                row.second_half_peak_mb
            );
        }
        let rate = |name: &str| rows.iter().find(|row| row.contender == name).map(|row| row.pages_per_sec);
        if let (Some(always), Some(auto)) = (rate("render-always"), rate("render-auto")) {
            spiderling::outln!("auto / always pages/s: {:.2}", auto / always.max(f64::EPSILON));
        }
        if let (Some(always), Some(crawlee)) = (rate("render-always"), rate("crawlee")) {
            spiderling::outln!("render-always / crawlee pages/s: {:.2}", always / crawlee.max(f64::EPSILON));
        }
    }
    ExitCode::SUCCESS
}

/// Run contender `name` (render mode `mode`) against `site` as a child process, sampling
/// its process tree's memory.
fn measure(name: &'static str, mode: &str, site: &Sandbox, setup: &Setup) -> Result<Measured, String> {
    let dir = std::env::temp_dir().join(format!("spiderling-bench-rendered-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let output = dir.join(format!("{name}.jsonl"));
    // Its log to a file: a pipe nobody reads meanwhile would fill and stall it.
    let log = dir.join(format!("{name}.log"));
    let log_file =
        std::fs::File::create(&log).map_err(|error| format!("cannot create {}: {error}", log.display()))?;
    let exe = std::env::current_exe().map_err(|error| format!("cannot find this binary: {error}"))?;
    let mut command = match (&setup.crawlee, name) {
        (Some(script), "crawlee") => {
            let mut node = Command::new("node");
            node.arg(script).env("CRAWLEE_STORAGE_DIR", dir.join("crawlee-storage"));
            node
        }
        _ => {
            let mut own = Command::new(exe);
            own.args(["bench", "--rendered", "--contender", "render", "--render-mode", mode]);
            own
        }
    };
    let started = Instant::now();
    let mut child = command
        .args(["--url", &site.url()])
        .arg("--output")
        .arg(&output)
        .args(["--concurrency", &setup.concurrency.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .map_err(|error| format!("cannot start the {name} contender: {error}"))?;
    // Samples of (pages the site served, the tree's memory).
    let mut samples: Vec<(usize, u64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3600);
    while child.try_wait().map_err(|error| error.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("the {name} contender ran past an hour"));
        }
        let pages =
            site.observed().hits.iter().filter(|hit| RenderedSite::kind(&hit.target) == "page").count();
        samples.push((pages, spiderling::process_tree_rss(child.id()).unwrap_or(0)));
        std::thread::sleep(Duration::from_millis(100));
    }
    let wall = started.elapsed().as_secs_f64();
    let done = child.wait_with_output().map_err(|error| error.to_string())?;
    let items = lines_in(&output);
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if !done.status.success() {
        return Err(format!("the {name} contender failed ({}):\n{logged}", done.status));
    }
    // Spiderling's own run times its crawl; another crawler's is timed from outside,
    // start-up included.
    let stdout = String::from_utf8_lossy(&done.stdout);
    let run = stdout.lines().last().and_then(|line| serde_json::from_str::<Run>(line).ok());
    let elapsed_secs = run.map_or(wall, |run| run.elapsed_secs);
    let observed = site.observed();
    let pages = observed.hits.iter().filter(|hit| RenderedSite::kind(&hit.target) == "page").count();
    let rendered = observed.hits.iter().filter(|hit| RenderedSite::kind(&hit.target) == "script").count();
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let peak = |range: std::ops::Range<usize>| {
        samples.iter().filter(|(served, _)| range.contains(served)).map(|(_, rss)| *rss).max().unwrap_or(0)
    };
    Ok(Measured {
        contender: name,
        pages,
        items,
        rendered,
        elapsed_secs,
        pages_per_sec: pages as f64 / elapsed_secs.max(f64::EPSILON),
        peak_tree_rss_mb: mb(samples.iter().map(|(_, rss)| *rss).max().unwrap_or(0)),
        first_half_peak_mb: mb(peak(0..pages / 2)),
        second_half_peak_mb: mb(peak(pages / 2..usize::MAX)),
    })
}

/// The child's crawl: the shop with `render = mode`, items to `output`.
pub(super) async fn crawl(url: &str, mode: &str, concurrency: usize, output: &Path) -> Result<Run, Error> {
    let config = Shop
        .config()
        .set("start_urls", url)?
        .set("render", mode)?
        .concurrency(concurrency)
        .per_host(concurrency)
        .delay(Duration::ZERO)
        .progress(false)
        .output(output);
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let summary = Crawler::with_config(Shop, config).run().await?;
    let items = lines_in(output);
    Ok(Run {
        pages: usize::try_from(summary.counts.pages).unwrap_or(usize::MAX),
        streamed_pages: 0,
        items,
        elapsed_secs: started.elapsed().as_secs_f64(),
        latency_p50_ms: 0.0,
        latency_p99_ms: 0.0,
        cpu_secs: cpu_seconds() - cpu,
        peak_rss_kb: peak_rss_kb(),
    })
}
