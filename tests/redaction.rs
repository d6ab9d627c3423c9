//! Credentials never show (a proxy's, a fleet's Redis password, a header's token): not
//! in logs at any level, errors, stats, the failures file, the summary or the settings
//! printed at start. Alone in its binary because it
//! installs the process-wide log subscriber.

#![allow(clippy::unwrap_used)]

mod support;

use spider_sandbox::{DemoSite, GatewayConfig, MockGateway, Sandbox};
use spiderling::{Config, Crawler};
use support::{config_for, BookSpider};

const SECRET: &str = "hunter2-redact-me";

/// Standard base64, to look for the Proxy-Authorization value too.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_never_show_anywhere() {
    let captured = support::capture_logs();
    let account = GatewayConfig { user: "acct".to_owned(), password: SECRET.to_owned() };
    let gateway = MockGateway::start(account.clone()).unwrap();
    let site = Sandbox::demo(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut shown = Vec::new();

    // A crawl through a pool with a dead gateway (benched, logged) and a live one.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let pool = format!("http://acct:{SECRET}@{dead}, {}", gateway.url_with_credentials());
    let (config, output) = config_for(&site, dir.path(), "items.jsonl");
    let config = config.proxy(pool).proxy_price_per_gb(8.0);
    shown.push(config.to_string());
    shown.push(format!("{config:?}"));
    let summary = Crawler::new(BookSpider::new(config)).run().await.unwrap();
    assert_eq!(summary.counts.items, 5);
    assert!(summary.proxy.as_ref().unwrap().gateways[0].benched > 0, "the dead gateway was benched");
    shown.push(summary.to_string());
    shown.push(format!("{summary:?}"));
    for file in ["items.stats.json", "items.failures.jsonl"] {
        shown.push(std::fs::read_to_string(output.with_file_name(file)).unwrap_or_default());
    }

    // A gateway that refuses the password: the 407 error, to a request and to a tunnel.
    let strict = MockGateway::start(GatewayConfig { password: "another".to_owned(), ..account }).unwrap();
    let wrong = format!("http://acct:{SECRET}@{}", strict.addr());
    let tls = Sandbox::demo_tls(DemoSite { books: 5, per_page: 5, ..DemoSite::default() }).unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, tls.certificate_pem().unwrap()).unwrap();
    let finished = captured.text().matches("crawl finished").count();
    for target in [site.url(), tls.url()] {
        let config = Config::new("books").start_url(target).proxy(wrong.as_str()).ca_cert(&ca);
        let error = Crawler::new(BookSpider::new(config)).run().await.unwrap_err();
        shown.push(error.to_string());
        shown.push(format!("{error:?}"));
    }
    // A crawl the 407 stopped logged "crawl finished ... status=Complete" after its error.
    assert_eq!(
        captured.text().matches("crawl finished").count(),
        finished,
        "a stopped crawl is not finished"
    );

    // Settings that do not parse, or name a gateway that does not, or hide the password
    // behind the characters that end a URL's authority or separate routes.
    for bad in [
        format!("ftp://acct:{SECRET}@gw"),
        format!("http://acct:{SECRET}@"),
        format!("http://acct:{SECRET}"),
        format!("http://acct:x/{SECRET}@gw:1"),
        format!("http://acct:x,{SECRET}>y@gw:99999"),
    ] {
        match Config::new("x").set("proxy", &bad).map(|c| c.validate()) {
            Err(error) | Ok(Err(error)) => shown.push(error.to_string()),
            Ok(Ok(())) => panic!("{bad} was accepted"),
        }
    }
    let odd = Config::new("x").proxy(format!("direct > http://acct:x,{SECRET}>y/z@gw:8000"));
    shown.push(odd.to_string());
    shown.push(format!("{odd:?}"));

    // A fleet's Redis password and a header's token, printed and in errors.
    let fleet = Config::new("x")
        .frontier(format!("redis://:{SECRET}@127.0.0.1:1/0"))
        .header("Authorization", format!("Bearer {SECRET}"));
    shown.push(fleet.to_string());
    shown.push(format!("{fleet:?}"));
    for (key, bad) in [("headers", format!("Authorization Bearer {SECRET}")), ("headers", SECRET.to_owned())]
    {
        shown.push(Config::new("x").set(key, &bad).unwrap_err().to_string());
    }

    // The standard flags of a spider binary, with a mistake next to the password.
    for set in [format!("proxy=http://acct:{SECRET}@gw:1 >"), format!("http://acct:{SECRET}@gw:1")] {
        let run =
            std::process::Command::new(support::example("books")).args(["--set", &set]).output().unwrap();
        assert_eq!(run.status.code(), Some(2), "{run:?}");
        shown.push(String::from_utf8_lossy(&run.stderr).into_owned());
    }

    let logs = captured.text();
    assert!(logs.contains("gateway unreachable"), "the logs were captured");
    shown.push(logs);
    let encoded = base64(format!("acct:{SECRET}").as_bytes());
    for text in &shown {
        assert!(!text.contains(SECRET), "the password shows in:\n{text}");
        assert!(!text.contains(&encoded), "the Proxy-Authorization value shows in:\n{text}");
    }
}
