//! `spiderling bench`: how fast Spiderling crawls next to the loop one would write by
//! hand, on a local site served the same way to every contender.
//!
//! The parent serves the demo bookshop (on a thread of its own, padded to `--page-kb`,
//! each page delayed by `--latency-ms`) and runs each contender in turn as a child
//! process of this binary (`bench --contender NAME`, hidden), so CPU time and peak RSS
//! are each contender's own. A child crawls the site, prints its [`Run`] as one JSON
//! line, and exits; the parent adds what the server saw of that contender (pages,
//! duplicates) and the server's own CPU time, and prints the table (or JSON).
//!
//! Contenders:
//! - `spiderling`: a derived spider and item, default middleware, items to a file; its
//!   selectors all stream, so it reads pages with the streaming engine;
//! - `spiderling-dom`: the same spider with `--set extract=dom`, each page parsed into a DOM;
//! - `state`: the same spider keeping its crawl in a state file (the cost of durability);
//! - `rules`: the spider users write now, two link rules, a page field, a JSON-LD field;
//! - `identities`: `rules` with a user agent per identity and the cookie jars;
//! - `bare`: tokio + reqwest + scraper with a semaphore of C (see `bare.rs`);
//! - `sequential`: one request at a time, on the first `--sample` pages.
//!
//! With `--workers 1,2,…` the bench measures the fleet instead (`fleet.rs`): for each
//! count, that many `spiderling` workers at once sharing one crawl through Redis. With
//! `--session-limited`, adaptive mode against hand-set crawls on the session-limited shop
//! (`sessions.rs`).

mod bare;
mod fleet;
mod measure;
mod real_pages;
#[cfg(feature = "render")]
mod render;
mod results;
mod sequential;
mod sessions;
mod spiderling;
mod work;

use spiderling::{Client, Engine, Shape, Wire};

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use spider_sandbox::{DemoSite, Sandbox};

use measure::{cpu_seconds, Run};
use results::{Report, Row, Setup};

/// Books per listing page of the generated site.
const PER_PAGE: usize = 20;
/// Listings each listing links to. With only a "next" link the listings form a chain and
/// a crawl finds at most 21 pages per listing fetched, too few to keep 64 requests in
/// flight once the server has latency; ten make the frontier wide enough.
const PAGER: usize = 10;

/// Books in a generated site of about `pages` pages in all (home, listings and books).
pub(crate) fn books_for(pages: usize) -> usize {
    (pages.max(2) * PER_PAGE / (PER_PAGE + 1)).max(1)
}

/// The generated site: `books` books, [`PER_PAGE`] to a listing, every page padded to
/// `page_kb` KiB and answered after `latency_ms`. The bench serves this site, and so does
/// `spiderling sandbox`, so that another crawler can be measured on the same one.
pub(crate) fn demo_site(books: usize, page_kb: usize, latency_ms: u64) -> DemoSite {
    DemoSite {
        books,
        per_page: PER_PAGE,
        latency: Duration::from_millis(latency_ms),
        page_bytes: page_kb * 1024,
        pager: PAGER,
        ..DemoSite::default()
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Pages of the generated site (home, listings and books), about.
    #[arg(long, default_value_t = 2000)]
    pages: usize,
    /// Requests in flight for the concurrent contenders.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Time the server waits before answering each page.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Size of each page, in KiB (filler paragraphs without links).
    #[arg(long, default_value_t = 15)]
    page_kb: usize,
    /// CPU spun per item extracted, in every contender, in microseconds.
    #[arg(long, default_value_t = 0)]
    parse_cost_us: u64,
    /// Pages the sequential loop crawls: enough for a rate, few enough to finish soon.
    #[arg(long, default_value_t = 300)]
    sample: usize,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Measure the fleet instead: for each count in the list, that many `spiderling`
    /// workers at once sharing one crawl through Redis, each with --concurrency slots.
    #[arg(long, value_delimiter = ',', value_name = "N,N,…")]
    workers: Vec<usize>,
    /// With --workers: the Redis the fleet shares (`redis://HOST:PORT/DB`,
    /// `redis+cluster://HOST:PORT,HOST:PORT`, or `env:VAR`); without it the bench starts a
    /// `redis-server` of its own and stops it after. The bench's crawls are removed from it
    /// after each run.
    #[arg(long, value_name = "REDIS_URL")]
    frontier: Option<String>,
    /// With --workers: run each count on one Redis and again on a Redis Cluster of this
    /// many masters (at least 3) that the bench starts on 127.0.0.1, side by side; with
    /// --fleet-memory: fill a crawl on such a cluster.
    #[arg(long, value_name = "MASTERS", conflicts_with = "frontier")]
    cluster: Option<usize>,
    /// With --cluster: the replicas of each master (a round's writes are acted on once one
    /// has them).
    #[arg(long, default_value_t = 1, requires = "cluster")]
    replicas: usize,
    /// Measure what a fleet crawl's shared state costs Redis instead: requests for new URLs
    /// enqueued through the workers' round script into a fresh crawl (in --frontier's
    /// Redis, or one the bench starts), with memory per seen URL and per queued request,
    /// the enqueue rate and Redis commands per request at each count in the list.
    #[arg(long, value_delimiter = ',', value_name = "N,N,…", conflicts_with = "workers")]
    fleet_memory: Vec<u64>,
    /// With --fleet-memory: the hosts the requests spread over.
    #[arg(long, default_value_t = 1_000_000)]
    hosts: u64,
    /// With --fleet-memory: then lease and finish this many of them as one worker with two
    /// slots a host would, for the lease rate.
    #[arg(long, default_value_t = 100_000)]
    lease: u64,
    /// With --workers: copies of the site, each on a port of its own (a host of its own to
    /// the fleet), --pages split among them, every worker started at all of them: the
    /// crawl of many hosts that a Redis Cluster spreads over its masters.
    #[arg(long, default_value_t = 1)]
    sites: usize,
    /// With --workers: a run whose workers have not all exited by then is killed and
    /// reported as failed.
    #[arg(long, default_value_t = 300)]
    run_timeout_secs: u64,
    /// Measure the real web instead: the pages of this folder (`NAME/source.html` each,
    /// as the shared real pages are kept) served gzipped by nginx, --copies times each,
    /// crawled by an articles spider with the streaming engine, the DOM, and the main
    /// content as Markdown besides, and by the bare loop doing the same.
    #[arg(long, value_name = "DIR", conflicts_with = "workers")]
    real_pages: Option<PathBuf>,
    /// With --real-pages: how many times each page is served, under a name of its own.
    #[arg(long, default_value_t = 24)]
    copies: usize,
    /// Measure adaptive mode against hand-set crawls on the session-limited shop instead:
    /// --pages products, --latency-ms a page, --concurrency the ceiling.
    #[arg(long, conflicts_with = "workers")]
    session_limited: bool,
    /// With --session-limited: rounds of every contender, alternating.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Measure the wire instead, over TLS (the site as `spiderling sandbox --tls` serves
    /// it): the rules spider on HTTP/1.1 (`rules-h1`), on HTTP/2 (`rules`), and with
    /// Chrome's wire (`rules-chrome`, built with the `impersonate` feature).
    #[arg(long, conflicts_with_all = ["workers", "session_limited"])]
    tls: bool,
    /// Measure the rendering tier instead, on the client-rendered shop with half its
    /// products built by script (--pages products): every page rendered against auto mode,
    /// pages/s and the peak memory of each contender's process tree, browsers included.
    #[arg(long, conflicts_with_all = ["workers", "session_limited", "tls"])]
    rendered: bool,
    /// With --rendered: only this contender (`render-always`, `render-auto` or `crawlee`).
    #[arg(long, requires = "rendered", value_parser = ["render-always", "render-auto", "crawlee"])]
    only: Option<String>,
    /// With --rendered: also run Crawlee's PlaywrightCrawler, this script under `node`
    /// (`bench/crawlee/shop.mjs`, set up by `bench/crawlee/run.sh`), on the same shop.
    #[arg(long, requires = "rendered", value_name = "SCRIPT")]
    crawlee: Option<PathBuf>,
    /// Internal: the render mode of the rendered bench's contender.
    #[arg(long, hide = true)]
    render_mode: Option<String>,
    /// Internal: the certificate a contender trusts (with --tls).
    #[arg(long, hide = true)]
    ca_cert: Option<PathBuf>,
    /// Internal: run one contender against --url and print its run as JSON.
    #[arg(long, hide = true, requires_all = ["url", "output"])]
    contender: Option<Contender>,
    /// Internal: the site a contender crawls (the fleet's workers: its sites, comma-separated).
    #[arg(long, hide = true)]
    url: Option<String>,
    /// Internal: where a contender writes its items.
    #[arg(long, hide = true)]
    output: Option<PathBuf>,
    /// Internal: the fleet's crawl a worker joins (with --frontier).
    #[arg(long, hide = true, requires = "frontier")]
    crawl_id: Option<String>,
    /// Internal: the fleet's per-host limit a worker sends (with --frontier).
    #[arg(long, hide = true, requires = "frontier")]
    per_host: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Contender {
    Spiderling,
    SpiderlingDom,
    State,
    Rules,
    RulesH1,
    RulesChrome,
    Identities,
    Bare,
    Sequential,
    /// The rendered bench's contender, its mode in --render-mode.
    Render,
    /// The real-pages bench's contenders (`real_pages.rs`).
    Articles,
    ArticlesDom,
    ArticlesMarkdown,
    ArticlesBare,
}

impl Contender {
    const ALL: [Contender; 7] = [
        Contender::Spiderling,
        Contender::SpiderlingDom,
        Contender::State,
        Contender::Rules,
        Contender::Identities,
        Contender::Bare,
        Contender::Sequential,
    ];

    fn name(self) -> &'static str {
        match self {
            Contender::Spiderling => "spiderling",
            Contender::SpiderlingDom => "spiderling-dom",
            Contender::State => "state",
            Contender::Rules => "rules",
            Contender::RulesH1 => "rules-h1",
            Contender::RulesChrome => "rules-chrome",
            Contender::Identities => "identities",
            Contender::Bare => "bare",
            Contender::Sequential => "sequential",
            Contender::Render => "render",
            Contender::Articles => "articles",
            Contender::ArticlesDom => "articles-dom",
            Contender::ArticlesMarkdown => "articles-markdown",
            Contender::ArticlesBare => "articles-bare",
        }
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    match (args.contender, &args.url, &args.output) {
        (Some(contender), Some(url), Some(output)) => child(contender, url, output, &args),
        _ if !args.workers.is_empty() => fleet::parent(&args),
        _ if !args.fleet_memory.is_empty() => fleet::memory::run(&args),
        _ if args.session_limited => {
            let setup = sessions::Setup {
                products: args.pages,
                concurrency: args.concurrency,
                latency_ms: args.latency_ms,
                rounds: args.rounds,
            };
            sessions::run(&setup, args.json)
        }
        _ if args.rendered => rendered(&args),
        _ if args.real_pages.is_some() => {
            let pages = args.real_pages.as_deref().unwrap_or(Path::new("."));
            real_pages::run(pages, args.copies.max(1), args.concurrency, args.json)
        }
        _ if args.frontier.is_some() || args.cluster.is_some() => {
            eprintln!(
                "error: --frontier and --cluster are the Redis of the fleet bench; give --workers or \
                --fleet-memory too"
            );
            ExitCode::from(2)
        }
        _ => parent(&args),
    }
}

/// The rendered bench, when this build renders.
fn rendered(args: &Args) -> ExitCode {
    #[cfg(feature = "render")]
    {
        let only = args.only.as_deref().and_then(|only| {
            ["render-always", "render-auto", "crawlee"].into_iter().find(|name| *name == only)
        });
        render::run(&render::Setup {
            pages: args.pages,
            concurrency: args.concurrency,
            json: args.json,
            only,
            crawlee: args.crawlee.clone(),
        })
    }
    #[cfg(not(feature = "render"))]
    {
        let _ = args;
        eprintln!("error: --rendered needs the render feature, which this build leaves out");
        ExitCode::from(2)
    }
}

/// Serve the site, run every contender against it in turn, print the results.
fn parent(args: &Args) -> ExitCode {
    let books = books_for(args.pages);
    let demo = demo_site(books, args.page_kb, args.latency_ms);
    let setup = Setup {
        expected_pages: demo.expected_pages(),
        books,
        concurrency: args.concurrency,
        latency_ms: args.latency_ms,
        page_kb: args.page_kb,
        parse_cost_us: args.parse_cost_us,
        parse_threads: measure::parse_threads(),
        sample: args.sample,
    };
    let site = if args.tls { Sandbox::demo_tls(demo) } else { Sandbox::demo(demo) };
    let site = match site {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve the bench site on 127.0.0.1: {error}");
            return ExitCode::FAILURE;
        }
    };
    let contenders: &[Contender] = match (args.tls, cfg!(feature = "impersonate")) {
        (false, _) => &Contender::ALL,
        (true, true) => &[Contender::RulesH1, Contender::Rules, Contender::RulesChrome],
        (true, false) => {
            eprintln!("note: rules-chrome needs the impersonate feature, which this build leaves out");
            &[Contender::RulesH1, Contender::Rules]
        }
    };
    let dir = std::env::temp_dir().join(format!("spiderling-bench-{}", std::process::id()));
    let ca = dir.join("sandbox-ca.pem");
    let rows =
        std::fs::create_dir_all(&dir).map_err(|error| format!("cannot create {}: {error}", dir.display()));
    let rows = rows.and_then(|()| match site.certificate_pem() {
        Some(pem) => {
            std::fs::write(&ca, pem).map_err(|error| format!("cannot write {}: {error}", ca.display()))
        }
        None => Ok(()),
    });
    let ca = site.certificate_pem().map(|_| ca.as_path());
    let rows = rows.and_then(|()| {
        contenders
            .iter()
            .map(|contender| measure(*contender, &site, &dir, ca, args))
            .collect::<Result<Vec<_>, _>>()
    });
    let _ = std::fs::remove_dir_all(&dir);
    let rows = match rows {
        Ok(rows) => rows,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let report = Report::new(setup, rows);
    crate::print_report(args.json, &report, || report.table())
}

/// Run `contender` as a child process against `site`, and what the server saw of it.
fn measure(
    contender: Contender,
    site: &Sandbox,
    dir: &Path,
    ca: Option<&Path>,
    args: &Args,
) -> Result<Row, String> {
    let name = contender.name();
    let output = dir.join(format!("{name}.jsonl"));
    let exe = std::env::current_exe().map_err(|error| format!("cannot find this binary: {error}"))?;
    let before = site.received();
    let server_cpu = cpu_seconds();
    let mut command = Command::new(exe);
    command.args(["bench", "--contender", name, "--url", &site.url()]);
    if let Some(ca) = ca {
        command.arg("--ca-cert").arg(ca);
    }
    let child = command
        .arg("--output")
        .arg(&output)
        .args(["--concurrency", &args.concurrency.to_string()])
        .args(["--parse-cost-us", &args.parse_cost_us.to_string()])
        .args(["--sample", &args.sample.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot start the {name} contender: {error}"))?;
    // The parent only waits meanwhile: its CPU time is the server's.
    let server_cpu_secs = cpu_seconds() - server_cpu;
    let stdout = String::from_utf8_lossy(&child.stdout);
    let run = stdout.lines().last().and_then(|line| serde_json::from_str::<Run>(line).ok());
    let Some(run) = run.filter(|_| child.status.success()) else {
        return Err(format!(
            "the {name} contender failed ({}):\n{}",
            child.status,
            String::from_utf8_lossy(&child.stderr)
        ));
    };
    let observed = site.observed();
    Ok(Row::new(name, run, observed.hits.get(before..).unwrap_or_default(), server_cpu_secs))
}

/// The hidden child mode: crawl with one contender and print its run as one JSON line.
fn child(contender: Contender, url: &str, output: &Path, args: &Args) -> ExitCode {
    let cost = Duration::from_micros(args.parse_cost_us);
    let (concurrency, sample) = (args.concurrency, args.sample);
    let ca_cert = args.ca_cert.as_deref();
    let fleet = args.frontier.as_deref().map(|redis| spiderling::Keep::Fleet {
        redis,
        crawl_id: args.crawl_id.as_deref().unwrap_or("bench"),
        per_host: args.per_host.unwrap_or(concurrency),
    });
    if fleet.is_some() && contender != Contender::Spiderling {
        eprintln!("error: only the spiderling contender joins a fleet");
        return ExitCode::from(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    let run = runtime.map_err(|error| error.to_string()).and_then(|runtime| {
        runtime.block_on(async {
            let start = url::Url::parse(url).map_err(|error| error.to_string())?;
            match contender {
                Contender::Spiderling => {
                    let keep = fleet.unwrap_or(spiderling::Keep::Memory);
                    spiderling::crawl(url, concurrency, cost, output, keep, Engine::Stream, Shape::Follow)
                        .await
                        .map_err(|error| error.to_string())
                }
                Contender::SpiderlingDom => {
                    let keep = spiderling::Keep::Memory;
                    spiderling::crawl(url, concurrency, cost, output, keep, Engine::Dom, Shape::Follow)
                        .await
                        .map_err(|error| error.to_string())
                }
                Contender::State => {
                    let state = output.with_extension("state");
                    spiderling::crawl(
                        url,
                        concurrency,
                        cost,
                        output,
                        spiderling::Keep::State(&state),
                        Engine::Stream,
                        Shape::Follow,
                    )
                    .await
                    .map_err(|error| error.to_string())
                }
                Contender::Rules | Contender::RulesH1 | Contender::RulesChrome | Contender::Identities => {
                    let shape = match contender {
                        Contender::Identities => Shape::Identities,
                        Contender::RulesH1 => Shape::Rules(Wire { client: Client::Http1, ca_cert }),
                        Contender::RulesChrome => Shape::Rules(Wire { client: Client::Chrome, ca_cert }),
                        _ => Shape::Rules(Wire { client: Client::Own, ca_cert }),
                    };
                    let keep = spiderling::Keep::Memory;
                    spiderling::crawl(url, concurrency, cost, output, keep, Engine::Stream, shape)
                        .await
                        .map_err(|error| error.to_string())
                }
                Contender::Bare => {
                    bare::crawl(start, concurrency, cost, output).await.map_err(|e| e.to_string())
                }
                Contender::Articles | Contender::ArticlesDom | Contender::ArticlesMarkdown => {
                    let engine =
                        if contender == Contender::ArticlesDom { Engine::Dom } else { Engine::Stream };
                    let shape = if contender == Contender::ArticlesMarkdown {
                        Shape::ArticlesMarkdown
                    } else {
                        Shape::Articles
                    };
                    let keep = spiderling::Keep::Memory;
                    spiderling::crawl(url, concurrency, cost, output, keep, engine, shape)
                        .await
                        .map_err(|error| error.to_string())
                }
                Contender::ArticlesBare => {
                    real_pages::bare(start, concurrency, output).await.map_err(|e| e.to_string())
                }
                Contender::Sequential => {
                    sequential::crawl(start, sample, cost, output).await.map_err(|e| e.to_string())
                }
                #[cfg(feature = "render")]
                Contender::Render => {
                    let mode = args.render_mode.as_deref().unwrap_or("always");
                    render::crawl(url, mode, concurrency, output).await.map_err(|e| e.to_string())
                }
                #[cfg(not(feature = "render"))]
                Contender::Render => Err("the render contender needs the render feature".to_owned()),
            }
        })
    });
    match run.and_then(|run| serde_json::to_string(&run).map_err(|error| error.to_string())) {
        Ok(line) => {
            ::spiderling::outln!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: the {} contender failed: {error}", contender.name());
            ExitCode::FAILURE
        }
    }
}
