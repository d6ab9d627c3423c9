//! What a sandbox received.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderMap, ACCEPT_LANGUAGE, COOKIE, USER_AGENT};
use percent_encoding::percent_decode_str;

use crate::wire::Wire;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Arrival, since the sandbox started.
    pub at: Duration,
    /// The request target, path and query, as sent.
    pub target: String,
    /// The Host header.
    pub host: String,
    /// Whether the Host header named this server (see [`Sandbox`](crate::Sandbox) for the rule).
    pub on_site: bool,
    /// The peer address of the connection the request came on: the client's identity,
    /// which through a [`MockGateway`](crate::MockGateway) is the gateway's exit.
    pub peer: IpAddr,
    /// The status answered; 0 while unanswered, or when the connection was reset.
    pub status: u16,
    /// Whether the request was conditional: it carried `If-None-Match` or
    /// `If-Modified-Since`, as a cache revalidating a page does.
    pub conditional: bool,
    /// The method, such as `GET` or `POST`.
    pub method: String,
    /// The body as received (up to 2 MiB); empty for a request without one.
    pub body: Bytes,
    /// The `Cookie` header, as sent.
    pub cookie: Option<String>,
    /// The `User-Agent` header.
    pub user_agent: Option<String>,
    /// The `Accept-Language` header: whether the headers agree with the agent they claim.
    pub accept_language: Option<String>,
    /// The HTTP version the request came in: `HTTP/1.1` or `HTTP/2`.
    pub version: &'static str,
    /// The names of its headers in the order they arrived, in lower case.
    pub header_names: Vec<String>,
    /// Its connection's wire fingerprint, over TLS.
    pub wire: Option<Arc<Wire>>,
}

impl Hit {
    /// The value of the cookie `name` the request carried, if it carried one.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        let pairs = self.cookie.as_deref()?.split(';').filter_map(|pair| pair.trim().split_once('='));
        pairs.into_iter().find(|(n, _)| *n == name).map(|(_, value)| value)
    }

    /// The resource asked for, spelled the server's way: path percent-decoded, query
    /// pairs sorted, empty pairs dropped. Two hits with one resource are a duplicate.
    pub fn resource(&self) -> String {
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        let path = percent_decode_str(path).decode_utf8_lossy();
        let mut pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        pairs.sort_unstable();
        if pairs.is_empty() {
            path.into_owned()
        } else {
            format!("{path}?{}", pairs.join("&"))
        }
    }
}

/// A snapshot of what a sandbox received so far.
#[derive(Debug, Clone)]
pub struct Observed {
    /// When the sandbox started; [`Hit::at`] counts from here.
    pub started: Instant,
    /// Every request, in order of arrival.
    pub hits: Vec<Hit>,
    /// The most requests being answered at once.
    pub max_in_flight: usize,
    /// TCP connections accepted.
    pub connections: usize,
}

impl Observed {
    /// Requests for this server's own host, robots.txt left out.
    pub fn pages(&self) -> impl Iterator<Item = &Hit> {
        self.hits.iter().filter(|h| h.on_site && h.target != "/robots.txt")
    }

    /// Resources requested more than once, with their counts.
    pub fn duplicates(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for hit in self.hits.iter().filter(|h| h.on_site) {
            *counts.entry(hit.resource()).or_insert(0) += 1;
        }
        counts.retain(|_, n| *n > 1);
        counts
    }

    /// Requests whose Host header named another host.
    pub fn off_site(&self) -> usize {
        self.hits.iter().filter(|h| !h.on_site).count()
    }

    /// Requests answered with `status`.
    pub fn answered(&self, status: u16) -> usize {
        self.hits.iter().filter(|h| h.status == status).count()
    }

    /// Conditional requests ([`Hit::conditional`]): a cache revalidating what it holds.
    pub fn conditional(&self) -> impl Iterator<Item = &Hit> {
        self.hits.iter().filter(|h| h.conditional)
    }

    /// Conditional requests answered `304 Not Modified`: revalidations that cost no body.
    pub fn revalidated(&self) -> usize {
        self.conditional().filter(|h| h.status == 304).count()
    }

    /// The distinct peer addresses requests came from.
    pub fn peers(&self) -> BTreeSet<IpAddr> {
        self.hits.iter().map(|h| h.peer).collect()
    }

    /// Requests per peer address.
    pub fn by_peer(&self) -> BTreeMap<IpAddr, usize> {
        let mut counts = BTreeMap::new();
        for hit in &self.hits {
            *counts.entry(hit.peer).or_insert(0) += 1;
        }
        counts
    }

    /// Arrival times of the requests for `resource` (see [`Hit::resource`]).
    pub fn times_of(&self, resource: &str) -> Vec<Duration> {
        self.hits.iter().filter(|h| h.resource() == resource).map(|h| h.at).collect()
    }

    /// The requests with a body (a POST, a PUT...) for `resource` (see
    /// [`Hit::resource`]), their bodies as text, in order of arrival.
    pub fn bodies_of(&self, resource: &str) -> Vec<String> {
        self.hits
            .iter()
            .filter(|h| !h.body.is_empty() && h.resource() == resource)
            .map(|h| String::from_utf8_lossy(&h.body).into_owned())
            .collect()
    }

    /// Requests whose decoded path starts with `prefix`.
    pub fn under(&self, prefix: &str) -> usize {
        self.hits.iter().filter(|h| h.resource().starts_with(prefix)).count()
    }

    /// The gaps between consecutive page requests (robots.txt left out).
    pub fn gaps(&self) -> Vec<Duration> {
        let times: Vec<Duration> = self.pages().map(|h| h.at).collect();
        times.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// The most requests that arrived within any window of length `window`.
    pub fn max_in_window(&self, window: Duration) -> usize {
        let times: Vec<Duration> = self.hits.iter().map(|h| h.at).collect();
        let mut most = 0;
        let mut start = 0;
        for end in 0..times.len() {
            while times[end] - times[start] >= window {
                start += 1;
            }
            most = most.max(end + 1 - start);
        }
        most
    }
}

/// The live record, shared by the server's tasks.
#[derive(Debug)]
pub(crate) struct Recorder {
    started: Instant,
    hits: Mutex<Vec<Hit>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    connections: AtomicUsize,
}

impl Recorder {
    pub(crate) fn new() -> Self {
        Recorder {
            started: Instant::now(),
            hits: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        }
    }

    pub(crate) fn connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Record an arrival; the returned guard counts the request in flight until dropped.
    pub(crate) fn arrive(
        &self,
        target: String,
        host: String,
        on_site: bool,
        peer: IpAddr,
        conditional: bool,
        headers: &HeaderMap,
    ) -> InFlight<'_> {
        let at = self.started.elapsed();
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (cookie, user_agent, accept_language) =
            (header(COOKIE), header(USER_AGENT), header(ACCEPT_LANGUAGE));
        let index = {
            let mut hits = self.hits.lock().unwrap_or_else(|e| e.into_inner());
            let (method, body) = (String::new(), Bytes::new());
            hits.push(Hit {
                at,
                target,
                host,
                on_site,
                peer,
                status: 0,
                conditional,
                method,
                body,
                cookie,
                user_agent,
                accept_language,
                version: "",
                header_names: headers.keys().map(|name| name.as_str().to_owned()).collect(),
                wire: None,
            });
            hits.len() - 1
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight { recorder: self, index }
    }

    pub(crate) fn received(&self) -> usize {
        self.hits.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub(crate) fn snapshot(&self) -> Observed {
        let mut hits = self.hits.lock().unwrap_or_else(|e| e.into_inner()).clone();
        hits.sort_by_key(|h| h.at);
        Observed {
            started: self.started,
            hits,
            max_in_flight: self.max_in_flight.load(Ordering::SeqCst),
            connections: self.connections.load(Ordering::Relaxed),
        }
    }
}

pub(crate) struct InFlight<'a> {
    recorder: &'a Recorder,
    index: usize,
}

impl InFlight<'_> {
    /// Note the request's method and body, once the body is read.
    pub(crate) fn carried(&self, method: &str, body: Bytes) {
        let mut hits = self.recorder.hits.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = hits.get_mut(self.index) {
            hit.method = method.to_owned();
            hit.body = body;
        }
    }

    /// Note the HTTP version and the connection's fingerprint.
    pub(crate) fn came_by(&self, version: &'static str, wire: Option<Arc<Wire>>) {
        let mut hits = self.recorder.hits.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = hits.get_mut(self.index) {
            hit.version = version;
            hit.wire = wire;
        }
    }

    /// Note the status the request was answered with.
    pub(crate) fn answered(&self, status: u16) {
        let mut hits = self.recorder.hits.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = hits.get_mut(self.index) {
            hit.status = status;
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.recorder.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
