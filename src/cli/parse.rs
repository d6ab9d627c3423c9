//! `parse URL`: one live page through the crawl's stack and the spider's rules and items,
//! as Scrapy's `scrapy parse` shows it: the rule that took the page, its items as JSON,
//! the links each rule would follow, the links dropped and why, and which engine read it.
//! Nothing it finds is fetched but the robots.txt of the hosts its links go to, and
//! nothing is written.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use spider_core::url::Url;
use spider_core::{async_trait, Config, Crawler, Cx, Page, Request, Robots, Route, Spider, SpiderConfig};

/// What the spider made of the page.
struct Parsed {
    status: u16,
    url: Url,
    /// The derived spider's rule that takes the page's URL, counted from 1.
    rule: Option<usize>,
    /// The items, as JSON Lines output would hold them.
    items: Vec<String>,
    /// The requests `parse` asked for, each with the rule that took its link.
    follows: Vec<Request>,
    /// Every link of the page, as a browser would see it, before any rule looked at it.
    links: Vec<Url>,
    /// What `parse` failed with (an item that does not parse, say).
    error: Option<String>,
}

/// The spider, but for its `parse`, whose findings are kept instead of crawled.
struct ParseOne<S> {
    inner: S,
    config: Config,
    parsed: Arc<Mutex<Option<Parsed>>>,
}

impl<S: Spider> SpiderConfig for ParseOne<S> {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

#[async_trait]
impl<S: Spider> Spider for ParseOne<S> {
    type Item = ();

    async fn parse(&self, page: Page, _: &mut Cx<()>) -> spider_core::Result {
        let links = every_link(&page);
        let (status, url) = (page.status().as_u16(), page.url().clone());
        let rule = self.inner.rendering(page.request()).rule.map(|index| index + 1);
        let (items, follows, error) = match spider_core::testing::parse_page(&self.inner, page).await {
            Ok((items, follows)) => {
                let items = items.iter().map(serde_json::to_string).collect::<Result<Vec<_>, _>>()?;
                (items, follows, None)
            }
            Err(error) => (Vec::new(), Vec::new(), Some(error.to_string())),
        };
        *self.parsed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) =
            Some(Parsed { status, url, rule, items, follows, links, error });
        Ok(())
    }

    fn route(&self, request: &Request) -> Route {
        self.inner.route(request)
    }

    fn impersonate(&self, request: &Request) -> Option<spider_core::Impersonate> {
        self.inner.impersonate(request)
    }

    fn rendering(&self, request: &Request) -> spider_core::Rendering {
        self.inner.rendering(request)
    }

    fn is_blocked(&self, answer: &spider_core::Answer<'_>) -> Option<bool> {
        self.inner.is_blocked(answer)
    }
}

/// The page's links (`a[href]`, `area[href]`), resolved, each once, read with a DOM of
/// this command's own so that the engine the crawl counts is the spider's.
fn every_link(page: &Page) -> Vec<Url> {
    let Ok(selector) = spider_core::selector("a[href], area[href]") else { return Vec::new() };
    let html = spider_core::scraper::Html::parse_document(&page.text());
    let mut links: Vec<Url> = Vec::new();
    for href in html.select(&selector).filter_map(|element| element.value().attr("href")) {
        if let Ok(url) = page.url().join(href.trim()) {
            let mut url = url;
            url.set_fragment(None);
            if !links.contains(&url) {
                links.push(url);
            }
        }
    }
    links
}

/// Fetch `url` with `spider`'s settings under the environment and `set`, run its parse,
/// and print what it made of the page.
pub(super) fn run<S: Spider>(spider: S, url: &str, set: &[String]) -> ExitCode {
    let config = match super::settings(spider.config(), super::environment(), set, None, None) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return error.exit_code();
        }
    };
    let Ok(target) = Url::parse(url) else {
        eprintln!("error: {url:?} is not an absolute URL; write one such as https://example.com/");
        return ExitCode::from(2);
    };
    // The one page: no state file, no fleet, no output, no follow-ups, and no start URLs
    // but this one; the rest (route, headers, identities, robots.txt, retries) as a crawl's.
    let mut one = config.clone();
    one.start_urls = vec![target.to_string()];
    one.start_list = None;
    one.outputs.clear();
    one.state = None;
    one.frontier = None;
    one.cache = None;
    one.metrics = None;
    one.dashboard = None;
    one.report = None;
    one.sitemaps = false;
    one.sitemap_urls.clear();
    one.progress = false;
    let parsed = Arc::new(Mutex::new(None));
    let wrapper = ParseOne { inner: spider, config: one, parsed: parsed.clone() };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let summary = match runtime.block_on(Crawler::new(wrapper).run()) {
        Ok(summary) => summary,
        Err(error) => {
            eprintln!("error: {error}");
            return error.exit_code();
        }
    };
    let Some(parsed) = parsed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take() else {
        eprint!("{}", super::no_page(target.as_str(), &summary));
        return ExitCode::FAILURE;
    };
    let robots = runtime.block_on(async {
        let mut read: Vec<(String, Robots)> = Vec::new();
        for link in parsed.follows.iter().map(Request::url) {
            let origin = link.origin().ascii_serialization();
            if config.obey_robots && !read.iter().any(|(known, _)| *known == origin) {
                if let Ok(robots) = Robots::fetch(&config, link).await {
                    read.push((origin, robots));
                }
            }
        }
        read
    });
    report(&config, &parsed, &summary.counts, &robots)
}

/// Print what `parsed` found; the exit code is 1 when `parse` failed.
fn report(
    config: &Config,
    parsed: &Parsed,
    counts: &spider_core::Counts,
    robots: &[(String, Robots)],
) -> ExitCode {
    let engine = if counts.rendered > 0 {
        "rendered in a browser, then read"
    } else if counts.streamed_pages > 0 {
        "read in one streaming pass, without a DOM"
    } else if counts.html_parses > 0 {
        "parsed into a DOM"
    } else {
        "not read as HTML"
    };
    crate::outln!("{} {} · {engine}", parsed.status, parsed.url);
    match parsed.rule {
        Some(rule) => crate::outln!("rule {rule} takes this page"),
        None => crate::outln!(
            "no rule takes this page: a start page's links are followed, or its parse is the spider's own"
        ),
    }
    match &parsed.error {
        Some(error) => crate::outln!("parse failed: {error}"),
        None => {
            crate::outln!("items ({}):", parsed.items.len());
            for item in &parsed.items {
                crate::outln!("  {item}");
            }
        }
    }
    let in_scope = |url: &Url| {
        config.allowed_domains.is_empty()
            || url.host_str().is_some_and(|host| {
                config
                    .allowed_domains
                    .iter()
                    .any(|domain| host == domain || host.ends_with(&format!(".{domain}")))
            })
    };
    let allowed = |url: &Url| {
        let origin = url.origin().ascii_serialization();
        robots.iter().find(|(known, _)| *known == origin).is_none_or(|(_, robots)| robots.allows(url))
    };
    let mut followed = Vec::new();
    let mut dropped: Vec<(String, &Url)> = Vec::new();
    for request in &parsed.follows {
        let url = request.url();
        if !in_scope(url) {
            dropped.push(("out of scope (allowed_domains)".to_owned(), url));
        } else if !allowed(url) {
            dropped.push(("disallowed by robots.txt".to_owned(), url));
        } else {
            let by = request.rule().map_or_else(|| "parse".to_owned(), |rule| format!("rule {rule}"));
            followed.push((by, url));
        }
    }
    // A link is the same request as one followed when their fingerprints (canonical URL,
    // method, body) agree: another spelling of it, which the crawl would fetch once.
    let followed_prints: Vec<_> = parsed.follows.iter().map(Request::fingerprint).collect();
    for link in &parsed.links {
        if parsed.follows.iter().any(|request| request.url() == link) {
            continue;
        }
        let print = Request::new(link.clone()).fingerprint();
        let why = if followed_prints.contains(&print) {
            "another spelling of a link followed"
        } else {
            "no rule followed it"
        };
        dropped.push((why.to_owned(), link));
    }
    crate::outln!("links to follow ({}):", followed.len());
    for (by, url) in &followed {
        crate::outln!("  {by:<8} {url}");
    }
    crate::outln!("dropped ({}):", dropped.len());
    for (why, url) in &dropped {
        crate::outln!("  {why}: {url}");
    }
    if parsed.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
