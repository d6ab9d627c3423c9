//! The wire: how one request leaves this machine and what its answer means.
//!
//! Every request of a crawl is sent through one [`Exchange`]: the crawl's tasks, the
//! spider's start hook, the probe and `Robots::fetch` alike. It picks the request's
//! route (`route`: direct or a gateway, the exit country, the sticky session) and its
//! identity (agent and cookies), sends it on the route's client (`transport`), refuses to
//! go on after a gateway's 407, keeps the cookies the answer sets, judges whether the
//! answer is a block (`block`), and teaches the router what came of it. So these steps
//! happen the same way wherever a request comes from, and a new transport plugs in behind
//! this one type.

pub(crate) mod block;
#[cfg(feature = "impersonate")]
pub(crate) mod browser;
pub(crate) mod classify;
pub(crate) mod interstitial;
pub(crate) mod redirect;
#[cfg(feature = "render")]
pub(crate) mod render;
pub(crate) mod resolve;
pub(crate) mod route;
pub(crate) mod transport;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use spider_settings::{Config, Impersonate};
use tokio::time::Instant;

use crate::error::Error;
use crate::request::host::HostKey;
use crate::request::identity::Identities;
use crate::request::Request;
use block::{Answer, BlockRules};
use route::{ProxySpend, Route, Routed, Router, Verdict};
use transport::{Fetched, Transport};

/// Who judges whether an answer is a block, and whether the router learns from it.
#[derive(Clone, Copy)]
pub(crate) enum Judge<'a> {
    /// Nobody: every answer is taken as it is (the start hook signs in, and a refused
    /// login is an answer for the hook to read).
    Nobody,
    /// The block rules (403, 429, challenge pages, `block_markers`).
    Rules,
    /// The spider's `is_blocked`, and the block rules where it has no opinion.
    Spider(&'a (dyn Fn(&Answer<'_>) -> Option<bool> + Send + Sync)),
    /// The block rules, but a block teaches the router nothing: the probe measures one
    /// route, and a block would move the host up a tier.
    Measure,
}

/// What became of a request sent through the exchange. One per request, moved once or
/// twice: a box for the large answer would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Exchanged {
    /// The answer, judged.
    Answer(Answered),
    /// No answer: connecting, sending or reading failed, or the body passed the cap.
    Failed(Error),
}

/// An answer and its verdict. Not `Debug`: its headers hold the cookies the site set.
pub(crate) struct Answered {
    pub(crate) fetched: Fetched,
    /// Judged a block (a consent wall is not).
    pub(crate) blocked: bool,
    /// A wall that handed this identity a cookie, served with a 2xx: it asks for the
    /// cookie back, so the same identity tries again.
    pub(crate) consent: bool,
    /// Cookies the answer set in its identity.
    pub(crate) kept: usize,
    /// The identity's first answer: a wall there is the one every new identity meets.
    pub(crate) first: bool,
    /// Whether a retry leaves as another exit identity, so that a block is met by
    /// switching rather than by slowing the host down.
    pub(crate) new_identity: bool,
    /// A block of an identity answered cleanly before, which a retry leaves from another
    /// exit: the site limits each identity, so the block says nothing of the host's
    /// limits. A fresh identity blocked at once says the host is over its limit.
    pub(crate) follows_identity: bool,
    /// Its host refused the crawl's own client with this answer, and gets a browser's
    /// wire from now on (`impersonate = "auto"`).
    pub(crate) refused_plain: bool,
    /// When the request left, and how long its answer took.
    pub(crate) sent_at: Instant,
    pub(crate) latency: Duration,
    /// The route it went on, for [`Exchange::overturn`].
    pub(crate) routed: Routed,
}

/// What [`Exchange::overturn`] made of a soft block: as `Answered` says of a block.
pub(crate) struct Overturned {
    pub(crate) follows_identity: bool,
    pub(crate) refused_plain: bool,
}

/// The crawl's one way out: routes, identities, the transport and the block rules.
pub(crate) struct Exchange {
    router: Router,
    transport: Transport,
    rules: BlockRules,
    /// The process has run out of files once: said once.
    out_of_files: AtomicBool,
    /// How long a request waits for files before it fails as any connection would: the
    /// request timeout.
    files_patience: Duration,
}

impl Exchange {
    /// The exchange of `config`: its `proxy` tiers resolved (the environment variables they
    /// name read), its identities (user agents, seed cookies), its clients' recipe.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for what the settings' grammar could not tell: a variable that is
    /// not set, a file that cannot be read, a certificate that is not PEM.
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        Ok(Exchange {
            router: Router::new(config)?,
            transport: Transport::new(config),
            rules: BlockRules::new(config),
            out_of_files: AtomicBool::new(false),
            files_patience: config.timeout,
        })
    }

    /// Send on `routed`; when the process is out of files, close the idle connections and
    /// send again, waiting a little longer each time for requests under way to give theirs
    /// back, for as long as the request's timeout: a shortage of files slows the crawl, it
    /// does not fail hosts that did nothing wrong.
    async fn send_when_files_allow(&self, routed: &mut Routed, request: &Request) -> Result<Fetched, Error> {
        let started = Instant::now();
        let mut wait = Duration::from_millis(10);
        loop {
            let sent = self.transport.send(&routed.client, &routed.identity.headers, request).await;
            match sent {
                Err(error) if error.is_out_of_files() && started.elapsed() + wait < self.files_patience => {
                    if !self.out_of_files.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            target: "spiderling",
                            "this process ran out of open files: idle connections are closed, and requests \
                             wait for files to free up; raise the limit (ulimit -n) or lower concurrency for \
                                 speed"
                        );
                    }
                    // The client it held is let go: its pool, and the connections idle
                    // there, close once no request holds it.
                    routed.client = self.router.out_of_files(routed)?;
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(1));
                }
                sent => return sent,
            }
        }
    }

    /// The crawl met a host it had not (see [`Router::met_host`]).
    pub(crate) fn met_host(&self) -> Result<(), Error> {
        self.router.met_host()
    }

    /// The crawl forgot an idle host (see [`Router::forget_host`]).
    pub(crate) fn forget_host(&self, host: &HostKey) {
        self.router.forget_host(host);
    }

    /// Send `request` on the route `route` asks for, as its identity (of the browser
    /// profile `wire` names, when not the crawl's); judge the answer as `judge` says, keep
    /// its cookies in the identity and teach the router what came of it.
    ///
    /// # Errors
    ///
    /// What no request can get past, so the crawl stops: a route the settings cannot give
    /// ([`Error::Config`]), or a gateway refusing the credentials ([`Error::ProxyAuth`]),
    /// which would refuse every request alike.
    pub(crate) async fn send(
        &self,
        request: &Request,
        route: Route,
        wire: Option<Impersonate>,
        judge: Judge<'_>,
    ) -> Result<Exchanged, Error> {
        let mut routed = self.router.route(request, route, wire)?;
        let sent_at = Instant::now();
        let sent = self.send_when_files_allow(&mut routed, request).await;
        let refused = || Error::ProxyAuth { gateway: self.router.gateway_of(&routed).unwrap_or_default() };
        let fetched = match sent {
            Ok(fetched) => fetched,
            Err(error) if routed.proxied() && error.is_proxy_auth() => return Err(refused()),
            Err(error) => {
                if !error.is_connect() {
                    return Ok(Exchanged::Failed(error));
                }
                self.router.settle(&routed, Verdict::Unreachable, 0, 0);
                // Through a gateway, a connection that cannot be made is the gateway's.
                let error = match self.router.gateway_of(&routed).filter(|_| routed.proxied()) {
                    Some(gateway) => Error::ProxyUnreachable { gateway, source: Box::new(error) },
                    None => error,
                };
                return Ok(Exchanged::Failed(error));
            }
        };
        let latency = sent_at.elapsed();
        if routed.proxied() && fetched.status == StatusCode::PROXY_AUTHENTICATION_REQUIRED {
            return Err(refused());
        }
        let kept = self.router.keep_cookies(&routed, request.url(), &fetched.headers);
        let answer = Answer { status: fetched.status, headers: &fetched.headers, body: &fetched.body };
        let judged = match judge {
            Judge::Nobody => false,
            Judge::Rules | Judge::Measure => self.rules.blocked(&answer),
            Judge::Spider(hook) => hook(&answer).unwrap_or_else(|| self.rules.blocked(&answer)),
        };
        let consent = judged && fetched.status.is_success() && kept > 0;
        let blocked = judged && !consent;
        let (mut new_identity, mut follows_identity, mut first) = (false, false, false);
        let mut refused_plain = false;
        if !(blocked && matches!(judge, Judge::Measure)) {
            // A 429 asks for patience; any other block may be the wire's.
            if blocked && fetched.status != StatusCode::TOO_MANY_REQUESTS {
                refused_plain = self.router.identities().refused_plain(&routed.identity, request);
            }
            let identities = self.router.identities();
            let clean = if blocked {
                identities.retire(&routed.identity).unwrap_or(0)
            } else {
                first = identities.answered(&routed.identity);
                0
            };
            let verdict = if blocked { Verdict::Blocked } else { Verdict::Answered };
            new_identity = self.router.settle(&routed, verdict, fetched.sent, fetched.received);
            follows_identity = self.followed_identity(&routed, clean, new_identity);
        }
        Ok(Exchanged::Answer(Answered {
            fetched,
            blocked,
            consent,
            kept,
            first,
            new_identity,
            follows_identity,
            refused_plain,
            sent_at,
            latency,
            routed,
        }))
    }

    /// An answer [`send`](Self::send) took as no block, which the parse found to be one
    /// (an interstitial): its identity retired and the router taught, as if judged a
    /// block at once (the route's ladder climbs on a second block within ten answers, as
    /// ever). Returns whether the block followed the identity, and whether its host
    /// refused the crawl's own client: a second interstitial there, not the first.
    pub(crate) fn overturn(&self, routed: &Routed, request: &Request) -> Overturned {
        let refused_plain = self.router.identities().walled_plain(&routed.identity, request);
        // Its answer counted as clean already.
        let clean = self.router.identities().retire(&routed.identity).unwrap_or(0).saturating_sub(1);
        let new_identity = self.router.learn(routed, Verdict::Blocked);
        Overturned { follows_identity: self.followed_identity(routed, clean, new_identity), refused_plain }
    }

    /// Whether a block of `routed`'s identity after `clean` clean answers followed the
    /// identity (its retry leaves from another exit); if so, a sample of its host's
    /// identity budget.
    fn followed_identity(&self, routed: &Routed, clean: u32, new_identity: bool) -> bool {
        let followed = clean > 0 && new_identity;
        if followed {
            self.router.identities().budget_spent(&routed.identity, clean);
        }
        followed
    }

    /// The crawl's identities, for the state file and for cookies given at run time.
    pub(crate) fn identities(&self) -> &Identities {
        self.router.identities()
    }

    /// Whether the proxy spend has reached `proxy_budget`: this crawl's bytes, or what
    /// `fleet` makes of them (a fleet's worker counts every worker's).
    pub(crate) fn budget_reached(&self, fleet: impl FnOnce(u64) -> Option<u64>) -> bool {
        self.router.budget_reached(fleet)
    }

    /// Bytes through the gateways so far, both ways.
    pub(crate) fn proxy_bytes(&self) -> u64 {
        self.router.proxy_bytes()
    }

    /// The proxy traffic and spend, when gateways are configured.
    pub(crate) fn spend(&self) -> Option<ProxySpend> {
        self.router.spend()
    }
}
