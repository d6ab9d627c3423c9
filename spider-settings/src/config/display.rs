//! How a [`Config`] prints: its settings as `key = value` lines for the start of a run,
//! header values and proxy credentials left out.

use std::path::PathBuf;

use super::{Config, RouteSpec};
use crate::{DelayRange, RedisAddress};

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
        if self.start_list.is_some() {
            writeln!(f, "  start_list = {}", path(&self.start_list))?;
        }
        writeln!(f, "  allowed_domains = {}", list(&self.allowed_domains))?;
        if self.sitemaps || !self.sitemap_urls.is_empty() || self.sitemap_since.is_some() {
            let since = self.sitemap_since.map_or("none".to_owned(), |date| date.to_string());
            writeln!(
                f,
                "  sitemaps = {} · sitemap_urls = {} · sitemap_since = {since}",
                self.sitemaps,
                list(&self.sitemap_urls)
            )?;
        }
        writeln!(f, "  concurrency = {} · per_host = {} · {rate}", self.concurrency, self.per_host)?;
        if self.dom_only {
            writeln!(f, "  extract = dom")?;
        }
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
        let limits: Vec<String> = [("max_pages", self.max_pages), ("max_items", self.max_items)]
            .into_iter()
            .filter_map(|(key, max)| max.map(|n| format!("{key} = {n}")))
            .collect();
        if !limits.is_empty() {
            writeln!(f, "  {}", limits.join(" · "))?;
        }
        let headers: Vec<String> = self.headers.iter().map(|(name, _)| format!("{name}: …")).collect();
        writeln!(f, "  headers = {}", list(&headers))?;
        let mut agents = match self.user_agents.len() {
            0 => "none".to_owned(),
            n => format!("{n} listed"),
        };
        if let Some(path) = &self.user_agents_file {
            agents = format!("{agents} + {}", path.display());
        }
        writeln!(
            f,
            "  cookies = {} · seeded cookies = {} · user_agents = {agents} · follow_hidden = {}",
            self.cookies,
            self.seed_cookies.0.len(),
            self.follow_hidden
        )?;
        if let Some(RouteSpec(proxy)) = &self.proxy {
            let rules: Vec<String> = self.geo_rules.iter().map(|(p, c)| format!("{p}={c}")).collect();
            writeln!(
                f,
                "  proxy = {} · geo = {} · geo_rules = {} · sticky = {}",
                crate::redact_spec(proxy),
                self.geo.as_deref().unwrap_or("any"),
                list(&rules),
                self.sticky
            )?;
            let budget = self.proxy_budget.map_or("none".to_owned(), |b| format!("{b}"));
            writeln!(f, "  proxy_price_per_gb = {} · proxy_budget = {budget}", self.proxy_price_per_gb)?;
        }
        let watch: Vec<String> = [("metrics", &self.metrics), ("dashboard", &self.dashboard)]
            .into_iter()
            .filter_map(|(key, addr)| addr.as_ref().map(|addr| format!("{key} = {addr}")))
            .chain(self.report.as_ref().map(|report| format!("report = {}", report.display())))
            .collect();
        if !watch.is_empty() {
            writeln!(f, "  {}", watch.join(" · "))?;
        }
        write!(f, "  output = {}", path(&self.output))?;
        if let Some(state) = &self.state {
            write!(f, " · state = {}{}", state.display(), if self.fresh { " (fresh)" } else { "" })?;
            if self.state_sync {
                write!(f, " · state_sync = true")?;
            }
        }
        if let Some(frontier) = &self.frontier {
            let shown =
                RedisAddress::parse(frontier).map_or_else(|_| crate::redact_url(frontier), |a| a.to_string());
            write!(
                f,
                " · frontier = {shown} · crawl_id = {} · lease = {:?}",
                self.fleet_crawl(),
                self.lease
            )?;
        }
        if let Some(cache) = &self.cache {
            let ttl = self.cache_ttl.map_or("none".to_owned(), |ttl| format!("{ttl:?}"));
            write!(
                f,
                " · cache = {} · cache_ttl = {ttl} · revalidate = {}",
                cache.display(),
                self.revalidate
            )?;
        }
        Ok(())
    }
}
