//! The link rules of a derived spider, `#[spider(rule(...), rule(...))]`: which links of a
//! page are followed, and what each page does, decided by the rule that reached it.
//!
//! Not to be confused with `frontier/rules.rs`, what every frontier turns away (scope,
//! depth): these rules choose among the links a page has, before the frontier sees them.
//!
//! A rule *takes* a URL when one of its `allow` regexes finds a match in it (or it has
//! none), none of its `deny` regexes does, and, unless the rule has `files`, the URL does
//! not lead to a file that is not a page (`non_page.rs`). The regexes search the URL's
//! canonical spelling, the one the frontier dedupes on (absolute, no fragment, query pairs
//! sorted), so two spellings of one page always get the same verdict.
//!
//! - On a page that follows, each rule in order takes links among the `href`s its selector
//!   finds; a URL an earlier rule took on this page is not taken again. Each taken link
//!   becomes a request with the rule's priority and its number in the meta key
//!   [`RULE_META_KEY`].
//! - A page does what the rule in its request's meta says: follow, parse, or both. A
//!   redirect's next hop keeps the meta, so its target does what the link's rule says.
//!   A request without the key (a start URL, a `--start-urls` line) goes to the first rule
//!   that takes its URL, and only follows when none does, like a CrawlSpider's start pages.
//! - A sitemap's URL becomes a request of the first rule that takes it, or none.
//!
//! The derive writes the rules as constant [`LinkRule`]s, compiled into [`LinkRules`] once
//! per process in a `static`, with the [`Engine`] that reads the pages: the streaming
//! engine (`stream/`) when the item's fields and the rules' selectors all stream, the
//! DOM otherwise, or the one `#[spider(extract = "...")]` forces. Beside them, a [`Read`]
//! per rule that parses: the item type its pages hold, turned into the spider's item, so
//! that rules of several item types make one spider of an enum of them (read with the
//! DOM: the streaming engine reads one item type's fields).

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use scraper::Selector;
use url::Url;

use crate::error::extract::ExtractError;
use crate::extract::document::Document;
use crate::extract::item::Item;
use crate::extract::non_page::is_non_page;
use crate::extract::page::Page;
use crate::extract::stream::{FieldRead, Found, Plan};
use crate::request::canonical::canonical_url;
use crate::request::{Request, RULE_META_KEY};
use crate::spider::Cx;

/// The selector of a rule without `css`: every link of the page.
pub const DEFAULT_LINKS: &str = "a[href], area[href]";

/// One `rule(...)` as the derive writes it, every text checked at compile time.
#[derive(Debug, Clone, Copy)]
pub struct LinkRule {
    /// Where on the page to look for links (their `href`).
    pub css: &'static str,
    /// Regexes one of which must match a URL (none: every URL).
    pub allow: &'static [&'static str],
    /// Regexes none of which may match a URL.
    pub deny: &'static [&'static str],
    /// The pages it reaches are searched for links with every rule.
    pub follow: bool,
    /// The pages it reaches are parsed into the spider's item.
    pub parse: bool,
    /// The priority of its requests.
    pub priority: i32,
    /// Whether it takes links to files that are not pages.
    pub files: bool,
    /// The browser profile its requests are sent with; `None` for the crawl's.
    pub impersonate: Option<spider_settings::Impersonate>,
    /// Where its pages are rendered; `None` for the crawl's `render`.
    pub render: Option<spider_settings::Render>,
    /// A selector a render of its pages waits for, besides the item's required fields.
    pub wait_for: Option<&'static str>,
    /// Its rendered pages are scrolled until no new links come.
    pub scroll: bool,
    /// A selector clicked on its rendered pages until it is gone.
    pub click: Option<&'static str>,
}

/// How the pages of a rule that parses are read into the spider's item `T`: the rule's
/// own item type, by either engine, then turned into a `T` (the same type, or an enum of
/// the rules' types, `From` each).
#[derive(Debug)]
pub struct Read<T> {
    dom: fn(&Document<'_>) -> Result<Option<T>, ExtractError>,
    streamed: fn(&Found<'_>) -> Result<Option<T>, ExtractError>,
    /// The rule's item's fields, when they stream ([`Item::STREAM`]).
    stream: Result<&'static [FieldRead], &'static str>,
    /// The selectors of its required fields ([`Item::AWAIT`]).
    awaits: &'static [&'static str],
}

impl<T: 'static> Read<T> {
    /// The pages of a rule that parses into `R`.
    pub const fn of<R: Item>() -> Read<T>
    where
        T: From<R>,
    {
        Read { dom: read_dom::<R, T>, streamed: read_streamed::<R, T>, stream: R::STREAM, awaits: R::AWAIT }
    }
}

fn read_dom<R: Item, T: From<R>>(doc: &Document<'_>) -> Result<Option<T>, ExtractError> {
    Ok(R::extract(doc)?.map(T::from))
}

fn read_streamed<R: Item, T: From<R>>(found: &Found<'_>) -> Result<Option<T>, ExtractError> {
    Ok(R::extract_streamed(found)?.map(T::from))
}

/// Which engine reads a derived spider's pages, as `#[spider(extract = "...")]` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The streaming engine when everything the spider reads streams, else the DOM.
    Auto,
    /// Always the DOM.
    Dom,
    /// The streaming engine; the derive has checked that everything streams.
    Stream,
}

/// A spider's rules with their selectors and regexes compiled.
#[derive(Debug)]
pub struct LinkRules {
    rules: Vec<Compiled>,
    engine: Engine,
    /// The streaming plan for the spider's item and these rules, made on first use
    /// (`None`: the DOM reads the pages).
    plan: OnceLock<Option<Plan>>,
}

#[derive(Debug)]
struct Compiled {
    rule: LinkRule,
    /// How the summary and the failures file name it: its place among the rules, from 1,
    /// and its first `allow`, made once for the pages that miss its item.
    label: Arc<str>,
    css: Selector,
    allow: Vec<Regex>,
    deny: Vec<Regex>,
}

/// What a page does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Duty {
    follow: bool,
    parse: bool,
}

/// The duty of a page no rule reached nor takes.
const START_PAGE: Duty = Duty { follow: true, parse: false };

impl LinkRules {
    /// Compile `rules`, whose selectors and regexes the derive checked, to be read by
    /// `engine`.
    pub fn new(rules: &[LinkRule], engine: Engine) -> LinkRules {
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(number, rule)| Compiled {
                rule: *rule,
                label: match rule.allow.first() {
                    Some(allow) => format!("rule {} (allow {allow:?})", number + 1),
                    None => format!("rule {}", number + 1),
                }
                .into(),
                css: crate::extract::field::selector(rule.css),
                allow: rule.allow.iter().map(|pattern| regex(pattern)).collect(),
                deny: rule.deny.iter().map(|pattern| regex(pattern)).collect(),
            })
            .collect();
        LinkRules { rules: compiled, engine, plan: OnceLock::new() }
    }

    /// The streaming plan for the rules' item and these rules, when the pages stream: the
    /// derive reads rules of several item types with the DOM, so `reads` name one type.
    fn plan<T>(&self, reads: &[Option<Read<T>>]) -> Option<&Plan> {
        self.plan
            .get_or_init(|| {
                let item = reads.iter().flatten().next().map_or(Ok(&[][..]), |read| read.stream);
                let fields = item.ok().filter(|_| self.engine != Engine::Dom)?;
                let selectors: Vec<&'static str> = self.rules.iter().map(|rule| rule.rule.css).collect();
                Plan::new(fields, &selectors)
            })
            .as_ref()
    }

    /// The browser profile of the rule that took `request`, when it has one of its own
    /// (see [`Spider::impersonate`](crate::Spider::impersonate)).
    pub fn impersonate(&self, request: &Request) -> Option<spider_settings::Impersonate> {
        let number = request.meta().get(RULE_META_KEY)?.as_u64()?;
        self.rules.get(usize::try_from(number).ok()?)?.rule.impersonate
    }

    /// How the page of `request` is rendered, when it is: its rule's mode, waits and
    /// actions, and, for a rule that parses, the selectors of its item's required fields
    /// (see [`Spider::rendering`](crate::Spider::rendering)).
    pub fn rendering<T>(
        &self,
        request: &Request,
        reads: &[Option<Read<T>>],
    ) -> crate::request::rendering::Rendering {
        let Some((number, rule)) = self.rule_of(request) else {
            return crate::request::rendering::Rendering::default();
        };
        let item = match reads.get(number) {
            Some(Some(read)) if rule.rule.parse => read.awaits,
            _ => &[],
        };
        crate::request::rendering::Rendering {
            mode: rule.rule.render,
            wait_for: item.iter().copied().chain(rule.rule.wait_for).collect(),
            scroll: rule.rule.scroll,
            click: rule.rule.click,
            rule: Some(number),
        }
    }

    /// The request for a URL a sitemap lists: the first rule that takes it, or `None`.
    pub fn sitemap_request(&self, url: Url) -> Option<Request> {
        let canonical = canonical_url(&url).into_owned();
        let number = self.rules.iter().position(|rule| rule.takes(&url, &canonical))?;
        Some(self.request(number, url))
    }

    /// What the page of `request` does, and the number of the rule that says so: its
    /// rule's duty, or that of the first rule that takes its URL, or a start page's.
    fn duty(&self, request: &Request) -> (Option<usize>, Duty) {
        self.rule_of(request).map_or((None, START_PAGE), |(number, rule)| {
            (Some(number), Duty { follow: rule.rule.follow, parse: rule.rule.parse })
        })
    }

    /// The rule of `request` and its number: the one in its meta, or the first that takes
    /// its URL.
    fn rule_of(&self, request: &Request) -> Option<(usize, &Compiled)> {
        let reached_by = request
            .meta()
            .get(RULE_META_KEY)
            .and_then(serde_json::Value::as_u64)
            .and_then(|number| usize::try_from(number).ok())
            .and_then(|number| Some((number, self.rules.get(number)?)));
        reached_by.or_else(|| {
            let canonical = canonical_url(request.url());
            self.rules.iter().enumerate().find(|(_, rule)| rule.takes(request.url(), &canonical))
        })
    }

    /// The links of `doc` every rule takes, in rule order then page order, each once.
    fn links(&self, doc: &Document<'_>) -> Vec<Request> {
        self.take(|number| self.rules.get(number).map_or_else(Vec::new, |rule| doc.links(&rule.css)))
    }

    /// The links a streaming pass found that every rule takes, as [`links`](Self::links).
    fn links_streamed(&self, found: &Found<'_>) -> Vec<Request> {
        self.take(|number| found.links(number))
    }

    /// The links every rule takes among those `found` gives for each rule's number.
    fn take(&self, found: impl Fn(usize) -> Vec<Url>) -> Vec<Request> {
        let mut taken = HashSet::new();
        let mut requests = Vec::new();
        for (number, rule) in self.rules.iter().enumerate() {
            for url in found(number) {
                let canonical = canonical_url(&url).into_owned();
                if rule.takes(&url, &canonical) && taken.insert(canonical) {
                    requests.push(self.request(number, url));
                }
            }
        }
        requests
    }

    fn request(&self, number: usize, url: Url) -> Request {
        let priority = self.rules.get(number).map_or(0, |rule| rule.rule.priority);
        Request::new(url).with_meta(RULE_META_KEY, number).with_priority(priority)
    }
}

impl Compiled {
    fn takes(&self, url: &Url, canonical: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|re| re.is_match(canonical)))
            && !self.deny.iter().any(|re| re.is_match(canonical))
            && (self.rule.files || !is_non_page(url))
    }
}

/// Compile a regex the derive has already compiled; the rules live in a `static`, so this
/// runs once per regex per process.
#[allow(clippy::expect_used)]
fn regex(pattern: &str) -> Regex {
    // The derive compiled this exact pattern with this exact version of `regex`.
    Regex::new(pattern).expect("regex was checked at compile time")
}

/// The `parse` of a spider derived with `rule(...)`s: what the page does is decided by
/// the rule that reached it (see the module's docs); the item and the links come from one
/// parse of the page on the pool. An answer that is not HTML ([`Page::is_html`]: a script,
/// a download, JSON) is not parsed at all, and counts in the summary as skipped by
/// content type rather than as a page. A page of a rule that parses and does not follow
/// that has none of the item is marked with its rule's label, as an extraction miss.
///
/// # Errors
///
/// An [`ExtractError`](crate::ExtractError) (the page had the item in part) or a
/// parse-pool failure.
pub async fn parse_by_link_rules<T: Send + 'static>(
    page: Page,
    cx: &mut Cx<T>,
    rules: &'static LinkRules,
    reads: &'static [Option<Read<T>>],
) -> crate::error::Result {
    if !page.is_html() {
        cx.not_html = true;
        return Ok(());
    }
    let (number, duty) = rules.duty(page.request());
    // The rule's read, when its pages are parsed.
    let read = number.and_then(|number| reads.get(number)).and_then(Option::as_ref).filter(|_| duty.parse);
    let dom = move |doc: &Document<'_>| {
        let item = read.map_or(Ok(None), |read| (read.dom)(doc));
        let links = if duty.follow { rules.links(doc) } else { Vec::new() };
        (item, links)
    };
    let (item, links) = match rules.plan(reads) {
        Some(plan) => {
            let streamed = move |found: &Found<'_>| {
                let item = read.map_or(Ok(None), |read| (read.streamed)(found));
                let links = if duty.follow { rules.links_streamed(found) } else { Vec::new() };
                (item, links)
            };
            page.stream(plan, streamed, dom).await?
        }
        None => page.html(dom).await?,
    };
    // A page its rule parses that has none of the item is an extraction miss, counted by
    // its rule; unless the task finds an interstitial in its place.
    if duty.parse && matches!(item, Ok(None)) {
        cx.no_item = number.and_then(|number| rules.rules.get(number)).map(|rule| rule.label.clone());
    }
    // What the rule reads: the item on a page that only parses, the links on one that
    // only follows, either on a page that does both.
    let has_item = matches!(item, Ok(Some(_)));
    cx.lacking = Some(match (duty.parse, duty.follow) {
        (true, false) => !has_item,
        (false, true) => links.is_empty(),
        _ => !has_item && links.is_empty(),
    });
    for request in links {
        cx.request(request);
    }
    if let Some(item) = item? {
        cx.emit(item);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::item::Nothing;
    use crate::spider::parse_page;

    const FOLLOW: LinkRule = LinkRule {
        css: DEFAULT_LINKS,
        allow: &[],
        deny: &[],
        follow: true,
        parse: false,
        priority: 0,
        files: false,
        impersonate: None,
        render: None,
        wait_for: None,
        scroll: false,
        click: None,
    };

    fn rules(rules: &'static [LinkRule]) -> &'static LinkRules {
        Box::leak(Box::new(LinkRules::new(rules, Engine::Auto)))
    }

    /// The links `rules` take on `html`, as (path, rule number, priority).
    async fn taken(rules: &'static LinkRules, html: &str) -> Vec<(String, u64, i32)> {
        let page = Page::fixture("https://shop.example/", html).unwrap();
        let links = page.html(move |doc| rules.links(doc)).await.unwrap();
        links
            .iter()
            .map(|request| {
                let number = request.meta()[RULE_META_KEY].as_u64().unwrap();
                (request.url().path().to_owned(), number, request.priority())
            })
            .collect()
    }

    fn paths(list: &[(&str, u64, i32)]) -> Vec<(String, u64, i32)> {
        list.iter().map(|(path, number, priority)| ((*path).to_owned(), *number, *priority)).collect()
    }

    #[tokio::test]
    async fn the_first_rule_that_takes_a_link_wins_and_each_link_is_taken_once() {
        static RULES: &[LinkRule] = &[
            LinkRule {
                css: "h3 > a",
                allow: &["/product/"],
                parse: true,
                follow: false,
                priority: 5,
                ..FOLLOW
            },
            LinkRule { allow: &["/product/", "/list"], ..FOLLOW },
        ];
        let html = r#"<a href="/list?page=2">next</a> <h3><a href="/product/1">one</a></h3>
            <a href="/product/1#reviews">one again</a> <a href="/product/2">two, not in an h3</a>
            <a href="/about">about</a>"#;
        assert_eq!(
            taken(rules(RULES), html).await,
            paths(&[("/product/1", 0, 5), ("/list", 1, 0), ("/product/2", 1, 0)])
        );
    }

    #[tokio::test]
    async fn deny_wins_over_allow_and_allow_lists_take_any_of_theirs() {
        static RULES: &[LinkRule] =
            &[LinkRule { allow: &[r"/a/", r"/b/"], deny: &[r"\?sort=", "private"], ..FOLLOW }];
        let html = r#"<a href="/a/1">a</a> <a href="/b/2">b</a> <a href="/c/3">c</a>
            <a href="/a/4?sort=price">sorted</a> <a href="/b/private/5">private</a>"#;
        assert_eq!(taken(rules(RULES), html).await, paths(&[("/a/1", 0, 0), ("/b/2", 0, 0)]));
    }

    #[tokio::test]
    async fn regexes_search_the_canonical_url_unanchored() {
        // Matched as the query's pairs sorted, the fragment dropped, `%62` decoded to `b`;
        // followed as written.
        static RULES: &[LinkRule] = &[LinkRule { allow: &[r"book_\d+\.html$", r"\?a=1&b=2$"], ..FOLLOW }];
        let html = r#"<a href="/%62ook_1.html#top">book</a> <a href="/list?b=2&amp;a=1">list</a>
            <a href="/book_2.html.bak">backup</a>"#;
        assert_eq!(taken(rules(RULES), html).await, paths(&[("/%62ook_1.html", 0, 0), ("/list", 0, 0)]));
    }

    #[tokio::test]
    async fn links_to_files_are_taken_only_by_a_rule_with_files() {
        static SKIPS: &[LinkRule] = &[FOLLOW];
        static TAKES: &[LinkRule] =
            &[FOLLOW, LinkRule { allow: &[r"\.pdf$"], files: true, parse: true, follow: false, ..FOLLOW }];
        let html = r#"<a href="/manual.pdf">manual</a> <a href="/cover.jpg">cover</a> <a href="/page">page</a>
            <map><area href="/area.html"></map>"#;
        assert_eq!(taken(rules(SKIPS), html).await, paths(&[("/page", 0, 0), ("/area.html", 0, 0)]));
        assert_eq!(
            taken(rules(TAKES), html).await,
            paths(&[("/page", 0, 0), ("/area.html", 0, 0), ("/manual.pdf", 1, 0)])
        );
    }

    #[test]
    fn a_page_does_what_its_rule_says_or_what_the_first_rule_taking_its_url_says() {
        static RULES: &[LinkRule] = &[
            LinkRule { allow: &["/product/"], parse: true, follow: false, ..FOLLOW },
            LinkRule { allow: &["/list"], follow: true, parse: true, ..FOLLOW },
        ];
        let rules = rules(RULES);
        let duty = |url: &str| rules.duty(&Request::get(url).unwrap()).1;
        assert_eq!(duty("https://shop.example/product/1"), Duty { follow: false, parse: true });
        assert_eq!(duty("https://shop.example/list"), Duty { follow: true, parse: true });
        assert_eq!(duty("https://shop.example/"), START_PAGE, "no rule takes it: a start page");

        // The rule in the meta decides, whatever the URL; a number no rule has is ignored.
        let reached =
            |number: u64| Request::get("https://shop.example/list").unwrap().with_meta(RULE_META_KEY, number);
        assert_eq!(rules.duty(&reached(0)), (Some(0), Duty { follow: false, parse: true }));
        assert_eq!(rules.duty(&reached(7)), (Some(1), Duty { follow: true, parse: true }));
    }

    #[test]
    fn a_sitemap_url_is_a_request_of_the_first_rule_taking_it() {
        static RULES: &[LinkRule] = &[
            LinkRule {
                css: "h3 > a",
                allow: &["/product/"],
                deny: &["/old/"],
                parse: true,
                priority: 9,
                ..FOLLOW
            },
            LinkRule { allow: &["/product/", "/list"], ..FOLLOW },
        ];
        let rules = rules(RULES);
        let request = |url: &str| rules.sitemap_request(Url::parse(url).unwrap());
        let product = request("https://shop.example/product/1").unwrap();
        assert_eq!((product.meta()[RULE_META_KEY].as_u64(), product.priority()), (Some(0), 9));
        let old = request("https://shop.example/product/old/2").unwrap();
        assert_eq!((old.meta()[RULE_META_KEY].as_u64(), old.priority()), (Some(1), 0));
        assert!(request("https://shop.example/about").is_none());
        assert!(request("https://shop.example/list.zip").is_none(), "a file, and no rule has `files`");
    }

    #[tokio::test]
    async fn a_page_reached_by_a_parse_only_rule_follows_nothing() {
        static RULES: &[LinkRule] =
            &[LinkRule { allow: &["/product/"], parse: true, follow: false, ..FOLLOW }];
        let rules = rules(RULES);
        let spider = RuleSpider(rules);
        let html = r#"<a href="/product/2">another</a>"#;

        let start = Page::fixture("https://shop.example/", html).unwrap();
        let (_, follows) = parse_page(&spider, start).await.unwrap();
        assert_eq!(follows.len(), 1, "a start page follows");
        assert_eq!(follows[0].depth(), 1);

        let product = Page::fixture("https://shop.example/product/1", html).unwrap();
        let (_, follows) = parse_page(&spider, product).await.unwrap();
        assert!(follows.is_empty(), "a product page only parses");
    }

    #[tokio::test]
    async fn a_page_its_rule_parses_without_the_item_is_a_miss_of_that_rule() {
        static RULES: &[LinkRule] =
            &[LinkRule { allow: &["/product/"], parse: true, follow: false, ..FOLLOW }, FOLLOW];
        let missed = |url: &'static str| async move {
            let page = Page::fixture(url, "<form><input name=q></form><p>Out of print</p>").unwrap();
            let mut cx: Cx<Nothing> = Cx::for_request(page.request());
            parse_by_link_rules(page, &mut cx, self::rules(RULES), &[]).await.unwrap();
            cx.no_item
        };
        assert_eq!(
            missed("https://shop.example/product/1").await.as_deref(),
            Some("rule 1 (allow \"/product/\")")
        );
        assert_eq!(
            missed("https://shop.example/about").await,
            None,
            "a page that only follows misses no item"
        );
    }

    struct RuleSpider(&'static LinkRules);

    impl crate::spider::SpiderConfig for RuleSpider {
        fn config(&self) -> spider_settings::Config {
            spider_settings::Config::new("rules")
        }
    }

    #[async_trait::async_trait]
    impl crate::spider::Spider for RuleSpider {
        type Item = Nothing;

        async fn parse(&self, page: Page, cx: &mut Cx<Nothing>) -> crate::error::Result {
            parse_by_link_rules(page, cx, self.0, &[]).await
        }
    }
}
