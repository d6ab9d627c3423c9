//! Every knob of a crawl, with its default.
//!
//! A [`Config`] is built with consuming setters that never fail; [`Config::validate`]
//! reports every mistake at once when the crawl starts, with what to write instead.

// The rest of `Config`, a file per concern; the setters are grouped by the stage of a
// request's path they configure. rustdoc lists `Config`'s methods in the order of these
// modules (and this file's own last), so they follow the path.

// `Config::new` and `Default`: every default in one place
mod defaults;
// start URLs, sitemaps, allowed domains, depth, the state file
mod frontier;
// slots, rate ceiling, pauses, profiles, adaptive mode
mod admission;
// retries, retry statuses, backoff
mod retry;
// timeout, user agent, headers, robots.txt, redirects, body cap, CA certificate, block markers,
// the HTTP cache
mod fetch;
// route tiers, exit country, sticky sessions, gateway username, proxy spend
mod proxy;
// pages rendered in a browser: when, how long, the browser pool
mod render;
// who requests claim to be: cookies, user agents, seeded cookies, hidden links
mod identity;
// parse pool, output, stats and failures files, signals, metrics, progress
mod output;
// `Config::set`, a setting changed by its key at run time
mod set;
// `Config::validate`, every mistake at once
mod validate;
// `Display`, the settings printed at the start of a run
mod display;

use std::path::PathBuf;
use std::time::Duration;

use crate::{Backoff, DelayRange, RateCeiling};

/// The user agent sent when none is configured. Its first word is the robots.txt token.
pub const DEFAULT_USER_AGENT: &str = concat!("spiderling/", env!("CARGO_PKG_VERSION"));

/// Settings of one crawl.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use spider_settings::Config;
///
/// let config = Config::new("books")
///     .start_url("https://books.example/")
///     .allowed_domain("books.example")
///     .concurrency(20)
///     .rpm(600)
///     .delay_range(Duration::from_secs(1), Duration::from_secs(3));
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone)]
pub struct Config {
    #[doc(hidden)]
    pub name: String,
    #[doc(hidden)]
    pub start_urls: Vec<String>,
    #[doc(hidden)]
    pub start_list: Option<std::path::PathBuf>,
    #[doc(hidden)]
    pub allowed_domains: Vec<String>,
    #[doc(hidden)]
    pub sitemaps: bool,
    #[doc(hidden)]
    pub sitemap_urls: Vec<String>,
    #[doc(hidden)]
    pub sitemap_since: Option<crate::Date>,
    #[doc(hidden)]
    pub concurrency: usize,
    #[doc(hidden)]
    pub per_host: usize,
    #[doc(hidden)]
    pub politeness: crate::Politeness,
    #[doc(hidden)]
    pub rate: Option<RateCeiling>,
    #[doc(hidden)]
    pub delay: DelayRange,
    #[doc(hidden)]
    pub retries: u32,
    #[doc(hidden)]
    pub retry_statuses: Vec<u16>,
    #[doc(hidden)]
    pub backoff: Backoff,
    #[doc(hidden)]
    pub timeout: Duration,
    #[doc(hidden)]
    pub impersonate: crate::Impersonate,
    #[doc(hidden)]
    pub http2: bool,
    #[doc(hidden)]
    pub render: crate::Render,
    #[doc(hidden)]
    pub render_timeout: Duration,
    #[doc(hidden)]
    pub render_resources: bool,
    #[doc(hidden)]
    pub browser_pages: usize,
    #[doc(hidden)]
    pub browser_recycle: usize,
    #[doc(hidden)]
    pub browser_rss: u64,
    #[doc(hidden)]
    pub screenshot_failures: Option<PathBuf>,
    #[doc(hidden)]
    pub max_depth: Option<u32>,
    #[doc(hidden)]
    pub max_pages: Option<u64>,
    #[doc(hidden)]
    pub max_items: Option<u64>,
    #[doc(hidden)]
    pub user_agent: String,
    #[doc(hidden)]
    pub headers: Vec<(String, String)>,
    #[doc(hidden)]
    pub cookies: bool,
    #[doc(hidden)]
    pub seed_cookies: SeedCookies,
    #[doc(hidden)]
    pub user_agents: Vec<String>,
    #[doc(hidden)]
    pub user_agents_file: Option<PathBuf>,
    #[doc(hidden)]
    pub follow_hidden: bool,
    #[doc(hidden)]
    pub obey_robots: bool,
    #[doc(hidden)]
    pub max_redirects: u8,
    #[doc(hidden)]
    pub max_body_bytes: usize,
    #[doc(hidden)]
    pub parse_threads: usize,
    #[doc(hidden)]
    pub dom_only: bool,
    /// The items files, in the order given: the first names the stats and failures files
    /// beside it.
    #[doc(hidden)]
    pub outputs: Vec<crate::ItemsFile>,
    /// The tables items also go to, as written (`sqlite://…`, `postgres://…`); checked
    /// by [`validate`](Self::validate) and parsed by [`StoreUri`](crate::StoreUri).
    #[doc(hidden)]
    pub stores: Vec<String>,
    #[doc(hidden)]
    pub overwrite: bool,
    #[doc(hidden)]
    pub stats: Option<PathBuf>,
    #[doc(hidden)]
    pub failures: Option<PathBuf>,
    #[doc(hidden)]
    pub state: Option<PathBuf>,
    #[doc(hidden)]
    pub fresh: bool,
    #[doc(hidden)]
    pub force: bool,
    #[doc(hidden)]
    pub state_sync: bool,
    #[doc(hidden)]
    pub frontier: Option<String>,
    #[doc(hidden)]
    pub crawl_id: Option<String>,
    #[doc(hidden)]
    pub lease: Duration,
    #[doc(hidden)]
    pub partitions: usize,
    #[doc(hidden)]
    pub cache: Option<PathBuf>,
    #[doc(hidden)]
    pub cache_ttl: Option<Duration>,
    #[doc(hidden)]
    pub revalidate: bool,
    #[doc(hidden)]
    pub grace: Duration,
    #[doc(hidden)]
    pub store_patience: Duration,
    #[doc(hidden)]
    pub warc: Option<PathBuf>,
    #[doc(hidden)]
    pub warc_max_bytes: u64,
    #[doc(hidden)]
    pub handle_signals: bool,
    #[doc(hidden)]
    pub proxy: Option<RouteSpec>,
    #[doc(hidden)]
    pub geo: Option<String>,
    #[doc(hidden)]
    pub geo_rules: Vec<(String, String)>,
    #[doc(hidden)]
    pub sticky: bool,
    #[doc(hidden)]
    pub proxy_user_template: String,
    #[doc(hidden)]
    pub proxy_price_per_gb: f64,
    #[doc(hidden)]
    pub proxy_budget: Option<f64>,
    #[doc(hidden)]
    pub ca_cert: Option<PathBuf>,
    #[doc(hidden)]
    pub block_markers: Vec<String>,
    #[doc(hidden)]
    pub adaptive: bool,
    #[doc(hidden)]
    pub block_target: f64,
    #[doc(hidden)]
    pub metrics: Option<String>,
    #[doc(hidden)]
    pub dashboard: Option<String>,
    #[doc(hidden)]
    pub report: Option<PathBuf>,
    #[doc(hidden)]
    pub progress: bool,
    /// Mistakes found by setters that cannot fail, reported by `validate`.
    pub(crate) invalid: Vec<String>,
}

/// The `proxy` setting as written: it may hold credentials, so its Debug shows them
/// redacted.
#[derive(Clone)]
pub struct RouteSpec(pub String);

impl std::fmt::Debug for RouteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", crate::redact_spec(&self.0))
    }
}

/// Cookies given before the crawl, `(url, Set-Cookie line)`: their values are secrets, so
/// Debug shows the URLs and cookie names only.
#[derive(Clone, Default)]
pub struct SeedCookies(pub Vec<(String, String)>);

impl SeedCookies {
    /// Each `(url, Set-Cookie line)`, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &(String, String)> {
        self.0.iter()
    }
}

impl std::fmt::Debug for SeedCookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |line: &str| line.split_once('=').map_or(line, |(name, _)| name).trim().to_owned();
        f.debug_list().entries(self.0.iter().map(|(url, line)| format!("{url} {}=…", name(line)))).finish()
    }
}

/// The keys a fleet holds for all its workers at once, not for each: three workers with
/// `per_host = 16` share 16 slots of a host.
pub(crate) const FLEET_WIDE: [&str; 4] = ["per_host", "rpm", "rps", "delay"];

impl Config {
    /// The limits of [`FLEET_WIDE`] keys this config sets, as the settings print them
    /// (`per_host = 16 · rps = 200`): what a fleet's workers share.
    pub fn fleet_limits(&self) -> String {
        FLEET_WIDE
            .iter()
            .filter_map(|name| crate::find(name))
            .filter_map(|key| {
                key.show(self).filter(|value| value != "none").map(|value| format!("{} = {value}", key.name))
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// The name of the fleet's crawl: [`crawl_id`](Self::crawl_id), or the spider's name.
    pub fn fleet_crawl(&self) -> &str {
        self.crawl_id.as_deref().unwrap_or(&self.name)
    }

    /// The spider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the stats file goes, if anywhere.
    pub fn stats_path(&self) -> Option<PathBuf> {
        self.stats.clone().or_else(|| self.beside_output("stats.json"))
    }

    /// Where the failures file goes, if anywhere.
    pub fn failures_path(&self) -> Option<PathBuf> {
        self.failures.clone().or_else(|| self.beside_output("failures.jsonl"))
    }

    /// The first items file `books.jsonl` (or `books.jsonl.gz`, `.zst`) → `books.SUFFIX`,
    /// in the same folder.
    fn beside_output(&self, suffix: &str) -> Option<PathBuf> {
        let output = &self.outputs.first()?.path;
        let unzipped = if compressed(output) { output.with_extension("") } else { output.clone() };
        let stem = unzipped.file_stem()?.to_string_lossy();
        Some(output.with_file_name(format!("{stem}.{suffix}")))
    }

    /// The robots.txt product token: the user agent's first word, before any `/`.
    pub fn robots_token(&self) -> &str {
        let first = self.user_agent.split_whitespace().next().unwrap_or("*");
        first.split('/').next().unwrap_or(first)
    }
}

/// Whether an items file is compressed: `.gz` or `.zst` after its format's extension.
pub(crate) fn compressed(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("gz") || e.eq_ignore_ascii_case("zst"))
}
