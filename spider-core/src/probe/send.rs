//! One request of the probe: the next start URL sent on the crawl's own route, fetcher,
//! block rules and identity (its agent and cookie jar), and its fate, answered, blocked or
//! failed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;
use crate::request::Request;
use crate::wire::block::{Answer, BlockRules};
use crate::wire::classify::retry_after;
use crate::wire::route::{Route, Router, Verdict};
use crate::wire::transport::Fetcher;

/// What the probe sends on: the crawl's own route, fetcher and block rules.
pub(super) struct Target {
    pub(super) router: Router,
    pub(super) fetcher: Fetcher,
    pub(super) rules: BlockRules,
    pub(super) requests: Vec<Request>,
    /// The next start URL to send, in turn.
    pub(super) turn: AtomicUsize,
}

impl Target {
    /// Send the next start URL once and judge the answer.
    pub(super) async fn send(self: Arc<Self>) -> Result<Sample, Error> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) % self.requests.len();
        let request = &self.requests[turn];
        let routed = self.router.route(request, Route::Auto)?;
        let refused = || Error::ProxyAuth { gateway: self.router.gateway_of(&routed).unwrap_or_default() };
        let sent = Instant::now();
        let fetched = self.fetcher.fetch(&routed, request).await;
        let latency = sent.elapsed();
        let outcome = match fetched {
            Ok(answer) if answer.status.as_u16() == 407 && routed.proxied() => return Err(refused()),
            Ok(answer) => {
                let status = answer.status;
                // The identity keeps its cookies as in the crawl, so the probe measures what
                // the crawl would meet: a wall served with 200 that hands out a cookie (a
                // consent interstitial) is passed by sending it back, not a limit.
                let kept = self.router.keep_cookies(&routed, request.url(), &answer.headers);
                let seen = Answer { status, headers: &answer.headers, body: &answer.body };
                let consent = status.is_success() && kept > 0;
                if self.rules.blocked(&seen) && !consent {
                    // Not settled: a block would move the host up a tier, and the probe
                    // measures one route.
                    Outcome::Blocked { status: status.as_u16(), retry_after: retry_after(&answer.headers) }
                } else {
                    self.router.settle(&routed, Verdict::Answered, answer.sent, answer.received);
                    match status.is_server_error() {
                        true => Outcome::Failed(status.as_u16().to_string()),
                        false => Outcome::Answered,
                    }
                }
            }
            Err(error) if routed.proxied() && error.is_proxy_auth() => return Err(refused()),
            Err(error) => {
                if error.is_connect() {
                    self.router.settle(&routed, Verdict::Unreachable, 0, 0);
                }
                return Err(error);
            }
        };
        Ok(Sample { latency, outcome })
    }
}

/// One request's fate.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sample {
    pub(super) latency: Duration,
    pub(super) outcome: Outcome,
}

impl Sample {
    /// A request that failed in transport, described in a word for the table.
    pub(super) fn failed(error: Error) -> Sample {
        let word = match &error {
            Error::Timeout { .. } => "timeout",
            error if error.is_connect() => "connect error",
            _ => "transport error",
        };
        tracing::debug!(%error, "probe request failed");
        Sample { latency: Duration::ZERO, outcome: Outcome::Failed(word.to_owned()) }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Answered,
    Blocked {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// A 5xx or a transport error, in a word.
    Failed(String),
}

impl Outcome {
    /// What went wrong, for the table; `None` for an answer.
    pub(super) fn trouble(&self) -> Option<String> {
        match self {
            Outcome::Answered => None,
            Outcome::Blocked { status, .. } => Some(status.to_string()),
            Outcome::Failed(word) => Some(word.clone()),
        }
    }
}
