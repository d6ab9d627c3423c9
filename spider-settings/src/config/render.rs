//! Setters for the rendering tier: which pages go through a browser, how long a render
//! may take, what the browser may fetch, and the pool of browsers.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;

impl Config {
    /// Which pages are rendered in headless Chromium before they are read (default
    /// [`Render::Never`](crate::Render)). [`Render::Auto`](crate::Render::Auto) reads the
    /// answer as sent first and renders the page only when it lacks the item's required
    /// fields or the links its rule follows, learning per rule which pages need it;
    /// [`Render::Always`](crate::Render::Always) renders every page. Every request the
    /// browser makes leaves through the crawl's own stack: the page's identity, route and
    /// rate ceiling. Needs spiderling's `render` feature and a Chromium (`CHROMIUM`, or
    /// `chromium` on the `PATH`).
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_settings::{Config, Render};
    ///
    /// let config = Config::new("shop").render(Render::Auto);
    /// assert_eq!(config.render, Render::Auto);
    /// ```
    #[must_use]
    pub fn render(mut self, mode: crate::Render) -> Self {
        self.render = mode;
        self
    }

    /// Time for one page's render, from its navigation to its last action (default 15 s);
    /// a render that runs out is read as it stands.
    #[must_use]
    pub fn render_timeout(mut self, timeout: Duration) -> Self {
        self.render_timeout = timeout;
        self
    }

    /// Let the browser fetch images, fonts and media (default false: refused and counted,
    /// since no item is read from them).
    #[must_use]
    pub fn render_resources(mut self, allow: bool) -> Self {
        self.render_resources = allow;
        self
    }

    /// Pages one browser renders at once (default 4); the crawl starts as many browsers as
    /// its concurrency needs, at most one per this many slots.
    #[must_use]
    pub fn browser_pages(mut self, pages: usize) -> Self {
        self.browser_pages = pages.max(1);
        self
    }

    /// Pages a browser renders before it is replaced by a fresh one (default 200), so its
    /// memory does not grow with the crawl.
    #[must_use]
    pub fn browser_recycle(mut self, pages: usize) -> Self {
        self.browser_recycle = pages.max(1);
        self
    }

    /// The resident memory, in MiB, of a browser's processes past which it is replaced
    /// once its pages are done (default 2048).
    #[must_use]
    pub fn browser_rss(mut self, mebibytes: u64) -> Self {
        self.browser_rss = mebibytes.max(1);
        self
    }

    /// A folder for a screenshot of each rendered page whose item never appeared (default
    /// none): `HOST-FINGERPRINT.png`.
    #[must_use]
    pub fn screenshot_failures(mut self, dir: impl Into<PathBuf>) -> Self {
        self.screenshot_failures = Some(dir.into());
        self
    }
}
