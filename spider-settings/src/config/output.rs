//! Setters for what a crawl leaves behind and how it runs: the parse pool, the items,
//! stats and failures files, shutdown on signals, the metrics endpoint, the dashboard, the
//! report and the progress line.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;

impl Config {
    /// Threads of the parse pool (default: the number of CPUs).
    #[must_use]
    pub fn parse_threads(mut self, threads: usize) -> Self {
        self.parse_threads = threads;
        self
    }

    /// Read every page into a DOM, even a derived spider's whose selectors all stream
    /// (default false; `--set extract=dom`): the same items and links, at the DOM's cost,
    /// to compare the two engines on a crawl without building the spider again.
    #[must_use]
    pub fn dom_only(mut self, dom_only: bool) -> Self {
        self.dom_only = dom_only;
        self
    }

    /// Stream items to this file, where `.jsonl`, `.csv` or `.json` picks the format (and
    /// a `.gz` or `.zst` after it compresses the file), or to a table or bucket named by a
    /// store's URI ([`StoreUri`](crate::StoreUri): `sqlite://…`, `postgres://…`, `s3://…`).
    /// Called again, the file or store is added to the others (a file named again
    /// replaces the first, with its `?type=`): one crawl writes any number of files,
    /// tables and buckets (default: items are counted, not written).
    /// `?type=NAME` after a file's path, or `&type=NAME` in a store's URI, sends it the
    /// items of that type only ([`ItemsFile`](crate::ItemsFile)).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop")
    ///     .output("books.jsonl?type=Book")
    ///     .output("reviews.csv?type=Review")
    ///     .output("postgres://crawler:hunter2@127.0.0.1/shop?table=books&key=url&type=Book");
    /// assert!(config.validate().is_ok());
    /// assert!(config.to_string().contains(
    ///     "output = books.jsonl?type=Book, reviews.csv?type=Review, postgres://***@127.0.0.1/shop?table=books&key=url&type=Book"
    /// ));
    /// ```
    #[must_use]
    pub fn output(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        match path.to_str().filter(|text| crate::is_store(text)) {
            Some(store) if !self.stores.iter().any(|s| s == store) => self.stores.push(store.to_owned()),
            Some(_) => {}
            None => {
                let file = crate::ItemsFile::new(path);
                self.outputs.retain(|other| other.path != file.path);
                self.outputs.push(file);
            }
        }
        self
    }

    /// Archive every page fetched in this WARC/1.1 file, which must end in `.warc.gz`
    /// (default: none): a request, a response and a metadata record per page, each its
    /// own gzip member, a `revisit` record for a payload the archive holds already, and
    /// a CDXJ index beside it (`crawl.cdxj`) when the crawl ends. With a state file, the
    /// archive holds each page once after any kill, as the items file does.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").warc("shop.warc.gz");
    /// assert!(config.validate().is_ok());
    /// assert!(spider_settings::Config::new("shop").warc("shop.warc").validate().is_err());
    /// ```
    #[must_use]
    pub fn warc(mut self, path: impl Into<PathBuf>) -> Self {
        self.warc = Some(path.into());
        self
    }

    /// The size past which the WARC archive goes on in a new file (default 1 GB, as
    /// Heritrix's): `crawl.warc.gz`, then `crawl-00001.warc.gz`, `crawl-00002.warc.gz`...,
    /// each opened by its own `warcinfo` record and ended between two pages, so a page's
    /// records are in one file. The CDXJ index covers them all.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").warc("shop.warc.gz").warc_max_bytes(100_000_000);
    /// assert_eq!(config.warc_max_bytes, 100_000_000);
    /// ```
    #[must_use]
    pub fn warc_max_bytes(mut self, bytes: u64) -> Self {
        self.warc_max_bytes = bytes;
        self
    }

    /// How long a table items go to (see [`output`](Self::output)) may stay down before the
    /// crawl stops (default 5 min). Until then its items wait, in memory and in the state
    /// file, while the crawl goes on and the write is tried again with a growing pause.
    #[must_use]
    pub fn store_patience(mut self, patience: Duration) -> Self {
        self.store_patience = patience;
        self
    }

    /// Write the output file anew, emptying what it held (default true; `-O`), or, false,
    /// write after what it holds (`-o`): a JSON Lines or CSV file grows run after run, a
    /// CSV header only in an empty file. A JSON array cannot take more items, so appending
    /// to one that holds any is refused; with a state file or a fleet, the output is the
    /// crawl's own, written from its start and resumed by it.
    #[must_use]
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
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

    /// Serve the crawl's gauges (block rate, pages/s, latency, in flight, per-host limits,
    /// proxy spend) in the Prometheus text format at this address while it runs
    /// (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").metrics("127.0.0.1:9898");
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn metrics(mut self, addr: impl Into<String>) -> Self {
        self.metrics = Some(addr.into());
        self
    }

    /// Serve a live dashboard of the crawl at this address while it runs (default: none):
    /// a page at `/` with charts of the last ten minutes (pages and items per second, block
    /// rate against `block_target`, each busy host's adaptive limits and cuts, latency,
    /// queue, retries and failures, proxy spend) and the busiest hosts, updated each
    /// second from `/api/timeline`. The page needs no network beyond this address. The
    /// same address as [`metrics`](Self::metrics) serves both, the metrics at `/metrics`.
    ///
    /// There is no authentication: anyone who can reach the address sees the crawl's
    /// targets, settings and rates. Keep it on a loopback address (an SSH tunnel reaches
    /// it from elsewhere); another address is served, with a warning in the log.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").dashboard("127.0.0.1:9898").metrics("127.0.0.1:9898");
    /// assert!(config.validate().is_ok());
    /// assert!(config.to_string().contains("dashboard = 127.0.0.1:9898"));
    /// ```
    #[must_use]
    pub fn dashboard(mut self, addr: impl Into<String>) -> Self {
        self.dashboard = Some(addr.into());
        self
    }

    /// Write a report of the crawl to this HTML file when it ends, however it ends
    /// (complete, Ctrl-C, proxy budget, `max_pages`): the dashboard's charts over the whole
    /// crawl, the summary's totals, the failures by reason with a few examples each, and
    /// the settings (credentials left out). One file, its data inside, that any browser
    /// opens without a network (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = spider_settings::Config::new("shop").report("crawl.html");
    /// assert!(config.to_string().contains("report = crawl.html"));
    /// ```
    #[must_use]
    pub fn report(mut self, path: impl Into<PathBuf>) -> Self {
        self.report = Some(path.into());
        self
    }

    /// Show progress while crawling: a status line when stderr is a terminal, otherwise an
    /// `info` log line every 5 s (default true).
    #[must_use]
    pub fn progress(mut self, show: bool) -> Self {
        self.progress = show;
        self
    }
}
