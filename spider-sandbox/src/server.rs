//! The HTTP server behind a sandbox: hyper on a thread of its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use percent_encoding::percent_decode_str;
use tokio::sync::oneshot;

use crate::demo::{Answer, DemoSite};
use crate::hostile::{Hostile, HostileSite, Reply};
use crate::record::{Observed, Recorder};

/// A running sandbox; it stops when dropped.
///
/// # Examples
///
/// ```
/// use spider_sandbox::{DemoSite, Sandbox};
///
/// let site = Sandbox::demo(DemoSite::default())?;
/// assert!(site.url().starts_with("http://127.0.0.1:"));
/// assert!(site.observed().hits.is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Sandbox {
    addr: SocketAddr,
    recorder: Arc<Recorder>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct Site {
    kind: Kind,
    recorder: Arc<Recorder>,
    own_host: String,
    port: u16,
}

enum Kind {
    Demo(DemoSite),
    Hostile(Box<Hostile>),
}

/// The hostile site's way to reset a connection: the service fails, hyper drops it.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset on purpose")
    }
}

impl std::error::Error for Reset {}

impl Sandbox {
    /// Serve the demo book shop on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn demo(demo: DemoSite) -> std::io::Result<Sandbox> {
        Sandbox::demo_on(demo, 0)
    }

    /// As [`demo`](Self::demo), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound or the server thread cannot start.
    pub fn demo_on(demo: DemoSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Demo(demo), port)
    }

    /// Serve the hostile site on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn hostile(site: HostileSite) -> std::io::Result<Sandbox> {
        Sandbox::hostile_on(site, 0)
    }

    /// As [`hostile`](Self::hostile), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound or the server thread cannot start.
    pub fn hostile_on(site: HostileSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Hostile(Box::new(Hostile::new(site))), port)
    }

    fn start(kind: Kind, port: u16) -> std::io::Result<Sandbox> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let recorder = Arc::new(Recorder::new());
        let site = Arc::new(Site {
            kind,
            recorder: recorder.clone(),
            own_host: addr.to_string(),
            port: addr.port(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("sandbox-{}", addr.port()))
            .spawn(move || runtime.block_on(serve(listener, site, stopped)))?;
        Ok(Sandbox { addr, recorder, stop: Some(stop), thread: Some(thread) })
    }

    /// The base URL, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests have arrived so far; cheaper than [`observed`](Self::observed).
    pub fn received(&self) -> usize {
        self.recorder.received()
    }

    /// What the server has received so far.
    pub fn observed(&self) -> Observed {
        self.recorder.snapshot()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, site: Arc<Site>, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                site.recorder.connection();
                let site = site.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(site.clone(), request, peer));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
}

async fn answer(
    site: Arc<Site>,
    request: Request<Incoming>,
    peer: SocketAddr,
) -> Result<Response<Full<Bytes>>, Reset> {
    let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str()).to_owned();
    let headers = request.headers();
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("").to_owned();
    let identity = headers
        .get(IDENTITY_HEADER)
        .and_then(|h| h.to_str().ok())
        .map_or_else(|| peer.ip().to_string(), str::to_owned);
    let on_site = host == site.own_host;
    let path = percent_decode_str(request.uri().path()).decode_utf8_lossy().into_owned();
    let in_flight = site.recorder.arrive(target, host, on_site);
    let response = if on_site {
        match &site.kind {
            Kind::Demo(demo) => answer_demo(demo, &path, site.port).await,
            Kind::Hostile(hostile) => answer_hostile(hostile, &path, &identity).await?,
        }
    } else {
        respond(StatusCode::OK, "text/html", "<p>Another site entirely.</p>".to_owned())
    };
    in_flight.answered(response.status().as_u16());
    Ok(response)
}

/// The header a gateway sets to say which exit identity a request came through.
pub const IDENTITY_HEADER: &str = "x-sandbox-identity";

async fn answer_demo(demo: &DemoSite, path: &str, port: u16) -> Response<Full<Bytes>> {
    if path != "/robots.txt" && !demo.latency.is_zero() {
        tokio::time::sleep(demo.latency).await;
    }
    match demo.answer(path, port) {
        Answer::Html(html) => respond(StatusCode::OK, "text/html; charset=utf-8", html),
        Answer::Text(text) => respond(StatusCode::OK, "text/plain; charset=utf-8", text),
        Answer::Redirect(to) => {
            let mut response = respond(StatusCode::MOVED_PERMANENTLY, "text/plain", String::new());
            if let Ok(to) = to.parse() {
                response.headers_mut().insert(LOCATION, to);
            }
            response
        }
        Answer::NotFound => respond(StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
    }
}

async fn answer_hostile(
    hostile: &Hostile,
    path: &str,
    identity: &str,
) -> Result<Response<Full<Bytes>>, Reset> {
    if let Some(delay) = hostile.delay_for(path) {
        tokio::time::sleep(delay).await;
    }
    match hostile.answer(path, identity) {
        Reply::Reset => Err(Reset),
        Reply::Page { status, headers, body } => {
            let mut response = Response::new(Full::new(body));
            *response.status_mut() =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            for (name, value) in headers {
                if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, value);
                }
            }
            Ok(response)
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    response
}
