//! The live dashboard and the crawl report, as a real browser renders them: headless
//! Chromium loads the page, runs its script, and the tests read the DOM it leaves.
//! Chromium must be installed (Debian: `apt-get install -y chromium`); these tests fail,
//! not skip, when it cannot be started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use spider_sandbox::{HostileSite, Sandbox};
use spiderling::scraper::{Html, Selector};
use spiderling::{CrawlStatus, Crawler};
use support::chromium::Chromium;
use support::{config_for, BookSpider};

/// What the tests read from a rendered page.
struct Rendered(Html);

impl Rendered {
    fn value(&self, id: &str) -> f64 {
        let selector = Selector::parse(&format!("#{id}")).unwrap();
        let element = self.0.select(&selector).next().unwrap_or_else(|| panic!("no #{id}"));
        element.value().attr("data-value").unwrap().parse().unwrap()
    }

    fn count(&self, id: &str) -> u64 {
        let value = self.value(id);
        assert_eq!(value.fract(), 0.0, "#{id} is a count: {value}");
        value as u64
    }

    /// Each chart's series name and the points it drew.
    fn charts(&self) -> Vec<(String, usize)> {
        let selector = Selector::parse("svg.chart").unwrap();
        self.0
            .select(&selector)
            .map(|svg| {
                let name = svg.value().attr("data-series").unwrap().to_owned();
                (name, svg.value().attr("data-points").unwrap().parse().unwrap())
            })
            .collect()
    }

    fn text(&self, css: &str) -> String {
        let selector = Selector::parse(css).unwrap();
        self.0.select(&selector).flat_map(|e| e.text()).collect()
    }

    /// The charts said to be unused in this crawl, in place of an empty one.
    fn unused(&self) -> Vec<String> {
        let selector = Selector::parse("p.unused").unwrap();
        self.0.select(&selector).map(|p| p.value().attr("data-series").unwrap().to_owned()).collect()
    }

    /// The axis labels of the chart `name`: its values (with their unit) and its times.
    fn ticks(&self, name: &str) -> (Vec<String>, Vec<String>) {
        let text = |css: &str| -> Vec<String> {
            let selector = Selector::parse(&format!("#chart-{name} {css}")).unwrap();
            self.0.select(&selector).map(|e| e.text().collect()).collect()
        };
        (text(".tick.y"), text(".tick.x"))
    }

    /// Every chart drawn has a value axis of at least two labels ending in `unit` where it
    /// has one, and a time axis from its first second to its last.
    fn check_axes(&self, units: &[(&str, &str)]) {
        for (name, _) in self.charts() {
            let (values, times) = self.ticks(&name);
            assert!(values.len() >= 2, "{name}: value axis {values:?}");
            assert_eq!(times.len(), 3, "{name}: time axis {times:?}");
            assert!(times.iter().all(|t| t.ends_with(" s")), "{name}: {times:?}");
            if let Some((_, unit)) = units.iter().find(|(chart, _)| *chart == name) {
                assert!(values.iter().all(|v| v.ends_with(unit)), "{name} in {unit}: {values:?}");
            }
        }
    }
}

/// The units of the charts' value axes.
const UNITS: [(&str, &str); 4] =
    [("pages_per_sec", "/s"), ("items_per_sec", "/s"), ("latency", "ms"), ("block_rate", "%")];

const CHARTS: [&str; 9] = [
    "pages_per_sec",
    "items_per_sec",
    "block_rate",
    "host_limits",
    "host_rates",
    "latency",
    "queue",
    "retries_failures",
    "proxy_spend",
];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_dashboard_shows_the_adaptive_crawl_of_the_hostile_site() {
    let chromium = Chromium::find();
    let site = Sandbox::hostile(support::per_ip_limited_site(1200)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let addr = format!("127.0.0.1:{}", free_port());
    let config = config
        .concurrency(50)
        .per_host(50)
        .backoff(Duration::from_millis(100), Duration::from_secs(2))
        .adaptive(true)
        .dashboard(&addr)
        .metrics(&addr);
    let crawl = tokio::spawn(Crawler::new(BookSpider::new(config)).run());
    let client = spiderling::reqwest::Client::new();
    let api = format!("http://{addr}/api/timeline");
    let timeline = || async {
        let answer = client.get(&api).send().await.ok()?;
        serde_json::from_str::<serde_json::Value>(&answer.text().await.ok()?).ok()
    };

    // Until the adaptive controller has met the site's limit: a block, seconds recorded.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no block within a minute");
        assert!(!crawl.is_finished(), "the crawl ended before the dashboard saw a block");
        if let Some(now) = timeline().await {
            if now["totals"]["blocked"].as_u64() > Some(0)
                && now["series"].as_array().map_or(0, Vec::len) >= 3
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // The page comes with the crawl's data of the moment: its first paint shows it, with
    // no wait for its first poll ("waiting for the crawl", zeros, no settings).
    let served = client.get(format!("http://{addr}/")).send().await.unwrap().text().await.unwrap();
    assert!(served.contains(r#"<script id="data" type="application/json">{"live":true,"#), "inline data");
    assert!(!served.contains(r#""settings":"""#), "the settings are in it");

    let url = format!("http://{addr}/");
    let (dom, chromium) =
        tokio::task::spawn_blocking(move || (chromium.dump_dom(&url), chromium)).await.unwrap();
    let after = timeline().await.expect("the dashboard still answers");
    assert!(!crawl.is_finished(), "the page was read while the crawl ran");
    let url = format!("http://{addr}/");
    tokio::task::spawn_blocking(move || chromium.screenshot(&url, "dashboard.png")).await.unwrap();
    let metrics = client.get(format!("http://{addr}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("spiderling_block_rate"), "the metrics share the address: {metrics}");
    let page = Rendered(Html::parse_document(&dom));

    let charts = page.charts();
    let names: Vec<&str> = charts.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, CHARTS[..8], "every chart of what the crawl uses drawn");
    assert_eq!(page.unused(), ["proxy_spend"], "no proxy: its spend is said to be unused, not drawn");
    assert!(charts.iter().all(|(_, points)| *points > 1), "every chart holds points: {charts:?}");
    page.check_axes(
        &[("host_limits", "slots"), ("host_rates", "/s")].into_iter().chain(UNITS).collect::<Vec<_>>(),
    );
    let headers = page.text("#hosts thead");
    assert!(headers.contains("answers (10 s)") && headers.contains("breaker"), "live columns: {headers}");
    let peak = page.value("block-rate-peak");
    assert!(peak > 0.0 && peak <= 1.0, "the block rate rose above zero: {peak}");
    // The second the page showed is still in the last ten minutes: its pages are the ones
    // the dashboard recorded for that second, exactly.
    let as_of = page.value("as-of");
    let shown = after["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|point| (point["t"].as_f64().unwrap() - as_of).abs() < 1e-6)
        .unwrap_or_else(|| panic!("second {as_of} is in the timeline"));
    let pages = page.count("pages-total");
    assert!(pages > 0);
    assert_eq!(pages, shown["pages"].as_u64().unwrap(), "the page's count is the crawl's at {as_of} s");
    assert_eq!(page.count("items-total"), shown["items"].as_u64().unwrap());
    let hosts = page.text("#hosts tbody");
    let origin = site.url().trim_end_matches('/').to_owned();
    assert!(hosts.contains(&origin), "{origin} in {hosts}");

    let summary = crawl.await.unwrap().unwrap();
    assert_eq!(summary.status, CrawlStatus::Complete);
    assert!(
        summary.counts.pages >= pages,
        "{} pages in all, {pages} when the page was read",
        summary.counts.pages
    );
    let seen = site.observed();
    assert_eq!(seen.answered(403), 0, "never banned, dashboard or not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_opens_from_a_file_and_shows_the_summarys_totals() {
    let chromium = Chromium::find();
    let walls = HostileSite { pages: 40, captcha: 6, gone: 3, ..HostileSite::empty() };
    let site = Sandbox::hostile(walls).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let report = dir.path().join("crawl.html");
    // Slow enough for a few seconds of timeline; walls given up at once.
    let config = config.block_marker("g-recaptcha").retries(0).rps(20).report(&report);
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::CompleteWithFailures);
    assert!(output.exists());

    let url = format!("file://{}", report.display());
    let dom = tokio::task::spawn_blocking(move || {
        chromium.screenshot(&url, "report.png");
        chromium.dump_dom(&url)
    })
    .await
    .unwrap();
    let page = Rendered(Html::parse_document(&dom));
    assert_eq!(page.count("pages-total"), summary.counts.pages);
    assert_eq!(page.count("items-total"), summary.counts.items);
    assert_eq!(page.count("failures-total"), summary.failures);
    assert_eq!(page.count("requests-total"), summary.counts.requests);
    assert!(summary.failures >= 9, "six walls and three gone pages: {summary:?}");
    let charts = page.charts();
    assert!(charts.iter().all(|(_, points)| *points >= 2), "the whole crawl's timeline: {charts:?}");
    // Neither adaptive nor proxied: those charts are said to be unused, the rest drawn.
    assert_eq!(page.unused(), ["host_limits", "host_rates", "proxy_spend"]);
    let names: Vec<&str> = charts.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["pages_per_sec", "items_per_sec", "block_rate", "latency", "queue", "retries_failures"]
    );
    page.check_axes(&UNITS);
    assert!(page.text("#events tbody").contains("not used in this crawl: adaptive = false"));
    // A finished report shows what the crawl ended with, not the last ten seconds' answers.
    assert_eq!(page.text("#hosts thead"), "hostblock rateslotsrate/s");
    assert!(page.value("block-rate-peak") > 0.0, "the walls were blocks");
    let failures = page.text("#failures tbody");
    for reason in summary.counts.failures_by_reason.keys() {
        assert!(failures.contains(reason.as_str()), "{reason} in {failures}");
    }
    assert!(failures.contains("/captcha/"), "an example URL of the walls: {failures}");
    assert!(page.text("#summary").contains(&summary.to_string()), "the summary as printed");
    assert!(page.text("#settings").contains("report = "), "the settings used");
    assert!(page.text("#state").contains("complete with failures"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_stopped_by_a_limit_writes_its_report_and_one_that_cannot_be_written_loses_nothing() {
    let site = Sandbox::hostile(HostileSite { pages: 30, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let report = dir.path().join("limited.html");
    let summary =
        Crawler::new(BookSpider::new(config.clone().max_pages(5).report(&report))).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::LimitReached);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains(r#""status":"limit_reached""#), "the report says how the crawl ended");
    assert!(html.contains(&format!(r#""pages":{},"items":{}"#, summary.counts.pages, summary.counts.items)));

    let site = Sandbox::hostile(HostileSite { pages: 30, ..HostileSite::empty() }).unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    // A folder where the report's file should be: it cannot be written at the end.
    let nowhere = dir.path().join("crawl.html");
    std::fs::create_dir(&nowhere).unwrap();
    let summary = Crawler::new(BookSpider::new(config.report(&nowhere))).run().await.unwrap();
    assert_eq!(summary.status, CrawlStatus::Complete);
    assert_eq!(support::read_jsonl(&output).len() as u64, summary.counts.items);
    assert_eq!(summary.counts.items, 30);
    assert!(nowhere.is_dir());
}

/// One spike far above the rest of a rate chart (a crawl's last, short second, often) is
/// named and drawn at the top edge, so it does not flatten every other point: a report's
/// data given such a second, as Chromium draws it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spike_in_a_rate_chart_is_named_and_does_not_flatten_the_rest() {
    let chromium = Chromium::find();
    let site = Sandbox::hostile(HostileSite { pages: 30, ..HostileSite::empty() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    let report = dir.path().join("crawl.html");
    Crawler::new(BookSpider::new(config.report(&report))).run().await.unwrap();

    // Twenty seconds of 10 items/s, then one of 500: the report's own data, reshaped.
    let html = std::fs::read_to_string(&report).unwrap();
    let open = r#"<script id="data" type="application/json">"#;
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let mut data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let first = data["series"][0].clone();
    let series: Vec<serde_json::Value> = (1..=21)
        .map(|t| {
            let mut point = first.clone();
            point["t"] = t.into();
            point["items_per_sec"] = if t == 21 { 500.0 } else { 10.0 }.into();
            point["pages_per_sec"] = 10.0.into();
            point
        })
        .collect();
    data["series"] = series.into();
    let spiky = dir.path().join("spiky.html");
    std::fs::write(&spiky, format!("{}{}{}", &html[..start], data, &html[end..])).unwrap();

    let url = format!("file://{}", spiky.display());
    let dom = tokio::task::spawn_blocking(move || chromium.dump_dom(&url)).await.unwrap();
    let page = Rendered(Html::parse_document(&dom));
    let svg = |name: &str| {
        let selector = Selector::parse(&format!(r#"svg[data-series="{name}"]"#)).unwrap();
        page.0.select(&selector).next().unwrap().value().attr("data-spike").map(str::to_owned)
    };
    assert_eq!(svg("items_per_sec").as_deref(), Some("500"), "the spike is named");
    assert_eq!(svg("pages_per_sec"), None, "an even chart has none");
    let scale = page.text("#chart-items_per_sec .top");
    assert!(scale.contains("max 500 /s, off the scale"), "{scale}");
    let (values, _) = page.ticks("items_per_sec");
    assert!(values.iter().all(|v| v.trim_end_matches(" /s").parse::<f64>().unwrap() <= 20.0), "{values:?}");
}
