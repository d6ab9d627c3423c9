//! The Spiderling runtime: what `#[derive(Spider)]` turns into a crawl.
//!
//! The crate is in layers, each a module that uses only those below it (a test reads
//! every path to keep it so); the settings of a crawl, [`Config`], are a crate of their
//! own below all of them (`spider-settings`):
//!
//! ```text
//! engine     the dispatcher (hosts, admission, commit) and one task per request   ┐ probe
//! schedule   frontier, throttle, robots.txt, state file, fleet, HTTP cache        │
//! observe    the counter table, gauges, summary, metrics, dashboard, progress     │
//! spider     Spider, Cx, the start hook, link rules                               │
//! extract    Page, Document, items, the streaming engine, forms, sitemaps         │
//! sinks      the output file, the failures file                                   │
//! wire       the Exchange: route, identity, transport, 407, cookies, block verdict│
//! request    Request, canonical URL, host key, fingerprint, identities            │
//! error      Error, the cause of a transport error, why a request was given up    ┘
//! ```
//!
//! One request's path: the frontier takes it (canonical URL, fingerprint, scope, depth),
//! the dispatcher admits it when its host has a free slot past its pause and the rate
//! ceiling a token, a task sends it through the exchange (`wire`: its route and
//! identity, the answer judged), a 2xx goes to [`Spider::parse`] (HTML on the parse pool),
//! and the dispatcher writes its items, files its failure or queues its retry, and tells
//! the frontier, committed together with a durable frontier's checkpoint.
//!
//! The cargo features `state` (SQLite: the state file, the HTTP cache), `fleet` (Redis)
//! and `observe` (the crawl's HTTP server, the report, the status line) are on by default;
//! without one, a setting that needs it is refused with an error that names it.

#[doc(hidden)]
pub mod __private;
mod engine;
mod error;
mod extract;
mod inspect;
mod observe;
mod probe;
mod request;
mod schedule;
mod sinks;
mod spider;
pub mod testing;
mod wire;

pub use async_trait::async_trait;
pub use engine::Crawler;
pub use error::cause::Cause;
pub use error::extract::{ExtractError, ExtractErrorKind, FieldSource};
pub use error::reason::{Reason, StatusClass};
pub use error::{BoxError, Error, Result};
pub use extract::document::{selector, Document};
pub use extract::form::Form;
pub use extract::item::{Dropped, Item, ItemKey};
pub use extract::page::Page;
#[cfg(feature = "fleet")]
pub use inspect::{FleetCrawl, FleetReport, FleetStatus, FleetWorker, WorkerState};
#[cfg(feature = "state")]
pub use inspect::{StateHost, StateOutput, StateReport, StateRun};
pub use observe::counters::Counts;
pub use observe::gauge::{HostLive, Live, WINDOW};
pub use observe::summary::{CrawlStatus, Summary};
pub use probe::{probe, ProbePlan, ProbeReport, ProbeStep};
pub use request::rendering::Rendering;
pub use request::Request;
pub use request::MAX_REQUEST_BODY;
#[cfg(feature = "fleet")]
pub use schedule::fleet::FleetOutput;
#[cfg(feature = "fleet")]
#[doc(hidden)]
pub use schedule::fleet::{fill as fill_fleet, prefix as fleet_prefix, Drained, FillStep};
pub use schedule::robots::Robots;
pub use spider::pipeline::{Pipeline, Record, Stages, Verdict};
pub use spider::start::Start;
pub use spider::{Cx, Spider, SpiderConfig};
#[cfg(feature = "fleet")]
#[doc(hidden)]
pub use spider_settings::RedisAddress;
pub use spider_settings::{
    redact_url, rfc3339, Config, ConfigError, Impersonate, Politeness, Render, DEFAULT_RETRY_STATUSES,
    DEFAULT_USER_AGENT, DEFAULT_USER_TEMPLATE,
};
pub use wire::block::Answer;
#[cfg(feature = "render")]
pub use wire::render::process_tree_rss;
pub use wire::route::{GatewayTraffic, ProxySpend, Route};
pub use {reqwest, scraper, url};

// What the benchmarks, the tests and the `spiderling` command reach below a spider's view:
// the frontiers themselves, fingerprints and host keys, and the log writer of `cli`.
#[doc(hidden)]
pub use observe::progress::{log_in_colour, LogWriter};
#[doc(hidden)]
pub use request::canonical::{canonical_url, fingerprint, Fingerprint};
#[doc(hidden)]
pub use request::host::{host_key, HostKey};
#[doc(hidden)]
pub use request::Ticket;
#[doc(hidden)]
pub use schedule::frontier::{Enqueued, Frontier, MemoryFrontier};
#[doc(hidden)]
#[cfg(feature = "state")]
pub use schedule::state::StateFrontier;
