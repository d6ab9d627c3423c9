//! What the engine's unit tests build a crawl from: a spider that parses nothing and the
//! tasks' shared part of a crawl under a config, writing no file and sending nothing.

use std::sync::Arc;

use async_trait::async_trait;
use spider_settings::Config;

use super::shared::Shared;
use super::tier::Tier;
use crate::error::Error;
use crate::extract::page::Page;
use crate::extract::parse_pool::ParsePool;
use crate::observe::counters::Tally;
use crate::schedule::frontier::Scope;
use crate::schedule::item_keys::KeptKeys;
use crate::sinks::Encoder;
use crate::spider::{Cx, Spider, SpiderConfig};
use crate::wire::Exchange;

/// A spider whose pages the tests never parse.
pub(super) struct Unparsed(pub(super) Config);

impl SpiderConfig for Unparsed {
    fn config(&self) -> Config {
        self.0.clone()
    }
}

#[async_trait]
impl Spider for Unparsed {
    type Item = serde_json::Value;

    async fn parse(&self, _page: Page, _cx: &mut Cx<serde_json::Value>) -> crate::error::Result {
        Ok(())
    }
}

pub(super) fn or_panic<T>(result: Result<T, Error>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// The tasks' shared part of a crawl of [`Unparsed`] under `config`; with the `render`
/// feature, also where its browsers' requests would ask for admission.
pub(super) fn shared(config: &Config) -> Arc<Shared<Unparsed>> {
    #[cfg(feature = "render")]
    let (asks, _asked) = tokio::sync::mpsc::unbounded_channel();
    Arc::new(Shared {
        exchange: or_panic(Exchange::new(config)),
        render: Tier::new(config),
        #[cfg(feature = "render")]
        asks,
        #[cfg(feature = "fleet")]
        spare_starts: None,
        pool: or_panic(ParsePool::reading(1, false)),
        encoder: or_panic(Encoder::for_outputs(config)),
        pipeline: Box::new(Unparsed(config.clone()).pipeline()),
        kept_keys: KeptKeys::local([]),
        caching: false,
        archive: None,
        follow_hidden: false,
        tally: Tally::new(),
        robots_token: config.robots_token().to_owned(),
        scope: Scope::new(&config.allowed_domains),
        max_redirects: config.max_redirects,
        retry_statuses: config.retry_statuses.clone(),
        sitemap_since: None,
        spider: Unparsed(config.clone()),
    })
}
