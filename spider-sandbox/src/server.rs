//! The HTTP server behind a sandbox: hyper on a thread of its own.

use std::convert::Infallible;
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
    demo: DemoSite,
    recorder: Arc<Recorder>,
    own_host: String,
    port: u16,
}

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
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let recorder = Arc::new(Recorder::new());
        let site = Arc::new(Site {
            demo,
            recorder: recorder.clone(),
            own_host: addr.to_string(),
            port: addr.port(),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("sandbox-{}", addr.port()))
            .spawn(move || runtime.block_on(serve(listener, site, stopped)))?;
        Ok(Sandbox {
            addr,
            recorder,
            stop: Some(stop),
            thread: Some(thread),
        })
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

async fn serve(
    listener: std::net::TcpListener,
    site: Arc<Site>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                site.recorder.connection();
                let site = site.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(site.clone(), request));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
}

async fn answer(
    site: Arc<Site>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let target = request
        .uri()
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let on_site = host == site.own_host;
    let path = percent_decode_str(request.uri().path())
        .decode_utf8_lossy()
        .into_owned();
    let _in_flight = site.recorder.arrive(target, host, on_site);
    if !on_site {
        return Ok(respond(
            StatusCode::OK,
            "text/html",
            "<p>Another site entirely.</p>".to_owned(),
        ));
    }
    if path != "/robots.txt" && !site.demo.latency.is_zero() {
        tokio::time::sleep(site.demo.latency).await;
    }
    Ok(match site.demo.answer(&path, site.port) {
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
    })
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}
