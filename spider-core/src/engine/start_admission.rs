//! The start hook's admission: its requests keep to the crawl's scope as every request
//! does, within `allowed_domains` and allowed by their host's robots.txt (unless
//! `obey_robots = false`), which is fetched the first time an origin is asked; and to
//! its politeness: at most `per_host` of a host at once, `delay` (or robots.txt's
//! Crawl-delay, if longer) between the starts at a host, and the crawl's rate ceiling,
//! whose gate the dispatcher's admission takes over afterwards, with the robots.txt read.
//! The hook runs before the dispatcher, so this is its own, with the same rules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

use crate::error::Error;
use crate::request::host::{host_key, HostKey};
use crate::request::Request;
use crate::schedule::frontier::Scope;
use crate::schedule::robots::{robots_url, Robots, RobotsRules};
use crate::schedule::throttle::{self, RateGate};
use crate::spider::start::{StartAdmission, Turn};
use crate::wire::{Exchange, Judge};
use spider_settings::Config;

pub(super) struct HookAdmission<'a> {
    exchange: &'a Exchange,
    config: &'a Config,
    scope: Scope,
    /// The robots.txt of each origin asked, by its robots.txt URL.
    robots: Mutex<HashMap<Url, Arc<Robots>>>,
    /// Each host's slots and when its next request may start.
    hosts: Mutex<HashMap<HostKey, HostTurns>>,
    /// The crawl's rate ceiling, when it has one of its own (a fleet's is in Redis).
    rate: Mutex<Option<RateGate>>,
    rng: Mutex<SmallRng>,
}

/// One host's turns.
struct HostTurns {
    slots: Arc<Semaphore>,
    next_start: Instant,
}

impl<'a> HookAdmission<'a> {
    pub(super) fn new(exchange: &'a Exchange, config: &'a Config, rate: Option<RateGate>) -> Self {
        HookAdmission {
            exchange,
            config,
            scope: Scope::new(&config.allowed_domains),
            robots: Mutex::default(),
            hosts: Mutex::default(),
            rate: Mutex::new(rate),
            rng: Mutex::new(SmallRng::from_os_rng()),
        }
    }

    /// What the crawl takes over: the rate gate, with what the hook spent of it, and the
    /// robots.txt the hook read that answered, by host.
    pub(super) fn into_crawl(self) -> (Option<RateGate>, Vec<(HostKey, RobotsRules)>) {
        let rate = self.rate.into_inner().unwrap_or_else(|e| e.into_inner());
        let robots = self.robots.into_inner().unwrap_or_else(|e| e.into_inner());
        let answered = robots.into_values().filter_map(Arc::into_inner).filter_map(|robots| {
            let host = host_key(robots.url())?;
            robots.unavailable().is_none().then(|| (host, robots.into_rules()))
        });
        (rate, answered.collect())
    }

    fn robots(&self) -> MutexGuard<'_, HashMap<Url, Arc<Robots>>> {
        self.robots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The turns of host `key`, met now if not before: a host is never forgotten.
    fn with_host<T>(&self, key: &HostKey, f: impl FnOnce(&mut HostTurns, Instant) -> T) -> T {
        let now = Instant::now();
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        let host = hosts.entry(key.clone()).or_insert_with(|| HostTurns {
            slots: Arc::new(Semaphore::new(self.config.per_host.max(1))),
            next_start: now,
        });
        f(host, now)
    }

    /// Wait for a turn at `url`'s host: one of its `per_host` slots, its pause since the
    /// last start (`delay`, or `crawl_delay` if longer), then a pass of the rate gate.
    async fn turn(&self, url: &Url, crawl_delay: Duration) -> Turn {
        let key = host_key(url)?;
        let slots = self.with_host(&key, |host, _| Arc::clone(&host.slots));
        // Never closed: a slot always comes.
        let slot = slots.acquire_owned().await.ok();
        loop {
            let due = self.with_host(&key, |host, now| {
                if host.next_start > now {
                    return Some(host.next_start);
                }
                let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
                host.next_start = now + throttle::pause(&self.config.delay, crawl_delay, &mut *rng);
                None
            });
            match due {
                Some(due) => tokio::time::sleep_until(due).await,
                None => break,
            }
        }
        loop {
            let passed = match self.rate.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                Some(gate) => gate.try_pass(Instant::now()),
                None => Ok(()),
            };
            match passed {
                Ok(()) => break,
                Err(due) => tokio::time::sleep_until(due).await,
            }
        }
        slot
    }
}

#[async_trait::async_trait]
impl StartAdmission for HookAdmission<'_> {
    async fn admit(&self, request: &Request) -> Result<Turn, Error> {
        let url = request.url();
        let refused = |why: &str| Err(Error::NotAllowed { url: url.clone(), why: why.to_owned() });
        if !self.scope.allows(url) {
            return refused("outside `allowed_domains`");
        }
        if !self.config.obey_robots {
            return Ok(self.turn(url, Duration::ZERO).await);
        }
        let known = robots_url(url).and_then(|at| self.robots().get(&at).cloned());
        let robots = match known {
            Some(robots) => robots,
            None => {
                let turn = self.turn(url, Duration::ZERO).await;
                let (robots, _) =
                    Robots::fetch_through(self.exchange, Judge::Nobody, self.config, url).await?;
                drop(turn);
                let robots = Arc::new(robots);
                self.robots().insert(robots.url().clone(), Arc::clone(&robots));
                robots
            }
        };
        if robots.allows(url) {
            return Ok(self.turn(url, robots.crawl_delay().unwrap_or_default()).await);
        }
        match robots.unavailable() {
            Some(reason) => refused(&format!("its robots.txt could not be had ({reason})")),
            None => refused("its robots.txt disallows it (`obey_robots = false` to fetch it anyway)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_outside_the_crawls_domains_is_refused_before_anything_is_sent() {
        let config = Config::new("hook").allowed_domain("shop.example").obey_robots(false);
        let exchange = Exchange::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let admission = HookAdmission::new(&exchange, &config, None);
        let elsewhere = Request::get("https://tracker.example/login").unwrap_or_else(|e| panic!("{e}"));
        let refused = admission.admit(&elsewhere).await.map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err("the crawl may not fetch https://tracker.example/login: outside `allowed_domains`".into())
        );
        // Inside them, and told not to read robots.txt: sent.
        let login = Request::get("https://www.shop.example/login").unwrap_or_else(|e| panic!("{e}"));
        assert!(admission.admit(&login).await.is_ok());
    }

    fn get(url: &str) -> Request {
        Request::get(url).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test(start_paused = true)]
    async fn a_hosts_requests_wait_for_a_slot_and_its_delay_and_other_hosts_do_not() {
        let config = Config::new("hook").obey_robots(false).per_host(1).delay(Duration::from_secs(2));
        let exchange = Exchange::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let admission = HookAdmission::new(&exchange, &config, None);
        let start = Instant::now();
        let first = admission.admit(&get("https://a.example/1")).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Instant::now(), start, "the first goes at once");
        let second = get("https://a.example/2");
        let waited = tokio::time::timeout(Duration::from_secs(30), admission.admit(&second));
        assert!(waited.await.is_err(), "per_host = 1: not while the first is out");
        let other = admission.admit(&get("https://b.example/1")).await;
        assert!(other.is_ok(), "another host's slot and pause are its own");
        drop(first);
        let before = Instant::now();
        let second = admission.admit(&second).await;
        assert!(second.is_ok());
        assert_eq!(Instant::now(), before, "its delay passed while it waited for the slot");
        drop(second);
        let before = Instant::now();
        assert!(admission.admit(&get("https://a.example/3")).await.is_ok());
        assert_eq!(Instant::now() - before, Duration::from_secs(2), "`delay` after the second's start");
    }

    #[tokio::test(start_paused = true)]
    async fn the_hooks_requests_spend_the_crawls_rate_ceiling_first() {
        let config = Config::new("hook").obey_robots(false).rpm(120);
        let exchange = Exchange::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let gate = config.rate.and_then(RateGate::new);
        let admission = HookAdmission::new(&exchange, &config, gate);
        let start = Instant::now();
        for (n, host) in ["a", "b", "c"].into_iter().enumerate() {
            let turn = admission.admit(&get(&format!("https://{host}.example/"))).await;
            assert!(turn.is_ok());
            assert_eq!(Instant::now() - start, Duration::from_millis(500) * n as u32, "120 a minute, even");
        }
        let mut gate = admission.into_crawl().0.unwrap_or_else(|| panic!("the crawl's gate"));
        let due = gate.try_pass(Instant::now()).err().unwrap_or_else(|| panic!("spent by the hook"));
        assert_eq!(due - start, Duration::from_millis(1500), "the crawl's first request comes after them");
    }
}
