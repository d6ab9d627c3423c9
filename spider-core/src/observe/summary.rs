//! The end of a crawl: its [`Summary`], printed and written as the stats file, and how it
//! ended ([`CrawlStatus`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::observe::counters::Counts;
use crate::observe::text::{size, thousands};
use crate::wire::route::ProxySpend;

/// How a crawl's summary is put together: its counters over every run, and how it ended.
pub(crate) struct Ending {
    pub(crate) stopped: Option<CrawlStatus>,
    pub(crate) unfinished: usize,
    pub(crate) runs: u32,
    pub(crate) state: Option<PathBuf>,
    pub(crate) proxy: Option<ProxySpend>,
    /// Lines of the start list that were not http or https URLs.
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
        let answered = counts.answered();
        Summary {
            name: name.to_owned(),
            status,
            unfinished: ending.unfinished as u64,
            runs: ending.runs,
            state: ending.state,
            pages_per_sec: if counts.elapsed_secs > 0.0 {
                counts.pages as f64 / counts.elapsed_secs
            } else {
                0.0
            },
            block_rate: if answered == 0 { 0.0 } else { counts.blocked as f64 / answered as f64 },
            failures,
            counts,
            failure_examples: ending.failure_examples,
            proxy: ending.proxy,
            bad_start_lines: ending.bad_start_lines,
        }
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
    /// on it, this one included. Every count is over all of them.
    pub runs: u32,
    /// The state file, when the crawl keeps one: running the same command again goes on
    /// where this run stopped.
    pub state: Option<PathBuf>,
    /// Every counter of the crawl (see [`Counts`]), with its wall-clock time.
    #[serde(flatten)]
    pub counts: Counts,
    /// Pages parsed per second of wall clock.
    pub pages_per_sec: f64,
    /// `blocked` over every answer received.
    pub block_rate: f64,
    /// Requests given up for good: the sum of `failures_by_reason`, whose reasons are a
    /// status class (`http 404`), the root cause of a transport error (`connection
    /// refused`, `timed out`, `DNS lookup failed`, ...), the same behind a host's
    /// robots.txt (`robots.txt unavailable: connection refused`), or what else ended the
    /// request (`redirect loop`, `body too large`, `parse`, ...): see [`Reason`](crate::Reason).
    pub failures: u64,
    /// The first message this run met for each failure reason, in full (a transport
    /// error with its whole chain of causes), so that a short run such as `spiderling
    /// fetch` can say why without the failures file. Only this run's: a state file's
    /// earlier runs are in their failures file.
    pub failure_examples: BTreeMap<String, String>,
    /// Traffic and spend per gateway, when proxies are configured.
    pub proxy: Option<ProxySpend>,
    /// Lines of the start list (`--start-urls`) skipped as not http or https URLs; each was logged with
    /// its line number.
    pub bad_start_lines: u64,
}

impl Summary {
    /// The documented exit code of a crawl that ended this way: 0 complete (or already
    /// complete, or stopped at `max_pages` / `max_items` with no request failed), 3
    /// complete, or stopped at a limit, with failures, 4 stopped at the proxy budget, 130
    /// interrupted. ([`Error::exit_code`](crate::Error::exit_code)
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
            // A sample stopped at its limit says how it went, as a whole crawl does: a
            // spider whose every item fails must not pass its first try as a success.
            CrawlStatus::LimitReached if self.failures > 0 => 3,
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
                thousands(self.counts.pages),
                thousands(self.counts.items),
            );
        }
        writeln!(
            f,
            "{}: {} pages, {} items in {:.2} s ({:.1} pages/s){runs}",
            self.name, self.counts.pages, self.counts.items, self.counts.elapsed_secs, self.pages_per_sec
        )?;
        match self.status {
            CrawlStatus::Interrupted if self.state.is_some() => writeln!(
                f,
                "  paused: {} pages done, {} queued; run the same command to go on",
                thousands(self.counts.pages),
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
        if self.counts.streamed_pages > 0 {
            writeln!(
                f,
                "  streamed: {} pages read in one pass without a DOM, {} parsed into one",
                thousands(self.counts.streamed_pages),
                thousands(self.counts.html_parses.saturating_sub(self.counts.streamed_pages))
            )?;
        }
        if self.counts.sitemaps > 0 {
            writeln!(f, "  sitemaps read: {}", thousands(self.counts.sitemaps))?;
        }
        if self.counts.skipped_not_html > 0 {
            writeln!(
                f,
                "  skipped by content type: {} answers not HTML, not parsed",
                thousands(self.counts.skipped_not_html)
            )?;
        }
        if self.counts.skipped_hidden > 0 {
            writeln!(f, "  hidden links not followed: {}", thousands(self.counts.skipped_hidden))?;
        }
        if self.counts.from_cache > 0 {
            writeln!(
                f,
                "  from the cache: {} answers ({} revalidated with 304)",
                self.counts.from_cache, self.counts.revalidated
            )?;
        }
        writeln!(
            f,
            "  requests {} · retries {} · blocked {} ({:.1}%, 429 ×{}) · failures {} · redirects {} · {} \
                received",
            self.counts.requests,
            self.counts.retries,
            self.counts.blocked,
            self.block_rate * 100.0,
            self.counts.throttled,
            self.failures,
            self.counts.redirects,
            size(self.counts.bytes)
        )?;
        if self.counts.impersonated > 0 || self.counts.http2 > 0 {
            // Answers from the network: a revalidated page came from it too, with a 304.
            let c = &self.counts;
            let network = (c.answered() + c.revalidated).saturating_sub(c.from_cache);
            let plain = network.saturating_sub(c.impersonated);
            let blocked_plain = self.counts.blocked.saturating_sub(self.counts.blocked_impersonated);
            write!(
                f,
                "  wire: {} answers on the crawl's own client ({blocked_plain} blocked), {} with a browser's \
                    ({} blocked); {} over HTTP/2",
                thousands(plain),
                thousands(self.counts.impersonated),
                self.counts.blocked_impersonated,
                thousands(self.counts.http2)
            )?;
            match self.counts.refused_plain {
                0 => writeln!(f)?,
                1 => writeln!(f, "; 1 host refused the crawl's own client")?,
                n => writeln!(f, "; {n} hosts refused the crawl's own client")?,
            }
        }
        if self.counts.rendered > 0 || self.counts.browsers_replaced > 0 {
            let c = &self.counts;
            let always = c.rendered.saturating_sub(c.rendered_lacking + c.rendered_learnt);
            write!(
                f,
                "  rendered: {} pages ({always} always, {} lacking their item or links as sent, {} of rules \
                    learnt to need it) · {} browser requests, {} refused",
                thousands(c.rendered),
                thousands(c.rendered_lacking),
                thousands(c.rendered_learnt),
                thousands(c.subrequests),
                thousands(c.subrequests_refused),
            )?;
            if c.render_actions > 0 {
                write!(f, " · {} clicks and scrolls", thousands(c.render_actions))?;
            }
            if c.render_timeouts > 0 {
                write!(f, " · {} waited out", thousands(c.render_timeouts))?;
            }
            match c.browsers_replaced {
                0 => writeln!(f)?,
                1 => writeln!(f, " · 1 browser replaced")?,
                n => writeln!(f, " · {n} browsers replaced")?,
            }
        }
        if self.bad_start_lines > 0 {
            let what = if self.bad_start_lines == 1 {
                "line that is not an http(s) URL"
            } else {
                "lines that are not http(s) URLs"
            };
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
        let statuses: Vec<String> = self.counts.statuses.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
        writeln!(
            f,
            "  statuses: {}",
            if statuses.is_empty() { "none".to_owned() } else { statuses.join(", ") }
        )?;
        if !self.counts.failures_by_reason.is_empty() {
            let reasons: Vec<String> =
                self.counts.failures_by_reason.iter().map(|(r, n)| format!("{r} ×{n}")).collect();
            writeln!(f, "  failed: {}", reasons.join(", "))?;
        }
        if !self.counts.drops_by_reason.is_empty() {
            let reasons: Vec<String> =
                self.counts.drops_by_reason.iter().map(|(r, n)| format!("{r} ×{n}")).collect();
            writeln!(f, "  items dropped: {}", reasons.join(", "))?;
        }
        if !self.counts.no_item_by_rule.is_empty() {
            let rules: Vec<String> =
                self.counts.no_item_by_rule.iter().map(|(rule, n)| format!("{rule} ×{n}")).collect();
            writeln!(f, "  no item (pages without their rule's item): {}", rules.join(", "))?;
        }
        write!(
            f,
            "  dropped: {} duplicates, {} out of scope, {} disallowed by robots.txt, {} too deep",
            self.counts.duplicates,
            self.counts.out_of_scope,
            self.counts.robots_disallowed,
            self.counts.too_deep
        )
    }
}
