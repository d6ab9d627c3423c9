//! The Grafana dashboard, `dashboards/spiderling.json`: an importable model whose every
//! panel queries Prometheus, and whose every query names metrics and labels that a real
//! crawl's metrics endpoint serves, with `rate()` on exactly its counters.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use spider_sandbox::Sandbox;
use spiderling::{CrawlStatus, Crawler};
use support::{config_for, BookSpider};

const DASHBOARD: &str = include_str!("../../dashboards/spiderling.json");

/// Every metric the crawl serves starts with this (spider-core/src/metrics.rs).
const PREFIX: &str = "spiderling_";

/// The labels Prometheus itself puts on every series it scrapes: the target's, not the crawl's.
const TARGET_LABELS: [&str; 2] = ["job", "instance"];

/// PromQL functions whose argument must be a counter.
const COUNTER_FUNCTIONS: [&str; 3] = ["rate", "irate", "increase"];

#[test]
fn the_dashboard_is_an_importable_model_whose_panels_each_query_prometheus() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    assert_eq!(dashboard["uid"], "spiderling");
    let input = &dashboard["__inputs"][0];
    assert_eq!(input["name"], "DS_PROMETHEUS");
    assert_eq!(input["pluginId"], "prometheus");
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let source = variables.iter().find(|v| v["name"] == "datasource").expect("a datasource variable");
    assert_eq!(source["type"], "datasource");
    assert_eq!(source["query"], "prometheus");
    assert_eq!(source["current"]["value"], "${DS_PROMETHEUS}", "the import's choice is its default");
    for name in ["job", "instance", "host"] {
        let variable = variables.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no ${name}"));
        assert_eq!(variable["datasource"]["uid"], "${datasource}", "${name}");
    }

    let panels = panels(&dashboard);
    assert!(panels.len() >= 12, "{} panels", panels.len());
    let mut ids = BTreeSet::new();
    for panel in &panels {
        let title = panel["title"].as_str().unwrap();
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "{title}: its id is another panel's");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}: no datasource");
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("{title}: no targets"));
        assert!(!targets.is_empty(), "{title}: no targets");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}: a target without datasource");
            let query = Query::read(target["expr"].as_str().unwrap(), "");
            assert!(!query.selectors.is_empty(), "{title}: {target}");
            for selector in &query.selectors {
                let filtered = TARGET_LABELS.iter().all(|l| selector.labels.contains(*l));
                assert!(filtered, "{title}: {} ignores the $job and $instance variables", selector.metric);
            }
        }
    }
}

#[test]
fn the_query_reader_finds_metrics_labels_and_rates() {
    let query = Query::read(
        r#"topk(3, sum by (host, job) (rate(spiderling_a_total{job=~"$job", host!="x{y}"}[$__rate_interval])))
            / spiderling_b{instance="a=b"} + rate(other[1m])"#,
        "{{host}} {{job}}",
    );
    let found: Vec<_> =
        query.selectors.iter().map(|s| (s.metric.as_str(), s.labels.clone(), s.rated)).collect();
    let labels = |names: &[&str]| names.iter().map(ToString::to_string).collect::<BTreeSet<_>>();
    assert_eq!(
        found,
        [
            ("spiderling_a_total", labels(&["host", "job"]), true),
            ("spiderling_b", labels(&["instance"]), false),
            ("other", labels(&[]), true),
        ]
    );
    assert_eq!(query.shared_labels, labels(&["host", "job"]));
    let variable = Query::read(r#"label_values(spiderling_c{job=~"$job"}, instance)"#, "");
    assert_eq!(variable.shared_labels, labels(&["instance"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_and_label_the_dashboard_queries_is_served_during_a_crawl() {
    let served = scrape_an_adaptive_crawl().await;
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    let queries = queries(&dashboard);
    assert!(queries.len() >= 15, "{} queries", queries.len());
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for (place, plotted, query) in queries {
        assert!(!query.selectors.is_empty(), "{place}: no metric in it");
        for selector in &query.selectors {
            let metric = &selector.metric;
            used.insert(metric.clone());
            let Some(family) = served.get(metric) else {
                problems.push(format!("{place}: {metric} is not served"));
                continue;
            };
            if selector.rated && !family.counter {
                problems.push(format!("{place}: rate() of {metric}, which is not a counter"));
            }
            if plotted && family.counter && !selector.rated {
                problems.push(format!("{place}: {metric} is a counter, drawn without rate()"));
            }
            for label in selector.labels.iter().chain(&query.shared_labels) {
                if !family.labels.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                    problems.push(format!("{place}: {metric} has no label {label:?} ({:?})", family.labels));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let unused: Vec<_> = served.keys().filter(|m| !used.contains(*m)).collect();
    println!("served but not on the dashboard: {unused:?}");
    assert!(used.len() >= 15, "the dashboard shows {} metrics: {used:?}", used.len());
}

/// The panels that draw something: rows are containers, and a collapsed row holds its own.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut found = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            found.extend(panel["panels"].as_array().into_iter().flatten());
        } else {
            found.push(panel);
        }
    }
    found
}

/// Every PromQL query of the dashboard with where it is: its panels' (plotted) and its
/// variables' (reading label values only).
fn queries(dashboard: &Value) -> Vec<(String, bool, Query)> {
    let mut found = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().unwrap() {
            let place = format!("panel {} {}", panel["title"], target["refId"].as_str().unwrap());
            let legend = target["legendFormat"].as_str().unwrap_or_default();
            found.push((place, true, Query::read(target["expr"].as_str().unwrap(), legend)));
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(expr) = variable["query"]["query"].as_str() {
            let place = format!("variable ${}", variable["name"].as_str().unwrap());
            found.push((place, false, Query::read(expr, "")));
        }
    }
    found
}

/// One metric a query selects: a name with the metrics' prefix, or any name with label
/// matchers or inside `rate()`, so a misspelt prefix is caught too.
#[derive(Debug, PartialEq)]
struct Selector {
    metric: String,
    /// The labels its `{...}` matchers name.
    labels: BTreeSet<String>,
    /// Whether it is the argument of `rate()` or another counter function.
    rated: bool,
}

/// What a PromQL query asks of the metrics it names.
#[derive(Debug)]
struct Query {
    selectors: Vec<Selector>,
    /// Labels the query groups by (`by`, `without`, `label_values`) or its legend shows, which
    /// every metric in it must carry.
    shared_labels: BTreeSet<String>,
}

/// A PromQL token, as far as names and labels go.
#[derive(Debug, PartialEq)]
enum Token {
    /// A metric, label, function or keyword name, or a number.
    Name(String),
    /// A string, a Grafana `$variable` or a `[range]`: nothing to check.
    Opaque,
    Punct(char),
}

impl Query {
    fn read(expr: &str, legend: &str) -> Query {
        let tokens = tokenize(expr);
        let name = |at: usize| match tokens.get(at) {
            Some(Token::Name(name)) => Some(name.as_str()),
            _ => None,
        };
        let punct = |at: usize, c: char| tokens.get(at) == Some(&Token::Punct(c));
        let rated = |at: usize| {
            at >= 2 && punct(at - 1, '(') && name(at - 2).is_some_and(|f| COUNTER_FUNCTIONS.contains(&f))
        };
        let mut selectors = Vec::new();
        let mut shared_labels: BTreeSet<String> = legend_labels(legend);
        for at in 0..tokens.len() {
            match name(at) {
                Some("by" | "without") if punct(at + 1, '(') => {
                    let inside = (at + 2..tokens.len()).take_while(|&i| !punct(i, ')'));
                    shared_labels.extend(inside.filter_map(name).map(str::to_owned));
                }
                Some("label_values") if punct(at + 1, '(') => {
                    let close = (at..tokens.len()).find(|&i| punct(i, ')')).unwrap_or(tokens.len());
                    if let Some(label) = name(close - 1).filter(|_| punct(close - 2, ',')) {
                        shared_labels.insert(label.to_owned());
                    }
                }
                Some(metric) if metric.starts_with(PREFIX) || punct(at + 1, '{') || rated(at) => {
                    let mut labels = BTreeSet::new();
                    if punct(at + 1, '{') {
                        let mut inner = at + 2;
                        while inner < tokens.len() && !punct(inner, '}') {
                            if let Some(label) =
                                name(inner).filter(|_| punct(inner + 1, '=') || punct(inner + 1, '!'))
                            {
                                labels.insert(label.to_owned());
                            }
                            inner += 1;
                        }
                    }
                    selectors.push(Selector { metric: metric.to_owned(), labels, rated: rated(at) });
                }
                _ => {}
            }
        }
        Query { selectors, shared_labels }
    }
}

/// The labels a legend such as `{{host}} p50` shows.
fn legend_labels(legend: &str) -> BTreeSet<String> {
    legend
        .split("{{")
        .skip(1)
        .filter_map(|part| part.split_once("}}"))
        .map(|(l, _)| l.trim().to_owned())
        .collect()
}

fn tokenize(expr: &str) -> Vec<Token> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut tokens = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                let mut escaped = false;
                for inner in chars.by_ref() {
                    if inner == c && !escaped {
                        break;
                    }
                    escaped = inner == '\\' && !escaped;
                }
                tokens.push(Token::Opaque);
            }
            '[' => {
                chars.by_ref().find(|&inner| inner == ']');
                tokens.push(Token::Opaque);
            }
            '$' => {
                while chars.next_if(|&inner| is_name(inner)).is_some() {}
                tokens.push(Token::Opaque);
            }
            c if is_name(c) => {
                let mut name = String::from(c);
                while let Some(inner) = chars.next_if(|&inner| is_name(inner)) {
                    name.push(inner);
                }
                tokens.push(Token::Name(name));
            }
            c if c.is_whitespace() => {}
            c => tokens.push(Token::Punct(c)),
        }
    }
    tokens
}

/// A metric as the endpoint serves it, under the name Prometheus stores (a counter's with
/// `_total`).
#[derive(Debug, Default)]
struct Served {
    counter: bool,
    labels: BTreeSet<String>,
}

/// Crawl the hostile site in adaptive mode with `metrics` on a free port, scrape it every
/// 300 ms while it runs, and gather what any scrape served.
async fn scrape_an_adaptive_crawl() -> BTreeMap<String, Served> {
    let site = Sandbox::hostile(support::per_ip_limited_site(200)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let config = config.concurrency(50).per_host(50).adaptive(true).metrics(format!("127.0.0.1:{port}"));
    let crawl = tokio::spawn(tokio::time::timeout(
        Duration::from_secs(90),
        Crawler::new(BookSpider::new(config)).run(),
    ));
    let client = spiderling::reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
    let started = Instant::now();
    let mut scrapes = Vec::new();
    while !crawl.is_finished() && started.elapsed() < Duration::from_secs(90) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Ok(answer) = client.get(format!("http://127.0.0.1:{port}/metrics")).send().await {
            scrapes.push(answer.text().await.unwrap());
        }
    }
    let summary = crawl.await.unwrap().expect("the crawl ended within 90 s").unwrap();
    assert_eq!((summary.status, summary.counts.items), (CrawlStatus::Complete, 200));
    assert!(scrapes.len() >= 3, "scraped {} times during the crawl", scrapes.len());

    let mut served: BTreeMap<String, Served> = BTreeMap::new();
    for text in &scrapes {
        let counters: BTreeSet<String> = text
            .lines()
            .filter_map(|line| match prometheus_parse::LineInfo::parse(line) {
                prometheus_parse::LineInfo::Type {
                    metric_name,
                    sample_type: prometheus_parse::SampleType::Counter,
                    ..
                } => Some(metric_name),
                _ => None,
            })
            .collect();
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        for sample in scrape.samples {
            let family = sample.metric.strip_suffix("_total").unwrap_or(&sample.metric);
            let counter = counters.contains(family) || counters.contains(&sample.metric);
            let entry = served.entry(sample.metric.clone()).or_default();
            entry.counter = counter;
            entry.labels.extend(sample.labels.keys().cloned());
        }
    }
    served
}
