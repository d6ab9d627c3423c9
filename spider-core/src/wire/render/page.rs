//! One page's render: in its identity's browser context, every request the browser makes
//! paused and answered by the crawl, the page's waits and actions, then its DOM and
//! cookies read back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use chromiumoxide::browser::Browser;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::emulation::SetUserAgentOverrideParams;
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestPattern,
    RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::{
    self, CookieParam, ErrorReason, GetCookiesParams, ResourceType, SetCookiesParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CreateBrowserContextParams, CreateTargetParams};
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::Page;
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Method;
use tokio::time::Instant;

use super::job::{Job, RenderError, Rendered, Subrequests, Waited};
use crate::request::Request;

/// How long the page's network must be still to count as quiet.
const QUIET: Duration = Duration::from_millis(500);
/// After an action whose requests are done, how long no new one may start before the
/// action counts as settled.
const SETTLED: Duration = Duration::from_millis(100);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);
/// Clicks, and scrolls, at most per page.
const ACTIONS: u64 = 50;

/// What a request of the page is, for its pause to be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resource {
    /// A frame's document.
    Document,
    /// Script, style sheet, XHR or fetch, anything a page's content may come from.
    Content,
    /// An image, a font or media: no item is read from them.
    Heavy,
}

/// What the pauses of one page have seen, read by its waits.
struct Traffic {
    in_flight: AtomicUsize,
    /// Requests paused so far.
    started: AtomicU64,
    last: Mutex<Instant>,
    subrequests: AtomicU64,
    refused: AtomicU64,
    /// Whether the page's document was answered yet.
    document: std::sync::atomic::AtomicBool,
}

impl Traffic {
    fn touch(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Instant::now();
        }
    }

    fn quiet(&self) -> bool {
        self.still_for(QUIET)
    }

    /// Nothing in flight, and nothing paused or answered for `span`.
    fn still_for(&self, span: Duration) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && self.last.lock().map(|last| last.elapsed() >= span).unwrap_or(true)
    }
}

/// Render `job` in a new context of `browser`.
pub(super) async fn render(
    browser: &Browser,
    contexts: &Contexts,
    job: &Job<'_>,
    subrequests: &dyn Subrequests,
    allow_heavy: bool,
    timeout: Duration,
) -> Result<Rendered, RenderError> {
    let (context, own) = contexts.of(browser, job.identity).await?;
    let target = CreateTargetParams::builder()
        .url("about:blank")
        .browser_context_id(context.clone())
        .build()
        .map_err(RenderError::Browser)?;
    let rendered = match browser.new_page(target).await {
        Ok(page) => {
            let rendered = on_page(&page, job, subrequests, allow_heavy, timeout).await;
            let _ = page.close().await;
            rendered
        }
        Err(error) => Err(gone(error)),
    };
    if own {
        let _ = browser.dispose_browser_context(context).await;
    }
    rendered
}

/// The browser contexts of one browser, one per identity that rendered in it lately: its
/// storage and cache live as long as the identity does, as a person's browser profile
/// would, and a page of another identity never sees them.
pub(super) struct Contexts {
    by_identity: tokio::sync::Mutex<lru::LruCache<String, BrowserContextId>>,
}

/// Contexts a browser keeps at once; the least recently used is disposed past it.
const CONTEXTS: usize = 32;

impl Contexts {
    pub(super) fn new() -> Self {
        let bound = std::num::NonZeroUsize::new(CONTEXTS).unwrap_or(std::num::NonZeroUsize::MIN);
        Contexts { by_identity: tokio::sync::Mutex::new(lru::LruCache::new(bound)) }
    }

    /// The context of `identity`, made now if it has none; one of its own for a page of no
    /// identity (a cached answer), disposed after it (`true`).
    async fn of(
        &self,
        browser: &Browser,
        identity: Option<&str>,
    ) -> Result<(BrowserContextId, bool), RenderError> {
        let Some(identity) = identity else {
            let context =
                browser.create_browser_context(CreateBrowserContextParams::default()).await.map_err(gone)?;
            return Ok((context, true));
        };
        let mut by_identity = self.by_identity.lock().await;
        if let Some(context) = by_identity.get(identity) {
            return Ok((context.clone(), false));
        }
        let context =
            browser.create_browser_context(CreateBrowserContextParams::default()).await.map_err(gone)?;
        if let Some((_, evicted)) = by_identity.push(identity.to_owned(), context.clone()) {
            if evicted != context {
                let _ = browser.dispose_browser_context(evicted).await;
            }
        }
        Ok((context, false))
    }
}

async fn on_page(
    page: &Page,
    job: &Job<'_>,
    subrequests: &dyn Subrequests,
    allow_heavy: bool,
    timeout: Duration,
) -> Result<Rendered, RenderError> {
    let deadline = Instant::now() + timeout;
    let paused = page.event_listener::<EventRequestPaused>().await.map_err(gone)?;
    let every = RequestPattern {
        url_pattern: Some("*".into()),
        resource_type: None,
        request_stage: Some(RequestStage::Request),
    };
    page.execute(fetch::EnableParams { patterns: Some(vec![every]), handle_auth_requests: None })
        .await
        .map_err(gone)?;
    let mut agent = SetUserAgentOverrideParams::new(job.agent);
    agent.accept_language = job.language.map(str::to_owned);
    page.execute(agent).await.map_err(gone)?;
    let cookies = job.cookies.map(|header| jar_cookies(header, job.url)).unwrap_or_default();
    if !cookies.is_empty() {
        page.execute(SetCookiesParams::new(cookies)).await.map_err(gone)?;
    }
    let traffic = Traffic {
        in_flight: AtomicUsize::new(0),
        started: AtomicU64::new(0),
        last: Mutex::new(Instant::now()),
        subrequests: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        document: std::sync::atomic::AtomicBool::new(false),
    };
    let answering = answer_pauses(page, paused, job, subrequests, allow_heavy, &traffic);
    let rendering = async {
        // The navigation's own answer is the document the crawl fetched; the protocol's
        // reply to it is all that is awaited here, the load is the waits' to judge.
        let navigate = page.goto(job.url.as_str());
        if let Ok(Err(error)) = tokio::time::timeout_at(deadline, navigate).await {
            return Err(gone(error));
        }
        let waited = wait(page, job, &traffic, deadline).await?;
        // The actions have a deadline of their own: a long "load more" is not cut short by
        // a slow first load.
        let (actions, cut_short) = act(page, job, &traffic, Instant::now() + timeout).await?;
        let html = page.content().await.map_err(gone)?;
        let cookies = page.execute(GetCookiesParams::default()).await.map_err(gone)?.result.cookies;
        let cookies = cookies.iter().map(set_cookie_line).collect();
        let screenshot = match (job.screenshot, waited) {
            // The item never appeared: a page that awaited nothing has no item to miss.
            (true, Waited::TimedOut) if !job.rendering.wait_for.is_empty() => {
                page.screenshot(ScreenshotParams::builder().full_page(true).build()).await.ok()
            }
            _ => None,
        };
        Ok(Rendered {
            html,
            waited,
            subrequests: traffic.subrequests.load(Ordering::Relaxed),
            refused: traffic.refused.load(Ordering::Relaxed),
            actions,
            cut_short,
            cookies,
            screenshot,
        })
    };
    tokio::pin!(answering);
    tokio::pin!(rendering);
    tokio::select! {
        rendered = &mut rendering => rendered,
        () = &mut answering => rendering.await,
    }
}

/// Answer each request the page makes, as it makes them, until its pauses end.
async fn answer_pauses(
    page: &Page,
    mut paused: chromiumoxide::listeners::EventStream<EventRequestPaused>,
    job: &Job<'_>,
    subrequests: &dyn Subrequests,
    allow_heavy: bool,
    traffic: &Traffic,
) {
    let mut answering = FuturesUnordered::new();
    loop {
        tokio::select! {
            event = paused.next() => match event {
                Some(event) => answering.push(answer(page, event, job, subrequests, allow_heavy, traffic)),
                None => break,
            },
            Some(()) = answering.next(), if !answering.is_empty() => {}
        }
    }
    while answering.next().await.is_some() {}
}

/// Answer one paused request: the page's document with the crawl's answer, an image, a
/// font or media refused unless allowed, anything else fetched through the crawl.
async fn answer(
    page: &Page,
    event: std::sync::Arc<EventRequestPaused>,
    job: &Job<'_>,
    subrequests: &dyn Subrequests,
    allow_heavy: bool,
    traffic: &Traffic,
) {
    traffic.in_flight.fetch_add(1, Ordering::AcqRel);
    traffic.started.fetch_add(1, Ordering::AcqRel);
    traffic.touch();
    let id = event.request_id.clone();
    // The browser's own request for the site's icon is an image the page never asked for.
    let icon = event.request.url.split(['?', '#']).next().is_some_and(|url| url.ends_with("/favicon.ico"));
    let resource = match event.resource_type {
        ResourceType::Document => Resource::Document,
        ResourceType::Image | ResourceType::Font | ResourceType::Media => Resource::Heavy,
        _ if icon => Resource::Heavy,
        _ => Resource::Content,
    };
    let first_document = resource == Resource::Document && !traffic.document.swap(true, Ordering::AcqRel);
    let reply = if first_document {
        Some(fulfil(id.clone(), job.status.as_u16(), job.headers, job.body))
    } else if resource == Resource::Heavy && !allow_heavy {
        None
    } else {
        match subrequest(&event.request).map(|request| subrequests.fetch(request)) {
            Some(fetching) => match fetching.await {
                Some(fetched) => {
                    traffic.subrequests.fetch_add(1, Ordering::Relaxed);
                    Some(fulfil(id.clone(), fetched.status.as_u16(), &fetched.headers, &fetched.body))
                }
                None => None,
            },
            None => None,
        }
    };
    let sent = match reply {
        Some(fulfilled) => page.execute(fulfilled).await.map(|_| ()),
        None => {
            traffic.refused.fetch_add(1, Ordering::Relaxed);
            let reason =
                if resource == Resource::Heavy { ErrorReason::BlockedByClient } else { ErrorReason::Failed };
            page.execute(FailRequestParams::new(id, reason)).await.map(|_| ())
        }
    };
    if let Err(error) = sent {
        tracing::debug!(target: "spiderling", %error, "a paused request could not be answered");
    }
    traffic.touch();
    traffic.in_flight.fetch_sub(1, Ordering::AcqRel);
}

/// The browser's request as the crawl sends it: its method, its headers but those the
/// identity sets (agent, cookies), its body.
fn subrequest(paused: &network::Request) -> Option<Request> {
    let url = url::Url::parse(&paused.url).ok()?;
    let method = Method::from_bytes(paused.method.as_bytes()).ok()?;
    let mut request = Request::new(url).with_method(method);
    if let Some(headers) = paused.headers.inner().as_object() {
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if matches!(lower.as_str(), "user-agent" | "cookie" | "host" | "content-length") {
                continue;
            }
            let (Ok(name), Some(Ok(value))) =
                (HeaderName::from_bytes(lower.as_bytes()), value.as_str().map(HeaderValue::from_str))
            else {
                continue;
            };
            request = request.with_header(name, value);
        }
    }
    let body: Vec<u8> = paused
        .post_data_entries
        .iter()
        .flatten()
        .filter_map(|entry| entry.bytes.as_ref())
        .filter_map(|bytes| {
            base64::engine::general_purpose::STANDARD.decode(AsRef::<str>::as_ref(bytes)).ok()
        })
        .flatten()
        .collect();
    if !body.is_empty() {
        let kind = request
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_owned();
        request = request.with_body(&kind, body).ok()?;
    }
    Some(request)
}

/// The protocol's answer to a paused request: `status`, `headers` (less those describing
/// the encoding and length of a body the crawl has decompressed) and `body`.
fn fulfil(id: fetch::RequestId, status: u16, headers: &HeaderMap, body: &[u8]) -> FulfillRequestParams {
    let entries = headers
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "content-encoding" | "content-length" | "transfer-encoding" | "connection"
            )
        })
        .filter_map(|(name, value)| {
            Some(HeaderEntry { name: name.as_str().to_owned(), value: value.to_str().ok()?.to_owned() })
        })
        .collect();
    let mut fulfilled = FulfillRequestParams::new(id, i64::from(status));
    fulfilled.response_headers = Some(entries);
    fulfilled.body = Some(base64::engine::general_purpose::STANDARD.encode(body).into());
    fulfilled
}

/// Wait until every awaited selector matches, or with none until the network is quiet,
/// or the deadline.
async fn wait(
    page: &Page,
    job: &Job<'_>,
    traffic: &Traffic,
    deadline: Instant,
) -> Result<Waited, RenderError> {
    let selectors = &job.rendering.wait_for;
    let check = if selectors.is_empty() {
        None
    } else {
        let list = serde_json::to_string(selectors).unwrap_or_else(|_| "[]".to_owned());
        Some(format!(
            "{list}.every(s => {{ try {{ return document.querySelector(s) !== null; }} catch (e) {{ \
            return true; }} }})"
        ))
    };
    loop {
        let done = match &check {
            Some(script) => evaluate::<bool>(page, script).await?,
            None => document_loaded(page).await? && traffic.quiet(),
        };
        if done {
            return Ok(if check.is_some() { Waited::Matched } else { Waited::Quiet });
        }
        if Instant::now() >= deadline {
            return Ok(Waited::TimedOut);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The rule's actions, each followed by what it started settling: a button clicked until
/// it is gone, then the page scrolled until no new link comes. Returns how many were done,
/// and whether the deadline or the bound cut them short.
async fn act(
    page: &Page,
    job: &Job<'_>,
    traffic: &Traffic,
    deadline: Instant,
) -> Result<(u64, bool), RenderError> {
    let (mut actions, mut cut_short) = (0, false);
    if let Some(css) = job.rendering.click {
        let selector = serde_json::to_string(css).unwrap_or_default();
        let click = format!(
            "(() => {{ const e = document.querySelector({selector}); if (!e) return false; \
            e.click(); return true; }})()"
        );
        loop {
            if actions >= ACTIONS || Instant::now() >= deadline {
                cut_short = true;
                break;
            }
            if !evaluate::<bool>(page, &click).await? {
                break;
            }
            actions += 1;
            settle(page, traffic, deadline).await?;
        }
    }
    if job.rendering.scroll {
        let links = "document.querySelectorAll('a[href]').length";
        let mut seen = evaluate::<u64>(page, links).await?;
        let mut scrolls = 0;
        loop {
            if scrolls >= ACTIONS || Instant::now() >= deadline {
                cut_short = true;
                break;
            }
            evaluate::<bool>(
                page,
                "(() => { window.scrollTo(0, document.body.scrollHeight); return true; })()",
            )
            .await?;
            scrolls += 1;
            settle(page, traffic, deadline).await?;
            let now = evaluate::<u64>(page, links).await?;
            if now == seen {
                break;
            }
            seen = now;
        }
        actions += scrolls;
    }
    Ok((actions, cut_short))
}

/// After an action: until the requests it started are answered and no other starts for a
/// moment, or, when it started none, until the network has been quiet a while.
async fn settle(page: &Page, traffic: &Traffic, deadline: Instant) -> Result<(), RenderError> {
    let before = traffic.started.load(Ordering::Acquire);
    traffic.touch();
    while Instant::now() < deadline {
        let started = traffic.started.load(Ordering::Acquire) > before;
        let settled = if started { traffic.still_for(SETTLED) } else { traffic.quiet() };
        if settled && document_loaded(page).await? {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

async fn document_loaded(page: &Page) -> Result<bool, RenderError> {
    Ok(evaluate::<String>(page, "document.readyState").await? == "complete")
}

async fn evaluate<T: serde::de::DeserializeOwned>(page: &Page, script: &str) -> Result<T, RenderError> {
    let result = page.evaluate(script).await.map_err(gone)?;
    result.into_value::<T>().map_err(|error| RenderError::Browser(format!("reading {script:?}: {error}")))
}

/// The identity's cookies for `url`, as the page's context takes them.
fn jar_cookies(header: &str, url: &url::Url) -> Vec<CookieParam> {
    header
        .split(';')
        .filter_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            let mut cookie = CookieParam::new(name.to_owned(), value.to_owned());
            cookie.url = Some(url.as_str().to_owned());
            Some(cookie)
        })
        .collect()
}

/// A cookie of the page as a `Set-Cookie` line for the identity's jar: a host cookie
/// without `Domain`, as it was set.
fn set_cookie_line(cookie: &network::Cookie) -> String {
    let mut line = format!("{}={}; Path={}", cookie.name, cookie.value, cookie.path);
    if cookie.domain.starts_with('.') {
        line.push_str("; Domain=");
        line.push_str(cookie.domain.trim_start_matches('.'));
    }
    if cookie.secure {
        line.push_str("; Secure");
    }
    if cookie.http_only {
        line.push_str("; HttpOnly");
    }
    line
}

/// A protocol error: the browser went away or did not answer.
fn gone(error: impl std::fmt::Display) -> RenderError {
    RenderError::Browser(error.to_string())
}
