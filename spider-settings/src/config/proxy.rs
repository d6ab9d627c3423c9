//! Setters for the route of each request: proxy tiers, exit country, sticky sessions, the
//! gateway username and the proxy spend.

use super::{Config, RouteSpec};
#[cfg(doc)]
use crate::DEFAULT_USER_TEMPLATE;

impl Config {
    /// How requests leave (default: directly). A route is tiers from cheapest to dearest
    /// separated by `>`; each tier is `direct` or a pool of gateways separated by `,`,
    /// each `env:VAR` (the gateway URL, or a comma-separated list of them, in the
    /// environment variable `VAR`) or a gateway URL. A host starts on the first tier,
    /// climbs one when it keeps blocking there, and probes back down later. Credentials
    /// belong in the environment, not in code: `#[spider(proxy = ..)]` refuses a URL with
    /// them.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_settings::Config;
    ///
    /// std::env::set_var("RESIDENTIAL_PROXY", "http://acct:secret@gate.example:7777");
    /// let config = Config::new("shop").proxy("direct > env:RESIDENTIAL_PROXY").geo("us").sticky(true);
    /// assert!(config.validate().is_ok());
    /// assert!(!config.to_string().contains("secret"));
    /// ```
    #[must_use]
    pub fn proxy(mut self, route: impl Into<String>) -> Self {
        self.proxy = Some(RouteSpec(route.into()));
        self
    }

    /// Exit country of proxied requests, a two-letter code sent in the gateway username
    /// (default: none, the gateway's choice).
    #[must_use]
    pub fn geo(mut self, country: impl Into<String>) -> Self {
        self.geo = Some(country.into().to_ascii_lowercase());
        self
    }

    /// Exit country for hosts matching `pattern`: `*.de` for every host ending in `.de`, or
    /// one host name. The first matching rule wins over [`geo`](Self::geo)
    /// (default: none).
    #[must_use]
    pub fn geo_rule(mut self, pattern: impl Into<String>, country: impl Into<String>) -> Self {
        self.geo_rules.push((pattern.into().to_ascii_lowercase(), country.into().to_ascii_lowercase()));
        self
    }

    /// Sticky sessions: each host slot is one identity (a gateway session, which the
    /// provider pins to one exit, with its own cookie jar and agent) carrying one request
    /// at a time, so a crawl spreads over as many exits as it has slots, and an identity's
    /// cookies are settled by each answer before its next request. A request given a
    /// session key (`Request::with_session`, inherited by its follow-ups) goes out as its
    /// task's identity instead, wherever it runs: a checkout that needs one exit from the
    /// first step to the last. A blocked session is replaced. Without it, every proxied
    /// request opens a new connection, which a rotating gateway gives a new exit (default
    /// false). Sessions are remembered for the whole crawl, one small entry per slot or
    /// task.
    #[must_use]
    pub fn sticky(mut self, sticky: bool) -> Self {
        self.sticky = sticky;
        self
    }

    /// The gateway username, with `{user}` (from the gateway URL), `{geo}` and
    /// `{session}`; a part without a value is left out with the text before it
    /// (default [`DEFAULT_USER_TEMPLATE`]).
    #[must_use]
    pub fn proxy_user_template(mut self, template: impl Into<String>) -> Self {
        self.proxy_user_template = template.into();
        self
    }

    /// Price of a GB through the gateways, to report the spend (default 0).
    #[must_use]
    pub fn proxy_price_per_gb(mut self, price: f64) -> Self {
        self.proxy_price_per_gb = price;
        self
    }

    /// Stop admitting requests once the proxy spend reaches this amount, at
    /// [`proxy_price_per_gb`](Self::proxy_price_per_gb); what is in flight finishes, the
    /// items are flushed and the crawl ends with `CrawlStatus::BudgetReached`
    /// (default: no budget).
    #[must_use]
    pub fn proxy_budget(mut self, budget: f64) -> Self {
        self.proxy_budget = Some(budget);
        self
    }
}
