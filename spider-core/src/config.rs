//! Every knob of a crawl, with its default.
//!
//! A [`Config`] is built with consuming setters that never fail; [`Config::validate`]
//! reports every mistake at once when the crawl starts, with what to write instead.

use std::path::PathBuf;
use std::time::Duration;

use crate::classify::DEFAULT_RETRY_STATUSES;
use crate::error::Error;
use crate::proxy::DEFAULT_USER_TEMPLATE;
use crate::request::Request;
use crate::retry::Backoff;
use crate::throttle::{DelayRange, RateCeiling};

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
    pub(crate) allowed_domains: Vec<String>,
    pub(crate) concurrency: usize,
    pub(crate) per_host: usize,
    pub(crate) rate: Option<RateCeiling>,
    pub(crate) delay: DelayRange,
    pub(crate) retries: u32,
    pub(crate) retry_statuses: Vec<u16>,
    pub(crate) backoff: Backoff,
    pub(crate) timeout: Duration,
    pub(crate) max_depth: Option<u32>,
    pub(crate) user_agent: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) obey_robots: bool,
    pub(crate) max_redirects: u8,
    pub(crate) max_body_bytes: usize,
    pub(crate) parse_threads: usize,
    pub(crate) output: Option<PathBuf>,
    pub(crate) stats: Option<PathBuf>,
    pub(crate) failures: Option<PathBuf>,
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
    pub(crate) progress: bool,
    /// Mistakes found by setters that cannot fail, reported by `validate`.
    invalid: Vec<String>,
}

/// The settings as `key = value` lines, for the start of a run.
impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = match &self.rate {
            Some(rate) => rate.to_string(),
            None => "no rate ceiling".to_owned(),
        };
        let delay = if self.delay == DelayRange::ZERO {
            "none".to_owned()
        } else {
            format!("{:?}..{:?}", self.delay.min(), self.delay.max())
        };
        let list = |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
        let path = |p: &Option<PathBuf>| p.as_ref().map_or("none".to_owned(), |p| p.display().to_string());
        writeln!(f, "settings of {}:", self.name)?;
        writeln!(f, "  start_urls = {}", list(&self.start_urls))?;
        writeln!(f, "  allowed_domains = {}", list(&self.allowed_domains))?;
        writeln!(f, "  concurrency = {} · per_host = {} · {rate}", self.concurrency, self.per_host)?;
        writeln!(f, "  delay = {delay} · retries = {} · timeout = {:?}", self.retries, self.timeout)?;
        if self.adaptive {
            writeln!(f, "  adaptive = true · block_target = {}", self.block_target)?;
        }
        let depth = self.max_depth.map_or("none".to_owned(), |d| d.to_string());
        writeln!(
            f,
            "  max_depth = {depth} · obey_robots = {} · user_agent = {}",
            self.obey_robots, self.user_agent
        )?;
        let headers: Vec<String> = self.headers.iter().map(|(name, _)| format!("{name}: …")).collect();
        writeln!(f, "  headers = {}", list(&headers))?;
        if let Some(RouteSpec(proxy)) = &self.proxy {
            let rules: Vec<String> = self.geo_rules.iter().map(|(p, c)| format!("{p}={c}")).collect();
            writeln!(
                f,
                "  proxy = {} · geo = {} · geo_rules = {} · sticky = {}",
                spider_settings::redact_spec(proxy),
                self.geo.as_deref().unwrap_or("any"),
                list(&rules),
                self.sticky
            )?;
            let budget = self.proxy_budget.map_or("none".to_owned(), |b| format!("{b}"));
            writeln!(f, "  proxy_price_per_gb = {} · proxy_budget = {budget}", self.proxy_price_per_gb)?;
        }
        write!(f, "  output = {}", path(&self.output))
    }
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

impl Default for Config {
    fn default() -> Self {
        Config::new("spider")
    }
}

impl Config {
    /// A config with every default, for the spider called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Config {
            name: name.into(),
            start_urls: Vec::new(),
            allowed_domains: Vec::new(),
            concurrency: 16,
            per_host: 8,
            rate: None,
            delay: DelayRange::ZERO,
            retries: 3,
            retry_statuses: DEFAULT_RETRY_STATUSES.to_vec(),
            backoff: Backoff { base: Duration::from_millis(500), cap: Duration::from_secs(60) },
            timeout: Duration::from_secs(30),
            max_depth: None,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            headers: Vec::new(),
            obey_robots: true,
            max_redirects: 10,
            max_body_bytes: 8 * 1024 * 1024,
            parse_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            output: None,
            stats: None,
            failures: None,
            grace: Duration::from_secs(10),
            handle_signals: true,
            proxy: None,
            geo: None,
            geo_rules: Vec::new(),
            sticky: false,
            proxy_user_template: DEFAULT_USER_TEMPLATE.to_owned(),
            proxy_price_per_gb: 0.0,
            proxy_budget: None,
            ca_cert: None,
            block_markers: Vec::new(),
            adaptive: false,
            block_target: 0.02,
            metrics: None,
            progress: true,
            invalid: Vec::new(),
        }
    }

    /// Add a URL the crawl starts from (default: none).
    #[must_use]
    pub fn start_url(mut self, url: impl Into<String>) -> Self {
        self.start_urls.push(url.into());
        self
    }

    /// Allow a domain and its subdomains; once any is set, links elsewhere are dropped
    /// (default: every domain allowed). The port is not part of the match.
    #[must_use]
    pub fn allowed_domain(mut self, domain: impl Into<String>) -> Self {
        self.allowed_domains.push(domain.into());
        self
    }

    /// Apply a preset from the sizing guide: `polite` (4 slots in total and per host,
    /// 2–5 s pauses), `general` (20, 1–3 s) or `bulk` (40, 0.5–1.5 s). Settings made after
    /// it win (default: no profile).
    #[must_use]
    pub fn profile(mut self, name: &str) -> Self {
        match spider_settings::profile(name) {
            Some(profile) => {
                self.concurrency = profile.concurrency;
                self.per_host = profile.concurrency;
                self.delay = DelayRange::new(profile.delay_min, profile.delay_max);
            }
            None => self.invalid.push(format!(
                "profile {name:?} does not exist; write one of {}",
                spider_settings::PROFILES.join(", ")
            )),
        }
        self
    }

    /// Change one setting by its key, as `--set key=value` and `SPIDERLING_KEY=value` do.
    /// Lists are comma-separated and replace the list set before; durations are written
    /// `500ms`, `2s`, `1m`; a delay is one duration or a range `1s..3s`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an unknown key (with the closest known one), a key that only
    /// compiles into the spider (`follow`, `item`), or a value that does not parse.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_core::Config::new("books").set("rpm", "300")?.set("delay", "1s..2s")?;
    /// assert!(config.validate().is_ok());
    /// let error = spider_core::Config::new("books").set("concurency", "4").unwrap_err();
    /// assert!(error.to_string().contains("did you mean `concurrency`?"));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    pub fn set(self, key: &str, value: &str) -> Result<Self, Error> {
        use spider_settings as keys;
        let shown = spider_settings::redact_spec(value);
        let problem = |message: String| Error::Config(format!("{key} = {shown:?}: {message}"));
        let Some(known) = keys::find(key) else {
            let hint = keys::suggest(key).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
            return Err(Error::Config(format!("unknown setting `{key}`{hint}")));
        };
        if !known.runtime {
            return Err(problem("this key is compiled into the spider; change the attribute".to_owned()));
        }
        let list = || value.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect();
        let count = |positive| keys::parse_count(value, positive).map_err(problem);
        let size =
            |positive| count(positive).and_then(|n| usize::try_from(n).map_err(|e| problem(e.to_string())));
        let small =
            |positive| count(positive).and_then(|n| u32::try_from(n).map_err(|e| problem(e.to_string())));
        Ok(match key {
            "name" => Config { name: value.to_owned(), ..self },
            "start_urls" => Config { start_urls: list(), ..self },
            "allowed_domains" => Config { allowed_domains: list(), ..self },
            "concurrency" => self.concurrency(size(true)?),
            "per_host" => self.per_host(size(true)?),
            "rpm" => self.rpm(small(true)?),
            "rps" => self.rps(small(true)?),
            "delay" => {
                let (min, max) = keys::parse_delay(value).map_err(problem)?;
                self.delay_range(min, max)
            }
            "retries" => self.retries(small(false)?),
            "timeout" => self.timeout(keys::parse_duration(value).map_err(problem)?),
            "max_depth" => self.max_depth(small(false)?),
            "user_agent" => self.user_agent(value),
            "headers" => {
                let mut headers = Vec::new();
                for header in value.split(',').filter(|h| !h.trim().is_empty()) {
                    let (name, val) = header
                        .split_once(':')
                        .ok_or_else(|| problem(format!("`{header}` is not `Name: value`")))?;
                    headers.push((name.trim().to_owned(), val.trim().to_owned()));
                }
                Config { headers, ..self }
            }
            "obey_robots" => self.obey_robots(keys::parse_bool(value).map_err(problem)?),
            "parse_threads" => self.parse_threads(size(true)?),
            "output" => self.output(value),
            "proxy" => {
                spider_settings::parse_proxy(value, false).map_err(problem)?;
                self.proxy(value)
            }
            "geo" => self.geo(keys::parse_country(value).map_err(problem)?),
            "geo_rules" => {
                let mut geo_rules = Vec::new();
                for rule in value.split(',').map(str::trim).filter(|r| !r.is_empty()) {
                    geo_rules.push(keys::parse_geo_rule(rule).map_err(problem)?);
                }
                Config { geo_rules, ..self }
            }
            "sticky" => self.sticky(keys::parse_bool(value).map_err(problem)?),
            "proxy_user_template" => {
                keys::check_user_template(value).map_err(problem)?;
                self.proxy_user_template(value)
            }
            "proxy_price_per_gb" => self.proxy_price_per_gb(keys::parse_decimal(value).map_err(problem)?),
            "proxy_budget" => self.proxy_budget(keys::parse_decimal(value).map_err(problem)?),
            "ca_cert" => self.ca_cert(value),
            "block_markers" => Config { block_markers: list(), ..self },
            "adaptive" => self.adaptive(keys::parse_bool(value).map_err(problem)?),
            "metrics" => self.metrics(value),
            "progress" => self.progress(keys::parse_bool(value).map_err(problem)?),
            "block_target" => self.block_target(keys::parse_decimal(value).map_err(problem)?),
            other => return Err(Error::Config(format!("setting `{other}` cannot be changed at run time"))),
        })
    }

    /// Most requests in flight at once, over all hosts (default 16).
    #[must_use]
    pub fn concurrency(mut self, slots: usize) -> Self {
        self.concurrency = slots;
        self
    }

    /// Most requests in flight at once to one host, `host:port` (default 8).
    #[must_use]
    pub fn per_host(mut self, slots: usize) -> Self {
        self.per_host = slots;
        self
    }

    /// A hard ceiling of `requests` per minute over the whole crawl, retries and
    /// robots.txt included, paced evenly with no initial burst (default: none).
    #[must_use]
    pub fn rpm(mut self, requests: u32) -> Self {
        self.rate = Some(RateCeiling::new(requests, Duration::from_secs(60)));
        self
    }

    /// As [`rpm`](Self::rpm), per second (default: none).
    #[must_use]
    pub fn rps(mut self, requests: u32) -> Self {
        self.rate = Some(RateCeiling::new(requests, Duration::from_secs(1)));
        self
    }

    /// A fixed pause each per-host slot takes after a response before its next request
    /// (default: none).
    #[must_use]
    pub fn delay(mut self, pause: Duration) -> Self {
        self.delay = DelayRange::new(pause, pause);
        self
    }

    /// A pause drawn uniformly from `min..=max` for every request, so a host sees
    /// irregular, human-like spacing (default: none).
    #[must_use]
    pub fn delay_range(mut self, min: Duration, max: Duration) -> Self {
        self.delay = DelayRange::new(min, max);
        self
    }

    /// Retries after the first attempt, for the retry statuses and transport errors
    /// (default 3).
    #[must_use]
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Statuses worth another attempt: 429 backs off its whole host, 403 is retried as a
    /// block, the rest as transient trouble; any other non-2xx is given up at once
    /// (default [`DEFAULT_RETRY_STATUSES`]).
    #[must_use]
    pub fn retry_statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.retry_statuses = statuses.into_iter().collect();
        self
    }

    /// Bounds of the wait before a retry: the first is `base`, each later one is drawn
    /// from `base..=3 × previous`, never above `cap`; a Retry-After is a floor
    /// (default 500 ms, 60 s).
    #[must_use]
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.backoff = Backoff { base, cap };
        self
    }

    /// Time for one attempt, connect to last body byte (default 30 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Drop links deeper than this many hops from a start URL (default: no limit).
    #[must_use]
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// The User-Agent header; its first word is the robots.txt token
    /// (default [`DEFAULT_USER_AGENT`]).
    #[must_use]
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }

    /// A header sent with every request (default: none).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Fetch each host's robots.txt first and obey it, Crawl-delay included
    /// (default true).
    #[must_use]
    pub fn obey_robots(mut self, obey: bool) -> Self {
        self.obey_robots = obey;
        self
    }

    /// Longest chain of redirects followed (default 10).
    #[must_use]
    pub fn max_redirects(mut self, hops: u8) -> Self {
        self.max_redirects = hops;
        self
    }

    /// Largest body read, after decompression; a larger one fails the request, and a
    /// decompression bomb stops inflating here (default 8 MiB).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Threads of the parse pool (default: the number of CPUs).
    #[must_use]
    pub fn parse_threads(mut self, threads: usize) -> Self {
        self.parse_threads = threads;
        self
    }

    /// Stream items to this file; `.jsonl`, `.csv` or `.json` picks the format
    /// (default: items are counted, not written).
    #[must_use]
    pub fn output(mut self, path: impl Into<PathBuf>) -> Self {
        self.output = Some(path.into());
        self
    }

    /// Write the final stats as JSON here (default: beside the output file, named after
    /// it, `books.jsonl` → `books.stats.json`; nowhere when there is no output file).
    #[must_use]
    pub fn stats(mut self, path: impl Into<PathBuf>) -> Self {
        self.stats = Some(path.into());
        self
    }

    /// Write every request given up (URL, attempts, reason, last status or error, time)
    /// as JSON Lines here (default: beside the output file, named after it,
    /// `books.jsonl` → `books.failures.jsonl`; nowhere when there is no output file).
    #[must_use]
    pub fn failures(mut self, path: impl Into<PathBuf>) -> Self {
        self.failures = Some(path.into());
        self
    }

    /// After Ctrl-C, how long requests in flight may take to finish before they are
    /// abandoned (default 10 s). A second Ctrl-C abandons them at once.
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Stop gracefully on Ctrl-C (SIGINT) and SIGTERM, as described on
    /// [`grace`](Self::grace) (default true). Turn off when embedding a crawl in a
    /// program that handles signals itself.
    #[must_use]
    pub fn handle_signals(mut self, handle: bool) -> Self {
        self.handle_signals = handle;
        self
    }

    /// How requests leave (default: directly). A route is tiers from cheapest to dearest
    /// separated by `>`; each tier is `direct` or a pool of gateways separated by `,`,
    /// each `env:VAR` (the gateway URL, or a comma-separated list of them, in the
    /// environment variable `VAR`) or a gateway URL. A host starts on the first tier,
    /// climbs one when it keeps blocking there, and probes back down later. Credentials
    /// belong in the environment, not in code: `#[spider(proxy = ..)]` refuses a URL with
    /// them.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::Config;
    ///
    /// std::env::set_var("RESIDENTIAL_PROXY", "http://acct:secret@gate.example:7777");
    /// let config = Config::new("shop").proxy("direct > env:RESIDENTIAL_PROXY").geo("us").sticky(true);
    /// assert!(config.validate().is_ok());
    /// assert!(!config.to_string().contains("secret"));
    /// ```
    #[must_use]
    pub fn proxy(mut self, route: impl Into<String>) -> Self {
        self.proxy = Some(RouteSpec(route.into()));
        self
    }

    /// Exit country of proxied requests, a two-letter code sent in the gateway username
    /// (default: none, the gateway's choice).
    #[must_use]
    pub fn geo(mut self, country: impl Into<String>) -> Self {
        self.geo = Some(country.into().to_ascii_lowercase());
        self
    }

    /// Exit country for hosts matching `pattern`: `*.de` for every host ending in `.de`, or
    /// one host name. The first matching rule wins over [`geo`](Self::geo)
    /// (default: none).
    #[must_use]
    pub fn geo_rule(mut self, pattern: impl Into<String>, country: impl Into<String>) -> Self {
        self.geo_rules.push((pattern.into().to_ascii_lowercase(), country.into().to_ascii_lowercase()));
        self
    }

    /// Sticky sessions: every request of one logical task (a [`Request`]'s session key,
    /// inherited by its follow-ups; each start URL is a task of its own) leaves through
    /// one gateway session, which the provider pins to one exit; a blocked session is
    /// replaced. Without it, every proxied request opens a new connection, which a
    /// rotating gateway gives a new exit (default false). Sessions are remembered for the
    /// whole crawl, one small entry per task.
    #[must_use]
    pub fn sticky(mut self, sticky: bool) -> Self {
        self.sticky = sticky;
        self
    }

    /// The gateway username, with `{user}` (from the gateway URL), `{geo}` and
    /// `{session}`; a part without a value is left out with the text before it
    /// (default [`DEFAULT_USER_TEMPLATE`]).
    #[must_use]
    pub fn proxy_user_template(mut self, template: impl Into<String>) -> Self {
        self.proxy_user_template = template.into();
        self
    }

    /// Price of a GB through the gateways, to report the spend (default 0).
    #[must_use]
    pub fn proxy_price_per_gb(mut self, price: f64) -> Self {
        self.proxy_price_per_gb = price;
        self
    }

    /// Stop admitting requests once the proxy spend reaches this amount, at
    /// [`proxy_price_per_gb`](Self::proxy_price_per_gb); what is in flight finishes, the
    /// items are flushed and the crawl ends with [`CrawlStatus::BudgetReached`](crate::CrawlStatus::BudgetReached)
    /// (default: no budget).
    #[must_use]
    pub fn proxy_budget(mut self, budget: f64) -> Self {
        self.proxy_budget = Some(budget);
        self
    }

    /// Trust this PEM certificate besides the built-in roots, for a private or test
    /// server such as the sandbox's TLS mode (default: built-in roots only). TLS
    /// verification stays on.
    #[must_use]
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_cert = Some(path.into());
        self
    }

    /// Text that marks an answer as a block whatever its status: a captcha wall served with
    /// 200, say. A blocked answer is not parsed; it is retried, from a new exit when proxies
    /// allow (default: none; 403, 429 and 503 challenge pages are blocks anyway).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_core::Config::new("shop").block_marker("g-recaptcha").block_marker("Access denied");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn block_marker(mut self, text: impl Into<String>) -> Self {
        self.block_markers.push(text.into());
        self
    }

    /// Adaptive mode: each host starts slow and its slots and request rate grow while its
    /// block rate stays under [`block_target`](Self::block_target); both are cut by 20%
    /// when it moves above, and held there a while. `concurrency` and `per_host` become
    /// ceilings; `rpm`/`rps` stay a hard ceiling over everything. A host whose answers are
    /// mostly blocks is paused by a circuit breaker, then probed (default false).
    #[must_use]
    pub fn adaptive(mut self, adaptive: bool) -> Self {
        self.adaptive = adaptive;
        self
    }

    /// The block rate adaptive mode keeps each host under, as a fraction (default 0.02).
    #[must_use]
    pub fn block_target(mut self, fraction: f64) -> Self {
        self.block_target = fraction;
        self
    }

    /// Serve the crawl's gauges (block rate, pages/s, latency, in flight, per-host limits,
    /// proxy spend) in the Prometheus text format at this address while it runs
    /// (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_core::Config::new("shop").metrics("127.0.0.1:9898");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn metrics(mut self, addr: impl Into<String>) -> Self {
        self.metrics = Some(addr.into());
        self
    }

    /// Show progress while crawling: a status line when stderr is a terminal, otherwise an
    /// `info` log line every 5 s (default true).
    #[must_use]
    pub fn progress(mut self, show: bool) -> Self {
        self.progress = show;
        self
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

    /// Check every setting; all mistakes are reported together.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming each bad setting and what to write instead.
    pub fn validate(&self) -> Result<(), Error> {
        let mut problems = self.invalid.clone();
        if self.concurrency == 0 {
            problems.push("concurrency = 0 admits nothing; write at least 1".to_owned());
        }
        if self.per_host == 0 {
            problems.push("per_host = 0 admits nothing; write at least 1".to_owned());
        }
        if self.parse_threads == 0 {
            problems.push("parse_threads = 0 parses nothing; write at least 1".to_owned());
        }
        if let Some(rate) = &self.rate {
            if rate.requests().is_none() {
                problems.push("a rate of 0 admits nothing; write at least 1, or no rate".to_owned());
            }
        }
        if self.delay.min() > self.delay.max() {
            problems.push(format!(
                "delay range {:?}..{:?} is reversed; write the smaller bound first",
                self.delay.min(),
                self.delay.max()
            ));
        }
        if self.backoff.base > self.backoff.cap {
            problems.push("backoff base is above its cap; write base <= cap".to_owned());
        }
        if self.timeout.is_zero() {
            problems.push("timeout = 0 fails every request; write a positive duration".to_owned());
        }
        for url in &self.start_urls {
            match url::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
                Ok(_) => problems.push(format!("start URL {url:?} is not http or https")),
                Err(e) => problems.push(format!(
                    "start URL {url:?} does not parse ({e}); write an absolute URL such as \"https://example.com/\""
                )),
            }
        }
        for (name, value) in &self.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                || reqwest::header::HeaderValue::from_str(value).is_err()
            {
                problems.push(format!("header {name:?} is not a valid HTTP header"));
            }
        }
        if reqwest::header::HeaderValue::from_str(&self.user_agent).is_err() {
            problems.push("user_agent is not a valid header value".to_owned());
        }
        problems.extend(self.proxy_problems());
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(problems.join("; ")))
        }
    }

    /// Mistakes in the proxy settings; a route's environment variables are read here, so
    /// a missing one is reported before any request.
    fn proxy_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(geo) = &self.geo {
            problems.extend(spider_settings::parse_country(geo).err());
        }
        for (pattern, country) in &self.geo_rules {
            problems.extend(spider_settings::parse_geo_rule(&format!("{pattern}={country}")).err());
        }
        problems.extend(spider_settings::check_user_template(&self.proxy_user_template).err());
        for (key, amount) in
            [("proxy_price_per_gb", Some(self.proxy_price_per_gb)), ("proxy_budget", self.proxy_budget)]
        {
            if amount.is_some_and(|n| !n.is_finite() || n < 0.0) {
                problems.push(format!("{key} must be a non-negative number"));
            }
        }
        if self.proxy_budget.is_some_and(|budget| budget <= 0.0) {
            problems
                .push("proxy_budget = 0 admits nothing; write a positive amount, or no budget".to_owned());
        }
        if self.proxy_budget.is_some() && self.proxy_price_per_gb <= 0.0 {
            problems.push("proxy_budget needs proxy_price_per_gb to turn bytes into spend".to_owned());
        }
        if self.block_markers.iter().any(String::is_empty) {
            problems.push("an empty block marker matches every page; remove it".to_owned());
        }
        if let Some(addr) = &self.metrics {
            if addr.parse::<std::net::SocketAddr>().is_err() {
                problems
                    .push(format!("metrics = {addr:?} is not an address; write one such as 127.0.0.1:9898"));
            }
        }
        if !(self.block_target > 0.0 && self.block_target < 1.0) {
            problems.push(format!(
                "block_target = {} is not a fraction; write one between 0 and 1, such as 0.05",
                self.block_target
            ));
        }
        if self.sticky && !self.proxy_user_template.contains("{session}") {
            problems.push(format!(
                "sticky = true, but proxy_user_template {:?} has no {{session}} to pin the exit with",
                self.proxy_user_template
            ));
        }
        if let Err(error) = crate::proxy::Router::new(self) {
            problems.push(error.to_string().trim_start_matches("configuration error: ").to_owned());
        }
        problems
    }

    /// The start URLs as requests; call after [`validate`](Self::validate).
    /// In sticky mode each start URL is a logical task of its own.
    pub(crate) fn start_requests(&self) -> Result<Vec<Request>, Error> {
        let task = |i: usize, request: Request| {
            if self.sticky {
                request.with_session(format!("start-{i}"))
            } else {
                request
            }
        };
        self.start_urls.iter().enumerate().map(|(i, url)| Request::get(url).map(|r| task(i, r))).collect()
    }
}
