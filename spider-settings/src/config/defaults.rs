//! Every default in one place: [`Config::new`], and [`Default`] as a config for a spider
//! called `spider`.

use std::time::Duration;

use super::{Config, SeedCookies, DEFAULT_USER_AGENT};
use crate::{Backoff, DelayRange, DEFAULT_RETRY_STATUSES, DEFAULT_USER_TEMPLATE};

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
            sitemaps: false,
            sitemap_urls: Vec::new(),
            sitemap_since: None,
            concurrency: 16,
            per_host: 8,
            politeness: crate::Politeness::Server,
            rate: None,
            delay: DelayRange::ZERO,
            retries: 3,
            retry_statuses: DEFAULT_RETRY_STATUSES.to_vec(),
            backoff: Backoff { base: Duration::from_millis(500), cap: Duration::from_secs(60) },
            timeout: Duration::from_secs(30),
            impersonate: crate::Impersonate::None,
            http2: true,
            render: crate::Render::Never,
            render_timeout: Duration::from_secs(15),
            render_resources: false,
            browser_pages: 4,
            browser_recycle: 200,
            browser_rss: 2048,
            screenshot_failures: None,
            max_depth: None,
            start_list: None,
            max_pages: None,
            max_items: None,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            headers: Vec::new(),
            cookies: true,
            seed_cookies: SeedCookies::default(),
            user_agents: Vec::new(),
            user_agents_file: None,
            follow_hidden: false,
            obey_robots: true,
            max_redirects: 10,
            max_body_bytes: 8 * 1024 * 1024,
            parse_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            dom_only: false,
            outputs: Vec::new(),
            stores: Vec::new(),
            store_patience: Duration::from_secs(300),
            warc: None,
            warc_max_bytes: 1_000_000_000,
            overwrite: true,
            stats: None,
            failures: None,
            state: None,
            fresh: false,
            force: false,
            state_sync: false,
            frontier: None,
            crawl_id: None,
            lease: Duration::from_secs(60),
            partitions: 0,
            cache: None,
            cache_ttl: None,
            revalidate: false,
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
            dashboard: None,
            report: None,
            progress: true,
            invalid: Vec::new(),
        }
    }
}
