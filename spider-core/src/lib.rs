//! The Spiderling runtime.
//!
//! A request travels through these stages, each a module:
//!
//! ```text
//! start URLs / Cx::follow
//!   → frontier   canonicalise, fingerprint, dedupe, allowed domains, depth   (frontier)
//!   → robots     each host's robots.txt fetched first and obeyed             (robots)
//!   → admission  host slot + politeness pause → global slot → rate token     (throttle)
//!   → route      direct or a gateway: tier, exit country, sticky session     (proxy)
//!   → fetch      one pooled client; timeout; body and decompression cap      (fetch)
//!   → block?     403/429, challenge pages, markers, the spider's verdict    (block)
//!   → classify   2xx parse · 3xx via frontier · slow down · retry · give up (classify)
//!   → retry?     deferred in the frontier, decorrelated-jitter backoff       (retry)
//!   → parse      Spider::parse; HTML work on a bounded rayon pool            (spider, page, parse)
//!   → export     JSONL / CSV / JSON, buffered, flushed at the end            (export)
//!   → failures   every request given up, with its reason                     (failures)
//!   → stats      counters, the final summary and stats file                  (stats)
//! ```
//!
//! The [`engine`](Crawler) ties them together with one dispatcher task that owns the
//! frontier and admission, and one task per request in flight.

#[doc(hidden)]
pub mod __private;
mod engine;
mod error;
mod extract;
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
pub use extract::document::Document;
pub use extract::form::Form;
pub use extract::item::Item;
pub use extract::page::Page;
pub use extract::pool::ParsePool;
pub use observe::counters::Counts;
pub use observe::gauge::{HostLive, Live, WINDOW};
pub use observe::progress::{log_in_colour, LogWriter};
pub use observe::summary::{CrawlStatus, Summary};
pub use probe::{probe, ProbePlan, ProbeReport, ProbeStep};
pub use request::canonical::{canonical_url, fingerprint, Fingerprint};
pub use request::host::{host_key, HostKey};
pub use request::{Request, Ticket, MAX_REQUEST_BODY};
#[cfg(feature = "fleet")]
pub use schedule::fleet::{FleetCrawl, FleetReport, FleetStatus, FleetWorker, WorkerState};
pub use schedule::frontier::{Enqueued, Frontier, MemoryFrontier};

pub use schedule::robots::Robots;
#[cfg(feature = "state")]
pub use schedule::state::{StateFrontier, StateHost, StateOutput, StateReport, StateRun, SCHEMA_VERSION};
pub use spider::start::Start;
pub use spider::{Cx, Spider, SpiderConfig};
pub use spider_settings::{
    Config, ConfigError, DelayRange, RateCeiling, DEFAULT_RETRY_STATUSES, DEFAULT_USER_AGENT,
    DEFAULT_USER_TEMPLATE,
};
pub use wire::block::Answer;
pub use wire::route::{GatewayTraffic, ProxySpend, Route};
pub use {reqwest, scraper, url};
