//! Routing: how each request leaves this machine. Directly, or through a gateway of a
//! route tier, with the exit country of its host and, in sticky mode, the session of its
//! logical task.
//!
//! The router also keeps what routing learns: which tier each host is on (`ladder`),
//! which gateways are benched (`pool`), which sessions are retired (`sessions`), and the
//! bytes and money spent (`spend`). Without a `proxy` setting it hands out the one direct
//! client and learns nothing, so a crawl without proxies pays nothing for this stage.

mod gateways;
mod ladder;
mod sessions;
mod spend;

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use spider_settings::Gateway;
use tokio::time::Instant;

use crate::error::Error;
use crate::request::host::{host_key, HostKey};
use crate::request::identity::{Identities, Profile, SentAs};
use crate::request::Request;
use crate::wire::transport::{Client, ClientRecipe, Via as ClientVia};
use spider_settings::{Config, Impersonate};

use gateways::Pool;
use ladder::Ladder;
use sessions::{Sessions, TaskOnTier};
use spend::Spend;
pub use spend::{GatewayTraffic, ProxySpend};

/// Clients kept for proxied routes; the least recently used one is dropped past this, so
/// a million sticky sessions do not mean a million clients.
const CLIENTS_KEPT: usize = 256;

/// A spider's choice of route for one request, from [`Spider::route`](crate::Spider::route).
///
/// # Examples
///
/// ```
/// use spider_core::{Request, Route};
///
/// // Images from the CDN need no residential exit; checkout pages must look German.
/// fn route(request: &Request) -> Route {
///     match request.url().path() {
///         path if path.starts_with("/static/") => Route::Direct,
///         path if path.starts_with("/checkout") => Route::Proxy { geo: Some("de".into()) },
///         _ => Route::Auto,
///     }
/// }
/// assert!(matches!(route(&Request::get("https://shop.example/static/a.png")?), Route::Direct));
/// # Ok::<(), spider_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Route {
    /// What the settings say: the host's tier, the `geo_rules`, `geo`, `sticky`.
    #[default]
    Auto,
    /// No proxy, whatever the settings say.
    Direct,
    /// Through a gateway (the host's tier, or the first tier with gateways when the host
    /// is on `direct`), with this exit country instead of the configured one. Without a
    /// gateway in the `proxy` setting this is a configuration error that stops the crawl.
    Proxy {
        /// Two-letter country code, or `None` for the configured one.
        geo: Option<String>,
    },
}

/// The route one request takes.
pub(crate) struct Routed {
    pub(crate) client: Client,
    /// Who the request goes out as: agent headers and cookies, settled with the answer.
    pub(crate) identity: SentAs,
    /// How it was chosen, when proxies are configured: reported back with its verdict.
    via: Option<Via>,
}

struct Via {
    host: HostKey,
    tier: usize,
    gateway: Option<usize>,
    /// The logical task and the session id it was sent on, in sticky mode.
    session: Option<(TaskOnTier, Arc<str>)>,
}

impl Routed {
    /// Whether the request went through a gateway.
    pub(crate) fn proxied(&self) -> bool {
        self.via.as_ref().is_some_and(|via| via.gateway.is_some())
    }
}

/// What became of a routed request, for the router to learn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// An answer that is not a block.
    Answered,
    /// 403, 429 or another sign of a block.
    Blocked,
    /// The gateway (or the host, when direct) could not be reached.
    Unreachable,
}

enum Tier {
    Direct,
    Gateways(Pool),
}

struct State {
    tiers: Vec<Tier>,
    ladder: Ladder,
    sessions: Sessions,
    rng: SmallRng,
}

/// The direct client, and how many hosts the crawl has sent a first request to since
/// its idle connections were last closed.
struct Direct {
    client: Client,
    hosts_met: usize,
}

/// Chooses each request's route and learns from its verdict.
pub(crate) struct Router {
    direct: Mutex<Direct>,
    /// How many hosts the direct clients meet before their idle connections are closed
    /// ([`idle_hosts`]).
    idle_hosts: usize,
    recipe: ClientRecipe,
    gateways: Vec<Gateway>,
    template: String,
    geo: Option<String>,
    geo_rules: Vec<(String, String)>,
    sticky: bool,
    /// `None` when no proxy is configured.
    state: Option<Mutex<State>>,
    clients: Mutex<LruCache<ClientKey, Client>>,
    spend: Spend,
    /// Every request's cookies and agent, with proxies or without.
    identities: Identities,
}

impl Router {
    /// Resolve the `proxy` setting (reading the environment variables it names) and build
    /// the direct client.
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let recipe = ClientRecipe::new(config)?;
        let direct = Direct { client: recipe.build(None, true, None)?, hosts_met: 0 };
        let (gateways, tiers) = match &config.proxy {
            Some(spec) => resolve(&spec.0)?,
            None => (Vec::new(), Vec::new()),
        };
        let state = (!tiers.is_empty()).then(|| {
            Mutex::new(State {
                ladder: Ladder::new(tiers.len()),
                tiers,
                sessions: Sessions::default(),
                rng: SmallRng::from_os_rng(),
            })
        });
        let kept = NonZeroUsize::new(CLIENTS_KEPT).unwrap_or(NonZeroUsize::MIN);
        Ok(Router {
            direct: Mutex::new(direct),
            idle_hosts: idle_hosts(config),
            recipe,
            spend: Spend::new(gateways.len(), config.proxy_price_per_gb, config.proxy_budget),
            gateways,
            template: config.proxy_user_template.clone(),
            geo: config.geo.clone(),
            geo_rules: config.geo_rules.clone(),
            sticky: config.sticky,
            state,
            clients: Mutex::new(LruCache::new(kept)),
            identities: Identities::new(config)?,
        })
    }

    /// The route for `request`, given the spider's `choice`.
    pub(crate) fn route(
        &self,
        request: &Request,
        choice: Route,
        wire: Option<Impersonate>,
    ) -> Result<Routed, Error> {
        let identity = self.identities.wear(request, wire);
        let state = match (&self.state, &choice) {
            (_, Route::Direct) | (None, Route::Auto) => {
                return Ok(Routed { client: self.direct_for(&identity)?, identity, via: None })
            }
            (None, Route::Proxy { .. }) => return Err(no_gateway(request)),
            (Some(state), _) => state,
        };
        let host =
            host_key(request.url()).ok_or_else(|| Error::Config(format!("{} has no host", request.url())))?;
        let now = Instant::now();
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        let State { tiers, ladder, sessions, rng } = &mut *state;
        let mut tier = ladder.tier_for(&host, now);
        if matches!(choice, Route::Proxy { .. }) && matches!(tiers[tier], Tier::Direct) {
            tier = tiers
                .iter()
                .position(|t| matches!(t, Tier::Gateways(_)))
                .ok_or_else(|| no_gateway(request))?;
        }
        let Tier::Gateways(pool) = &mut tiers[tier] else {
            return Ok(Routed {
                client: self.direct_for(&identity)?,
                identity,
                via: Some(Via { host, tier, gateway: None, session: None }),
            });
        };
        let session = match request.sticky_task().filter(|_| self.sticky) {
            Some(task) => {
                let task = (task, tier);
                if identity.renewed {
                    // A new identity, in place of one its host's budget retired: a new exit.
                    sessions.forget(&task);
                }
                let mut session = sessions.current(&task, rng, || pool.pick(now));
                if let Some(benched) = session.as_ref().filter(|s| pool.is_benched(s.gateway, now)) {
                    // An id means nothing to another gateway: a new session on one that works.
                    sessions.retire(&task, &benched.id.clone());
                    session = sessions.current(&task, rng, || pool.pick(now));
                }
                session.map(|s| (task, s))
            }
            None => None,
        };
        let gateway = match &session {
            Some((_, s)) => s.gateway,
            None => pool.pick(now).ok_or_else(|| Error::Config("a proxy tier has no gateway".to_owned()))?,
        };
        drop(state);
        let geo = match &choice {
            Route::Proxy { geo: Some(geo) } => {
                if spider_settings::parse_country(geo).as_deref() != Ok(geo.as_str()) {
                    return Err(Error::Config(format!(
                        "the spider's route for {} asks for geo {geo:?}; write a two-letter code in lower \
                            case, such as \"de\"",
                        request.url()
                    )));
                }
                Some(geo.as_str())
            }
            _ => self.geo_of(request),
        };
        let session_id = session.as_ref().map(|(_, s)| s.id.clone());
        let client = self.client(gateway, geo, session_id.as_deref(), &identity)?;
        let session = session.map(|(task, s)| (task, s.id));
        Ok(Routed { client, identity, via: Some(Via { host, tier, gateway: Some(gateway), session }) })
    }

    /// Learn from what became of a routed request and count its traffic (its identity is
    /// the exchange's to retire). Returns whether a retry leaves with another exit
    /// identity: through a gateway, or because its host has climbed off the tier it was
    /// blocked on.
    pub(crate) fn settle(&self, routed: &Routed, verdict: Verdict, sent: u64, received: u64) -> bool {
        if let Some(gateway) = routed.via.as_ref().and_then(|via| via.gateway) {
            if verdict != Verdict::Unreachable {
                self.spend.record(gateway, sent, received);
            }
        }
        self.learn(routed, verdict)
    }

    /// Learn a routed request's verdict, its traffic counted already: what
    /// [`settle`](Self::settle) returns.
    pub(crate) fn learn(&self, routed: &Routed, verdict: Verdict) -> bool {
        let (Some(via), Some(state)) = (&routed.via, &self.state) else { return false };
        let now = Instant::now();
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        let State { tiers, ladder, sessions, .. } = &mut *state;
        match verdict {
            Verdict::Answered => {
                if let Some(tier) = ladder.answered(&via.host, via.tier, now) {
                    tracing::info!(target: "spiderling", host = %via.host, tier, "a probe of the cheaper \
                        route worked: the host moves down");
                }
                if let (Some(gateway), Some(Tier::Gateways(pool))) = (via.gateway, tiers.get_mut(via.tier)) {
                    pool.reached(gateway);
                }
            }
            Verdict::Blocked => {
                if let Some((task, id)) = &via.session {
                    if sessions.retire(task, id) {
                        tracing::debug!(target: "spiderling", task = %task.0, "blocked: the session is \
                            retired, the task gets a new exit");
                    }
                }
                if let Some(tier) = ladder.blocked(&via.host, via.tier, now) {
                    tracing::info!(target: "spiderling", host = %via.host, tier, "blocked on this route: the \
                        host moves up a tier");
                }
                return via.gateway.is_some() || ladder.tier_of(&via.host) != via.tier;
            }
            Verdict::Unreachable => {
                if let Some((task, id)) = &via.session {
                    sessions.retire(task, id);
                }
                if let (Some(gateway), Some(Tier::Gateways(pool))) = (via.gateway, tiers.get_mut(via.tier)) {
                    if pool.connect_failed(gateway, now) {
                        self.spend.benched(gateway);
                        tracing::warn!(target: "spiderling", gateway = %self.gateways[gateway], "gateway \
                            unreachable: benched for a while");
                    }
                }
            }
        }
        via.gateway.is_some()
    }

    /// Keep the cookies an answer to a routed request set in its identity; returns how many.
    pub(crate) fn keep_cookies(
        &self,
        routed: &Routed,
        url: &url::Url,
        headers: &reqwest::header::HeaderMap,
    ) -> usize {
        self.identities.receive(&routed.identity, url, headers)
    }

    /// The crawl's identities, for the state file and for cookies given at run time.
    pub(crate) fn identities(&self) -> &Identities {
        &self.identities
    }

    /// The gateway a request went through, safe to print.
    pub(crate) fn gateway_of(&self, routed: &Routed) -> Option<String> {
        let gateway = routed.via.as_ref()?.gateway?;
        self.gateways.get(gateway).map(ToString::to_string)
    }

    /// Whether the proxy spend has reached `proxy_budget`: this crawl's bytes, or what
    /// `fleet` makes of them (a fleet's worker counts every worker's).
    pub(crate) fn budget_reached(&self, fleet: impl FnOnce(u64) -> Option<u64>) -> bool {
        self.spend.budget_reached(fleet)
    }

    /// Bytes through the gateways so far, both ways.
    pub(crate) fn proxy_bytes(&self) -> u64 {
        self.spend.bytes()
    }

    /// The proxy traffic and spend, when gateways are configured.
    pub(crate) fn spend(&self) -> Option<ProxySpend> {
        if self.gateways.is_empty() {
            return None;
        }
        Some(self.spend.summary(self.gateways.iter().map(ToString::to_string)))
    }

    /// The exit country for `request`'s host: the first matching rule, else `geo`.
    fn geo_of(&self, request: &Request) -> Option<&str> {
        let host = request.url().host_str()?;
        let rule = self.geo_rules.iter().find(|(pattern, _)| match pattern.strip_prefix("*.") {
            Some(suffix) => {
                host.len() > suffix.len() + 1
                    && host.ends_with(suffix)
                    && host[..host.len() - suffix.len()].ends_with('.')
            }
            None => host == pattern,
        });
        rule.map(|(_, country)| country.as_str()).or(self.geo.as_deref())
    }

    /// The client for `gateway` as the username of `geo` and `session`: kept alive in
    /// sticky mode, a new connection per request otherwise.
    /// The direct client for `identity`: the crawl's own, or one with its browser's wire.
    fn direct_for(&self, identity: &SentAs) -> Result<Client, Error> {
        if identity.profile.is_none() {
            return Ok(self.direct.lock().unwrap_or_else(|e| e.into_inner()).client.clone());
        }
        let key = ClientKey { gateway: None, username: None, keep_alive: true, profile: identity.profile };
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = self.recipe.build(None, true, identity.profile)?;
        clients.put(key, client.clone());
        Ok(client)
    }

    /// The crawl sent its first request to a host: once it has done so for as many hosts
    /// as [`idle_hosts`] allows since the last time, the direct clients' idle connections
    /// are closed. A broad crawl meets hosts it never returns to, whose connections would
    /// otherwise stay open until the pool's idle timeout, a file each. Told by the
    /// dispatcher once a host, not looked up on every request.
    pub(crate) fn met_host(&self) -> Result<(), Error> {
        let mut direct = self.direct.lock().unwrap_or_else(|e| e.into_inner());
        direct.hosts_met += 1;
        if direct.hosts_met >= self.idle_hosts {
            self.close_idle(&mut direct)?;
        }
        Ok(())
    }

    /// The crawl forgot `host`, idle: what the router and the identities hold of it and
    /// would make again the same goes too.
    pub(crate) fn forget_host(&self, host: &HostKey) {
        self.identities.forget_host(host);
        if let Some(state) = &self.state {
            state.lock().unwrap_or_else(|e| e.into_inner()).ladder.forget(host);
        }
    }

    /// Close the direct clients' idle connections: they are built again, their pools
    /// empty; a request under way keeps the connection it holds.
    fn close_idle(&self, direct: &mut Direct) -> Result<(), Error> {
        direct.client = self.recipe.build(None, true, None)?;
        direct.hosts_met = 0;
        self.clients.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }

    /// The process ran out of files: close the direct clients' idle connections now, and
    /// return the client `routed` is to be sent again on, a new one when it goes direct
    /// (the one it held would keep the old pool, and its connections, open).
    pub(crate) fn out_of_files(&self, routed: &Routed) -> Result<Client, Error> {
        let mut direct = self.direct.lock().unwrap_or_else(|e| e.into_inner());
        self.close_idle(&mut direct)?;
        drop(direct);
        if routed.proxied() {
            return Ok(routed.client.clone());
        }
        self.direct_for(&routed.identity)
    }

    fn client(
        &self,
        gateway: usize,
        geo: Option<&str>,
        session: Option<&str>,
        identity: &SentAs,
    ) -> Result<Client, Error> {
        let username = self.gateways[gateway].username(&self.template, geo, session);
        let key = ClientKey {
            gateway: Some(gateway),
            username,
            keep_alive: session.is_some(),
            profile: identity.profile,
        };
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let via = ClientVia { gateway: &self.gateways[gateway], username: key.username.as_deref() };
        let client = self.recipe.build(Some(via), key.keep_alive, key.profile)?;
        clients.put(key, client.clone());
        Ok(client)
    }
}

fn no_gateway(request: &Request) -> Error {
    Error::Config(format!(
        "the spider routes {} through a proxy, but `proxy` names no gateway",
        request.url()
    ))
}

/// How many hosts the direct clients may hold idle connections to: the files this process
/// may open, less a connection and a file for each of `concurrency` requests and a reserve
/// for the crawl's own files, shared at `per_host` connections a host; at most 512, so a
/// crawl of many hosts holds a bounded pool whatever its file limit (an idle connection
/// holds about 30 KB of the client's buffers).
fn idle_hosts(config: &Config) -> usize {
    #[cfg(unix)]
    let files = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .and_then(|files| usize::try_from(files).ok())
        .unwrap_or(usize::MAX);
    #[cfg(not(unix))]
    let files = usize::MAX;
    let spare = files.saturating_sub(config.concurrency.saturating_mul(2).saturating_add(128));
    (spare / config.per_host.max(1)).clamp(16, 512)
}

/// What makes two proxied clients different.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    /// None for a direct client.
    gateway: Option<usize>,
    username: Option<String>,
    keep_alive: bool,
    profile: Option<Profile>,
}

/// The gateways and tiers of a `proxy` setting, environment variables read.
fn resolve(spec: &str) -> Result<(Vec<Gateway>, Vec<Tier>), Error> {
    let mut gateways = Vec::new();
    let mut tiers = Vec::new();
    for tier in spider_settings::resolve_proxy(spec).map_err(Error::Config)? {
        let members: Vec<usize> = (gateways.len()..gateways.len() + tier.len()).collect();
        gateways.extend(tier);
        tiers.push(if members.is_empty() { Tier::Direct } else { Tier::Gateways(Pool::new(members)) });
    }
    Ok((gateways, tiers))
}
