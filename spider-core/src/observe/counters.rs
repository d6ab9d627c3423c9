//! The crawl's counters: one table, written once below, that every place a count is shown
//! reads by name. [`Tally`] counts them live, lock-free, from every task; [`Counts`] holds
//! them as plain numbers: one run's, the sum of a state file's runs, or a fleet's (its
//! workers send them with their heartbeat); the summary, the live gauges, the metrics and
//! the fleet's totals all show a `Counts`. A new counter is one line in the table.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::reason::Reason;

/// One live counter. Relaxed: each is a tally, none orders anything.
#[derive(Debug, Default)]
pub(crate) struct Count(AtomicU64);

impl Count {
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// The table. Counters the tasks and the dispatcher tally come first; those the parse
/// pool counts itself (`from_the_parse_pool`) are read from it when the counts are taken.
macro_rules! counters {
    (
        tallied { $($(#[doc = $doc:literal])+ $name:ident,)+ }
        from_the_parse_pool { $($(#[doc = $pool_doc:literal])+ $pool:ident,)+ }
    ) => {
        /// A crawl's counters as plain numbers: one run's, the sum of a state file's runs,
        /// or a fleet's. Reading a state file written before a counter existed gives it 0.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        #[non_exhaustive]
        pub struct Counts {
            /// Wall-clock duration, summed over the runs.
            pub elapsed_secs: f64,
            $($(#[doc = $doc])+ pub $name: u64,)+
            $($(#[doc = $pool_doc])+ pub $pool: u64,)+
            /// Responses by HTTP status.
            pub statuses: BTreeMap<u16, u64>,
            /// Requests given up, by reason ([`Reason::as_str`](crate::Reason::as_str)).
            pub failures_by_reason: BTreeMap<String, u64>,
            /// Items the pipeline dropped, by reason ([`Dropped::reason`](crate::Dropped::reason)):
            /// `duplicate`, `empty FIELD`, `invalid`, or a stage's own.
            pub drops_by_reason: BTreeMap<String, u64>,
            /// Pages without the item their rule parses, by rule (`rule 2 (allow
            /// "/product/")`): extraction misses, which are neither failures nor blocks.
            pub no_item_by_rule: BTreeMap<String, u64>,
        }

        impl Counts {
            /// Every counter of the table: its name (the key in the stats file, the fleet's
            /// Redis and the metrics, as `spiderling_NAME_total`) and what it counts.
            pub const TABLE: &'static [(&'static str, &'static str)] = &[
                $((stringify!($name), concat!($($doc),+)),)+
                $((stringify!($pool), concat!($($pool_doc),+)),)+
            ];

            /// Every counter's value, by name, in the order of [`TABLE`](Self::TABLE).
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name),)+ $((stringify!($pool), self.$pool),)+]
            }

            /// The counts `value` gives by name; what it has no value for is 0.
            #[cfg(feature = "fleet")]
            pub(crate) fn from_named(value: impl Fn(&str) -> u64) -> Counts {
                Counts {
                    $($name: value(stringify!($name)),)+
                    $($pool: value(stringify!($pool)),)+
                    ..Counts::default()
                }
            }

            /// Add another run's counters to these.
            pub fn add(&mut self, other: &Counts) {
                self.elapsed_secs += other.elapsed_secs;
                $(self.$name += other.$name;)+
                $(self.$pool += other.$pool;)+
                for (status, n) in &other.statuses {
                    *self.statuses.entry(*status).or_default() += n;
                }
                for (reason, n) in &other.failures_by_reason {
                    *self.failures_by_reason.entry(reason.clone()).or_default() += n;
                }
                for (reason, n) in &other.drops_by_reason {
                    *self.drops_by_reason.entry(reason.clone()).or_default() += n;
                }
                for (rule, n) in &other.no_item_by_rule {
                    *self.no_item_by_rule.entry(rule.clone()).or_default() += n;
                }
            }
        }

        /// The counters as they are counted, from every task at once.
        #[derive(Debug)]
        pub(crate) struct Tally {
            started: Instant,
            $(pub(crate) $name: Count,)+
            statuses: Box<[AtomicU64]>,
            failures: Mutex<Failures>,
            drops: Mutex<BTreeMap<&'static str, u64>>,
            misses: Mutex<BTreeMap<String, u64>>,
        }

        impl Tally {
            pub(crate) fn new() -> Self {
                Tally {
                    started: Instant::now(),
                    $($name: Count::default(),)+
                    statuses: (0..600).map(|_| AtomicU64::new(0)).collect(),
                    failures: Mutex::new(Failures::default()),
                    drops: Mutex::new(BTreeMap::new()),
                    misses: Mutex::new(BTreeMap::new()),
                }
            }

            /// This run's counters so far, with what the parse pool counted.
            pub(crate) fn counts(&self, $($pool: u64),+) -> Counts {
                Counts {
                    elapsed_secs: self.started.elapsed().as_secs_f64(),
                    $($name: self.$name.get(),)+
                    $($pool,)+
                    statuses: self.statuses(),
                    failures_by_reason: self.failures_by_reason(),
                    drops_by_reason: self.drops_by_reason(),
                    no_item_by_rule: self.misses.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                }
            }
        }
    };
}

counters! {
    tallied {
        /// Requests sent, robots.txt, redirects and retries included.
        requests,
        /// Pages with a 2xx status handed to `parse`, less those skipped as not HTML.
        pages,
        /// Sitemaps (and sitemap indexes) with a 2xx status read, in part or whole; they are
        /// not pages.
        sitemaps,
        /// Answers with a 2xx status that a derived spider's link rules skipped by their
        /// content type: not HTML (a script, an archive, JSON), so neither parsed for an
        /// item nor searched for links. They are not pages.
        skipped_not_html,
        /// Links not followed because a person could not see them: honeypots. Each link
        /// found hidden counts, once per page it is on.
        skipped_hidden,
        /// Items written.
        items,
        /// Attempts that were retried.
        retries,
        /// Answers of 429.
        throttled,
        /// Answers judged blocked: 403, 429, challenge pages, block markers, the spider's
        /// `is_blocked`.
        blocked,
        /// Answers to requests sent with a browser's wire (`impersonate`); the others went on
        /// the crawl's own client.
        impersonated,
        /// Of the blocked answers, those to requests sent with a browser's wire.
        blocked_impersonated,
        /// Answers that came over HTTP/2.
        http2,
        /// Hosts that refused the crawl's own client and got a browser's wire from then on
        /// (`impersonate = "auto"`).
        refused_plain,
        /// Pages rendered in a browser before they were read (`render`).
        rendered,
        /// Of the rendered pages, those rendered because the answer as sent lacked the
        /// item's required fields or the rule's links (`render = "auto"`).
        rendered_lacking,
        /// Of the rendered pages, those of a rule auto mode had learnt needs a browser.
        rendered_learnt,
        /// Renders whose awaited selectors never matched within `render_timeout`, or whose
        /// clicks or scrolls ran out of it: read as they stood.
        render_timeouts,
        /// Requests the browser made that the crawl fetched for it.
        subrequests,
        /// Requests of the browser refused: images, fonts and media (unless
        /// `render_resources`), those off the allowed domains, and those that got no answer.
        subrequests_refused,
        /// Clicks and scrolls done in rendered pages.
        render_actions,
        /// Browsers replaced because they died (crashed, killed) or stopped answering.
        browsers_replaced,
        /// Redirect hops followed.
        redirects,
        /// Requests dropped because their fingerprint was seen.
        duplicates,
        /// Requests dropped as off-site or not http(s).
        out_of_scope,
        /// Requests dropped as deeper than `max_depth`.
        too_deep,
        /// Requests dropped because robots.txt disallows them.
        robots_disallowed,
        /// Response body bytes received, after decompression.
        bytes,
        /// Answers taken from the HTTP cache instead of the network, revalidated ones
        /// included.
        from_cache,
        /// Answers the server confirmed with 304 Not Modified, parsed from the cache.
        revalidated,
    }
    from_the_parse_pool {
        /// HTML documents parsed on the parse pool; one per page when a spider does all its
        /// work on a page in one `Page::html` job, as the derived rules do.
        html_parses,
        /// Of those, pages read by the streaming engine in one pass without a DOM.
        streamed_pages,
    }
}

impl Counts {
    /// Requests given up.
    pub fn failures(&self) -> u64 {
        self.failures_by_reason.values().sum()
    }

    /// Items the pipeline dropped.
    pub fn dropped(&self) -> u64 {
        self.drops_by_reason.values().sum()
    }

    /// Pages without the item their rule parses.
    pub fn no_items(&self) -> u64 {
        self.no_item_by_rule.values().sum()
    }

    /// Answers received, of any status.
    pub fn answered(&self) -> u64 {
        self.statuses.values().sum()
    }
}

/// `counts` with their `failures` total beside the counters, as the summary has it, so
/// that a reader of a report's JSON needs not sum the reasons.
#[cfg(any(feature = "state", feature = "fleet"))]
pub(crate) fn with_failures<S: serde::Serializer>(counts: &Counts, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct WithFailures<'a> {
        #[serde(flatten)]
        counts: &'a Counts,
        failures: u64,
    }
    WithFailures { counts, failures: counts.failures() }.serialize(serializer)
}

/// Requests given up, by reason, and the first message of each reason.
#[derive(Debug, Default)]
struct Failures {
    counts: BTreeMap<Reason, u64>,
    examples: BTreeMap<Reason, String>,
}

impl Tally {
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Count an answer of `status`.
    pub(crate) fn status(&self, status: u16) {
        if let Some(counter) = self.statuses.get(usize::from(status)) {
            counter.fetch_add(1, Relaxed);
        }
    }

    /// A request given up for good, by reason; the first `message` of a reason is kept
    /// as its example.
    pub(crate) fn failure(&self, reason: Reason, message: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        *failures.counts.entry(reason).or_default() += 1;
        failures.examples.entry(reason).or_insert_with(|| message.to_owned());
    }

    /// Requests given up so far.
    pub(crate) fn failure_count(&self) -> u64 {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).counts.values().sum()
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
        failures.counts.iter().map(|(reason, n)| (reason.as_str().to_owned(), *n)).collect()
    }

    /// An item dropped by the pipeline, for `reason`.
    pub(crate) fn dropped(&self, reason: &'static str) {
        *self.drops.lock().unwrap_or_else(|e| e.into_inner()).entry(reason).or_default() += 1;
    }

    /// A page without the item `rule` parses.
    pub(crate) fn no_item(&self, rule: &str) {
        let mut misses = self.misses.lock().unwrap_or_else(|e| e.into_inner());
        match misses.get_mut(rule) {
            Some(n) => *n += 1,
            None => {
                misses.insert(rule.to_owned(), 1);
            }
        }
    }

    /// Items dropped so far, by reason.
    pub(crate) fn drops_by_reason(&self) -> BTreeMap<String, u64> {
        let drops = self.drops.lock().unwrap_or_else(|e| e.into_inner());
        drops.iter().map(|(reason, n)| ((*reason).to_owned(), *n)).collect()
    }

    /// The first message of each reason this run gave a request up for.
    pub(crate) fn failure_examples(&self) -> BTreeMap<String, String> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures
            .examples
            .iter()
            .map(|(reason, message)| (reason.as_str().to_owned(), message.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_counter_once_and_named_reads_them_back() {
        let mut names: Vec<&str> = Counts::TABLE.iter().map(|(name, _)| *name).collect();
        let listed = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), listed);
        let counts = Counts { requests: 3, streamed_pages: 5, ..Counts::default() };
        let named = counts.named();
        assert_eq!(named.len(), listed);
        assert!(named.contains(&("requests", 3)) && named.contains(&("streamed_pages", 5)), "{named:?}");
        #[cfg(feature = "fleet")]
        assert_eq!(Counts::from_named(|name| u64::from(name == "revalidated")).revalidated, 1);
    }

    #[test]
    fn runs_add_up_and_a_tally_counts_into_its_counts() {
        let tally = Tally::new();
        tally.pages.add(3);
        tally.status(200);
        tally.failure(Reason::RedirectLoop, "a → b → a");
        tally.dropped("duplicate");
        let run = tally.counts(4, 1);
        assert_eq!((run.pages, run.html_parses, run.streamed_pages, run.failures()), (3, 4, 1, 1));
        let mut both = run.clone();
        both.add(&run);
        assert_eq!((both.pages, both.statuses[&200], both.failures_by_reason["redirect loop"]), (6, 2, 2));
        assert_eq!((both.dropped(), both.drops_by_reason["duplicate"]), (2, 2));
    }
}
