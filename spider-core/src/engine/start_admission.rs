//! The start hook's admission: its requests keep to the crawl's scope as every request
//! does, within `allowed_domains` and allowed by their host's robots.txt (unless
//! `obey_robots = false`), which is fetched the first time an origin is asked. The hook
//! runs before the dispatcher, so this is its own, with the same rules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use url::Url;

use crate::error::Error;
use crate::request::Request;
use crate::schedule::frontier::Scope;
use crate::schedule::robots::{robots_url, Robots};
use crate::spider::start::StartAdmission;
use crate::wire::{Exchange, Judge};
use spider_settings::Config;

pub(super) struct HookAdmission<'a> {
    exchange: &'a Exchange,
    config: &'a Config,
    scope: Scope,
    /// The robots.txt of each origin asked, by its robots.txt URL.
    robots: Mutex<HashMap<Url, Arc<Robots>>>,
}

impl<'a> HookAdmission<'a> {
    pub(super) fn new(exchange: &'a Exchange, config: &'a Config) -> Self {
        HookAdmission {
            exchange,
            config,
            scope: Scope::new(&config.allowed_domains),
            robots: Mutex::default(),
        }
    }

    fn robots(&self) -> MutexGuard<'_, HashMap<Url, Arc<Robots>>> {
        self.robots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl StartAdmission for HookAdmission<'_> {
    async fn admit(&self, request: &Request) -> Result<(), Error> {
        let url = request.url();
        let refused = |why: &str| Err(Error::NotAllowed { url: url.clone(), why: why.to_owned() });
        if !self.scope.allows(url) {
            return refused("outside `allowed_domains`");
        }
        if !self.config.obey_robots {
            return Ok(());
        }
        let known = robots_url(url).and_then(|at| self.robots().get(&at).cloned());
        let robots = match known {
            Some(robots) => robots,
            None => {
                let (robots, _) =
                    Robots::fetch_through(self.exchange, Judge::Nobody, self.config, url).await?;
                let robots = Arc::new(robots);
                self.robots().insert(robots.url().clone(), Arc::clone(&robots));
                robots
            }
        };
        if robots.allows(url) {
            return Ok(());
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
        let admission = HookAdmission::new(&exchange, &config);
        let elsewhere = Request::get("https://tracker.example/login").unwrap_or_else(|e| panic!("{e}"));
        let refused = admission.admit(&elsewhere).await.map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err("the crawl may not fetch https://tracker.example/login: outside `allowed_domains`".into())
        );
        // Inside them, and told not to read robots.txt: sent.
        let login = Request::get("https://www.shop.example/login").unwrap_or_else(|e| panic!("{e}"));
        assert!(admission.admit(&login).await.is_ok());
    }
}
