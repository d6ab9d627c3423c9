//! One request through the gateway: authenticate, pick the exit, then forward or tunnel.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION};
use hyper::http::uri::Scheme;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpSocket, TcpStream};

use super::auth::{authenticate, Claims};
use super::exits::Exits;
use super::log::{Ledger, Proxied};
use super::GatewayConfig;

/// A relayed answer's body, or one the gateway wrote itself.
pub(crate) type Body = Either<Incoming, Full<Bytes>>;

/// What every connection of one gateway shares.
pub(crate) struct Gateway {
    pub(crate) config: GatewayConfig,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) exits: Exits,
}

/// One client connection: its index and, once a request without a session needs it, the
/// exit it rotated to.
pub(crate) struct Connection {
    pub(crate) index: usize,
    pub(crate) exit: OnceLock<IpAddr>,
}

/// Answer one request from a client.
pub(crate) async fn relay(
    gateway: Arc<Gateway>,
    connection: Arc<Connection>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let Some(Claims { country, session }) =
        authenticate(request.headers().get(PROXY_AUTHORIZATION), &gateway.config)
    else {
        gateway.ledger.rejected();
        let mut response = text(StatusCode::PROXY_AUTHENTICATION_REQUIRED, "proxy credentials required");
        response
            .headers_mut()
            .insert(PROXY_AUTHENTICATE, HeaderValue::from_static(r#"Basic realm="sandbox""#));
        return Ok(response);
    };
    let exit = match &session {
        Some(session) => gateway.exits.pinned(country.as_deref(), session),
        None => *connection.exit.get_or_init(|| gateway.exits.fresh()),
    };
    let tunnel = request.method() == Method::CONNECT;
    gateway.ledger.request(Proxied {
        connection: connection.index,
        tunnel,
        target: request.uri().to_string(),
        country,
        session,
        exit,
    });
    let destination = match destination(request.uri(), tunnel) {
        Ok(destination) => destination,
        Err((status, why)) => return Ok(text(status, why)),
    };
    let upstream = match connect(exit, destination).await {
        Ok(upstream) => upstream,
        Err(error) => {
            return Ok(text(StatusCode::BAD_GATEWAY, &format!("cannot reach {destination}: {error}")))
        }
    };
    Ok(if tunnel { open_tunnel(request, upstream) } else { forward(request, upstream).await })
}

/// Where a request goes. Every name resolves to `127.0.0.1` and only loopback IP
/// literals are accepted, so nothing sent through the sandbox can leave the machine.
/// A refusal is its status and why.
fn destination(uri: &Uri, tunnel: bool) -> Result<SocketAddr, (StatusCode, &'static str)> {
    let bad = |why| (StatusCode::BAD_REQUEST, why);
    let authority = uri.authority().ok_or(bad("an absolute URI or host:port is required"))?;
    let port = if tunnel {
        authority.port_u16().ok_or(bad("CONNECT needs host:port"))?
    } else if uri.scheme() == Some(&Scheme::HTTP) {
        authority.port_u16().unwrap_or(80)
    } else {
        return Err(bad("only http:// is forwarded; use CONNECT for https"));
    };
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) if ip.is_loopback() => Ok(SocketAddr::new(IpAddr::V4(ip), port)),
        Ok(_) => Err((StatusCode::FORBIDDEN, "the sandbox gateway only reaches 127.0.0.0/8")),
        Err(_) => Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)),
    }
}

/// A connection to `destination` whose source address is the exit identity.
async fn connect(exit: IpAddr, destination: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(exit, 0))?;
    let stream = socket.connect(destination).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Send an absolute-URI request on in origin form, without the proxy's own headers.
async fn forward(mut request: Request<Incoming>, upstream: TcpStream) -> Response<Body> {
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
        Ok(handshake) => handshake,
        Err(error) => return text(StatusCode::BAD_GATEWAY, &format!("upstream handshake: {error}")),
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    if !request.headers().contains_key(HOST) {
        if let Some(host) = request.uri().authority().and_then(|a| HeaderValue::from_str(a.as_str()).ok()) {
            request.headers_mut().insert(HOST, host);
        }
    }
    let headers = request.headers_mut();
    headers.remove(PROXY_AUTHORIZATION);
    headers.remove("proxy-connection");
    *request.uri_mut() =
        request.uri().path_and_query().cloned().map_or_else(|| Uri::from_static("/"), Uri::from);
    match sender.send_request(request).await {
        Ok(response) => response.map(Either::Left),
        Err(error) => text(StatusCode::BAD_GATEWAY, &format!("upstream: {error}")),
    }
}

/// Answer 200 and, once hyper hands the client connection over, splice it to `upstream`.
fn open_tunnel(request: Request<Incoming>, mut upstream: TcpStream) -> Response<Body> {
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(request).await {
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut upstream).await;
        }
    });
    Response::new(Either::Right(Full::new(Bytes::new())))
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(format!("{body}\n")))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
