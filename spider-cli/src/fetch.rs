//! `spiderling fetch URL --css SEL`: one page through the same stack as a crawl
//! (robots.txt, headers, proxy route, timeout, retries with backoff, body cap, block
//! detection), the block verdict, and what each selector matches. The quickest way to write a selector.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use spiderling::async_trait;
use spiderling::cli::Stage;
use spiderling::scraper::Selector;
use spiderling::{Config, Crawler, Cx, Page, Spider, SpiderConfig};

/// The keys this command takes: how its requests are sent. A crawl's own (its start
/// URLs, its output, its state file or fleet) do not apply to it.
const WIRE: [Stage; 4] = [Stage::Retry, Stage::Fetch, Stage::Identity, Stage::Proxy];

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The page to fetch.
    url: String,
    /// A CSS selector to try (repeatable).
    #[arg(long = "css", value_name = "SELECTOR")]
    selectors: Vec<String>,
    /// Show this attribute of each match instead of its text (href, src, ...).
    #[arg(long, value_name = "NAME")]
    attr: Option<String>,
    /// A header to send, as `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Fetch even if robots.txt disallows the page.
    #[arg(long)]
    ignore_robots: bool,
    /// Go through a proxy: `env:VAR` to read the gateway URL and its credentials from the
    /// environment (keeps the password out of `ps` and shell history), e.g.
    /// `--proxy env:SPIDERLING_PROXY`; or a gateway URL.
    #[arg(long, value_name = "URL|env:VAR")]
    proxy: Option<String>,
    /// Exit country asked of the gateway, two letters (with --proxy).
    #[arg(long, value_name = "CC", requires = "proxy")]
    geo: Option<String>,
    /// Text that marks the answer as a block even with 200, such as `g-recaptcha`
    /// (repeatable).
    #[arg(long = "block-marker", value_name = "TEXT")]
    block_markers: Vec<String>,
    /// Trust this PEM certificate too, e.g. the one `spiderling sandbox --tls` writes.
    #[arg(long, value_name = "PATH")]
    ca_cert: Option<String>,
    /// Change a setting of how requests are sent, as `key=value` (repeatable), as a spider
    /// binary's `--set` does: the retry, fetch, identity and proxy keys; `SPIDERLING_<KEY>` variables of
    /// those keys are read too (the others are a crawl's). The flags above are shortcuts
    /// for the keys they name, and win.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Say how the page was sent: the client (the crawl's own, or a browser's wire with
    /// `--set impersonate=chrome`), the HTTP version, and, from a fingerprint site's echo
    /// (`spiderling sandbox --fingerprint`'s `/wire`), the JA4, JA3 and HTTP/2 fingerprint
    /// it received and its verdict.
    ///
    /// Example: spiderling fetch --wire https://localhost:PORT/wire --set ca_cert=PATH --set impersonate=chrome
    #[arg(long)]
    wire: bool,
}

/// What the page showed.
struct Seen {
    status: u16,
    url: String,
    bytes: usize,
    /// The body, kept for `--wire`'s echo.
    body: Vec<u8>,
    matches: Vec<(String, Vec<String>)>,
}

struct FetchOne {
    config: Config,
    selectors: Arc<Vec<(String, Selector)>>,
    attr: Option<Arc<str>>,
    seen: Arc<Mutex<Option<Seen>>>,
    keep_body: bool,
}

impl SpiderConfig for FetchOne {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

#[async_trait]
impl Spider for FetchOne {
    type Item = ();

    async fn parse(&self, page: Page, _: &mut Cx<()>) -> spiderling::Result {
        let (selectors, attr) = (self.selectors.clone(), self.attr.clone());
        let matches = page
            .html(move |doc| {
                let value = |element: spiderling::scraper::ElementRef<'_>| match attr.as_deref() {
                    Some(name) => element.value().attr(name).unwrap_or_default().to_owned(),
                    None => {
                        element.text().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ")
                    }
                };
                selectors
                    .iter()
                    .map(|(css, selector)| (css.clone(), doc.select(selector).map(value).collect()))
                    .collect()
            })
            .await?;
        let seen = Seen {
            status: page.status().as_u16(),
            url: spiderling::redact_url(page.url().as_str()),
            bytes: page.body().len(),
            body: if self.keep_body { page.body().to_vec() } else { Vec::new() },
            matches,
        };
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(seen);
        Ok(())
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    let mut selectors = Vec::new();
    for css in &args.selectors {
        match spiderling::selector(css) {
            Ok(selector) => selectors.push((css.clone(), selector)),
            Err(error) => {
                eprintln!("error: --css: {error}");
                return ExitCode::from(2);
            }
        }
    }
    let config = Config::new("fetch").start_url(args.url.as_str());
    let mut config = match spiderling::cli::layer(config, &args.set, &WIRE) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if args.ignore_robots {
        config = config.obey_robots(false);
    }
    for (key, value) in [("proxy", &args.proxy), ("geo", &args.geo), ("ca_cert", &args.ca_cert)] {
        if let Some(value) = value {
            config = match config.set(key, value) {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("error: --{}: {error}", key.replace('_', "-"));
                    return ExitCode::from(2);
                }
            };
        }
    }
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            eprintln!("error: --header {header:?}: write it as \"Name: value\"");
            return ExitCode::from(2);
        };
        config = config.header(name.trim(), value.trim());
    }
    for marker in &args.block_markers {
        config = config.block_marker(marker.as_str());
    }
    let seen = Arc::new(Mutex::new(None));
    let spider = FetchOne {
        config,
        selectors: Arc::new(selectors),
        attr: args.attr.as_deref().map(Arc::from),
        seen: seen.clone(),
        keep_body: args.wire,
    };
    let impersonate = spider.config.impersonate;
    let started = Instant::now();
    let summary = match super::block_on(Crawler::new(spider).run()) {
        Ok(summary) => summary,
        Err(code) => return code,
    };
    let elapsed = started.elapsed();
    let Some(seen) = seen.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        eprint!("{}", spiderling::cli::no_page(&args.url, &summary));
        if summary.counts.robots_disallowed > 0 {
            eprintln!("  (--ignore-robots fetches it anyway)");
        }
        return ExitCode::FAILURE;
    };
    spiderling::outln!("{} {} in {} ms, {} bytes", seen.status, seen.url, elapsed.as_millis(), seen.bytes);
    match summary.counts.blocked {
        0 => spiderling::outln!("  block verdict: not blocked"),
        n => spiderling::outln!("  block verdict: not blocked, after {n} blocked answers were retried"),
    }
    if summary.counts.retries > 0 {
        spiderling::outln!("  after {} retries", summary.counts.retries);
    }
    for gateway in summary.proxy.iter().flat_map(|p| &p.gateways).filter(|g| g.requests > 0) {
        let bytes = gateway.bytes_sent + gateway.bytes_received;
        spiderling::outln!("  via {} ({} requests, {bytes} bytes)", gateway.gateway, gateway.requests);
    }
    if args.wire {
        print_wire(impersonate, &summary.counts, &seen.body);
    }
    for (css, values) in seen.matches {
        let plural = if values.len() == 1 { "match" } else { "matches" };
        spiderling::outln!("{css} ({} {plural})", values.len());
        for value in values {
            spiderling::outln!("  {value}");
        }
    }
    ExitCode::SUCCESS
}

/// `--wire`: how the page was sent, and what a fingerprint site's echo says it received.
fn print_wire(impersonate: spiderling::Impersonate, counts: &spiderling::Counts, body: &[u8]) {
    let client = if counts.impersonated > 0 {
        match impersonate {
            spiderling::Impersonate::Firefox => "Firefox's wire (impersonate = \"firefox\")",
            spiderling::Impersonate::Auto => {
                "Chrome's wire (impersonate = \"auto\", the host refused the plain client)"
            }
            _ => "Chrome's wire (impersonate = \"chrome\")",
        }
    } else {
        "the crawl's own client (reqwest and rustls)"
    };
    spiderling::outln!("  wire: {client}");
    spiderling::outln!("  HTTP version: {}", if counts.http2 > 0 { "HTTP/2" } else { "HTTP/1.1" });
    let Ok(echo) = serde_json::from_slice::<serde_json::Value>(body) else {
        spiderling::outln!("  (the page is no fingerprint echo: its JA4 is the server's to tell)");
        return;
    };
    for (field, label) in [
        ("ja4", "JA4"),
        ("ja3_hash", "JA3"),
        ("h2", "HTTP/2 fingerprint"),
        ("http_version", "the site saw"),
        ("verdict", "the site's verdict"),
    ] {
        if let Some(value) = echo.get(field).and_then(serde_json::Value::as_str) {
            spiderling::outln!("  {label}: {value}");
        }
    }
    if let Some(order) = echo.get("header_order").and_then(serde_json::Value::as_array) {
        let names: Vec<&str> = order.iter().filter_map(serde_json::Value::as_str).collect();
        spiderling::outln!("  header order: {}", names.join(", "));
    }
}
