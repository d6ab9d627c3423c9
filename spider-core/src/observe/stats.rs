//! Counters of a crawl, updated lock-free from every task, and the final [`Summary`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::wire::route::ProxySpend;

/// Live counters. Relaxed atomics: each is a tally, none orders anything.
#[derive(Debug)]
pub(crate) struct Stats {
    started: Instant,
    pub(crate) requests: AtomicU64,
    pub(crate) pages: AtomicU64,
    pub(crate) sitemaps: AtomicU64,
    pub(crate) skipped_not_html: AtomicU64,
    pub(crate) skipped_hidden: AtomicU64,
    pub(crate) items: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) throttled: AtomicU64,
    pub(crate) blocked: AtomicU64,
    pub(crate) redirects: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) out_of_scope: AtomicU64,
    pub(crate) too_deep: AtomicU64,
    pub(crate) robots_disallowed: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) from_cache: AtomicU64,
    pub(crate) revalidated: AtomicU64,
    statuses: Box<[AtomicU64]>,
    failures: Mutex<Failures>,
}

/// Requests given up, by reason, and the first message of each reason.
#[derive(Debug, Default)]
struct Failures {
    counts: BTreeMap<&'static str, u64>,
    examples: BTreeMap<&'static str, String>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            started: Instant::now(),
            requests: AtomicU64::new(0),
            pages: AtomicU64::new(0),
            sitemaps: AtomicU64::new(0),
            skipped_not_html: AtomicU64::new(0),
            skipped_hidden: AtomicU64::new(0),
            items: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            redirects: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            out_of_scope: AtomicU64::new(0),
            too_deep: AtomicU64::new(0),
            robots_disallowed: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            from_cache: AtomicU64::new(0),
            revalidated: AtomicU64::new(0),
            statuses: (0..600).map(|_| AtomicU64::new(0)).collect(),
            failures: Mutex::new(Failures::default()),
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Requests given up so far.
    pub(crate) fn failure_count(&self) -> u64 {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).counts.values().sum()
    }

    pub(crate) fn status(&self, status: u16) {
        if let Some(counter) = self.statuses.get(usize::from(status)) {
            counter.fetch_add(1, Relaxed);
        }
    }

    /// A request given up for good, by reason; the first `message` of a reason is kept
    /// as its example.
    pub(crate) fn failure(&self, reason: &'static str, message: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        *failures.counts.entry(reason).or_default() += 1;
        failures.examples.entry(reason).or_insert_with(|| message.to_owned());
    }

    /// Answers so far by status.
    pub(crate) fn statuses(&self) -> BTreeMap<u16, u64> {
        (0u16..)
            .zip(self.statuses.iter())
            .filter_map(|(code, n)| Some((code, n.load(Relaxed))).filter(|(_, n)| *n > 0))
            .collect()
    }

    /// Requests given up so far, by reason.
    pub(crate) fn failures_by_reason(&self) -> BTreeMap<String, u64> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.counts.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    /// The first message of each reason this run gave a request up for.
    pub(crate) fn failure_examples(&self) -> BTreeMap<String, String> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.examples.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    /// This run's counters so far.
    pub(crate) fn counts(&self, html_parses: u64, streamed_pages: u64) -> Counts {
        Counts {
            elapsed_secs: self.started.elapsed().as_secs_f64(),
            requests: self.requests.load(Relaxed),
            pages: self.pages.load(Relaxed),
            sitemaps: self.sitemaps.load(Relaxed),
            skipped_not_html: self.skipped_not_html.load(Relaxed),
            skipped_hidden: self.skipped_hidden.load(Relaxed),
            items: self.items.load(Relaxed),
            html_parses,
            streamed_pages,
            retries: self.retries.load(Relaxed),
            throttled: self.throttled.load(Relaxed),
            blocked: self.blocked.load(Relaxed),
            redirects: self.redirects.load(Relaxed),
            duplicates: self.duplicates.load(Relaxed),
            out_of_scope: self.out_of_scope.load(Relaxed),
            too_deep: self.too_deep.load(Relaxed),
            robots_disallowed: self.robots_disallowed.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            from_cache: self.from_cache.load(Relaxed),
            revalidated: self.revalidated.load(Relaxed),
            statuses: self.statuses(),
            failures_by_reason: self.failures_by_reason(),
        }
    }
}

/// A crawl's counters as plain numbers: one run's, or the sum of a state file's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Counts {
    pub(crate) elapsed_secs: f64,
    pub(crate) requests: u64,
    pub(crate) pages: u64,
    pub(crate) sitemaps: u64,
    pub(crate) skipped_not_html: u64,
    pub(crate) skipped_hidden: u64,
    pub(crate) items: u64,
    pub(crate) html_parses: u64,
    pub(crate) streamed_pages: u64,
    pub(crate) retries: u64,
    pub(crate) throttled: u64,
    pub(crate) blocked: u64,
    pub(crate) redirects: u64,
    pub(crate) duplicates: u64,
    pub(crate) out_of_scope: u64,
    pub(crate) too_deep: u64,
    pub(crate) robots_disallowed: u64,
    pub(crate) bytes: u64,
    pub(crate) from_cache: u64,
    pub(crate) revalidated: u64,
    pub(crate) statuses: BTreeMap<u16, u64>,
    pub(crate) failures_by_reason: BTreeMap<String, u64>,
}

impl Counts {
    /// Add another run's counters to these.
    pub(crate) fn add(&mut self, other: &Counts) {
        self.elapsed_secs += other.elapsed_secs;
        for (mine, theirs) in [
            (&mut self.requests, other.requests),
            (&mut self.pages, other.pages),
            (&mut self.sitemaps, other.sitemaps),
            (&mut self.skipped_not_html, other.skipped_not_html),
            (&mut self.skipped_hidden, other.skipped_hidden),
            (&mut self.items, other.items),
            (&mut self.html_parses, other.html_parses),
            (&mut self.streamed_pages, other.streamed_pages),
            (&mut self.retries, other.retries),
            (&mut self.throttled, other.throttled),
            (&mut self.blocked, other.blocked),
            (&mut self.redirects, other.redirects),
            (&mut self.duplicates, other.duplicates),
            (&mut self.out_of_scope, other.out_of_scope),
            (&mut self.too_deep, other.too_deep),
            (&mut self.robots_disallowed, other.robots_disallowed),
            (&mut self.bytes, other.bytes),
            (&mut self.from_cache, other.from_cache),
            (&mut self.revalidated, other.revalidated),
        ] {
            *mine += theirs;
        }
        for (status, n) in &other.statuses {
            *self.statuses.entry(*status).or_default() += n;
        }
        for (reason, n) in &other.failures_by_reason {
            *self.failures_by_reason.entry(reason.clone()).or_default() += n;
        }
    }

    /// Requests given up.
    pub(crate) fn failures(&self) -> u64 {
        self.failures_by_reason.values().sum()
    }
}

/// How a crawl's summary is put together: its counters over every run, and how it ended.
pub(crate) struct Ending {
    pub(crate) stopped: Option<CrawlStatus>,
    pub(crate) unfinished: usize,
    pub(crate) runs: u32,
    pub(crate) state: Option<PathBuf>,
    pub(crate) proxy: Option<ProxySpend>,
    /// Lines of the start list that were not URLs.
    pub(crate) bad_start_lines: u64,
    /// This run's first message of each failure reason.
    pub(crate) failure_examples: BTreeMap<String, String>,
}

impl Summary {
    pub(crate) fn new(name: &str, counts: Counts, ending: Ending) -> Summary {
        let failures = counts.failures();
        let status = match ending.stopped {
            Some(stopped) => stopped,
            None if failures > 0 => CrawlStatus::CompleteWithFailures,
            None => CrawlStatus::Complete,
        };
        let answered: u64 = counts.statuses.values().sum();
        Summary {
            name: name.to_owned(),
            status,
            unfinished: ending.unfinished as u64,
            runs: ending.runs,
            state: ending.state,
            elapsed_secs: counts.elapsed_secs,
            pages_per_sec: if counts.elapsed_secs > 0.0 {
                counts.pages as f64 / counts.elapsed_secs
            } else {
                0.0
            },
            requests: counts.requests,
            pages: counts.pages,
            sitemaps: counts.sitemaps,
            skipped_not_html: counts.skipped_not_html,
            skipped_hidden: counts.skipped_hidden,
            items: counts.items,
            html_parses: counts.html_parses,
            streamed_pages: counts.streamed_pages,
            retries: counts.retries,
            throttled: counts.throttled,
            blocked: counts.blocked,
            block_rate: if answered == 0 { 0.0 } else { counts.blocked as f64 / answered as f64 },
            failures,
            redirects: counts.redirects,
            duplicates: counts.duplicates,
            out_of_scope: counts.out_of_scope,
            too_deep: counts.too_deep,
            robots_disallowed: counts.robots_disallowed,
            bytes: counts.bytes,
            from_cache: counts.from_cache,
            revalidated: counts.revalidated,
            statuses: counts.statuses,
            failures_by_reason: counts.failures_by_reason,
            failure_examples: ending.failure_examples,
            proxy: ending.proxy,
            bad_start_lines: ending.bad_start_lines,
        }
    }
}

/// A count with thousands separators: `41,203`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Bytes in the unit that keeps them readable: `812 B`, `81.2 kB`, `3.4 MB`, `1.20 GB`.
pub(crate) fn size(bytes: u64) -> String {
    let n = bytes as f64;
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{:.1} kB", n / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} MB", n / 1e6),
        _ => format!("{:.2} GB", n / 1e9),
    }
}

/// How a crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
#[serde(rename_all = "snake_case")]
pub enum CrawlStatus {
    /// Everything was fetched or deliberately dropped; no request failed.
    Complete,
    /// The crawl ran to its end, but some requests failed (see the failures file).
    CompleteWithFailures,
    /// Ctrl-C or SIGTERM stopped it early.
    Interrupted,
    /// The proxy spend reached `proxy_budget`: nothing more was admitted.
    BudgetReached,
    /// `max_pages` or `max_items` was reached: nothing more was admitted, and what was in
    /// flight finished.
    LimitReached,
    /// The state file holds a crawl that already ran to its end, and no new start URL
    /// arrived: nothing was fetched.
    AlreadyComplete,
}

/// What a crawl did, printed at the end and written as the stats JSON file.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// The spider's name.
    pub name: String,
    /// How it ended.
    pub status: CrawlStatus,
    /// Requests still queued, deferred or in flight when an interruption, the proxy
    /// budget or a limit stopped it.
    pub unfinished: u64,
    /// The runs the crawl took: 1 without a state file; with one, every run that worked
    /// on it, this one included. Every count below is over all of them.
    pub runs: u32,
    /// The state file, when the crawl keeps one: running the same command again goes on
    /// where this run stopped.
    pub state: Option<PathBuf>,
    /// Wall-clock duration of the crawl, summed over its runs.
    pub elapsed_secs: f64,
    /// Pages parsed per second of wall clock.
    pub pages_per_sec: f64,
    /// Requests sent, robots.txt, redirects and retries included.
    pub requests: u64,
    /// Pages with a 2xx status handed to `parse`, less those skipped as not HTML.
    pub pages: u64,
    /// Sitemaps (and sitemap indexes) with a 2xx status read, in part or whole; they are
    /// not pages.
    pub sitemaps: u64,
    /// Answers with a 2xx status that a derived spider's link rules skipped by their
    /// content type: not HTML (a script, an archive, JSON; see `Page::is_html`), so
    /// neither parsed for an item nor searched for links. They are not pages.
    pub skipped_not_html: u64,
    /// Links not followed because a person could not see them: honeypots (see
    /// `Config::follow_hidden`). Each link found hidden counts, once per page it is on.
    #[serde(default)]
    pub skipped_hidden: u64,
    /// Items written.
    pub items: u64,
    /// HTML documents parsed on the parse pool; one per page when a spider does all its
    /// work on a page in one `Page::html` job, as the derived rules do.
    pub html_parses: u64,
    /// Of those, pages read by the streaming engine in one pass without a DOM: a derived
    /// spider whose item and rules all stream reads every page so, but one whose markup
    /// the DOM would nest otherwise (see `#[derive(Spider)]`'s `extract`).
    pub streamed_pages: u64,
    /// Attempts that were retried.
    pub retries: u64,
    /// Answers of 429.
    pub throttled: u64,
    /// Answers judged blocked: 403, 429, challenge pages, block markers, the spider's
    /// `is_blocked`.
    pub blocked: u64,
    /// `blocked` over every answer received.
    pub block_rate: f64,
    /// Requests given up for good.
    pub failures: u64,
    /// Redirect hops followed.
    pub redirects: u64,
    /// Requests dropped because their fingerprint was seen.
    pub duplicates: u64,
    /// Requests dropped as off-site or not http(s).
    pub out_of_scope: u64,
    /// Requests dropped as deeper than `max_depth`.
    pub too_deep: u64,
    /// Requests dropped because robots.txt disallows them.
    pub robots_disallowed: u64,
    /// Response body bytes received, after decompression.
    pub bytes: u64,
    /// Answers taken from the HTTP cache instead of the network, revalidated ones included.
    pub from_cache: u64,
    /// Answers the server confirmed with 304 Not Modified, parsed from the cache.
    pub revalidated: u64,
    /// Responses by HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Failures by reason: a status class (`http 404`), the root cause of a transport
    /// error (`connection refused`, `timed out`, `DNS lookup failed`, ...), the same
    /// behind a host's robots.txt (`robots.txt unavailable: connection refused`), or what
    /// else ended the request (`redirect loop`, `body too large`, `parse`, ...).
    pub failures_by_reason: BTreeMap<String, u64>,
    /// The first message this run met for each failure reason, in full (a transport
    /// error with its whole chain of causes), so that a short run such as `spiderling
    /// fetch` can say why without the failures file. Only this run's: a state file's
    /// earlier runs are in their failures file.
    pub failure_examples: BTreeMap<String, String>,
    /// Traffic and spend per gateway, when proxies are configured.
    pub proxy: Option<ProxySpend>,
    /// Lines of the start list (`--start-urls`) skipped as not URLs; each was logged with
    /// its line number.
    pub bad_start_lines: u64,
}

impl Summary {
    /// The documented exit code of a crawl that ended this way: 0 complete (or already
    /// complete), 3 complete with failures, 4 stopped at the proxy budget, 130 interrupted. ([`Error::exit_code`](crate::Error::exit_code)
    /// gives 2 for a configuration error and 1 for any other error.)
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo<S: spider_core::Spider>(spider: S) -> std::process::ExitCode {
    /// match spider_core::Crawler::new(spider).run().await {
    ///     Ok(summary) => summary.exit_code(),
    ///     Err(error) => error.exit_code(),
    /// }
    /// # }
    /// ```
    pub fn exit_code(&self) -> std::process::ExitCode {
        std::process::ExitCode::from(match self.status {
            CrawlStatus::Complete | CrawlStatus::AlreadyComplete | CrawlStatus::LimitReached => 0,
            CrawlStatus::CompleteWithFailures => 3,
            CrawlStatus::BudgetReached => 4,
            CrawlStatus::Interrupted => 130,
        })
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let runs = match self.runs {
            0 | 1 => String::new(),
            n => format!(" over {n} runs"),
        };
        if self.status == CrawlStatus::AlreadyComplete {
            return write!(
                f,
                "{}: already complete: {} pages, {} items{runs}; nothing fetched (--fresh starts over)",
                self.name,
                thousands(self.pages),
                thousands(self.items),
            );
        }
        writeln!(
            f,
            "{}: {} pages, {} items in {:.2} s ({:.1} pages/s){runs}",
            self.name, self.pages, self.items, self.elapsed_secs, self.pages_per_sec
        )?;
        match self.status {
            CrawlStatus::Interrupted if self.state.is_some() => writeln!(
                f,
                "  paused: {} pages done, {} queued; run the same command to go on",
                thousands(self.pages),
                thousands(self.unfinished)
            )?,
            CrawlStatus::Interrupted => {
                writeln!(f, "  interrupted: {} requests left unfinished", self.unfinished)?;
            }
            CrawlStatus::BudgetReached => {
                writeln!(f, "  proxy budget reached: {} requests left unfinished", self.unfinished)?;
            }
            CrawlStatus::LimitReached => {
                writeln!(
                    f,
                    "  max_pages or max_items reached: {} requests left unfinished",
                    self.unfinished
                )?;
            }
            CrawlStatus::Complete | CrawlStatus::CompleteWithFailures | CrawlStatus::AlreadyComplete => {}
        }
        if self.streamed_pages > 0 {
            writeln!(
                f,
                "  streamed: {} pages read in one pass without a DOM, {} parsed into one",
                thousands(self.streamed_pages),
                thousands(self.html_parses.saturating_sub(self.streamed_pages))
            )?;
        }
        if self.sitemaps > 0 {
            writeln!(f, "  sitemaps read: {}", thousands(self.sitemaps))?;
        }
        if self.skipped_not_html > 0 {
            writeln!(
                f,
                "  skipped by content type: {} answers not HTML, not parsed",
                thousands(self.skipped_not_html)
            )?;
        }
        if self.skipped_hidden > 0 {
            writeln!(f, "  hidden links not followed: {}", thousands(self.skipped_hidden))?;
        }
        if self.from_cache > 0 {
            writeln!(
                f,
                "  from the cache: {} answers ({} revalidated with 304)",
                self.from_cache, self.revalidated
            )?;
        }
        writeln!(
            f,
            "  requests {} · retries {} · blocked {} ({:.1}%, 429 ×{}) · failures {} · redirects {} · {} received",
            self.requests,
            self.retries,
            self.blocked,
            self.block_rate * 100.0,
            self.throttled,
            self.failures,
            self.redirects,
            size(self.bytes)
        )?;
        if self.bad_start_lines > 0 {
            let what =
                if self.bad_start_lines == 1 { "line that is not a URL" } else { "lines that are not URLs" };
            writeln!(
                f,
                "  start list: skipped {} {what}, each logged with its line number",
                self.bad_start_lines
            )?;
        }
        if let Some(proxy) = &self.proxy {
            let budget = proxy.budget.map(|b| format!(" of a budget of {b:.2}")).unwrap_or_default();
            writeln!(f, "  proxy: {}, spend {:.4}{budget}", size(proxy.bytes), proxy.spend)?;
            for gateway in &proxy.gateways {
                writeln!(
                    f,
                    "    {}: {} requests, {} sent, {} received, benched {}×",
                    gateway.gateway,
                    gateway.requests,
                    size(gateway.bytes_sent),
                    size(gateway.bytes_received),
                    gateway.benched
                )?;
            }
        }
        let statuses: Vec<String> = self.statuses.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
        writeln!(
            f,
            "  statuses: {}",
            if statuses.is_empty() { "none".to_owned() } else { statuses.join(", ") }
        )?;
        if !self.failures_by_reason.is_empty() {
            let reasons: Vec<String> =
                self.failures_by_reason.iter().map(|(r, n)| format!("{r} ×{n}")).collect();
            writeln!(f, "  failed: {}", reasons.join(", "))?;
        }
        write!(
            f,
            "  dropped: {} duplicates, {} out of scope, {} disallowed by robots.txt, {} too deep",
            self.duplicates, self.out_of_scope, self.robots_disallowed, self.too_deep
        )
    }
}
