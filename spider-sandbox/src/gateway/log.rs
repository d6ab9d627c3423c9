//! What a gateway saw: connections, the requests it relayed, refusals, bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use hyper::Uri;

/// One authenticated request, as the gateway handled it.
#[derive(Debug, Clone)]
pub struct Proxied {
    /// The client connection it came on: 0-based, in accept order.
    pub connection: usize,
    /// Whether it was a CONNECT (a tunnel) rather than a forwarded absolute-URI request.
    pub tunnel: bool,
    /// The absolute URI, or `host:port` for a CONNECT.
    pub target: String,
    /// The exit country the username asked for (`-country-de`), lower-cased.
    pub country: Option<String>,
    /// The sticky session the username asked for (`-session-abc`).
    pub session: Option<String>,
    /// The exit identity toward the target: the source address the target sees. For a
    /// request refused or failed before reaching it, the identity it was given.
    pub exit: IpAddr,
}

impl Proxied {
    /// The target's `host:port` as written (the port left out when the URI has none).
    fn authority(&self) -> Option<String> {
        let uri: Uri = self.target.parse().ok()?;
        uri.authority().map(|a| a.as_str().to_owned())
    }
}

/// A snapshot of what a [`MockGateway`](crate::MockGateway) saw so far.
#[derive(Debug, Clone)]
pub struct GatewayLog {
    /// Client TCP connections accepted.
    pub connections: usize,
    /// Every authenticated request, in order of arrival.
    pub requests: Vec<Proxied>,
    /// Requests answered 407 (no, or wrong, credentials).
    pub rejected: usize,
    /// Every byte read from client connections: headers, bodies and tunnels.
    pub bytes_from_clients: u64,
    /// Every byte written to client connections.
    pub bytes_to_clients: u64,
}

impl GatewayLog {
    /// The distinct exit identities used.
    pub fn exits(&self) -> BTreeSet<IpAddr> {
        self.requests.iter().map(|r| r.exit).collect()
    }

    /// The distinct countries asked for.
    pub fn countries(&self) -> BTreeSet<String> {
        self.requests.iter().filter_map(|r| r.country.clone()).collect()
    }

    /// Authenticated requests per client connection (by [`Proxied::connection`]).
    pub fn requests_per_connection(&self) -> BTreeMap<usize, usize> {
        let mut counts = BTreeMap::new();
        for request in &self.requests {
            *counts.entry(request.connection).or_insert(0) += 1;
        }
        counts
    }

    /// The requests to `host`: a name (`shop.de`, any port) or an authority
    /// (`shop.de:8080`), compared case-insensitively.
    pub fn for_target(&self, host: &str) -> Vec<&Proxied> {
        self.requests
            .iter()
            .filter(|r| {
                r.authority().is_some_and(|authority| {
                    authority.eq_ignore_ascii_case(host)
                        || authority.rsplit_once(':').is_some_and(|(name, _)| name.eq_ignore_ascii_case(host))
                })
            })
            .collect()
    }
}

/// The live record, shared by the gateway's tasks.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    connections: AtomicUsize,
    requests: Mutex<Vec<Proxied>>,
    rejected: AtomicUsize,
    from_clients: AtomicU64,
    to_clients: AtomicU64,
}

impl Ledger {
    /// Count a client connection; its index, in accept order.
    pub(crate) fn connection(&self) -> usize {
        self.connections.fetch_add(1, Ordering::SeqCst)
    }

    pub(crate) fn request(&self, request: Proxied) {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).push(request);
    }

    pub(crate) fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn read(&self, bytes: usize) {
        self.from_clients.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn wrote(&self, bytes: usize) {
        self.to_clients.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> GatewayLog {
        GatewayLog {
            connections: self.connections.load(Ordering::SeqCst),
            requests: self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            rejected: self.rejected.load(Ordering::SeqCst),
            bytes_from_clients: self.from_clients.load(Ordering::Relaxed),
            bytes_to_clients: self.to_clients.load(Ordering::Relaxed),
        }
    }
}
