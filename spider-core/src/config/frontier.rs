//! Setters for what the frontier takes in: where the crawl starts, which domains it stays
//! on, how deep it goes.

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
}
