//! Run-time overrides: one setting changed by its key and a text value, as
//! `--set key=value` and `SPIDERLING_KEY=value` do. The keys and their value grammar come
//! from `spider_settings`, so a key means the same here as in `#[spider(...)]`.

use super::Config;
use crate::ConfigError;

impl Config {
    /// Change one setting by its key, as `--set key=value` and `SPIDERLING_KEY=value` do.
    /// Lists are comma-separated and replace the list set before; durations are written
    /// `500ms`, `2s`, `1m`; a delay is one duration or a range `1s..3s`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for an unknown key (with the closest known one), a key that only
    /// compiles into the spider (`follow`, `item`), or a value that does not parse.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("books").set("rpm", "300")?.set("delay", "1s..2s")?;
    /// assert!(config.validate().is_ok());
    /// let error = spider_settings::Config::new("books").set("concurency", "4").unwrap_err();
    /// assert!(error.to_string().contains("did you mean `concurrency`?"));
    /// # Ok::<(), spider_settings::ConfigError>(())
    /// ```
    pub fn set(self, key: &str, value: &str) -> Result<Self, ConfigError> {
        use crate as keys;
        let shown = crate::redact_spec(value);
        let problem = |message: String| ConfigError::new(format!("{key} = {shown:?}: {message}"));
        let Some(known) = keys::find(key) else {
            let hint = keys::suggest(key).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
            return Err(ConfigError::new(format!("unknown setting `{key}`{hint}")));
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
            "sitemaps" => self.sitemaps(keys::parse_bool(value).map_err(problem)?),
            "sitemap_urls" => Config { sitemap_urls: list(), ..self },
            "sitemap_since" => {
                keys::parse_date(value).map_err(problem)?;
                self.sitemap_since(value)
            }
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
            "max_pages" => self.max_pages(count(true)?),
            "max_items" => self.max_items(count(true)?),
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
            "cookies" => self.cookies(keys::parse_bool(value).map_err(problem)?),
            // Agents hold commas ("KHTML, like Gecko"): at run time they are split at `|`.
            "user_agents" => {
                let agents = value.split('|').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
                Config { user_agents: agents.collect(), ..self }
            }
            "user_agents_file" => self.user_agents_file(value),
            "follow_hidden" => self.follow_hidden(keys::parse_bool(value).map_err(problem)?),
            "obey_robots" => self.obey_robots(keys::parse_bool(value).map_err(problem)?),
            "parse_threads" => self.parse_threads(size(true)?),
            "extract" => match value {
                "dom" => self.dom_only(true),
                "stream" => {
                    return Err(problem(
                        "the streaming engine is chosen when the spider is built: \
                         `#[spider(extract = \"stream\")]`; at run time only `dom` can be asked"
                            .to_owned(),
                    ))
                }
                _ => return Err(problem("expected `dom`".to_owned())),
            },
            "output" => self.output(value),
            "state" => self.state(value),
            "state_sync" => self.state_sync(keys::parse_bool(value).map_err(problem)?),
            "frontier" => self.frontier(value),
            "crawl_id" => self.crawl_id(value),
            "lease" => self.lease(keys::parse_duration(value).map_err(problem)?),
            "cache" => self.cache(value),
            "cache_ttl" => self.cache_ttl(keys::parse_duration(value).map_err(problem)?),
            "revalidate" => self.revalidate(keys::parse_bool(value).map_err(problem)?),
            "proxy" => {
                crate::parse_proxy(value, false).map_err(problem)?;
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
            "dashboard" => self.dashboard(value),
            "report" => self.report(value),
            "progress" => self.progress(keys::parse_bool(value).map_err(problem)?),
            "block_target" => self.block_target(keys::parse_decimal(value).map_err(problem)?),
            other => {
                return Err(ConfigError::new(format!("setting `{other}` cannot be changed at run time")))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_agents_are_split_at_bars_since_they_hold_commas() {
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
        let config = Config::new("x").set("user_agents", &format!("{chrome} | spiderling/1")).unwrap();
        assert_eq!(config.user_agents, [chrome, "spiderling/1"]);
    }

    #[test]
    fn the_sitemap_keys_are_set_as_the_attribute_sets_them() {
        let config = Config::new("shop")
            .set("start_urls", "https://shop.example/")
            .and_then(|c| c.set("sitemaps", "true"))
            .and_then(|c| c.set("sitemap_urls", "https://shop.example/a.xml, https://shop.example/b.xml.gz"))
            .and_then(|c| c.set("sitemap_since", "2026-01-01"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(config.validate().is_ok());
        let shown = config.to_string();
        assert!(
            shown.contains("sitemaps = true · sitemap_urls = https://shop.example/a.xml, https://shop.example/b.xml.gz · sitemap_since = 2026-01-01"),
            "{shown}"
        );
        let error = Config::new("shop").set("sitemap_since", "2026-02-30").map(|_| ()).unwrap_err();
        assert!(error.to_string().contains("month 2 has no day 30"), "{error}");
        let error = Config::new("shop").sitemap_url("sitemap.xml").validate().unwrap_err();
        assert!(error.to_string().contains("sitemap URL \"sitemap.xml\" does not parse"), "{error}");
    }

    #[test]
    fn the_dom_can_be_asked_for_at_run_time_and_the_stream_cannot() {
        let config = Config::new("shop").set("extract", "dom").unwrap_or_else(|e| panic!("{e}"));
        assert!(config.dom_only);
        assert!(config.to_string().contains("\n  extract = dom\n"), "{config}");
        let error = Config::new("shop").set("extract", "stream").map(|_| ()).unwrap_err().to_string();
        assert!(error.contains("#[spider(extract = \"stream\")]"), "{error}");
        let error = Config::new("shop").set("extract", "tree").map(|_| ()).unwrap_err().to_string();
        assert!(error.contains("expected `dom`"), "{error}");
    }

    #[test]
    fn sitemaps_without_robots_txt_to_read_them_from_is_refused() {
        let without_robots =
            Config::new("shop").start_url("https://shop.example/").sitemaps(true).obey_robots(false);
        let error = without_robots.validate().unwrap_err().to_string();
        assert!(error.contains("list the sitemaps in sitemap_urls instead"), "{error}");
        let without_start = Config::new("shop").sitemaps(true).validate().unwrap_err().to_string();
        assert!(without_start.contains("there are no start URLs"), "{without_start}");
    }
}
