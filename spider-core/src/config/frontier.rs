//! Setters for what the frontier takes in: where the crawl starts, which domains it stays
//! on, how deep it goes; and where it lives, in memory or in a state file.

use std::path::PathBuf;

use super::Config;

impl Config {
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

    /// Drop links deeper than this many hops from a start URL (default: no limit).
    #[must_use]
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = Some(depth);
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
    /// let config = spider_core::Config::new("shop").output("shop.jsonl").state("shop.state");
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
}
