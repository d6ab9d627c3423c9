//! Not getting blocked: block detection, observed by the hostile site.

mod support;

use spider_sandbox::{HostileSite, Sandbox};
use spiderling::{CrawlStatus, Crawler};
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
    assert_eq!((summary.status, summary.blocked, summary.items), (CrawlStatus::Complete, 5, 5));
    let books = read_jsonl(&output);
    assert!(books.iter().all(|b| b.title != "Are you a robot?"), "{books:?}");
    let seen = site.observed();
    for i in 1..=5 {
        assert_eq!(seen.times_of(&format!("/captcha/{i}")).len(), 2, "/captcha/{i}: the wall, then the page");
    }
}
