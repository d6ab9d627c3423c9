//! Run-time overrides: one setting changed by its key and a text value, as
//! `--set key=value` and `SPIDERLING_KEY=value` do. The keys, their value grammar and how
//! each sets a config come from the one table (`keys.rs`), so a key means the same here
//! as in `#[spider(...)]`.

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
        let Some(known) = crate::find(key) else {
            let hint = crate::suggest(key).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
            return Err(ConfigError::new(format!("unknown setting `{key}`{hint}")));
        };
        let problem = |message: String| ConfigError::new(format!("{key} = {}: {message}", known.echo(value)));
        match known.set(self, value) {
            Some(set) => set.map_err(problem),
            None => Err(problem("this key is compiled into the spider; change the attribute".to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_agents_are_split_at_bars_since_they_hold_commas() {
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 \
            Safari/537.36";
        let config = Config::new("x").set("user_agents", &format!("{chrome} | spiderling/1")).unwrap();
        assert_eq!(config.user_agents, [chrome, "spiderling/1"]);
    }

    #[test]
    fn output_takes_files_and_tables_each_of_a_type_or_all_and_says_what_it_cannot_do() {
        let pg = "postgres://u:hunter2@127.0.0.1/db?table=books";
        let config = Config::new("x")
            .set("output", &format!("books.jsonl?type=Book, reviews.csv?type=Review, {pg}, s3://b/p"))
            .unwrap();
        let files: Vec<String> = config.outputs.iter().map(ToString::to_string).collect();
        assert_eq!(files, ["books.jsonl?type=Book", "reviews.csv?type=Review"]);
        assert_eq!(config.stores.len(), 2);
        assert_eq!(
            config.stats_path().as_deref(),
            Some(std::path::Path::new("books.stats.json")),
            "beside the first"
        );
        let shown = config.to_string();
        assert!(
            shown.contains(
                "output = books.jsonl?type=Book, reviews.csv?type=Review, \
                postgres://***@127.0.0.1/db?table=books, s3://b/p"
            ),
            "{shown}"
        );
        let problem = |config: Config| config.validate().map_err(|e| e.to_string()).unwrap_err();
        assert!(problem(Config::new("x").output("a.jsonl?type=a b")).contains("not a type's name"));
        assert!(problem(Config::new("x").output("a.jsonl").state("a.jsonl")).contains("the same file"));
        let fleet = Config::new("x").frontier("redis://127.0.0.1:6379/0");
        assert!(problem(fleet.clone().output("a.jsonl").output("b.jsonl")).contains("one items file"));
        assert!(problem(fleet.clone().output(pg)).contains("tables as output are for one crawler"));
        assert!(problem(fleet.clone().warc("a.warc.gz")).contains("one WARC archive"));
        assert!(problem(fleet.clone().output("a.jsonl.gz")).contains("uncompressed"));
        assert!(problem(fleet.output("a.jsonl.zst")).contains("uncompressed"));
        let zst = Config::new("x").output("out/books.csv.zst");
        assert_eq!(zst.stats_path().as_deref(), Some(std::path::Path::new("out/books.stats.json")));
        assert!(problem(Config::new("x").output("sqlite://x.state?table=t").state("x.state"))
            .contains("a file the crawl writes already"));
        assert!(problem(Config::new("x").output("sqlite://x.db")).contains("?table="));
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
            shown.contains(
                "sitemaps = true · sitemap_urls = https://shop.example/a.xml, \
                https://shop.example/b.xml.gz · sitemap_since = 2026-01-01"
            ),
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
