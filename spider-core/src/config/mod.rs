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

use crate::error::Error;
use crate::request::Request;
use crate::schedule::retry::Backoff;
use crate::schedule::throttle::{DelayRange, RateCeiling};

/// The user agent sent when none is configured. Its first word is the robots.txt token.
pub const DEFAULT_USER_AGENT: &str = concat!("spiderling/", env!("CARGO_PKG_VERSION"));

/// Settings of one crawl.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use spider_core::Config;
///
/// let config = Config::new("books")
///     .start_url("https://books.example/")
///     .allowed_domain("books.example")
///     .concurrency(20)
///     .rpm(600)
///     .delay_range(Duration::from_secs(1), Duration::from_secs(3));
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) name: String,
    pub(crate) start_urls: Vec<String>,
    pub(crate) start_list: Option<std::path::PathBuf>,
    pub(crate) allowed_domains: Vec<String>,
    pub(crate) sitemaps: bool,
    pub(crate) sitemap_urls: Vec<String>,
    pub(crate) sitemap_since: Option<spider_settings::Date>,
    pub(crate) concurrency: usize,
    pub(crate) per_host: usize,
    pub(crate) rate: Option<RateCeiling>,
    pub(crate) delay: DelayRange,
    pub(crate) retries: u32,
    pub(crate) retry_statuses: Vec<u16>,
    pub(crate) backoff: Backoff,
    pub(crate) timeout: Duration,
    pub(crate) max_depth: Option<u32>,
    pub(crate) max_pages: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) user_agent: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) cookies: bool,
    pub(crate) seed_cookies: SeedCookies,
    pub(crate) user_agents: Vec<String>,
    pub(crate) user_agents_file: Option<PathBuf>,
    pub(crate) follow_hidden: bool,
    pub(crate) obey_robots: bool,
    pub(crate) max_redirects: u8,
    pub(crate) max_body_bytes: usize,
    pub(crate) parse_threads: usize,
    pub(crate) dom_only: bool,
    pub(crate) output: Option<PathBuf>,
    pub(crate) stats: Option<PathBuf>,
    pub(crate) failures: Option<PathBuf>,
    pub(crate) state: Option<PathBuf>,
    pub(crate) fresh: bool,
    pub(crate) state_sync: bool,
    pub(crate) frontier: Option<String>,
    pub(crate) crawl_id: Option<String>,
    pub(crate) lease: Duration,
    pub(crate) cache: Option<PathBuf>,
    pub(crate) cache_ttl: Option<Duration>,
    pub(crate) revalidate: bool,
    pub(crate) grace: Duration,
    pub(crate) handle_signals: bool,
    pub(crate) proxy: Option<RouteSpec>,
    pub(crate) geo: Option<String>,
    pub(crate) geo_rules: Vec<(String, String)>,
    pub(crate) sticky: bool,
    pub(crate) proxy_user_template: String,
    pub(crate) proxy_price_per_gb: f64,
    pub(crate) proxy_budget: Option<f64>,
    pub(crate) ca_cert: Option<PathBuf>,
    pub(crate) block_markers: Vec<String>,
    pub(crate) adaptive: bool,
    pub(crate) block_target: f64,
    pub(crate) metrics: Option<String>,
    pub(crate) dashboard: Option<String>,
    pub(crate) report: Option<PathBuf>,
    pub(crate) progress: bool,
    /// Mistakes found by setters that cannot fail, reported by `validate`.
    invalid: Vec<String>,
}

/// The `proxy` setting as written: it may hold credentials, so its Debug shows them
/// redacted.
#[derive(Clone)]
pub(crate) struct RouteSpec(pub(crate) String);

impl std::fmt::Debug for RouteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", spider_settings::redact_spec(&self.0))
    }
}

/// Cookies given before the crawl, `(url, Set-Cookie line)`: their values are secrets, so
/// Debug shows the URLs and cookie names only.
#[derive(Clone, Default)]
pub(crate) struct SeedCookies(pub(crate) Vec<(String, String)>);

impl SeedCookies {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(String, String)> {
        self.0.iter()
    }
}

impl std::fmt::Debug for SeedCookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |line: &str| line.split_once('=').map_or(line, |(name, _)| name).trim().to_owned();
        f.debug_list().entries(self.0.iter().map(|(url, line)| format!("{url} {}=…", name(line)))).finish()
    }
}

impl Config {
    /// The name of the fleet's crawl: [`crawl_id`](Self::crawl_id), or the spider's name.
    pub(crate) fn fleet_crawl(&self) -> &str {
        self.crawl_id.as_deref().unwrap_or(&self.name)
    }

    /// The spider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the stats file goes, if anywhere.
    pub(crate) fn stats_path(&self) -> Option<PathBuf> {
        self.stats.clone().or_else(|| self.beside_output("stats.json"))
    }

    /// Where the failures file goes, if anywhere.
    pub(crate) fn failures_path(&self) -> Option<PathBuf> {
        self.failures.clone().or_else(|| self.beside_output("failures.jsonl"))
    }

    /// `books.jsonl` → `books.SUFFIX`, in the same folder.
    fn beside_output(&self, suffix: &str) -> Option<PathBuf> {
        let output = self.output.as_ref()?;
        let stem = output.file_stem()?.to_string_lossy();
        Some(output.with_file_name(format!("{stem}.{suffix}")))
    }

    /// The robots.txt product token: the user agent's first word, before any `/`.
    pub(crate) fn robots_token(&self) -> &str {
        let first = self.user_agent.split_whitespace().next().unwrap_or("*");
        first.split('/').next().unwrap_or(first)
    }

    /// The start URLs and the sitemaps of `sitemap_urls` as requests; call after
    /// [`validate`](Self::validate). In sticky mode each is a logical task of its own.
    pub(crate) fn start_requests(&self) -> Result<Vec<Request>, Error> {
        let task = |name: &str, i: usize, request: Request| {
            if self.sticky {
                request.with_session(format!("{name}-{i}"))
            } else {
                request
            }
        };
        let pages =
            self.start_urls.iter().enumerate().map(|(i, url)| Request::get(url).map(|r| task("start", i, r)));
        let sitemaps = self
            .sitemap_urls
            .iter()
            .enumerate()
            .map(|(i, url)| Request::get(url).map(|r| task("sitemap", i, Request::sitemap(r.url))));
        pages.chain(sitemaps).collect()
    }

    /// The hosts whose robots.txt lists sitemaps to read: those of the start URLs, with
    /// [`sitemaps`](Self::sitemaps) on; none without.
    pub(crate) fn sitemap_hosts(&self) -> std::collections::HashSet<crate::schedule::frontier::HostKey> {
        if !self.sitemaps {
            return std::collections::HashSet::new();
        }
        let urls = self.start_urls.iter().filter_map(|url| url::Url::parse(url).ok());
        urls.filter_map(|url| crate::schedule::frontier::host_key(&url)).collect()
    }
}
