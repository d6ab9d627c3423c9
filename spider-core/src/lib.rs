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
mod block;
mod cache;
mod cause;
mod charset;
mod classify;
mod config;
mod content_type;
mod dashboard;
mod engine;
mod error;
mod export;
mod failures;
mod fetch;
mod fleet;
mod form;
mod frontier;
mod gauge;
mod hidden;
mod identity;
mod item;
mod json_field;
mod json_ld;
mod link_rules;
mod metrics;
mod non_page;
mod page;
mod parse;
mod probe;
mod progress;
mod proxy;
mod request;
mod retry;
mod rfc3339;
mod robots;
mod serve;
mod sitemap;
mod spider;
mod start;
mod state;
mod stats;
mod stored_headers;
mod stored_request;
mod stream;
pub mod testing;
mod throttle;
mod timeline;

pub use async_trait::async_trait;
pub use block::Answer;
pub use classify::DEFAULT_RETRY_STATUSES;
pub use config::{Config, DEFAULT_USER_AGENT};
pub use engine::Crawler;
pub use error::{BoxError, Error, Result};
pub use fleet::{FleetCrawl, FleetReport, FleetStatus, FleetTotals, FleetWorker, WorkerState};
pub use form::Form;
pub use frontier::{
    canonical_url, fingerprint, host_key, Enqueued, Fingerprint, Frontier, HostKey, MemoryFrontier, Ticket,
};
pub use gauge::{HostLive, Live, WINDOW};
pub use item::{ExtractError, ExtractErrorKind, FieldSource, Item};
pub use page::{Document, Page};
pub use parse::ParsePool;
pub use probe::{probe, ProbePlan, ProbeReport, ProbeStep};
pub use progress::{log_in_colour, LogWriter};
pub use proxy::{GatewayTraffic, ProxySpend, Route, DEFAULT_USER_TEMPLATE};
pub use request::{Request, MAX_REQUEST_BODY};
pub use robots::Robots;
pub use spider::{Cx, Spider, SpiderConfig};
pub use start::Start;
pub use state::{RunCounts, StateFrontier, StateHost, StateOutput, StateReport, StateRun, SCHEMA_VERSION};
pub use stats::{CrawlStatus, Summary};
pub use throttle::{DelayRange, RateCeiling};
pub use {reqwest, scraper, url};
