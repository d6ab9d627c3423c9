//! One request of the probe: the next start URL sent through the crawl's own exchange
//! (route, block rules, identity with its agent and cookie jar), and its fate: answered,
//! blocked or failed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::request::Request;
use crate::wire::classify::retry_after;
use crate::wire::route::Route;
use crate::wire::{Exchange, Exchanged, Judge};

/// What the probe sends on: the crawl's own exchange (route, identity, block rules).
pub(super) struct Target {
    pub(super) exchange: Exchange,
    pub(super) requests: Vec<Request>,
    /// The next start URL to send, in turn.
    pub(super) turn: AtomicUsize,
}

impl Target {
    /// Send the next start URL once and judge the answer. The identity keeps its cookies
    /// as in the crawl, so the probe measures what the crawl would meet: a wall served with
    /// 200 that hands out a cookie (a consent interstitial) is passed by sending it back,
    /// not a limit.
    pub(super) async fn send(self: Arc<Self>) -> Result<Sample, Error> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) % self.requests.len();
        let request = &self.requests[turn];
        let answered = match self.exchange.send(request, Route::Auto, None, Judge::Measure).await? {
            Exchanged::Answer(answered) => answered,
            Exchanged::Failed(error) => return Err(error),
        };
        let status = answered.fetched.status;
        let outcome = if answered.blocked {
            Outcome::Blocked { status: status.as_u16(), retry_after: retry_after(&answered.fetched.headers) }
        } else if status.is_server_error() {
            Outcome::Failed(status.as_u16().to_string())
        } else {
            Outcome::Answered
        };
        Ok(Sample { latency: answered.latency, outcome })
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
        tracing::debug!(target: "spiderling", %error, "probe request failed");
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
