//! Not getting blocked: block detection, observed by the hostile site.

use crate::support;

use std::time::Duration;

use spider_sandbox::{HostileSite, Sandbox};
use spiderling::{Config, CrawlStatus, Crawler};
use support::{config_for, read_jsonl, BookSpider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captcha_served_with_200_is_a_block_retried_and_never_an_item() {
    let walls = HostileSite { captcha: 5, ..HostileSite::empty() };
    let dir = tempfile::tempdir().unwrap();

    // Without the marker the walls pass for pages: five "items" that are captchas.
    let site = Sandbox::hostile(walls.clone()).unwrap();
    let (config, output) = config_for(&site, dir.path(), "careless.jsonl");
    Crawler::new(BookSpider::new(config)).run().await.unwrap();
    let robots = read_jsonl(&output).into_iter().filter(|b| b.title == "Are you a robot?").count();
    assert_eq!(robots, 5, "the control run did scrape the walls");

    let site = Sandbox::hostile(walls).unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let config = config
        .block_marker("g-recaptcha")
        .backoff(std::time::Duration::from_millis(10), std::time::Duration::from_millis(50));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!((summary.status, summary.counts.blocked, summary.counts.items), (CrawlStatus::Complete, 5, 5));
    let books = read_jsonl(&output);
    assert!(books.iter().all(|b| b.title != "Are you a robot?"), "{books:?}");
    let seen = site.observed();
    for i in 1..=5 {
        assert_eq!(seen.times_of(&format!("/captcha/{i}")).len(), 2, "/captcha/{i}: the wall, then the page");
    }
}

/// The aggressive settings both runs share: 50 slots, no pause.
fn aggressive(config: Config) -> Config {
    config.concurrency(50).per_host(50).backoff(Duration::from_millis(100), Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_slots_without_a_pause_get_banned() {
    let site = Sandbox::hostile(support::per_ip_limited_site(300)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    // The ban comes with the first burst; the crawl, slowed down, would wait it out
    // (a minute) and finish: it is not waited for.
    let crawl = Crawler::new(BookSpider::new(aggressive(config).retries(1).handle_signals(false))).run();
    let _ = tokio::time::timeout(Duration::from_secs(10), crawl).await;
    let seen = site.observed();
    println!("control: 429 ×{}, 403 ×{}", seen.answered(429), seen.answered(403));
    assert!(seen.answered(403) > 0, "the site banned the crawl");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_mode_finds_the_limit_and_finishes_without_a_ban() {
    let pages = 800;
    let site = Sandbox::hostile(support::per_ip_limited_site(pages)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let crawler = Crawler::new(BookSpider::new(aggressive(config).adaptive(true)));
    let mut live = crawler.live();
    let limits = tokio::spawn(async move {
        let mut seen = Vec::new();
        while live.changed().await.is_ok() {
            let now = live.borrow().clone();
            if let Some(host) = now.hosts.first() {
                seen.push((
                    host.limit,
                    host.rate_per_sec.unwrap_or_default(),
                    now.latency_p50_ms,
                    now.in_flight,
                ));
            }
        }
        seen
    });
    let summary = crawler.run().await.unwrap();
    let limits = limits.await.unwrap();

    let seen = site.observed();
    let served: Vec<_> = seen.pages().filter(|h| h.status == 200).collect();
    let span = served.last().unwrap().at - served.first().unwrap().at;
    let rate = served.len() as f64 / span.as_secs_f64();
    println!(
        "adaptive: {} items in {span:?}, {rate:.1} pages/s of 40 allowed; 429 ×{}, 403 ×{}; block rate \
            {:.3}",
        summary.counts.items,
        seen.answered(429),
        seen.answered(403),
        summary.block_rate
    );
    println!("limit and rate each second: {limits:?}");
    assert_eq!((summary.status, summary.counts.items as usize), (CrawlStatus::Complete, pages));
    assert_eq!(read_jsonl(&output).len(), pages);
    assert_eq!(seen.answered(403), 0, "never banned");
    assert!(summary.block_rate < 0.02, "block rate {} is over the target", summary.block_rate);
    assert!(rate >= 0.7 * 40.0, "{rate:.1} pages/s is under 70% of the 40 the site allows");
    let most = limits.iter().map(|(_, rps, ..)| *rps).fold(0.0, f64::max);
    assert!(most > 40.0, "the rate climbed past the limit once: {most}");
    let (_, last, ..) = limits.last().unwrap();
    assert!(*last < most, "and backed off: {last} < {most}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_endpoint_serves_the_block_rate_during_the_crawl() {
    let walls = HostileSite { pages: 30, captcha: 20, ..HostileSite::empty() };
    let site = Sandbox::hostile(walls).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (config, _) = config_for(&site, dir.path(), "items.jsonl");
    // Slow enough to be scraped a few times while it runs.
    let config = config.block_marker("g-recaptcha").metrics(format!("127.0.0.1:{port}")).rps(20);
    let crawl = tokio::spawn(Crawler::new(BookSpider::new(config)).run());
    let client = spiderling::reqwest::Client::new();
    let mut scraped = Vec::new();
    while !crawl.is_finished() {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Ok(answer) = client.get(format!("http://127.0.0.1:{port}/metrics")).send().await {
            scraped.push(answer.text().await.unwrap());
        }
    }
    let summary = crawl.await.unwrap().unwrap();
    assert_eq!(summary.counts.items, 50);
    assert!(scraped.len() >= 3, "scraped {} times during the crawl", scraped.len());
    let mut block_rates = Vec::new();
    let mut hosts_seen = false;
    for text in &scraped {
        let lines = text.lines().map(|line| Ok(line.to_owned()));
        let parsed = prometheus_parse::Scrape::parse(lines).unwrap();
        let rate = parsed.samples.iter().find(|s| s.metric == "spiderling_block_rate").expect("the gauge");
        let prometheus_parse::Value::Gauge(rate) = rate.value else {
            panic!("{:?} is not a gauge", rate.value)
        };
        block_rates.push(rate);
        hosts_seen |= parsed.samples.iter().any(|s| {
            s.metric == "spiderling_host_block_rate"
                && s.labels.get("host").is_some_and(|h| h.starts_with("http://127.0.0.1:"))
        });
    }
    assert!(hosts_seen, "the host's own gauge, labelled with its origin");
    println!("block rate as scraped: {block_rates:?}");
    assert!(block_rates.iter().any(|r| *r > 0.0), "the gauge moved while the walls were met");
}
