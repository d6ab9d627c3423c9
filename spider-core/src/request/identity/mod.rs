//! Identities: who a request is, as the site sees it. An identity is its exit (the sticky
//! proxy session, chosen by the router), its cookie jar, and its user agent with the
//! headers that agent sends. They go together: a sticky exit with a stale or missing
//! cookie, or a cookie arriving from a new address, is the pattern anti-bot systems flag.
//!
//! Requests of one logical task (a request's session key, inherited by its follow-ups)
//! wear one identity; a request without a session key wears its host's, or in sticky
//! mode its lane's: the host slot it went out on, so the crawl spreads over as many
//! identities as it has slots, each with one request at a time and its cookies settled
//! by each answer before the next request. A blocked
//! identity is retired whole, cookies included, and the next request of its task or host
//! gets a fresh one (new agent, empty jar, new exit when proxies allow).
//!
//! Every new identity starts with a copy of the seed jar: cookies given before the crawl
//! (see [`Config::seed_cookie`](spider_settings::Config::seed_cookie)), such as a login's session.

mod agents;
mod browsers;
mod jar;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reqwest::header::{HeaderMap, COOKIE};
use url::Url;

use crate::error::Error;
use crate::request::host::host_key;
use crate::request::Request;
use spider_settings::Config;

use agents::Agents;
#[cfg(feature = "impersonate")]
pub(crate) use browsers::Platform;
pub(crate) use browsers::{Browser, Profile};
pub(crate) use jar::Jar;
use spider_settings::Impersonate;

/// The identity a request was sent as, to be settled with its answer.
#[derive(Debug, Clone)]
pub(crate) struct SentAs {
    key: Arc<str>,
    generation: u64,
    /// Its host's origin, whose identity budget its blocks teach (none for a task's).
    host: Arc<str>,
    /// A new identity in place of one that had used up its host's budget: its sticky
    /// session goes with the old one.
    pub(crate) renewed: bool,
    /// The browser it looks like on the wire; none for the crawl's own client.
    pub(crate) profile: Option<Profile>,
    /// Sent with `impersonate = "auto"`: a refusal of the plain client moves its host.
    auto: bool,
    /// The agent's header set and the jar's `Cookie` for the request's URL; the request's
    /// own headers are applied after them, and win.
    pub(crate) headers: HeaderMap,
}

impl SentAs {
    /// Who this is, as no other identity ever is: its key and its generation, so an
    /// identity made afresh under the same key (after a block) is another.
    #[cfg(feature = "render")]
    pub(crate) fn id(&self) -> String {
        format!("{}#{}", self.key, self.generation)
    }
}

#[derive(Debug)]
struct Identity {
    generation: u64,
    agent: Option<usize>,
    profile: Option<Profile>,
    jar: Jar,
    /// Answers it got that were not blocks: a block after some says the site limits
    /// each identity, not the host.
    clean: u32,
    host: Arc<str>,
}

/// Identity blocks a host's budget is the median of.
const BUDGET_SAMPLES: usize = 16;
/// Blocks seen before a budget is kept to.
const BUDGET_AFTER: usize = 3;

/// How many clean answers a host's identities had when it blocked them, where the blocks
/// followed the identities (a new exit got past them): the median of the last few is
/// the host's identity budget, after which an identity is replaced before the host
/// blocks it, as a person's session ends before it looks like a robot's.
#[derive(Debug, Default)]
struct Budget {
    recent: VecDeque<u32>,
}

impl Budget {
    fn learn(&mut self, clean: u32) {
        if self.recent.len() == BUDGET_SAMPLES {
            self.recent.pop_front();
        }
        self.recent.push_back(clean);
    }

    fn limit(&self) -> Option<u32> {
        if self.recent.len() < BUDGET_AFTER {
            return None;
        }
        let mut sorted: Vec<u32> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        // One answer an identity would be no budget: a block after one says nothing of use.
        sorted.get(sorted.len() / 2).copied().filter(|limit| *limit > 1)
    }
}

/// A saved identity, as the state file keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedIdentity {
    pub(crate) key: String,
    pub(crate) agent: Option<String>,
    /// The jar as JSON: cookie values, so never printed.
    pub(crate) cookies: String,
}

/// What changed among the identities since the last [`Identities::changes`]: those to
/// write again, and the keys of those retired since.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IdentityChanges {
    pub(crate) saved: Vec<SavedIdentity>,
    pub(crate) gone: Vec<String>,
    /// Hosts that refused the crawl's own client since (`impersonate = "auto"`).
    pub(crate) refusing: Vec<String>,
}

/// Every live identity of the crawl, by task or host.
#[derive(Debug)]
pub(crate) struct Identities {
    cookies: bool,
    impersonate: Impersonate,
    /// Sticky mode: a request without a session wears its lane's identity, not its host's.
    sticky: bool,
    agents: Agents,
    seed: Mutex<Jar>,
    live: Mutex<Live>,
}

#[derive(Debug)]
struct Live {
    by_key: HashMap<Arc<str>, Identity>,
    /// Keys made, changed or retired since the last [`Identities::changes`].
    changed: HashSet<Arc<str>>,
    /// Each host's identity budget, by its origin.
    budgets: HashMap<Arc<str>, Budget>,
    /// Hosts that refused the crawl's own client (`impersonate = "auto"`): their new
    /// identities are Chrome's.
    refusing: HashSet<Arc<str>>,
    /// Of those, the hosts that refused it since the last [`Identities::changes`].
    refusing_since: Vec<Arc<str>>,
    /// Hosts that answered the crawl's own client once with an interstitial.
    walled: HashSet<Arc<str>>,
    next_generation: u64,
    rng: SmallRng,
}

impl Identities {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let agents = Agents::new(&user_agents(config)?, &config.headers)?;
        let identities = Identities {
            cookies: config.cookies,
            impersonate: config.impersonate,
            sticky: config.sticky,
            agents,
            seed: Mutex::new(Jar::default()),
            live: Mutex::new(Live {
                by_key: HashMap::new(),
                changed: HashSet::new(),
                budgets: HashMap::new(),
                refusing: HashSet::new(),
                refusing_since: Vec::new(),
                walled: HashSet::new(),
                next_generation: 0,
                rng: SmallRng::from_os_rng(),
            }),
        };
        for (url, line) in config.seed_cookies.iter() {
            let url = Url::parse(url).map_err(|e| Error::Config(format!("seed_cookie for {url:?}: {e}")))?;
            identities.seed(&url, line)?;
        }
        Ok(identities)
    }

    /// Give every identity made from now on this cookie, as if `url` had answered with the
    /// `Set-Cookie` line `line`; identities already live get it too. For code that signs
    /// in before the crawl.
    pub(crate) fn seed(&self, url: &Url, line: &str) -> Result<(), Error> {
        let problem = |problem| Error::Config(format!("cookie for {url}: {problem}"));
        lock(&self.seed).take(line, url).map_err(problem)?;
        let mut live = lock(&self.live);
        let Live { by_key, changed, .. } = &mut *live;
        for (key, identity) in by_key.iter_mut() {
            identity.jar.take(line, url).map_err(problem)?;
            changed.insert(key.clone());
        }
        Ok(())
    }

    /// The identity `request` goes out as, made now when its task or host has none; with
    /// `wire` (its rule's browser profile, not the crawl's), one of that profile's.
    pub(crate) fn wear(&self, request: &Request, wire: Option<Impersonate>) -> SentAs {
        let wire = wire.unwrap_or(self.impersonate);
        let mut key = identity_key(request, self.sticky);
        if wire != self.impersonate {
            // Its own identities: one keeps one profile for life.
            key = Arc::from(format!("{key}#{}", wire.name()));
        }
        let mut live = lock(&self.live);
        let Live { by_key, changed, budgets, refusing, next_generation, rng, .. } = &mut *live;
        // A budget is two answers at least, so an identity that has just passed a wall (its
        // first answer) keeps its cookie for the request that met the wall.
        let spent = by_key.get(&key).is_some_and(|identity| {
            budgets.get(&identity.host).and_then(Budget::limit).is_some_and(|limit| identity.clean >= limit)
        });
        // A plain identity of a host that refused the plain client since it was made (another
        // slot's request met the refusal) would meet it again: it is made afresh, Chrome's.
        let outworn = wire == Impersonate::Auto
            && by_key
                .get(&key)
                .is_some_and(|identity| identity.profile.is_none() && refusing.contains(&identity.host));
        if outworn {
            by_key.remove(&key);
        }
        if spent {
            by_key.remove(&key);
            tracing::debug!(target: "spiderling", identity = %key, "its host's identity budget used up: \
                replaced before a block");
        }
        let identity = by_key.entry(key.clone()).or_insert_with(|| {
            changed.insert(key.clone());
            *next_generation += 1;
            let browser = match wire {
                Impersonate::Chrome => Some(Browser::Chrome),
                Impersonate::Firefox => Some(Browser::Firefox),
                Impersonate::Auto if host_key(request.url()).is_some_and(|h| refusing.contains(&h)) => {
                    Some(Browser::Chrome)
                }
                _ => None,
            };
            let profile = browser.map(|browser| Profile::draw(browser, rng));
            let agent =
                (profile.is_none() && self.agents.len() > 0).then(|| rng.random_range(0..self.agents.len()));
            let jar = if self.cookies { lock(&self.seed).clone() } else { Jar::default() };
            Identity {
                generation: *next_generation,
                agent,
                profile,
                jar,
                clean: 0,
                host: Arc::from(host_of_key(&key)),
            }
        });
        let mut headers = match identity.profile {
            Some(profile) => profile.headers(),
            None => identity.agent.map(|agent| self.agents.headers(agent)).unwrap_or_default(),
        };
        if self.cookies && !request.headers().contains_key(COOKIE) {
            if let Some(cookie) = identity.jar.header(request.url()) {
                headers.insert(COOKIE, cookie);
            }
        }
        SentAs {
            key,
            generation: identity.generation,
            host: identity.host.clone(),
            renewed: spent,
            profile: identity.profile,
            auto: wire == Impersonate::Auto,
            headers,
        }
    }

    /// A block of `request` sent as `worn` on the crawl's own client, in `auto` mode: its host
    /// refuses that client, and its identities are Chrome's from now on. Whether the host
    /// moved now.
    pub(crate) fn refused_plain(&self, worn: &SentAs, request: &Request) -> bool {
        if !worn.auto || worn.profile.is_some() {
            return false;
        }
        let Some(host) = host_key(request.url()) else { return false };
        let mut live = lock(&self.live);
        let moved = live.refusing.insert(host.clone());
        if moved {
            live.refusing_since.push(host.clone());
            tracing::info!(target: "spiderling", host = %host, "the host refused the plain client: Chrome's \
                wire from now on");
        }
        moved
    }

    /// An interstitial answered to `request` sent as `worn` on the crawl's own client, in
    /// `auto` mode: one is no verdict on the client (every new visitor may meet a wall);
    /// a second at the host is a refusal, as [`refused_plain`](Self::refused_plain).
    /// Whether the host moved now.
    pub(crate) fn walled_plain(&self, worn: &SentAs, request: &Request) -> bool {
        if !worn.auto || worn.profile.is_some() {
            return false;
        }
        let Some(host) = host_key(request.url()) else { return false };
        if lock(&self.live).walled.insert(host) {
            return false;
        }
        self.refused_plain(worn, request)
    }

    /// Take up hosts known to refuse the plain client (a state file's, a fleet's).
    pub(crate) fn resume_refusing(&self, hosts: impl IntoIterator<Item = String>) {
        lock(&self.live).refusing.extend(hosts.into_iter().map(Arc::from));
    }

    /// A block of `worn` after `clean` answers that followed the identity (its retry
    /// leaves from a new exit): a sample of its host's identity budget.
    pub(crate) fn budget_spent(&self, worn: &SentAs, clean: u32) {
        // A task's identity (a session key) is the spider's to keep: it has no budget.
        if !worn.host.is_empty() {
            lock(&self.live).budgets.entry(worn.host.clone()).or_default().learn(clean);
        }
    }

    /// Keep the cookies an answer to `url` set, in the identity it was sent as (unless
    /// that identity was retired meanwhile). Returns how many were kept.
    pub(crate) fn receive(&self, worn: &SentAs, url: &Url, headers: &HeaderMap) -> usize {
        if !self.cookies {
            return 0;
        }
        let mut live = lock(&self.live);
        let Live { by_key, changed, .. } = &mut *live;
        let Some(identity) = by_key.get_mut(&worn.key).filter(|i| i.generation == worn.generation) else {
            return 0;
        };
        let kept = identity.jar.receive(url, headers);
        if kept > 0 {
            changed.insert(worn.key.clone());
        }
        kept
    }

    /// The `Cookie` header `worn`'s jar holds for `url` now (none once it was retired),
    /// for a browser rendering the page it fetched.
    #[cfg(feature = "render")]
    pub(crate) fn cookie_header(&self, worn: &SentAs, url: &Url) -> Option<String> {
        if !self.cookies {
            return None;
        }
        let live = lock(&self.live);
        let identity = live.by_key.get(&worn.key).filter(|i| i.generation == worn.generation)?;
        identity.jar.header(url).and_then(|value| value.to_str().ok().map(str::to_owned))
    }

    /// Count an answer to `worn` that was not a block; whether it was the identity's
    /// first (or the identity is gone).
    pub(crate) fn answered(&self, worn: &SentAs) -> bool {
        let mut live = lock(&self.live);
        let Some(identity) = live.by_key.get_mut(&worn.key).filter(|i| i.generation == worn.generation)
        else {
            return true;
        };
        identity.clean = identity.clean.saturating_add(1);
        identity.clean == 1
    }

    /// Retire the identity `worn`, cookies and agent with it, if it is still its task's;
    /// requests in flight on it retire nothing twice. Whether it was retired, and then
    /// how many answers it had had without a block: a block that came with use, which a
    /// fresh identity may not meet.
    pub(crate) fn retire(&self, worn: &SentAs) -> Option<u32> {
        let mut live = lock(&self.live);
        let clean = live.by_key.get(&worn.key).filter(|i| i.generation == worn.generation).map(|i| i.clean);
        if clean.is_some() {
            live.by_key.remove(&worn.key);
            live.changed.insert(worn.key.clone());
            tracing::debug!(target: "spiderling", identity = %worn.key, "blocked: the identity is retired \
                with its cookies");
        }
        clean
    }

    /// The identities made, changed or retired since the last call, if any, with `jars`:
    /// what a state file's checkpoint writes (only those, so a crawl of many hosts does not
    /// write every jar at every checkpoint); and the hosts that refused the plain client
    /// since, which a fleet's checkpoint sends too.
    pub(crate) fn changes(&self, jars: bool) -> Option<IdentityChanges> {
        let mut live = lock(&self.live);
        if live.changed.is_empty() && live.refusing_since.is_empty() {
            return None;
        }
        let refusing = std::mem::take(&mut live.refusing_since).iter().map(|h| h.to_string()).collect();
        let mut changes = IdentityChanges { refusing, ..IdentityChanges::default() };
        if !jars {
            live.changed.clear();
            return Some(changes);
        }
        for key in std::mem::take(&mut live.changed) {
            let Some(identity) = live.by_key.get(&key) else {
                changes.gone.push(key.to_string());
                continue;
            };
            match identity.jar.to_json() {
                Ok(cookies) => {
                    let agent = match identity.profile {
                        Some(profile) => Some(profile.agent()),
                        None => identity.agent.and_then(|a| self.agents.name(a)).map(str::to_owned),
                    };
                    changes.saved.push(SavedIdentity { key: key.to_string(), agent, cookies });
                }
                Err(problem) => tracing::warn!(target: "spiderling", identity = %key, "{problem}"),
            }
        }
        Some(changes)
    }

    /// The crawl forgot the host `host` (`scheme://name:port`), idle: its identity goes
    /// too when it holds no cookie, as one made anew would be the same but for its agent.
    /// One with cookies stays, a session the site may still know; so do a sticky lane's
    /// and a rule's browser profile's, and what the host taught (its budget, a refusal).
    pub(crate) fn forget_host(&self, host: &str) {
        let key: Arc<str> = Arc::from(format!("host:{host}"));
        let mut live = lock(&self.live);
        let Live { by_key, changed, .. } = &mut *live;
        if by_key.get(&key).is_some_and(|identity| identity.jar.is_empty()) {
            // Nothing to save of it: a state file that kept it resumes an empty jar, as
            // good as none.
            by_key.remove(&key);
            changed.remove(&key);
        }
    }

    /// Take up the identities a state file saved: each keeps its jar, and its agent when
    /// that agent is still among `user_agents`.
    pub(crate) fn resume(&self, saved: Vec<SavedIdentity>) {
        let mut live = lock(&self.live);
        let Live { by_key, next_generation, rng, .. } = &mut *live;
        for SavedIdentity { key, agent, cookies } in saved {
            let jar = match Jar::from_json(&cookies) {
                Ok(jar) => jar,
                Err(problem) => {
                    tracing::warn!(target: "spiderling", identity = %key, "{problem}: it starts afresh");
                    continue;
                }
            };
            *next_generation += 1;
            // An impersonating identity keeps its browser, when the crawl or its rule (the
            // key's `#PROFILE`) still impersonates.
            let rules = key.rsplit_once('#').is_some_and(|(_, wire)| Impersonate::parse(wire).is_ok());
            let impersonating = self.impersonate != Impersonate::None || rules;
            let profile = agent.as_deref().and_then(Profile::of_agent).filter(|_| impersonating);
            let agent = agent
                .and_then(|agent| self.agents.find(&agent))
                .or_else(|| (self.agents.len() > 0).then(|| rng.random_range(0..self.agents.len())))
                .filter(|_| profile.is_none());
            let host = Arc::from(host_of_key(&key));
            by_key.insert(
                Arc::from(key),
                Identity { generation: *next_generation, agent, profile, jar, clean: 0, host },
            );
        }
    }
}

/// `user_agents` and the lines of `user_agents_file`, in that order.
fn user_agents(config: &Config) -> Result<Vec<String>, Error> {
    let mut agents = config.user_agents.clone();
    if let Some(path) = &config.user_agents_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("user_agents_file {}: {e}", path.display())))?;
        let lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        agents.extend(lines.map(str::to_owned));
    }
    Ok(agents)
}

/// A request's task, or else its host.
fn identity_key(request: &Request, sticky: bool) -> Arc<str> {
    let task = if sticky { request.sticky_task() } else { request.session_key().cloned() };
    match task {
        Some(task) => Arc::from(format!("task:{task}")),
        None => host_key(request.url())
            .map_or_else(|| Arc::from("host:"), |host| Arc::from(format!("host:{host}"))),
    }
}

/// The host origin an identity's key names: a host's own (`host:ORIGIN`) or a slot's
/// (`task:lane-N@ORIGIN`); none for a task's (a session key), whose requests may go
/// anywhere, and which the spider pinned on purpose: no budget replaces it. A rule's
/// browser profile follows as `#PROFILE`, so its identities have a budget of their own.
fn host_of_key(key: &str) -> &str {
    match key.strip_prefix("host:") {
        Some(host) => host,
        None if key.starts_with("task:lane-") => key.split_once('@').map_or("", |(_, host)| host),
        None => "",
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderValue, SET_COOKIE};

    use super::*;

    fn answer(line: &'static str) -> HeaderMap {
        HeaderMap::from_iter([(SET_COOKIE, HeaderValue::from_static(line))])
    }

    #[test]
    fn a_retired_identity_takes_its_cookies_along() {
        let identities = Identities::new(&Config::new("x")).unwrap();
        let request = Request::get("http://shop.example/a").unwrap();
        let first = identities.wear(&request, None);
        assert!(first.headers.get(COOKIE).is_none());
        assert_eq!(identities.receive(&first, request.url(), &answer("sid=1")), 1);
        assert_eq!(identities.wear(&request, None).headers[COOKIE], "sid=1");
        assert_eq!(identities.retire(&first), Some(0));
        assert_eq!(identities.retire(&first), None, "retired once");
        let fresh = identities.wear(&request, None);
        assert!(fresh.headers.get(COOKIE).is_none());
        assert_eq!(
            identities.receive(&first, request.url(), &answer("late=1")),
            0,
            "too late for the old one"
        );
    }

    #[test]
    fn an_identity_is_replaced_when_it_has_used_its_hosts_budget() {
        let identities = Identities::new(&Config::new("x")).unwrap();
        let request = Request::get("http://shop.example/a").unwrap();
        let other_host = Request::get("http://other.example/a").unwrap();
        // Three identities blocked after 4, 5 and 9 clean answers: a budget of 5.
        for clean in [4, 9, 5] {
            let worn = identities.wear(&request, None);
            assert!(!worn.renewed, "no budget yet");
            for _ in 0..clean {
                identities.answered(&worn);
            }
            assert_eq!(identities.retire(&worn), Some(clean));
            identities.budget_spent(&worn, clean);
        }
        let worn = identities.wear(&request, None);
        for _ in 0..4 {
            identities.answered(&worn);
            assert_eq!(identities.wear(&request, None).generation, worn.generation, "under the budget");
        }
        identities.answered(&worn);
        let next = identities.wear(&request, None);
        assert!(next.renewed && next.generation != worn.generation, "replaced at 5 answers");
        // Another host has no budget of its own yet.
        let elsewhere = identities.wear(&other_host, None);
        for _ in 0..20 {
            identities.answered(&elsewhere);
        }
        assert!(!identities.wear(&other_host, None).renewed);
    }

    #[test]
    fn only_what_changed_is_saved_and_a_retired_identity_is_gone() {
        let identities = Identities::new(&Config::new("x")).unwrap();
        let (a, b) = (Request::get("http://a.example/").unwrap(), Request::get("http://b.example/").unwrap());
        let worn = identities.wear(&a, None);
        identities.wear(&b, None);
        assert_eq!(identities.changes(true).unwrap().saved.len(), 2, "both made");
        assert_eq!(identities.changes(true), None, "nothing since");
        identities.receive(&worn, a.url(), &answer("sid=1"));
        let changes = identities.changes(true).unwrap();
        assert_eq!((changes.saved.len(), changes.saved[0].key.as_str()), (1, "host:http://a.example:80"));
        identities.retire(&worn);
        assert_eq!(identities.changes(true).unwrap().gone, ["host:http://a.example:80"]);
    }

    #[test]
    fn tasks_and_hosts_have_identities_of_their_own() {
        let identities = Identities::new(&Config::new("x")).unwrap();
        let a = Request::get("http://shop.example/").unwrap().with_session("a");
        let worn = identities.wear(&a, None);
        identities.receive(&worn, a.url(), &answer("sid=a"));
        let b = Request::get("http://shop.example/").unwrap().with_session("b");
        assert!(identities.wear(&b, None).headers.get(COOKIE).is_none());
        let host = Request::get("http://shop.example/").unwrap();
        assert!(identities.wear(&host, None).headers.get(COOKIE).is_none());
    }

    #[test]
    fn no_cookies_when_turned_off_and_seeds_when_given() {
        let off = Identities::new(&Config::new("x").cookies(false)).unwrap();
        let request = Request::get("http://shop.example/").unwrap();
        let worn = off.wear(&request, None);
        assert_eq!(off.receive(&worn, request.url(), &answer("sid=1")), 0);
        assert!(off.wear(&request, None).headers.get(COOKIE).is_none());
        let seeded =
            Identities::new(&Config::new("x").seed_cookie("http://shop.example/", "login=yes")).unwrap();
        assert_eq!(seeded.wear(&request, None).headers[COOKIE], "login=yes");
    }

    #[test]
    fn in_auto_mode_a_refusal_makes_the_hosts_plain_identities_chromes() {
        let config = Config::new("x").sticky(true).impersonate(Impersonate::Auto);
        let identities = Identities::new(&config).unwrap();
        let lane = |n| {
            let mut request = Request::get("https://shop.example/").unwrap();
            request.lane = Some(n);
            request
        };
        let (first, second) = (identities.wear(&lane(0), None), identities.wear(&lane(1), None));
        assert!(first.profile.is_none() && second.profile.is_none(), "plain until refused");
        assert!(identities.refused_plain(&first, &lane(0)));
        assert!(!identities.refused_plain(&second, &lane(1)), "the host moved once");
        let again = identities.wear(&lane(1), None);
        assert!(again.profile.is_some_and(|p| p.browser == Browser::Chrome), "the other slot's identity too");
        assert!(again.headers["user-agent"].to_str().unwrap().contains("Chrome/"));
        // A crawl that does not climb keeps its plain identities.
        let plain = Identities::new(&Config::new("x")).unwrap();
        let worn = plain.wear(&lane(0), None);
        assert!(!plain.refused_plain(&worn, &lane(0)));
    }

    #[test]
    fn one_interstitial_is_no_refusal_of_the_plain_client_a_second_at_the_host_is() {
        let config = Config::new("x").sticky(true).impersonate(Impersonate::Auto);
        let identities = Identities::new(&config).unwrap();
        let page = |host: &str| Request::get(&format!("https://{host}/")).unwrap();
        let worn = identities.wear(&page("shop.example"), None);
        assert!(!identities.walled_plain(&worn, &page("shop.example")), "the first wall moves nothing");
        assert!(!identities.walled_plain(&worn, &page("other.example")), "nor another host's first");
        assert!(identities.walled_plain(&worn, &page("shop.example")), "a second at the host does");
    }
}
