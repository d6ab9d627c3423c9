//! The crawl's own HTTP server, over hyper: `metrics` and `dashboard` each at their
//! address, or one server for both when they name the same one (the metrics at
//! `/metrics`, the page at `/`, its data at `/api/timeline`). Alone, the metrics answer
//! any path, as scrapers configured before the dashboard existed expect.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

use crate::error::Error;
use crate::observe::dashboard::Board;
use crate::observe::gauge::Live;
use crate::observe::metrics::Metrics;
use spider_settings::Config;

/// What one address answers.
#[derive(Default)]
struct Endpoints {
    metrics: Option<Metrics>,
    dashboard: Option<Board>,
}

/// Bind every address now (a port in use is a configuration error before any request),
/// then answer until the returned tasks are aborted.
pub(crate) async fn start(
    config: &Config,
    live: &watch::Sender<Live>,
    board: Option<Board>,
) -> Result<Vec<JoinHandle<()>>, Error> {
    let metrics = config.metrics.as_deref().map(|addr| address("metrics", addr)).transpose()?;
    let dashboard = config.dashboard.as_deref().map(|addr| address("dashboard", addr)).transpose()?;
    let metrics = metrics.map(|addr| (addr, Metrics::new(live.subscribe())));
    let dashboard = dashboard.zip(board);
    let mut servers = Vec::new();
    match (metrics, dashboard) {
        (Some((at, metrics)), Some((addr, board))) if at == addr => {
            let endpoints = Endpoints { metrics: Some(metrics), dashboard: Some(board) };
            servers.push(serve(addr, endpoints).await?);
        }
        (metrics, dashboard) => {
            if let Some((addr, metrics)) = metrics {
                servers
                    .push(serve(addr, Endpoints { metrics: Some(metrics), ..Endpoints::default() }).await?);
            }
            if let Some((addr, board)) = dashboard {
                servers
                    .push(serve(addr, Endpoints { dashboard: Some(board), ..Endpoints::default() }).await?);
            }
        }
    }
    Ok(servers)
}

fn address(key: &str, addr: &str) -> Result<SocketAddr, Error> {
    addr.parse().map_err(|e| {
        Error::Config(format!("{key} = {addr:?} is not an address such as 127.0.0.1:9898 ({e})"))
    })
}

async fn serve(addr: SocketAddr, endpoints: Endpoints) -> Result<JoinHandle<()>, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Config(format!("cannot listen on {addr} for the metrics or dashboard: {e}")))?;
    if endpoints.metrics.is_some() {
        tracing::info!(target: "spiderling", %addr, "serving metrics in the Prometheus text format");
    }
    if endpoints.dashboard.is_some() {
        tracing::info!(target: "spiderling", "dashboard at http://{addr}/");
        if !addr.ip().is_loopback() {
            tracing::warn!(target: "spiderling", %addr, "the dashboard is reachable beyond this machine, \
                without authentication: whoever reaches it sees the crawl's targets, settings and rates");
        }
    }
    let endpoints = Arc::new(endpoints);
    let open = Arc::new(Mutex::new(Open::default()));
    Ok(tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of file descriptors, or a connection reset before it was taken: the
                // server goes on, after a moment for descriptors to free.
                Err(error) => {
                    tracing::debug!(target: "spiderling", %addr, %error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            };
            let (endpoints, served) = (endpoints.clone(), open.clone());
            let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
            let id = open.next;
            open.next += 1;
            let task = tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    std::future::ready(Ok::<_, Infallible>(endpoints.answer(addr, &request)))
                });
                let connection = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service);
                let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
                served.lock().unwrap_or_else(|e| e.into_inner()).ended(id);
            });
            // Past the cap the oldest connection is closed for the newest: idle or slow
            // ones cannot keep a scraper or a dashboard out until they time out.
            if open.connections.len() >= MAX_CONNECTIONS {
                if let Some((_, oldest)) = open.connections.pop_front() {
                    oldest.abort();
                }
            }
            open.connections.push_back((id, task.abort_handle()));
        }
    }))
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Open {
    connections: VecDeque<(u64, AbortHandle)>,
    next: u64,
}

impl Open {
    /// Connection `id` ended (or was closed for a newer one).
    fn ended(&mut self, id: u64) {
        if let Some(at) = self.connections.iter().position(|(open, _)| *open == id) {
            self.connections.remove(at);
        }
    }
}

/// Connections served at once; a scraper and a few dashboards need a handful.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request's headers, the first or the next.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection is served at most; a dashboard's page connects again.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);
/// The wait after a failed accept.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// Whether a request's `Host` is one this server answers to: an IP address (whatever the
/// port) or `localhost`. A page on another site that has its own name point at this
/// machine (DNS rebinding) sends that name, and is refused.
fn host_allowed(request: &hyper::Request<hyper::body::Incoming>) -> bool {
    let Some(host) = request.headers().get(HOST).and_then(|v| v.to_str().ok()) else { return false };
    let name = match host.strip_prefix('[') {
        Some(bracketed) => {
            return bracketed.split_once(']').is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

impl Endpoints {
    fn answer(
        &self,
        addr: SocketAddr,
        request: &hyper::Request<hyper::body::Incoming>,
    ) -> Response<Full<Bytes>> {
        if !host_allowed(request) {
            let message =
                format!("this server answers to its address ({addr}) or localhost, not to another name");
            return respond(StatusCode::MISDIRECTED_REQUEST, "text/plain", message);
        }
        match (&self.metrics, &self.dashboard, request.uri().path()) {
            (Some(metrics), None, _) | (Some(metrics), Some(_), "/metrics") => metrics.scrape(),
            (_, Some(board), "/" | "/index.html") => {
                respond(StatusCode::OK, "text/html; charset=utf-8", board.live_page())
            }
            (_, Some(board), "/api/timeline") => match board.live_json() {
                Ok(json) => respond(StatusCode::OK, "application/json", json),
                Err(error) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", error.to_string()),
            },
            _ => respond(StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
