//! Setters for what the frontier takes in: where the crawl starts, which domains it stays
//! on, how deep it goes; and where it lives: in memory, in a state file, or in Redis shared
//! by a fleet of workers.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;

impl Config {
    /// Add a URL the crawl starts from (default: none).
    #[must_use]
    pub fn start_url(mut self, url: impl Into<String>) -> Self {
        self.start_urls.push(url.into());
        self
    }

    /// Also start from the URLs in this file, one per line (`-` for standard input;
    /// blank lines and `#` comments are skipped). It is read while the crawl runs, so a
    /// list of millions is never in memory whole; a line that is not a URL is logged with
    /// its number, counted in the summary, and skipped (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").start_list("urls.txt");
    /// assert!(config.to_string().contains("start_list = urls.txt"));
    /// ```
    #[must_use]
    pub fn start_list(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.start_list = Some(path.into());
        self
    }

    /// Read the sitemaps that the robots.txt of each start URL's host names in its
    /// `Sitemap:` lines (default false). They are queued when that robots.txt arrives, once
    /// per crawl: a resumed state file or a fleet's other workers remember the answer and
    /// do not queue them again. The hosts of a start list (`--start-urls`) are not read
    /// for sitemaps, and robots.txt is only fetched while
    /// [`obey_robots`](Self::obey_robots) is on, so `validate` refuses this without it or
    /// without start URLs.
    ///
    /// A sitemap is a request like any other (allowed domains, robots.txt, admission,
    /// retries, the state file), but its answer is read, not handed to `parse`:
    ///
    /// - gzip is recognised by its first bytes, whatever the headers say, and inflated to
    ///   at most 50 MB;
    /// - a `<urlset>` gives its `<url><loc>`s to
    ///   `Spider::sitemap_request` (the default queues each;
    ///   see [`sitemap_since`](Self::sitemap_since)), followed like links: one level
    ///   deeper than the sitemap, in its session;
    /// - a `<sitemapindex>` queues each `<sitemap><loc>` as a sitemap, one level deeper;
    /// - the protocol's limits hold: of a file with more than 50,000 URLs, or more than
    ///   50 MB once inflated, the first 50,000 URLs (or those within 50 MB) are taken; of
    ///   a malformed file, the URLs before the mistake. Either way the sitemap is also
    ///   given up in the failures file, counted by its reason (`sitemap over 50,000 URLs`,
    ///   `sitemap over 50 MB`, `sitemap malformed`, `not a sitemap`) with the detail (the
    ///   byte where the XML went wrong), and the crawl goes on.
    ///
    /// The summary counts the sitemaps read; they are not pages, so `max_pages` does not
    /// count them.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop")
    ///     .start_url("https://shop.example/")
    ///     .allowed_domain("shop.example")
    ///     .sitemaps(true)
    ///     .sitemap_since("2026-01-01");
    /// assert!(config.validate().is_ok());
    /// assert!(config.to_string().contains("sitemaps = true"));
    /// ```
    #[must_use]
    pub fn sitemaps(mut self, read: bool) -> Self {
        self.sitemaps = read;
        self
    }

    /// Add a sitemap, or a sitemap index, to read as the crawl starts, beside the start
    /// URLs; read as described on [`sitemaps`](Self::sitemaps). A crawl may have sitemaps
    /// and no start URLs at all (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").sitemap_url("https://shop.example/sitemap.xml");
    /// assert!(config.validate().is_ok());
    /// assert!(config.to_string().contains("sitemap_urls = https://shop.example/sitemap.xml"));
    /// ```
    #[must_use]
    pub fn sitemap_url(mut self, url: impl Into<String>) -> Self {
        self.sitemap_urls.push(url.into());
        self
    }

    /// Skip the URLs of a sitemap whose `<lastmod>` is before this day, written
    /// `YYYY-MM-DD` and taken as its first second in UTC. A `<lastmod>` may be a date or a
    /// W3C datetime with its zone; a URL without one, or with one that does not read as
    /// a date, is kept. The sitemaps an index lists are always read (default: nothing
    /// skipped).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").sitemap_since("2026-01-01");
    /// assert!(config.to_string().contains("sitemap_since = 2026-01-01"));
    /// assert!(spider_settings::Config::new("shop").sitemap_since("1/1/2026").validate().is_err());
    /// ```
    #[must_use]
    pub fn sitemap_since(mut self, date: &str) -> Self {
        match crate::parse_date(date) {
            Ok(date) => self.sitemap_since = Some(date),
            Err(problem) => self.invalid.push(format!("sitemap_since: {problem}")),
        }
        self
    }

    /// Allow a domain and its subdomains; once any is set, links elsewhere are dropped
    /// (default: every domain allowed). The port is not part of the match.
    #[must_use]
    pub fn allowed_domain(mut self, domain: impl Into<String>) -> Self {
        self.allowed_domains.push(domain.into());
        self
    }

    /// Drop links deeper than this many hops from a start URL (default: no limit).
    #[must_use]
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// Fetch this many pages (answers handed to `parse`), then admit nothing more: the
    /// requests in flight count as pages to come, so the crawl stops at the count, and
    /// ends with `CrawlStatus::LimitReached`, exit
    /// code 0. With a state file the count is over all its runs; in a fleet it is each
    /// worker's (default: no limit).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("sample").max_pages(100);
    /// assert!(config.to_string().contains("max_pages = 100"));
    /// ```
    #[must_use]
    pub fn max_pages(mut self, pages: u64) -> Self {
        self.max_pages = Some(pages);
        self
    }

    /// Once this many items are written, admit nothing more; the requests in flight still
    /// finish and their items are kept, so the output may hold a few more. Counted like
    /// [`max_pages`](Self::max_pages) (default: no limit).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("sample").max_items(1_000);
    /// assert!(config.to_string().contains("max_items = 1000"));
    /// ```
    #[must_use]
    pub fn max_items(mut self, items: u64) -> Self {
        self.max_items = Some(items);
        self
    }

    /// Keep the crawl in this state file (one SQLite file), so that it survives Ctrl-C, a
    /// crash or `kill -9`: running the same crawl again goes on where it stopped, and the
    /// output holds every page's items exactly once. The frontier and the seen-set live in
    /// the file, not in memory. A file made by another spider, for another output file or
    /// by another schema version is refused before anything is fetched (default: none, the
    /// crawl lives in memory).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").output("shop.jsonl").state("shop.state");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn state(mut self, path: impl Into<PathBuf>) -> Self {
        self.state = Some(path.into());
        self
    }

    /// With a [`state`](Self::state) file, wait for the output, failures and state files to
    /// reach the disk at each checkpoint (SQLite's `synchronous = FULL` and an `fsync` of the
    /// files before each commit), so that the crawl survives a power loss as it survives a
    /// crash of the process; each checkpoint then costs a few disk flushes (default false:
    /// safe against a crash of the process, `kill -9` or an OOM kill, not of the machine).
    #[must_use]
    pub fn state_sync(mut self, sync: bool) -> Self {
        self.state_sync = sync;
        self
    }

    /// With a [`state`](Self::state) file, delete what it holds and start the crawl over,
    /// saying what was discarded (default false: go on where it stopped).
    #[must_use]
    pub fn fresh(mut self, fresh: bool) -> Self {
        self.fresh = fresh;
        self
    }

    /// With [`fresh`](Self::fresh), discard the state file even when it is another
    /// spider's, or not a state file at all (default false: such a file is refused, so a
    /// mistyped path never costs another crawl its progress).
    #[must_use]
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Share the crawl with every worker started with the same Redis URL and
    /// [`crawl_id`](Self::crawl_id): one queue per host, one seen-set, the robots.txt
    /// answers, the retries waiting, the failures and the totals live in Redis, and so do
    /// the limits. `rpm`/`rps`, `per_host` and `delay` hold for the whole fleet, not per
    /// process. A worker leases the requests it fetches; if it dies, its leases run out
    /// after [`lease`](Self::lease) and another worker takes them. The crawl ends for all
    /// when nothing is queued, leased or waiting to be retried.
    ///
    /// `address` is `redis://[:PASSWORD@]HOST:PORT/DB` (`rediss://` for TLS), or `env:VAR`
    /// naming an environment variable that holds one; the password is never printed
    /// (default: none, the crawl lives in this process).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop")
    ///     .start_url("https://shop.example/")
    ///     .frontier("redis://127.0.0.1:6379/0")
    ///     .rpm(600);
    /// assert!(config.validate().is_ok());
    /// assert!(config.to_string().contains("crawl_id = shop"));
    /// ```
    #[must_use]
    pub fn frontier(mut self, address: impl Into<String>) -> Self {
        self.frontier = Some(address.into());
        self
    }

    /// With a [`frontier`](Self::frontier), the name of the crawl the workers share
    /// (default: the spider's name). Two crawls of one spider at once need two names.
    #[must_use]
    pub fn crawl_id(mut self, id: impl Into<String>) -> Self {
        self.crawl_id = Some(id.into());
        self
    }

    /// With a [`frontier`](Self::frontier), how long a request stays with the worker that
    /// took it without that worker being heard from; the worker renews its leases well
    /// before, so only a dead or cut-off worker loses them (default 60 s).
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// With a [`frontier`](Self::frontier), how many parts the crawl's hosts are split
    /// into, fixed by the worker that creates the crawl (default 0: one part on a single
    /// Redis, one per master on a Redis Cluster, so that a crawl of many hosts spreads
    /// over the masters). A host's queue, seen-set and limits live in its part; each
    /// worker leases from one part at a time and moves to another when its part runs dry.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop")
    ///     .start_url("https://shop.example/")
    ///     .frontier("redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002")
    ///     .partitions(6);
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn partitions(mut self, parts: usize) -> Self {
        self.partitions = parts;
        self
    }
}
