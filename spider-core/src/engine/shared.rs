//! What every request task reads: the spider, the exchange, the parse pool, the encoder
//! and the crawl's settings the tasks need, made once as the crawl opens.

#[cfg(feature = "fleet")]
use std::sync::Arc;

#[cfg(feature = "render")]
use tokio::sync::mpsc;

#[cfg(feature = "render")]
use super::protocol::Ask;
use super::tier::Tier;
use crate::extract::parse_pool::ParsePool;
use crate::observe::counters::Tally;
use crate::schedule::frontier::Scope;
use crate::schedule::item_keys::KeptKeys;
use crate::sinks::Encoder;
use crate::spider::pipeline::Sort;
use crate::spider::Spider;
use crate::wire::Exchange;

/// What every request task reads.
pub(super) struct Shared<S: Spider> {
    pub(super) spider: S,
    /// Every request's way out: route, identity, transport, block verdict.
    pub(super) exchange: Exchange,
    /// Which pages a browser renders, and the browsers.
    pub(super) render: Tier,
    /// Where the browsers' requests ask the dispatcher for admission.
    #[cfg(feature = "render")]
    pub(super) asks: mpsc::UnboundedSender<Ask>,
    /// In a fleet under a rate ceiling, the starts its browsers' requests wait for (the
    /// dispatcher's admission has no rate token there, the fleet's leases do), and those
    /// of leased requests leaving too late for the start their lease gave.
    #[cfg(feature = "fleet")]
    pub(super) spare_starts: Option<Arc<crate::schedule::fleet::SpareStarts>>,
    pub(super) pool: ParsePool,
    /// Encodes each page's items for the items files and tables, on the page's task.
    pub(super) encoder: Option<Encoder>,
    /// The stages each item goes through before it is encoded.
    pub(super) pipeline: Box<dyn Sort<S::Item>>,
    /// The keys of the items kept, so that one item is kept per key.
    pub(super) kept_keys: KeptKeys,
    /// Whether answers are kept in the HTTP cache: tasks prepare them for it.
    pub(super) caching: bool,
    /// With a WARC archive, the user agent its request records name: tasks prepare
    /// each page's records.
    pub(super) archive: Option<String>,
    /// Whether links a person cannot see are followed (`Config::follow_hidden`).
    pub(super) follow_hidden: bool,
    pub(super) tally: Tally,
    pub(super) robots_token: String,
    /// The allowed domains: a robots.txt redirect leaves them no more than a page does.
    pub(super) scope: Scope,
    pub(super) max_redirects: u8,
    pub(super) retry_statuses: Vec<u16>,
    /// `sitemap_since`: sitemap URLs modified before it are skipped.
    pub(super) sitemap_since: Option<crate::extract::sitemap::Since>,
}
