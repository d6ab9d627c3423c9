//! The gauges for a real dashboard: `metrics = "127.0.0.1:9898"` serves the latest
//! [`Live`] snapshot in the Prometheus text format while the crawl runs, at any path, or at
//! `/metrics` when the built-in dashboard shares the address (`serve.rs` answers).
//!
//! The figures are read at scrape time from the snapshot the engine publishes each second,
//! and encoded by `prometheus-client`, so the format is the reference one.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::Response;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::observe::counters::Counts;
use crate::observe::gauge::{HostLive, Live};

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus registry of a crawl, read from the latest snapshot at each scrape.
#[derive(Debug)]
pub(crate) struct Metrics(Registry);

impl Metrics {
    pub(crate) fn new(live: watch::Receiver<Live>) -> Self {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Snapshot(live)));
        Metrics(registry)
    }

    /// One scrape's answer.
    pub(crate) fn scrape(&self) -> Response<Full<Bytes>> {
        let mut text = String::new();
        let status = match prometheus_client::encoding::text::encode(&mut text, &self.0) {
            Ok(()) => hyper::StatusCode::OK,
            Err(_) => hyper::StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut response = Response::new(Full::new(Bytes::from(text)));
        *response.status_mut() = status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_FORMAT));
        response
    }
}

/// Encodes the latest snapshot on each scrape.
#[derive(Debug)]
struct Snapshot(watch::Receiver<Live>);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let live = self.0.borrow().clone();
        // Every counter of the table, then the two the table does not tally.
        let table = Counts::TABLE
            .iter()
            .zip(live.counts.named())
            .map(|((name, doc), (_, value))| (format!("spiderling_{name}"), first_sentence(doc), value));
        let others = [
            ("spiderling_failures".to_owned(), "Requests given up", live.failures),
            ("spiderling_proxy_bytes".to_owned(), "Bytes through proxy gateways", live.proxy_bytes),
        ];
        for (name, help, value) in table.chain(others) {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(&name, help, None, counter.metric_type())?)?;
        }
        let gauges = [
            ("spiderling_block_rate", "Blocked answers over answers in the last 10 s", live.block_rate),
            (
                "spiderling_pages_per_second",
                "Answers that were not blocks, per second, over the last 10 s",
                live.pages_per_sec,
            ),
            (
                "spiderling_latency_p50_seconds",
                "Median fetch latency of the latest answers",
                live.latency_p50_ms / 1e3,
            ),
            ("spiderling_latency_p90_seconds", "90th percentile fetch latency", live.latency_p90_ms / 1e3),
            ("spiderling_latency_p99_seconds", "99th percentile fetch latency", live.latency_p99_ms / 1e3),
            ("spiderling_in_flight", "Requests in flight", live.in_flight as f64),
            ("spiderling_queued", "Requests waiting in the frontier", live.queued as f64),
            ("spiderling_concurrency_limit", "The global concurrency limit", live.concurrency_limit as f64),
            ("spiderling_proxy_spend", "Proxy traffic at proxy_price_per_gb", live.proxy_spend),
            (
                "spiderling_items_held",
                "Items handed to the tables and buckets that one of them does not hold yet",
                live.items_held as f64,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        let mut dropped = encoder.encode_descriptor(
            "spiderling_items_dropped",
            "Items the pipeline dropped, by reason",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (reason, n) in &live.counts.drops_by_reason {
            ConstCounter::new(*n).encode(dropped.encode_family(&[("reason", reason.as_str())])?)?;
        }
        let mut missed = encoder.encode_descriptor(
            "spiderling_pages_without_item",
            "Pages without the item their rule parses, by rule",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (rule, n) in &live.counts.no_item_by_rule {
            ConstCounter::new(*n).encode(missed.encode_family(&[("rule", rule.as_str())])?)?;
        }
        type PerHost = fn(&HostLive) -> f64;
        let per_host: [(&str, &str, PerHost); 3] = [
            ("spiderling_host_block_rate", "A host's block rate over the last 10 s", |h| h.block_rate),
            ("spiderling_host_limit", "Requests a host may have in flight", |h| h.limit as f64),
            ("spiderling_host_rate", "Requests per second a host may start (adaptive mode)", |h| {
                h.rate_per_sec.unwrap_or(f64::NAN)
            }),
        ];
        for (name, help, value) in per_host {
            let mut family =
                encoder.encode_descriptor(name, help, None, prometheus_client::metrics::MetricType::Gauge)?;
            for host in live.hosts.iter().filter(|h| !value(h).is_nan()) {
                let labels = [("host", host.host.as_str())];
                ConstGauge::new(value(host)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// A counter's doc up to the end of its first clause, for the metric's help. A clause
/// ends at a full stop or colon followed by a space, so `robots.txt` and `Page::html`
/// stay whole.
fn first_sentence(doc: &str) -> &str {
    let doc = doc.trim();
    let end = [". ", ": "].iter().filter_map(|stop| doc.find(stop)).min().unwrap_or(doc.len());
    doc[..end].trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn a_scrape_serves_the_latest_snapshots_counters() {
        let drops_by_reason = [("duplicate".to_owned(), 5)].into();
        let counts = Counts {
            pages: 12,
            skipped_not_html: 3,
            skipped_hidden: 4,
            drops_by_reason,
            ..Counts::default()
        };
        let live = Live { counts, ..Live::default() };
        let (_publish, latest) = watch::channel(live);
        let scrape = Metrics::new(latest).scrape();
        let body = scrape.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(body.to_vec()).unwrap();
        for line in [
            "spiderling_pages_total 12",
            "spiderling_skipped_not_html_total 3",
            "spiderling_skipped_hidden_total 4",
            "spiderling_revalidated_total 0",
            "spiderling_items_dropped_total{reason=\"duplicate\"} 5",
            "# HELP spiderling_requests Requests sent, robots.txt, redirects and retries included",
            "# HELP spiderling_robots_disallowed Requests dropped because robots.txt disallows them",
            "# HELP spiderling_html_parses HTML documents parsed on the parse pool; one per page when a \
                spider does all its work on a page in one `Page::html` job, as the derived rules do",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
