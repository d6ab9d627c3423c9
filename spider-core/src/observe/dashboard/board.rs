//! The dashboard's data: a [`Board`] of the crawl's timeline and totals, as the page
//! (`page.html`) reads it, live from the server or inside the report.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::observe::counters::Counts;
use crate::observe::gauge::HostLive;
use crate::observe::summary::{CrawlStatus, Summary};
use crate::observe::timeline::{Event, Example, Point, Recorder, Timeline};
use spider_settings::Config;

/// The page, with an empty data block that the report fills.
pub(super) const PAGE: &str = include_str!("page.html");

/// What the page needs besides the timeline: the crawl's name and settings.
#[derive(Debug, Clone)]
pub(crate) struct Board {
    pub(crate) timeline: Recorder,
    name: String,
    settings: String,
    block_target: Option<f64>,
    adaptive: bool,
    proxied: bool,
}

impl Board {
    pub(crate) fn new(config: &Config, timeline: Recorder) -> Self {
        Board {
            timeline,
            name: config.name.clone(),
            settings: config.to_string(),
            block_target: config.adaptive.then_some(config.block_target),
            adaptive: config.adaptive,
            proxied: config
                .proxy
                .as_ref()
                .is_some_and(|spec| spec.0.split('>').any(|tier| tier.trim() != "direct")),
        }
    }

    /// The page as served live: the data of this moment inside it, for its first paint,
    /// then fetched each second. Without data (it did not serialise) it fetches at once.
    pub(crate) fn live_page(&self) -> String {
        self.live_json().map_or_else(|_| PAGE.to_owned(), |json| with_data(&json))
    }

    /// `/api/timeline`: the last ten minutes, the latest totals, hosts and failures.
    pub(crate) fn live_json(&self) -> Result<String, serde_json::Error> {
        let timeline = self.timeline.lock();
        let latest = timeline.latest();
        let series: Vec<&Point> = timeline.recent().collect();
        let since = series.first().map_or(0.0, |p| p.t);
        let totals = Totals::of(&latest.counts, latest.failures);
        let view = View {
            live: true,
            name: &self.name,
            adaptive: self.adaptive,
            proxied: self.proxied,
            status: None,
            as_of: series.last().map_or(0.0, |p| p.t),
            totals,
            block_target: self.block_target,
            proxy_budget: latest.proxy_budget,
            series,
            events: timeline.events_since(since).collect(),
            hosts: &latest.hosts,
            statuses: &latest.counts.statuses,
            failures: reasons(&timeline, &latest.counts.failures_by_reason),
            settings: &self.settings,
            summary: None,
        };
        serde_json::to_string(&view)
    }

    /// The report's data: the whole crawl, and the summary's totals.
    pub(super) fn report_json(&self, summary: &Summary) -> Result<String, serde_json::Error> {
        let timeline = self.timeline.lock();
        let series: Vec<&Point> = timeline.whole().iter().collect();
        let totals = Totals::of(&summary.counts, summary.failures);
        let view = View {
            live: false,
            name: &self.name,
            adaptive: self.adaptive,
            proxied: self.proxied,
            status: Some(summary.status),
            as_of: series.last().map_or(0.0, |p| p.t),
            totals,
            block_target: self.block_target,
            proxy_budget: summary.proxy.as_ref().and_then(|p| p.budget),
            series,
            events: timeline.events_since(0.0).collect(),
            hosts: &timeline.latest().hosts,
            statuses: &summary.counts.statuses,
            failures: reasons(&timeline, &summary.counts.failures_by_reason),
            settings: &self.settings,
            summary: Some(summary.to_string()),
        };
        serde_json::to_string(&view)
    }
}

/// The page and its data, as one document.
pub(super) fn with_data(json: &str) -> String {
    // Inside <script> only `</` could end the block early: `<` is written as JSON's escape,
    // which can only occur within strings.
    let json = json.replace('<', "\\u003c");
    PAGE.replacen(
        r#"<script id="data" type="application/json">null</script>"#,
        &format!(r#"<script id="data" type="application/json">{json}</script>"#),
        1,
    )
}

/// Every reason requests were given up for, with its count and examples.
fn reasons<'a>(timeline: &'a Timeline, counts: &'a BTreeMap<String, u64>) -> Vec<Reason<'a>> {
    counts
        .iter()
        .map(|(reason, count)| Reason { reason, count: *count, examples: timeline.examples(reason) })
        .collect()
}

/// What the page draws.
#[derive(Serialize)]
struct View<'a> {
    /// Live: the page polls for the next second; otherwise it holds the whole crawl.
    live: bool,
    name: &'a str,
    /// Whether adaptive mode sets the hosts' slots and rates: charts of them otherwise
    /// say they are not used.
    adaptive: bool,
    /// Whether a gateway is on the route: the spend chart otherwise says it is not used.
    proxied: bool,
    /// How the crawl ended; none while it runs.
    status: Option<CrawlStatus>,
    /// The second of the newest point.
    as_of: f64,
    totals: Totals,
    /// The block rate adaptive mode keeps under, drawn as a line.
    block_target: Option<f64>,
    proxy_budget: Option<f64>,
    series: Vec<&'a Point>,
    events: Vec<&'a Event>,
    hosts: &'a [HostLive],
    statuses: &'a BTreeMap<u16, u64>,
    failures: Vec<Reason<'a>>,
    settings: &'a str,
    summary: Option<String>,
}

#[derive(Serialize)]
struct Totals {
    pages: u64,
    items: u64,
    requests: u64,
    retries: u64,
    blocked: u64,
    /// Answers on a browser's wire, and the blocked ones of them (`impersonate`).
    impersonated: u64,
    blocked_impersonated: u64,
    failures: u64,
    elapsed_secs: f64,
}

impl Totals {
    fn of(counts: &Counts, failures: u64) -> Totals {
        Totals {
            pages: counts.pages,
            items: counts.items,
            requests: counts.requests,
            retries: counts.retries,
            blocked: counts.blocked,
            impersonated: counts.impersonated,
            blocked_impersonated: counts.blocked_impersonated,
            failures,
            elapsed_secs: counts.elapsed_secs,
        }
    }
}

#[derive(Serialize)]
struct Reason<'a> {
    reason: &'a str,
    count: u64,
    examples: &'a [Example],
}
