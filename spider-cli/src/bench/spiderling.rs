//! The Spiderling contender, written as a user would: a derived spider and item, the
//! default middleware (robots.txt, dedup, retries, block detection, gauges), items
//! exported to a file. Only what cannot be known at compile time is set at run time.
//!
//! Its selectors all stream, so the spider reads pages with the streaming engine; the
//! same spider with `--set extract=dom` (`Config::dom_only`) is the `spiderling-dom`
//! contender.
//!
//! The `rules` contender is the spider users write now (the books example's shape): two
//! link rules with `allow` regexes (listings followed, books parsed first), an item of
//! the page's URL, CSS fields and a JSON-LD field, no hand-written parse; `identities`
//! is the same with user agents drawn per identity (each with its browser's headers) and
//! the cookie jars on.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use spiderling::prelude::*;

use super::measure::{cpu_seconds, lines_in, parse_threads, peak_rss_kb, spin, Run};

/// The parse cost per item, in nanoseconds. A field parser is a plain `fn` with no
/// context, so the run-time value reaches it through this static; set once before the
/// crawl.
static PARSE_COST_NANOS: AtomicU64 = AtomicU64::new(0);

#[derive(Spider, Default)]
#[spider(
    name = "bench",
    // The sandbox's port is only known at run time; `start_urls` is set then.
    start_urls = ["http://127.0.0.1/"],
    allowed_domains = ["127.0.0.1"],
    follow = "a[href]",
    item = Book,
)]
struct Bench;

#[derive(Spider, Default)]
#[spider(
    name = "bench-rules",
    start_urls = ["http://127.0.0.1/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = r"/catalogue/page-\d+\.html", follow),
    rule(css = "h3 > a", allow = r"/catalogue/book_\d+\.html$", parse = Listed, priority = 10),
)]
struct Rules;

/// The spider of the real-pages bench (`real_pages.rs`), as a user writes one for
/// articles: the index followed, each page parsed.
#[derive(Spider, Default)]
#[spider(
    name = "bench-articles",
    start_urls = ["http://127.0.0.1/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = "/p/", parse = Article),
    rule(allow = "/$", follow)
)]
struct Articles;

/// The same, its item with the page's main content as Markdown besides.
#[derive(Spider, Default)]
#[spider(
    name = "bench-articles-markdown",
    start_urls = ["http://127.0.0.1/"],
    allowed_domains = ["127.0.0.1"],
    rule(allow = "/p/", parse = ArticleMarkdown),
    rule(allow = "/$", follow)
)]
struct ArticlesMarkdown;

/// [`Article`] and the page's main content as Markdown.
#[derive(Item, Serialize)]
struct ArticleMarkdown {
    #[page(url)]
    url: String,
    #[css("title")]
    title: Option<String>,
    #[css("h1")]
    headings: Vec<String>,
    #[css("h2")]
    subheadings: Vec<String>,
    #[css("meta[name=description]", attr = "content")]
    description: Option<String>,
    #[css("link[rel=canonical]", attr = "href")]
    canonical: Option<String>,
    #[json_ld("headline")]
    headline: Option<String>,
    #[page(markdown)]
    markdown: Option<String>,
}

/// What a spider for articles reads: title, headings, description, canonical URL and
/// JSON-LD headline.
#[derive(Item, Serialize)]
struct Article {
    #[page(url)]
    url: String,
    #[css("title")]
    title: Option<String>,
    #[css("h1")]
    headings: Vec<String>,
    #[css("h2")]
    subheadings: Vec<String>,
    #[css("meta[name=description]", attr = "content")]
    description: Option<String>,
    #[css("link[rel=canonical]", attr = "href")]
    canonical: Option<String>,
    #[json_ld("headline")]
    headline: Option<String>,
}

#[derive(Item, Serialize)]
struct Listed {
    #[page(url)]
    url: String,
    #[css("h1.title", parse = costly)]
    title: String,
    #[json_ld("offers.price", type = "Product")]
    price: f64,
    #[css("p.availability")]
    availability: Option<String>,
}

/// Agents the `identities` contender's identities draw from.
const AGENTS: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36|\
    Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";

/// Which spider a contender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape<'a> {
    /// `follow = "a[href]"` and a three-field item.
    Follow,
    /// Two rules, a page field, a JSON-LD field, sent on `Wire`.
    Rules(Wire<'a>),
    /// The same, with user agents per identity.
    Identities,
    /// The articles spider of the real-pages bench.
    Articles,
    /// The same with the main content as Markdown.
    ArticlesMarkdown,
}

/// How the `rules` contenders' requests go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wire<'a> {
    pub(super) client: Client,
    /// The certificate of a TLS site (`bench --tls`).
    pub(super) ca_cert: Option<&'a Path>,
}

/// The client: the crawl's own (HTTP/2 where offered), the same on HTTP/1.1 only, or
/// Chrome's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    Own,
    Http1,
    Chrome,
}

/// The engine reading the contender's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Engine {
    /// The streaming engine (what the derive picks for this spider).
    Stream,
    /// The DOM, asked for at run time (`--set extract=dom`).
    Dom,
}

#[derive(Item, Serialize)]
struct Book {
    #[css("h1.title", parse = costly)]
    title: String,
    #[css("p.price")]
    price: String,
    #[css("p.availability")]
    availability: Option<String>,
}

/// The title as it is, after the parse cost every contender pays per item.
fn costly(title: &str) -> Result<String, std::convert::Infallible> {
    spin(Duration::from_nanos(PARSE_COST_NANOS.load(Ordering::Relaxed)));
    Ok(title.to_owned())
}

/// Where the contender keeps its crawl: what tells the `spiderling` and `state` contenders
/// and a fleet worker apart, the spider being the same.
#[derive(Debug, Clone, Copy)]
pub(super) enum Keep<'a> {
    /// In memory: the `spiderling` contender.
    Memory,
    /// In a state file: the `state` contender.
    State(&'a Path),
    /// In the fleet's Redis, shared with every worker of the same crawl; `per_host` is
    /// the fleet's limit, so it is set by the parent for the whole fleet.
    Fleet { redis: &'a str, crawl_id: &'a str, per_host: usize },
}

/// Crawl the site at `start` with `concurrency` requests in flight (overall, and to the
/// host unless a fleet sets its own), items exported to `output`, the crawl kept where
/// `keep` says, the pages read by `engine`, by the spider `shape` names.
pub(super) async fn crawl(
    start: &str,
    concurrency: usize,
    cost: Duration,
    output: &Path,
    keep: Keep<'_>,
    engine: Engine,
    shape: Shape<'_>,
) -> Result<Run, spiderling::Error> {
    let job = Job { start, concurrency, cost, output, keep, engine, wire: None };
    match shape {
        Shape::Follow => run(Bench, job, None).await,
        Shape::Rules(wire) => run(Rules, Job { wire: Some(wire), ..job }, None).await,
        Shape::Identities => run(Rules, job, Some(AGENTS)).await,
        Shape::Articles => run(Articles, job, None).await,
        Shape::ArticlesMarkdown => run(ArticlesMarkdown, job, None).await,
    }
}

/// What every contender's crawl is given.
struct Job<'a> {
    start: &'a str,
    concurrency: usize,
    cost: Duration,
    output: &'a Path,
    keep: Keep<'a>,
    engine: Engine,
    wire: Option<Wire<'a>>,
}

/// Crawl as `job` says with `spider`, its identities drawing from `agents` when given.
async fn run<S: Spider>(spider: S, job: Job<'_>, agents: Option<&str>) -> Result<Run, spiderling::Error> {
    let Job { start, concurrency, cost, output, keep, engine, wire } = job;
    PARSE_COST_NANOS.store(u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    let per_host = match keep {
        Keep::Fleet { per_host, .. } => per_host,
        Keep::Memory | Keep::State(_) => concurrency,
    };
    let config = spider
        .config()
        .set("start_urls", start)?
        .set("concurrency", &concurrency.to_string())?
        .set("per_host", &per_host.to_string())?
        .set("progress", "false")?
        .set("parse_threads", &parse_threads().to_string())?
        .dom_only(engine == Engine::Dom)
        .output(output);
    let config = match agents {
        Some(agents) => config.set("user_agents", agents)?,
        None => config,
    };
    let config = match wire {
        None => config,
        Some(Wire { client, ca_cert }) => {
            // The TLS site is `https://localhost:PORT/`.
            let host = url::Url::parse(start).ok().and_then(|url| url.host_str().map(str::to_owned));
            let config = config.set("allowed_domains", host.as_deref().unwrap_or("127.0.0.1"))?;
            let config = match ca_cert {
                Some(ca) => config.ca_cert(ca),
                None => config,
            };
            match client {
                Client::Own => config,
                Client::Http1 => config.set("http2", "false")?,
                Client::Chrome => config.set("impersonate", "chrome")?,
            }
        }
    };
    let config = match keep {
        Keep::Memory => config,
        Keep::State(state) => config.state(state),
        Keep::Fleet { redis, crawl_id, .. } => config.set("frontier", redis)?.set("crawl_id", crawl_id)?,
    };
    let cpu = cpu_seconds();
    let started = Instant::now();
    let crawler = Crawler::with_config(spider, config);
    let live = crawler.live();
    let summary = crawler.run().await?;
    let elapsed_secs = started.elapsed().as_secs_f64();
    let gauges = live.borrow().clone();
    Ok(Run {
        pages: usize::try_from(summary.counts.pages).unwrap_or(usize::MAX),
        streamed_pages: usize::try_from(summary.counts.streamed_pages).unwrap_or(usize::MAX),
        items: lines_in(output),
        elapsed_secs,
        latency_p50_ms: gauges.latency_p50_ms,
        latency_p99_ms: gauges.latency_p99_ms,
        cpu_secs: cpu_seconds() - cpu,
        peak_rss_kb: peak_rss_kb(),
    })
}
