//! The check at the start of a crawl: the setters cannot fail, so every mistake is found
//! here and reported together.

use super::Config;
use crate::{ConfigError, RedisAddress};

impl Config {
    /// Check every setting; all mistakes are reported together.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming each bad setting and what to write instead.
    pub fn validate(&self) -> Result<(), ConfigError> {
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
                problems.push(format!("{} = 0 admits nothing; write at least 1, or no rate", rate_key(rate)));
            }
        }
        if self.delay.min() > self.delay.max() {
            problems.push(format!(
                "delay = {:?}..{:?} is reversed; write the smaller bound first",
                self.delay.min(),
                self.delay.max()
            ));
        }
        if self.backoff.base > self.backoff.cap {
            problems.push(format!(
                "backoff = {:?}..{:?}: the shortest wait is above the longest; write the shorter first",
                self.backoff.base, self.backoff.cap
            ));
        }
        if self.timeout.is_zero() {
            problems.push("timeout = 0 fails every request; write a positive duration".to_owned());
        }
        let urls = self.start_urls.iter().map(|url| ("start_urls", "start", url));
        let sitemaps = self.sitemap_urls.iter().map(|url| ("sitemap_urls", "sitemap", url));
        for (key, what, url) in urls.chain(sitemaps) {
            match url::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
                Ok(_) => problems.push(format!("{key}: {what} URL {url:?} is not http or https")),
                Err(e) => problems.push(format!(
                    "{key}: {what} URL {url:?} does not parse ({e}); write an absolute URL such as \
                        \"https://example.com/\""
                )),
            }
        }
        problems.extend(self.sitemap_problems());
        for (name, value) in &self.headers {
            if http::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                || http::header::HeaderValue::from_str(value).is_err()
            {
                problems.push(format!("headers: header {name:?} is not a valid HTTP header"));
            }
        }
        if http::header::HeaderValue::from_str(&self.user_agent).is_err() {
            problems.push("user_agent is not a valid header value".to_owned());
        }
        problems.extend(self.proxy_problems());
        problems.extend(self.file_problems());
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::new(problems.join("; ")))
        }
    }

    /// Files the crawl writes whose folder does not exist (the crawl makes no folder but
    /// the cache's), and state or cache files that are not files.
    fn folder_problems(&self) -> Vec<String> {
        let sqlite = self.stores.iter().filter_map(|store| match crate::StoreUri::parse(store) {
            Ok(store) => match store.kind() {
                crate::StoreKind::Sqlite(path) => Some(("output", path.clone())),
                _ => None,
            },
            Err(_) => None,
        });
        let files = self.outputs.iter().map(|file| ("output", file.path.clone())).chain(sqlite).chain(
            [
                ("failures", &self.failures),
                ("state", &self.state),
                ("warc", &self.warc),
                ("report", &self.report),
            ]
            .into_iter()
            .filter_map(|(key, path)| Some((key, path.clone()?))),
        );
        let mut problems = Vec::new();
        for (key, path) in files {
            let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty());
            if let Some(folder) = folder.filter(|folder| !folder.is_dir()) {
                problems.push(format!(
                    "{key} = {}: the folder {} does not exist; make it first, or name a file in a folder \
                        that does",
                    path.display(),
                    folder.display()
                ));
            }
        }
        for (key, path) in [("state", &self.state), ("cache", &self.cache)] {
            let Some(path) = path else { continue };
            // SQLite would block for ever opening a FIFO, and fail late on a directory.
            if std::fs::metadata(path).is_ok_and(|meta| !meta.is_file()) {
                problems.push(format!(
                    "{key} = {}: not a regular file; name a file (it is made when missing)",
                    path.display()
                ));
            }
        }
        problems
    }

    /// `sitemaps = true` where no robots.txt would be read for it.
    fn sitemap_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.sitemaps && !self.obey_robots {
            problems.push(
                "sitemaps = true reads the Sitemap: lines of robots.txt, and obey_robots = false \
                fetches none; list the sitemaps in sitemap_urls instead"
                    .to_owned(),
            );
        }
        if self.sitemaps && self.start_urls.is_empty() {
            problems.push(
                "sitemaps = true reads the robots.txt of the start URLs' hosts, and there are no \
                start URLs; set start_urls, or list the sitemaps in sitemap_urls"
                    .to_owned(),
            );
        }
        problems
    }

    /// Mistakes in the state file and cache settings.
    fn file_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.revalidate && self.cache.is_none() {
            problems.push("revalidate = true needs a cache to revalidate; set cache = FILE too".to_owned());
        }
        if self.state_sync && self.state.is_none() {
            problems.push(
                "state_sync = true syncs a state file, and there is none; set state = FILE too".to_owned(),
            );
        }
        if self.fresh && self.state.is_none() {
            problems
                .push("--fresh starts a state file over, and there is none; set state = FILE too".to_owned());
        }
        if self.force && !self.fresh {
            problems
                .push("--force goes with --fresh: it discards a state file --fresh alone refuses".to_owned());
        }
        problems.extend(self.fleet_problems());
        if !self.stores.is_empty() && self.frontier.is_some() {
            problems.push(
                "a fleet writes each worker's items to its own file; tables as output are for one crawler \
                 (with a state file) in this version: give -o a file"
                    .to_owned(),
            );
        }
        for store in &self.stores {
            match crate::StoreUri::parse(store) {
                Ok(store) => {
                    if let crate::StoreKind::Sqlite(path) = store.kind() {
                        if [&self.state, &self.cache].iter().any(|f| f.as_deref() == Some(path))
                            || self.outputs.iter().any(|file| file.is(path))
                        {
                            problems.push(format!(
                                "output {store} is a file the crawl writes already; give \
                                the table a file of its own"
                            ));
                        }
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
        problems.extend(self.folder_problems());
        if let Some(warc) = self.warc.as_deref().filter(|p| !p.to_string_lossy().ends_with(".warc.gz")) {
            problems.push(format!(
                "warc = {}: a WARC archive's name ends in .warc.gz (a gzip member per record)",
                warc.display()
            ));
        }
        if self.frontier.is_some() && self.outputs.iter().any(|file| super::compressed(&file.path)) {
            problems.push(
                "a fleet's workers write files `spiderling fleet --merge` joins, uncompressed in \
                this version: give -o a .jsonl or .csv file"
                    .to_owned(),
            );
        }
        if self.frontier.is_some() && self.outputs.len() > 1 {
            problems.push(
                "a fleet's worker writes one items file in this version, which `spiderling fleet --merge` \
                 joins with the others' (and any tables from one crawler): give -o one file"
                    .to_owned(),
            );
        }
        for file in &self.outputs {
            if let Some(item_type) = file.item_type.as_deref().filter(|t| !crate::store::is_item_type(t)) {
                problems.push(format!(
                    "output = {file}: type = {item_type} is not a type's name; write the name of the items' \
                        struct, such as ?type=Book"
                ));
            }
        }
        if self.warc.is_some() && self.frontier.is_some() {
            problems.push(
                "a fleet's workers cannot share one WARC archive in this version; archive from one crawler"
                    .to_owned(),
            );
        }
        let outputs = self.outputs.iter().map(|file| ("output", Some(file.path.as_path())));
        let files: Vec<(&str, Option<&std::path::Path>)> = [
            ("state", self.state.as_deref()),
            ("cache", self.cache.as_deref()),
            ("warc", self.warc.as_deref()),
        ]
        .into_iter()
        .chain(outputs)
        .collect();
        for (i, (a, first)) in files.iter().enumerate() {
            for (b, second) in &files[i + 1..] {
                if first.is_some() && first == second {
                    problems.push(format!("{a} and {b} are the same file; give each a file of its own"));
                }
            }
        }
        problems
    }

    /// Mistakes in the fleet's settings, found without connecting.
    fn fleet_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(frontier) = &self.frontier else {
            if self.crawl_id.is_some() {
                problems.push(
                    "crawl_id names a fleet's crawl, and there is no fleet; set frontier = \
                    \"redis://HOST:PORT/DB\" too"
                        .to_owned(),
                );
            }
            return problems;
        };
        if let Err(problem) = RedisAddress::parse(frontier) {
            problems.push(problem);
        }
        if self.state.is_some() {
            problems.push(
                "a crawl lives in a state file or in a fleet's Redis, not both; drop state or frontier"
                    .to_owned(),
            );
        }
        if self.crawl_id.as_deref().is_some_and(|id| id.is_empty() || id.contains(char::is_whitespace)) {
            problems.push("crawl_id must be a word without spaces, such as \"shop-2026-11\"".to_owned());
        }
        // The crawl's name is its keys' hash tag, `{NAME}`: a brace in it would cut the tag.
        if self.fleet_crawl().contains(['{', '}']) {
            problems.push(format!(
                "the fleet's crawl is named {:?}, and a crawl's name may not hold {{ or }}; give crawl_id \
                    another",
                self.fleet_crawl()
            ));
        }
        if self.lease < std::time::Duration::from_secs(1) {
            problems.push(format!(
                "lease = {:?} is too short to renew; give at least 1s (default 60s)",
                self.lease
            ));
        }
        if self.partitions > MOST_PARTITIONS {
            problems.push(format!(
                "partitions = {} is more parts than a crawl needs; give at most {MOST_PARTITIONS} (0 for one \
                    per master)",
                self.partitions
            ));
        }
        problems
    }

    /// Mistakes in the proxy settings; a route's environment variables are read here, so
    /// a missing one is reported before any request.
    fn proxy_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(geo) = &self.geo {
            problems.extend(crate::parse_country(geo).err().map(|problem| format!("geo: {problem}")));
        }
        for (pattern, country) in &self.geo_rules {
            let rule = crate::parse_geo_rule(&format!("{pattern}={country}"));
            problems.extend(rule.err().map(|problem| format!("geo_rules: {problem}")));
        }
        let template = crate::check_user_template(&self.proxy_user_template);
        problems.extend(template.err().map(|problem| format!("proxy_user_template: {problem}")));
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
            problems.push("block_markers: an empty marker matches every page; remove it".to_owned());
        }
        for (key, addr) in [("metrics", &self.metrics), ("dashboard", &self.dashboard)] {
            if let Some(addr) = addr.as_ref().filter(|a| a.parse::<std::net::SocketAddr>().is_err()) {
                problems
                    .push(format!("{key} = {addr:?} is not an address; write one such as 127.0.0.1:9898"));
            }
        }
        if self.report.as_ref().is_some_and(|path| path.as_os_str().is_empty()) {
            problems.push("report = \"\" names no file; write one such as crawl.html".to_owned());
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
        if let Some(spec) = &self.proxy {
            problems.extend(crate::resolve_proxy(&spec.0).err());
        }
        problems.extend(self.seed_cookies.iter().filter_map(|(url, line)| seed_cookie_problem(url, line)));
        problems
    }
}

/// Why a cookie given before the crawl cannot be kept for `url`: the URL, or the line, or
/// a domain that is not the URL's. The message names the cookie, never its value.
fn seed_cookie_problem(url: &str, line: &str) -> Option<String> {
    let url = match url::Url::parse(url) {
        Ok(url) => url,
        Err(e) => return Some(format!("seed_cookie for {url:?}: {e}")),
    };
    let name = line.split_once('=').map_or(line, |(name, _)| name).trim();
    let Ok(cookie) = cookie_store::RawCookie::parse(line) else {
        return Some(format!("seed_cookie for {url}: {name:?} is not a Set-Cookie line"));
    };
    let mut store = cookie_store::CookieStore::default();
    let host = url.host_str().unwrap_or_default();
    store
        .insert_raw(&cookie, &url)
        .err()
        .map(|_| format!("seed_cookie for {url}: cookie {name:?} is not for {host}"))
}

/// The key a rate ceiling was set with.
fn rate_key(rate: &crate::RateCeiling) -> &'static str {
    if rate.per() == std::time::Duration::from_secs(1) {
        "rps"
    } else {
        "rpm"
    }
}

/// The most parts a fleet's crawl may be split into: each part is scanned when a worker
/// counts the crawl's queues.
const MOST_PARTITIONS: usize = 256;
