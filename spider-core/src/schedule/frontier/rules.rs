//! What every frontier turns away before looking at its seen-set: other sites, and
//! requests deeper than `max_depth`.

use super::queue::Enqueued;
use super::scope::Scope;
use crate::request::Request;
use spider_settings::Config;

/// The allowed domains and the depth limit of a crawl.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    scope: Scope,
    max_depth: Option<u32>,
}

impl Rules {
    pub(crate) fn new(config: &Config) -> Self {
        Rules { scope: Scope::new(&config.allowed_domains), max_depth: config.max_depth }
    }

    /// Why `request` may not be queued, if it may not. In scope means http(s) with a
    /// host, so a request that passes has a host key.
    pub(crate) fn refuse(&self, request: &Request) -> Option<Enqueued> {
        if !self.scope.allows(request.url()) {
            return Some(Enqueued::OutOfScope);
        }
        if self.max_depth.is_some_and(|max| request.depth() > max) {
            return Some(Enqueued::TooDeep);
        }
        None
    }
}
