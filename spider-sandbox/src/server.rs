//! The HTTP server behind a sandbox: hyper on a thread of its own, plain or over TLS.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http_body_util::Full;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderMap, HeaderValue, CONTENT_TYPE, COOKIE, ETAG, HOST, LAST_MODIFIED, LOCATION, SET_COOKIE,
};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use percent_encoding::percent_decode_str;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

use crate::conditional::{self, Precondition, Validators};
use crate::demo::{Answer, DemoSite, Origin};
use crate::fingerprint::{self, FingerprintSite};
use crate::fixed::FixedSite;
use crate::hostile::{Hostile, HostileSite, Reply};
use crate::members::{self, Asked, Members, MembersSite};
use crate::record::{Observed, Recorder};
use crate::rendered::RenderedSite;
use crate::shop::{Shop, ShopSite, ShopTally};
use crate::tls::Tls;
use crate::wire::{Connection, Tap};

/// A running sandbox; it stops when dropped.
///
/// It serves plain HTTP as `http://127.0.0.1:PORT/`, or HTTPS as `https://localhost:PORT/`
/// with a self-signed certificate made at start ([`demo_tls`](Self::demo_tls)).
///
/// # Which requests are on-site
///
/// A request is answered by the site, and recorded with [`Hit::on_site`](crate::Hit::on_site),
/// when its Host header names this server:
///
/// - its own name, the one [`url`](Self::url) uses: `127.0.0.1:PORT`, or `localhost:PORT`
///   over TLS;
/// - or any dotted domain name with this server's port, such as `shop.de:PORT`: such a name
///   only reaches the sandbox through a [`MockGateway`](crate::MockGateway), which resolves
///   every name to `127.0.0.1`, so tests can give each host its own geo rules.
///
/// Everything else is another site, answered with a stub page: the other loopback
/// spelling (`localhost:PORT` for plain HTTP, `127.0.0.1:PORT` over TLS) — the demo's
/// off-site trap, reachable without a gateway —, IP literals, and other ports.
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
    /// The certificate's PEM in TLS mode.
    certificate: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The cookie shop, when this serves one, for its tally.
    shop: Option<Arc<Shop>>,
}

struct Site {
    kind: Kind,
    recorder: Arc<Recorder>,
    scheme: &'static str,
    /// The name [`Sandbox::url`] uses, with the port.
    own_host: String,
    /// The other loopback spelling, with the port: the demo's off-site trap.
    elsewhere: String,
    port: u16,
}

impl Site {
    /// The rule documented on [`Sandbox`].
    fn on_site(&self, host: &str) -> bool {
        if host.eq_ignore_ascii_case(&self.own_host) {
            return true;
        }
        let Some((name, port)) = host.rsplit_once(':') else {
            return false;
        };
        port.parse() == Ok(self.port)
            && name.contains('.')
            && !name.starts_with('[')
            && name.parse::<IpAddr>().is_err()
    }
}

enum Kind {
    Demo(DemoSite),
    Hostile(Box<Hostile>),
    Fixed(FixedSite),
    Members(Members),
    Shop(Arc<Shop>),
    Fingerprint(DemoSite),
    Rendered(RenderedSite),
}

/// The largest request body a sandbox reads and records.
const MAX_BODY: usize = 2 << 20;

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
        Sandbox::start(Kind::Demo(demo), port, None)
    }

    /// Serve the demo book shop over HTTPS as `https://localhost:PORT/`, at a free port,
    /// with a self-signed certificate for `localhost` and `127.0.0.1` made now; a client
    /// trusts [`certificate_pem`](Self::certificate_pem).
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_sandbox::{DemoSite, Sandbox};
    ///
    /// let site = Sandbox::demo_tls(DemoSite::default())?;
    /// assert!(site.url().starts_with("https://localhost:"));
    /// assert!(site.certificate_pem().is_some_and(|pem| pem.starts_with("-----BEGIN CERTIFICATE-----")));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When no port can be bound, the certificate cannot be made or the server thread
    /// cannot start.
    pub fn demo_tls(demo: DemoSite) -> std::io::Result<Sandbox> {
        Sandbox::demo_tls_on(demo, 0)
    }

    /// As [`demo_tls`](Self::demo_tls), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound, the certificate cannot be made or the server
    /// thread cannot start.
    pub fn demo_tls_on(demo: DemoSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Demo(demo), port, Some(Tls::self_signed()?))
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
        Sandbox::start(Kind::Hostile(Box::new(Hostile::new(site))), port, None)
    }

    /// Serve the hostile site over HTTPS, as [`demo_tls`](Self::demo_tls) does the demo.
    ///
    /// # Errors
    ///
    /// When no port can be bound, the certificate cannot be made or the server thread
    /// cannot start.
    pub fn hostile_tls(site: HostileSite) -> std::io::Result<Sandbox> {
        Sandbox::hostile_tls_on(site, 0)
    }

    /// As [`hostile_tls`](Self::hostile_tls), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound, the certificate cannot be made or the server
    /// thread cannot start.
    pub fn hostile_tls_on(site: HostileSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Hostile(Box::new(Hostile::new(site))), port, Some(Tls::self_signed()?))
    }

    /// Serve a site of fixed answers on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn fixed(site: FixedSite) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Fixed(site), 0, None)
    }

    /// Serve the members' shop (a login form, a members' area, a JSON API) on
    /// `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn members(site: MembersSite) -> std::io::Result<Sandbox> {
        Sandbox::members_on(site, 0)
    }

    /// As [`members`](Self::members), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound or the server thread cannot start.
    pub fn members_on(site: MembersSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Members(Members::new(site)), port, None)
    }

    /// Serve the client-rendered shop (shells a script fills in, beside pages served
    /// whole) on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn rendered(site: RenderedSite) -> std::io::Result<Sandbox> {
        Sandbox::rendered_on(site, 0)
    }

    /// As [`rendered`](Self::rendered), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound or the server thread cannot start.
    pub fn rendered_on(site: RenderedSite, port: u16) -> std::io::Result<Sandbox> {
        Sandbox::start(Kind::Rendered(site), port, None)
    }

    /// Serve the fingerprint site (the demo shop behind a check of each client's TLS,
    /// HTTP/2 and headers) over HTTPS as `https://localhost:PORT/`, at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound, the certificate cannot be made or the server thread
    /// cannot start.
    pub fn fingerprint(site: FingerprintSite) -> std::io::Result<Sandbox> {
        Sandbox::fingerprint_on(site, 0)
    }

    /// As [`fingerprint`](Self::fingerprint), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound, the certificate cannot be made or the server
    /// thread cannot start.
    pub fn fingerprint_on(site: FingerprintSite, port: u16) -> std::io::Result<Sandbox> {
        let tls =
            if site.http1_only { Tls::self_signed_offering(&[b"http/1.1"])? } else { Tls::self_signed()? };
        Sandbox::start(Kind::Fingerprint(site.demo), port, Some(tls))
    }

    /// Serve the cookie shop on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the server thread cannot start.
    pub fn shop(site: ShopSite) -> std::io::Result<Sandbox> {
        let shop = Arc::new(Shop::new(site));
        let mut sandbox = Sandbox::start(Kind::Shop(shop.clone()), 0, None)?;
        sandbox.shop = Some(shop);
        Ok(sandbox)
    }

    fn start(kind: Kind, port: u16, tls: Option<Tls>) -> std::io::Result<Sandbox> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let port = addr.port();
        let recorder = Arc::new(Recorder::new());
        let (scheme, own, other) = if tls.is_some() {
            ("https", "localhost", "127.0.0.1")
        } else {
            ("http", "127.0.0.1", "localhost")
        };
        let site = Arc::new(Site {
            kind,
            recorder: recorder.clone(),
            scheme,
            own_host: format!("{own}:{port}"),
            elsewhere: format!("{other}:{port}"),
            port,
        });
        let (certificate, acceptor) = tls.map(|tls| (tls.pem, tls.acceptor)).unzip();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("sandbox-{port}"))
            .spawn(move || runtime.block_on(serve(listener, site, acceptor, stopped)))?;
        Ok(Sandbox { addr, recorder, certificate, stop: Some(stop), thread: Some(thread), shop: None })
    }

    /// The base URL: `http://127.0.0.1:PORT/`, or `https://localhost:PORT/` in TLS mode.
    pub fn url(&self) -> String {
        match self.certificate {
            Some(_) => format!("https://localhost:{}/", self.addr.port()),
            None => format!("http://{}/", self.addr),
        }
    }

    /// The PEM of the self-signed certificate a client must trust, in TLS mode; `None`
    /// for plain HTTP.
    pub fn certificate_pem(&self) -> Option<&str> {
        self.certificate.as_deref()
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

    /// What the cookie shop handed out so far; `None` for the other sites.
    pub fn shop_tally(&self) -> Option<ShopTally> {
        self.shop.as_ref().map(|shop| shop.tally())
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
    acceptor: Option<TlsAcceptor>,
    mut stopped: oneshot::Receiver<()>,
) {
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
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        // A hello that cannot be read or a failed handshake is the client's
                        // problem; the connection just ends.
                        Some(acceptor) => {
                            let Some((connection, stream)) = Connection::read(stream).await else { return };
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                            let h2 = alpn.as_deref() == Some(b"h2");
                            let (stream, kept) = Tap::keeping(stream);
                            connection.negotiated(alpn.as_deref(), kept);
                            serve_connection(stream, site, peer, Some(Arc::new(connection)), h2).await;
                        }
                        None => serve_connection(stream, site, peer, None, false).await,
                    }
                });
            }
        }
    }
}

/// Serve one connection, in HTTP/2 when ALPN settled on `h2`.
async fn serve_connection<IO>(
    io: IO,
    site: Arc<Site>,
    peer: SocketAddr,
    wire: Option<Arc<Connection>>,
    h2: bool,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| answer(site.clone(), request, peer, wire.clone()));
    let io = TokioIo::new(io);
    let _ = if h2 {
        http2::Builder::new(TokioExecutor::new()).serve_connection(io, service).await
    } else {
        http1::Builder::new().serve_connection(io, service).await
    };
}

async fn answer(
    site: Arc<Site>,
    request: Request<Incoming>,
    peer: SocketAddr,
    connection: Option<Arc<Connection>>,
) -> Result<Response<Full<Bytes>>, Reset> {
    let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str()).to_owned();
    let headers = request.headers();
    // HTTP/2 names the host in `:authority`, which hyper keeps in the URI.
    let authority = request.uri().authority().map(|a| a.as_str());
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).or(authority).unwrap_or("").to_owned();
    let on_site = site.on_site(&host);
    let path = percent_decode_str(request.uri().path()).decode_utf8_lossy().into_owned();
    let conditional = conditional::is_conditional(headers);
    let in_flight = site.recorder.arrive(target, host.clone(), on_site, peer.ip(), conditional, headers);
    let version = if request.version() == Version::HTTP_2 { "HTTP/2" } else { "HTTP/1.1" };
    let wire = connection.map(|connection| connection.wire());
    in_flight.came_by(version, wire.clone());
    let (parts, body) = request.into_parts();
    let (method, headers) = (parts.method, parts.headers);
    // A body past the cap, or cut off, is recorded as what arrived of it: nothing.
    let body = Limited::new(body, MAX_BODY).collect().await.map(|all| all.to_bytes()).unwrap_or_default();
    in_flight.carried(method.as_str(), body.clone());
    let headers = &headers;
    let response = if on_site {
        match &site.kind {
            Kind::Demo(demo) => {
                let origin = Origin { scheme: site.scheme, host: &host, elsewhere: &site.elsewhere };
                answer_demo(demo, &path, &origin, &method, headers).await
            }
            Kind::Fingerprint(_) if path == "/wire" => respond(
                StatusCode::OK,
                "application/json",
                fingerprint::echo(wire.as_deref(), version, headers),
            ),
            Kind::Fingerprint(demo) => match fingerprint::judge(wire.as_deref(), headers) {
                Ok(_) => {
                    let origin = Origin { scheme: site.scheme, host: &host, elsewhere: &site.elsewhere };
                    answer_demo(demo, &path, &origin, &method, headers).await
                }
                Err(refusal) => respond(StatusCode::FORBIDDEN, "text/plain", refusal.to_string()),
            },
            // The identity is the peer alone: a header could be forged, the address cannot.
            Kind::Hostile(hostile) => answer_hostile(hostile, &path, peer.ip()).await?,
            Kind::Fixed(fixed) => answer_fixed(fixed, &path),
            Kind::Rendered(shop) => {
                let latency = shop.latency(&path);
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
                answer_members(shop.answer(&path, parts.uri.query().unwrap_or("")))
            }
            Kind::Members(shop) => {
                let cookie = headers.get(COOKIE).and_then(|c| c.to_str().ok());
                let query = parts.uri.query().unwrap_or("");
                let asked = Asked { method: method.as_str(), path: &path, query, cookie, body: &body };
                answer_members(shop.answer(&asked))
            }
            Kind::Shop(shop) => {
                if path != "/robots.txt" && !shop.latency().is_zero() {
                    tokio::time::sleep(shop.latency()).await;
                }
                let cookie = headers.get(COOKIE).and_then(|c| c.to_str().ok());
                answer_shop(shop.answer(&path, peer.ip(), cookie, &site.elsewhere))
            }
        }
    } else {
        respond(StatusCode::OK, "text/html", "<p>Another site entirely.</p>".to_owned())
    };
    in_flight.answered(response.status().as_u16());
    Ok(response)
}

async fn answer_demo(
    demo: &DemoSite,
    path: &str,
    origin: &Origin<'_>,
    method: &Method,
    headers: &HeaderMap,
) -> Response<Full<Bytes>> {
    if path != "/robots.txt" && !demo.latency.is_zero() {
        tokio::time::sleep(demo.latency).await;
    }
    let validated = |content_type, body: Bytes| {
        let validators = Validators::of(&body, demo.last_modified);
        let mut response = match validators.evaluate(method, headers) {
            Precondition::Serve => respond(StatusCode::OK, content_type, body),
            Precondition::NotModified => empty(StatusCode::NOT_MODIFIED),
            Precondition::Failed => empty(StatusCode::PRECONDITION_FAILED),
        };
        let fields = response.headers_mut();
        // Both are ASCII by construction; a failure would only drop the field.
        if let Ok(etag) = HeaderValue::from_str(validators.etag()) {
            fields.insert(ETAG, etag);
        }
        if let Ok(date) = HeaderValue::from_str(&validators.last_modified()) {
            fields.insert(LAST_MODIFIED, date);
        }
        response
    };
    match demo.answer(path, origin) {
        Answer::Html(html) => validated("text/html; charset=utf-8", html.into()),
        Answer::Text(text) => validated("text/plain; charset=utf-8", text.into()),
        Answer::Xml(xml) => validated("application/xml; charset=utf-8", xml.into()),
        Answer::Gzip(bytes) => validated("application/gzip", bytes.into()),
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
    identity: IpAddr,
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
                if let Ok(value) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, value);
                }
            }
            Ok(response)
        }
    }
}

fn answer_members(reply: members::Reply) -> Response<Full<Bytes>> {
    let mut response = empty(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    *response.body_mut() = Full::new(reply.body);
    let fields = response.headers_mut();
    fields.insert(CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    for (name, value) in reply.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            fields.append(name, value);
        }
    }
    response
}

fn answer_fixed(site: &FixedSite, path: &str) -> Response<Full<Bytes>> {
    let Some(fixed) = site.get(path) else {
        return respond(StatusCode::NOT_FOUND, "text/plain", "not found".to_owned());
    };
    let mut response = empty(StatusCode::OK);
    *response.body_mut() = Full::new(fixed.body.clone());
    // A type that is no header value (the test's mistake) is sent as no type.
    if let Some(value) = fixed.content_type.as_deref().and_then(|t| HeaderValue::from_str(t).ok()) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

fn answer_shop(answer: Option<crate::shop::ShopAnswer>) -> Response<Full<Bytes>> {
    let Some(answer) = answer else {
        return respond(StatusCode::NOT_FOUND, "text/plain", "not found".to_owned());
    };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = respond(status, "text/html; charset=utf-8", answer.html);
    if let Some(value) = answer.set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    if let Some(location) = answer.location {
        response.headers_mut().insert(LOCATION, HeaderValue::from_static(location));
    }
    response
}

fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = empty(status);
    *response.body_mut() = Full::new(body.into());
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A response without a body or representation metadata, as a 304 must be.
fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(own: &str, other: &str) -> Site {
        Site {
            kind: Kind::Demo(DemoSite::default()),
            recorder: Arc::new(Recorder::new()),
            scheme: "http",
            own_host: format!("{own}:8000"),
            elsewhere: format!("{other}:8000"),
            port: 8000,
        }
    }

    #[test]
    fn own_name_and_dotted_names_on_this_port_are_on_site() {
        let plain = site("127.0.0.1", "localhost");
        for host in ["127.0.0.1:8000", "shop.de:8000", "WWW.Shop.DE:8000"] {
            assert!(plain.on_site(host), "{host}");
        }
        for host in ["localhost:8000", "shop.de:8001", "shop.de", "127.0.0.2:8000", "[::1]:8000", ""] {
            assert!(!plain.on_site(host), "{host}");
        }
        let tls = site("localhost", "127.0.0.1");
        assert!(tls.on_site("LOCALHOST:8000"));
        assert!(!tls.on_site("127.0.0.1:8000"), "the other spelling is the off-site trap");
    }
}
