//! The crawl's own HTTP server, over hyper: `metrics` and `dashboard` each at their
//! address, or one server for both when they name the same one (the metrics at
//! `/metrics`, the page at `/`, its data at `/api/timeline`). Alone, the metrics answer
//! any path, as scrapers configured before the dashboard existed expect.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

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
        tracing::info!(%addr, "serving metrics in the Prometheus text format");
    }
    if endpoints.dashboard.is_some() {
        tracing::info!("dashboard at http://{addr}/");
        if !addr.ip().is_loopback() {
            tracing::warn!(%addr, "the dashboard is reachable beyond this machine, without authentication: whoever reaches it sees the crawl's targets, settings and rates");
        }
    }
    let endpoints = Arc::new(endpoints);
    Ok(tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let endpoints = endpoints.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    std::future::ready(Ok::<_, Infallible>(endpoints.answer(request.uri().path())))
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    }))
}

impl Endpoints {
    fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        match (&self.metrics, &self.dashboard, path) {
            (Some(metrics), None, _) | (Some(metrics), Some(_), "/metrics") => metrics.scrape(),
            (_, Some(_), "/" | "/index.html") => {
                respond(StatusCode::OK, "text/html; charset=utf-8", Board::page().to_owned())
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
