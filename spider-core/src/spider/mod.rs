//! What a user writes: a [`Spider`], and the [`Cx`] its `parse` fills.

pub(crate) mod pipeline;
pub(crate) mod rules;
pub(crate) mod start;

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use url::Url;

use crate::error::{Error, Result};
use crate::extract::form::Form;
use crate::extract::page::Page;
use crate::request::rendering::Rendering;
use crate::request::Request;
use crate::spider::pipeline::{Record, Stages};
use crate::spider::start::Start;
use crate::wire::block::Answer;
use crate::wire::route::Route;
use spider_settings::{Config, Impersonate};

/// A spider's settings. `#[derive(Spider)]` writes this from `#[spider(...)]`.
pub trait SpiderConfig {
    /// The crawl's settings, start URLs included.
    fn config(&self) -> Config;
}

/// A spider: what to do with each page.
///
/// `parse` runs on the async runtime; put CPU work (HTML parsing, selectors) inside
/// [`Page::html`], which runs on the parse pool. With `#[derive(Spider)]` and `rule(...)`s
/// (or the `item` and `follow` keys), the derive writes this impl too, and no parse code
/// is needed.
///
/// # Examples
///
/// A spider written by hand:
///
/// ```
/// use spider_core::{async_trait, Config, Cx, Page, Result, Spider, SpiderConfig};
///
/// #[derive(serde::Serialize)]
/// struct Title {
///     url: String,
///     title: Option<String>,
/// }
///
/// struct Titles;
///
/// impl SpiderConfig for Titles {
///     fn config(&self) -> Config {
///         Config::new("titles")
///             .start_url("https://books.example/")
///             .allowed_domain("books.example")
///     }
/// }
///
/// #[async_trait]
/// impl Spider for Titles {
///     type Item = Title;
///
///     async fn parse(&self, page: Page, cx: &mut Cx<Title>) -> Result {
///         let h1 = scraper::Selector::parse("h1").map_err(|e| e.to_string())?;
///         let a = scraper::Selector::parse("a").map_err(|e| e.to_string())?;
///         let (title, links) = page.html(move |doc| (doc.text(&h1), doc.links(&a))).await?;
///         cx.emit(Title { url: page.url().to_string(), title });
///         cx.follow_all(links);
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait Spider: SpiderConfig + Send + Sync + 'static {
    /// What the spider scrapes; written by the exporter.
    type Item: Serialize + Send + 'static;

    /// Handle one page: emit items, follow links. An error counts the page as failed
    /// and the crawl goes on.
    async fn parse(&self, page: Page, cx: &mut Cx<Self::Item>) -> Result;

    /// Runs once before the crawl, to log in or to find where to start: it can send
    /// requests through the crawl's client with [`Start::fetch`] (a login form read from
    /// the login page, filled in and posted) and queue the requests the crawl starts
    /// from with [`Start::queue`], beside the `start_urls`. An error stops the crawl
    /// before it begins. The default does nothing.
    ///
    /// The hook's requests go out at once, outside the crawl's admission (no robots.txt,
    /// no rate, no pause): keep them to the few a login needs. The cookies its answers
    /// set are every identity's, so the crawl starts signed in.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use spider_core::{async_trait, Config, Cx, Page, Request, Result, Spider, SpiderConfig, Start};
    /// # struct Members;
    /// # impl SpiderConfig for Members { fn config(&self) -> Config { Config::new("members") } }
    /// #[async_trait]
    /// impl Spider for Members {
    ///     type Item = ();
    ///
    ///     async fn start(&self, start: &mut Start<'_>) -> Result {
    ///         let login_page = start.fetch(Request::get("https://shop.example/login")?).await?;
    ///         let login = login_page.form("form#login").await?.set("user", "ann").set("password", "s3cret");
    ///         let welcome = start.fetch(login.into_request()?).await?;
    ///         if welcome.status() != 200 {
    ///             return Err(format!("login refused: {}", welcome.status()).into());
    ///         }
    ///         // The members' area the login redirected to, as the crawl's start.
    ///         start.queue(Request::new(welcome.url().clone()));
    ///         Ok(())
    ///     }
    ///
    ///     async fn parse(&self, page: Page, cx: &mut Cx<()>) -> Result {
    ///         Ok(())
    ///     }
    /// }
    /// ```
    async fn start(&self, start: &mut Start<'_>) -> Result {
        let _ = start;
        Ok(())
    }

    /// How `request` leaves this machine, for what the settings (`proxy`, `geo`,
    /// `geo_rules`) cannot say; robots.txt requests ask too. The default follows the
    /// settings. See [`Route`] for an example.
    fn route(&self, request: &Request) -> Route {
        let _ = request;
        Route::Auto
    }

    /// The browser profile `request` is sent with, where it is not the crawl's
    /// `impersonate`: a derived spider's `rule(..., impersonate = "chrome")` gives it to
    /// the requests the rule takes. Such requests wear identities of their own, of that
    /// profile. The default, `None`, sends every request as the settings say.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::{async_trait, Config, Cx, Impersonate, Page, Request, Result, Spider, SpiderConfig};
    ///
    /// struct Checkout;
    ///
    /// impl SpiderConfig for Checkout {
    ///     fn config(&self) -> Config {
    ///         Config::new("checkout").start_url("https://shop.example/")
    ///     }
    /// }
    ///
    /// #[async_trait]
    /// impl Spider for Checkout {
    ///     type Item = ();
    ///
    ///     async fn parse(&self, _: Page, _: &mut Cx<()>) -> Result {
    ///         Ok(())
    ///     }
    ///
    ///     // Only the guarded part of the shop needs a browser's wire.
    ///     fn impersonate(&self, request: &Request) -> Option<Impersonate> {
    ///         request.url().path().starts_with("/cart/").then_some(Impersonate::Chrome)
    ///     }
    /// }
    ///
    /// let cart = Request::get("https://shop.example/cart/1")?;
    /// assert_eq!(Checkout.impersonate(&cart), Some(Impersonate::Chrome));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    fn impersonate(&self, request: &Request) -> Option<Impersonate> {
        let _ = request;
        None
    }

    /// How the page of `request` is rendered, when the crawl renders it (`render`): where
    /// (`mode`, `None` for the crawl's setting), what the render waits for and what it
    /// does. A derived spider's comes from the rule that reached the request and its
    /// item's required fields ([`Item::AWAIT`](crate::Item::AWAIT)). The default, the
    /// crawl's mode, waits for the page's network to go quiet.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::{async_trait, Config, Cx, Page, Render, Rendering, Request, Result, Spider, SpiderConfig};
    ///
    /// struct Catalogue;
    ///
    /// impl SpiderConfig for Catalogue {
    ///     fn config(&self) -> Config {
    ///         Config::new("catalogue").start_url("https://shop.example/")
    ///     }
    /// }
    ///
    /// #[async_trait]
    /// impl Spider for Catalogue {
    ///     type Item = ();
    ///
    ///     async fn parse(&self, _: Page, _: &mut Cx<()>) -> Result {
    ///         Ok(())
    ///     }
    ///
    ///     // The listings fill in by script; every other page is served whole.
    ///     fn rendering(&self, request: &Request) -> Rendering {
    ///         let listing = request.url().path().starts_with("/list/");
    ///         let mode = Some(if listing { Render::Always } else { Render::Never });
    ///         Rendering { mode, click: listing.then_some("button.more"), ..Rendering::default() }
    ///     }
    /// }
    ///
    /// let list = Request::get("https://shop.example/list/1")?;
    /// assert_eq!(Catalogue.rendering(&list).mode, Some(Render::Always));
    /// # Ok::<(), spider_core::Error>(())
    /// ```
    fn rendering(&self, request: &Request) -> Rendering {
        let _ = request;
        Rendering::default()
    }

    /// Whether `answer` means this identity is blocked, for what markers cannot say; `None`
    /// keeps the default verdict (403, 429, a 503 challenge page, a `block_marker`). A
    /// blocked answer is never parsed: it is retried, from a new exit when proxies allow.
    ///
    /// ```
    /// # use spider_core::{async_trait, Answer, Config, Cx, Page, Result, Spider, SpiderConfig};
    /// # struct Shop;
    /// # impl SpiderConfig for Shop { fn config(&self) -> Config { Config::new("shop") } }
    /// # #[async_trait]
    /// # impl Spider for Shop {
    /// #     type Item = ();
    /// #     async fn parse(&self, _: Page, _: &mut Cx<()>) -> Result { Ok(()) }
    /// // This shop answers a soft block with an empty catalogue page.
    /// fn is_blocked(&self, answer: &Answer<'_>) -> Option<bool> {
    ///     (answer.status == 200 && answer.body.len() < 64).then_some(true)
    /// }
    /// # }
    /// ```
    fn is_blocked(&self, answer: &Answer<'_>) -> Option<bool> {
        let _ = answer;
        None
    }

    /// What a URL listed in a sitemap becomes: the request to queue, or `None` to skip it.
    /// A sitemap's URLs were found on no page, so no selector picked them; the default
    /// queues each one, and a spider derived with `rule(...)`s sends it through its rules'
    /// `allow`/`deny`, as if it were a link.
    ///
    /// ```
    /// # use spider_core::{async_trait, Config, Cx, Page, Request, Result, Spider, SpiderConfig};
    /// # struct Shop;
    /// # impl SpiderConfig for Shop { fn config(&self) -> Config { Config::new("shop") } }
    /// # #[async_trait]
    /// # impl Spider for Shop {
    /// #     type Item = ();
    /// #     async fn parse(&self, _: Page, _: &mut Cx<()>) -> Result { Ok(()) }
    /// // Only the product pages of this shop's sitemap, ahead of anything else.
    /// fn sitemap_request(&self, url: url::Url) -> Option<Request> {
    ///     url.path().starts_with("/product/").then(|| Request::new(url).with_priority(10))
    /// }
    /// # }
    /// ```
    fn sitemap_request(&self, url: Url) -> Option<Request> {
        Some(Request::new(url))
    }

    /// The stages every item goes through before the outputs, asked once when the crawl
    /// starts; the outputs write what the last stage gives, of whatever type
    /// ([`Record`]). The default keeps every item as `parse` emitted it; a spider derived
    /// with `rule(...)`s gets its item's checks and key ([`Stages::checked`]) and the
    /// stages of its `pipeline = [...]`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use spider_core::{async_trait, Config, Cx, Page, Record, Result, Spider, SpiderConfig, Stages};
    /// # #[derive(serde::Serialize)] struct Book { title: String }
    /// # impl spider_core::Item for Book {
    /// #     fn extract(_: &spider_core::Document<'_>) -> Result<Option<Self>, spider_core::ExtractError> { Ok(None) }
    /// # }
    /// # struct Shop;
    /// # impl SpiderConfig for Shop { fn config(&self) -> Config { Config::new("shop") } }
    /// # #[async_trait]
    /// # impl Spider for Shop {
    /// #     type Item = Book;
    /// #     async fn parse(&self, _: Page, _: &mut Cx<Book>) -> Result { Ok(()) }
    /// // A hand-written spider of a derived item: its checks and its key, as a derived
    /// // spider has them.
    /// fn pipeline(&self) -> Stages<Book, impl Record> {
    ///     Stages::checked()
    /// }
    /// # }
    /// ```
    fn pipeline(&self) -> Stages<Self::Item, impl Record> {
        Stages::new()
    }
}

/// What `parse` produces for one page: items and follow-up requests.
#[derive(Debug)]
pub struct Cx<I> {
    depth: u32,
    session: Option<Arc<str>>,
    pub(crate) items: Vec<I>,
    pub(crate) follows: Vec<Request>,
    /// The answer was not HTML, so the link rules left it unparsed: counted apart from
    /// the pages.
    pub(crate) not_html: bool,
    /// The rule that parses the page, by its label, when the page had none of its item:
    /// an extraction miss, counted by rule (unless the page was an interstitial).
    pub(crate) no_item: Option<Arc<str>>,
    /// Whether the page lacks what its rule reads (the item's required fields, or the
    /// links of a rule that follows), as the link rules judge it; `None` from a
    /// hand-written `parse`, whose page lacks what it reads when it gave nothing.
    pub(crate) lacking: Option<bool>,
}

impl<I> Cx<I> {
    /// Whether the page gave less than its rule reads: what `render = "auto"` renders.
    pub(crate) fn lacks(&self) -> bool {
        self.lacking.unwrap_or(self.items.is_empty() && self.follows.is_empty())
    }

    pub(crate) fn for_request(request: &Request) -> Self {
        Cx {
            depth: request.depth(),
            session: request.session_key().cloned(),
            items: Vec::new(),
            follows: Vec::new(),
            not_html: false,
            no_item: None,
            lacking: None,
        }
    }

    /// Emit one item to the exporter.
    pub fn emit(&mut self, item: I) {
        self.items.push(item);
    }

    /// Follow a link: a GET one level deeper, in this page's session. The frontier drops
    /// it if it was seen, is out of scope or too deep.
    pub fn follow(&mut self, url: Url) {
        self.request(Request::new(url));
    }

    /// Follow every link of `urls`.
    pub fn follow_all(&mut self, urls: impl IntoIterator<Item = Url>) {
        for url in urls {
            self.follow(url);
        }
    }

    /// Queue a request built by hand; it is made one level deeper than this page and
    /// inherits the page's session unless it has its own.
    pub fn request(&mut self, request: Request) {
        self.follows.push(request.child_of(self.depth, self.session.as_ref()));
    }

    /// Submit a form read from the page with [`Page::form`] (its hidden fields kept, the
    /// fields given with [`Form::set`] set): queued as a follow-up like
    /// [`request`](Self::request), and deduplicated with its body, so one search sent
    /// twice is fetched once and two searches are both fetched. Scrapy's
    /// `FormRequest.from_response`.
    ///
    /// # Errors
    ///
    /// As [`Form::into_request`]: the fields pass the request body cap.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(page: spider_core::Page, cx: &mut spider_core::Cx<()>) -> spider_core::Result {
    /// // Search the catalogue for each term, from its search form.
    /// for term in ["tea", "coffee"] {
    ///     cx.submit(page.form("form.search").await?.set("q", term))?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn submit(&mut self, form: Form) -> Result<(), Error> {
        self.request(form.into_request()?);
        Ok(())
    }
}

/// Run `spider`'s `parse` on one page (see [`Page::fixture`]) and return the items it
/// emitted and the requests it would follow.
///
/// # Errors
///
/// The error `parse` returned.
///
/// # Examples
///
/// ```no_run
/// # async fn demo<S: spider_core::Spider>(spider: S) -> spider_core::Result {
/// let page = spider_core::Page::fixture("https://books.example/", "<h1>Saved page</h1>")?;
/// let (items, follows) = spider_core::testing::parse_page(&spider, page).await?;
/// # Ok(()) }
/// ```
pub async fn parse_page<S: Spider>(spider: &S, page: Page) -> Result<(Vec<S::Item>, Vec<Request>)> {
    let mut cx = Cx::for_request(page.request());
    spider.parse(page, &mut cx).await?;
    Ok((cx.items, cx.follows))
}
