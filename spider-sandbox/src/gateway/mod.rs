//! A mock rotating proxy gateway: a real HTTP forward proxy on `127.0.0.1`.
//!
//! ```text
//! crawler ──(Proxy-Authorization: sandbox-country-de-session-a)──▶ gateway :G
//!     forward: GET http://shop.de:P/x ─┐        CONNECT localhost:P ─┐
//!                                      ▼                             ▼
//!          upstream socket bound to the exit 127.0.1.N ──▶ sandbox 127.0.0.1:P
//!                                                  (sees peer 127.0.1.N)
//! ```
//!
//! It behaves like a commercial rotating gateway: each new client connection leaves
//! through a new exit identity, a username carrying a session pins one, and the username
//! carries the targeting. The exit identity is a loopback source address, so the
//! sandbox's per-client rules (which key on the peer IP) see one client per exit.
//!
//! # Safety: loopback only
//!
//! The gateway never connects anywhere but `127.0.0.0/8`: every host name resolves to
//! `127.0.0.1` (so `http://shop.de:PORT/` reaches the sandbox on `PORT`, and a test can
//! give each host name its own rules), and an IP literal outside `127.0.0.0/8` is refused
//! with 403 before any connection is made. A crawl pointed at it by mistake cannot reach
//! the internet.

mod auth;
mod counted;
mod exits;
mod log;
mod relay;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

pub use log::{GatewayLog, Proxied};

use counted::Counted;
use exits::Exits;
use log::Ledger;
use relay::{relay, Connection, Gateway};

/// The credentials a [`MockGateway`] accepts.
///
/// A client authenticates with `Proxy-Authorization: Basic base64(username:password)`,
/// where the username is `user`, optionally followed by `-country-{geo}` and
/// `-session-{id}` (`sandbox-country-us-session-abc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The base user (default `sandbox`).
    pub user: String,
    /// The password (default `sandbox-s3cret`).
    pub password: String,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig { user: "sandbox".to_owned(), password: "sandbox-s3cret".to_owned() }
    }
}

/// A running mock gateway; it stops when dropped.
///
/// Forward (absolute-URI) requests and CONNECT tunnels are relayed after the credentials
/// are checked (407 with `Proxy-Authenticate: Basic realm="sandbox"` otherwise); an
/// unreachable target is 502, a non-loopback IP 403. What it saw is in
/// [`observed`](Self::observed).
///
/// # Examples
///
/// ```
/// use spider_sandbox::{GatewayConfig, MockGateway};
///
/// let gateway = MockGateway::start(GatewayConfig::default())?;
/// assert!(gateway.url().starts_with("http://127.0.0.1:"));
/// assert!(gateway.url_with_credentials().starts_with("http://sandbox:sandbox-s3cret@127.0.0.1:"));
/// assert_eq!(gateway.observed().connections, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct MockGateway {
    addr: SocketAddr,
    config: GatewayConfig,
    ledger: Arc<Ledger>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockGateway {
    /// Start on `127.0.0.1` at a free port.
    ///
    /// # Errors
    ///
    /// When no port can be bound or the gateway's thread cannot start.
    pub fn start(config: GatewayConfig) -> std::io::Result<MockGateway> {
        MockGateway::start_on(config, 0)
    }

    /// As [`start`](Self::start), on a given port (0 picks a free one).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound or the gateway's thread cannot start.
    pub fn start_on(config: GatewayConfig, port: u16) -> std::io::Result<MockGateway> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let ledger = Arc::new(Ledger::default());
        let gateway =
            Arc::new(Gateway { config: config.clone(), ledger: ledger.clone(), exits: Exits::default() });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("gateway-{}", addr.port()))
            .spawn(move || runtime.block_on(serve(listener, gateway, stopped)))?;
        Ok(MockGateway { addr, config, ledger, stop: Some(stop), thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy URL without credentials, `http://127.0.0.1:PORT`, for a client that
    /// sets them apart (reqwest's `Proxy::basic_auth`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The proxy URL with the base user and password, `http://USER:PASSWORD@127.0.0.1:PORT`.
    pub fn url_with_credentials(&self) -> String {
        format!("http://{}:{}@{}", self.config.user, self.config.password, self.addr)
    }

    /// What the gateway has seen so far.
    pub fn observed(&self) -> GatewayLog {
        self.ledger.snapshot()
    }
}

impl Drop for MockGateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, gateway: Arc<Gateway>, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let connection =
                    Arc::new(Connection { index: gateway.ledger.connection(), exit: Default::default() });
                let io = TokioIo::new(Counted::new(stream, gateway.ledger.clone()));
                let gateway = gateway.clone();
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request| relay(gateway.clone(), connection.clone(), request));
                    let _ = http1::Builder::new().serve_connection(io, service).with_upgrades().await;
                });
            }
        }
    }
}
