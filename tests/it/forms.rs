//! Requests with bodies, forms and JSON answers, against the sandbox's members' shop, as
//! the server saw them: POST bodies as received and deduplicated by their body (in memory,
//! through a state file and in a fleet's Redis); a login form submitted with its hidden CSRF token, from
//! `parse` and from the `start` hook; a JSON answer that does not parse failing its page
//! alone; `#[json]` item fields read from the API; POSTs sent again on a run the HTTP
//! cache answers.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeSet;

use spider_sandbox::{catalogue, MembersSite, RedisServer, Sandbox};
use spiderling::prelude::*;
use support::read_json_lines;

fn shop() -> Sandbox {
    Sandbox::members(MembersSite::new().user("ann", "s3cret").products(12).page_size(5)).unwrap()
}

fn config(name: &str, site: &Sandbox, path: &str) -> Config {
    Config::new(name)
        .start_url(format!("{}{}", site.url().trim_end_matches('/'), path))
        .allowed_domain("127.0.0.1")
}

/// Where a crawl keeps its frontier.
#[derive(Debug, Clone)]
enum Home {
    Memory,
    State(std::path::PathBuf),
    Fleet(String),
}

/// Searches the shop's API from its home page: the same JSON search twice, another one,
/// and the first as a form.
struct Searches {
    base: String,
    home: Home,
    cache: Option<std::path::PathBuf>,
}

impl SpiderConfig for Searches {
    fn config(&self) -> Config {
        let mut config = Config::new("searches").start_url(self.base.clone()).allowed_domain("127.0.0.1");
        if let Some(cache) = &self.cache {
            config = config.cache(cache);
        }
        match &self.home {
            Home::Memory => config,
            Home::State(path) => config.state(path),
            Home::Fleet(redis) => config.frontier(redis.clone()),
        }
    }
}

#[async_trait]
impl Spider for Searches {
    type Item = ();

    async fn parse(&self, page: Page, cx: &mut Cx<()>) -> Result {
        if page.url().path() == "/" {
            let search = format!("{}api/search", self.base);
            for query in ["tea", "tea", "coffee"] {
                cx.request(Request::post_json(&search, &serde_json::json!({ "q": query }))?);
            }
            cx.request(Request::post_form(&search, [("q", "tea")])?);
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_to_one_url_are_fetched_once_per_body_in_memory_through_a_state_file_and_in_a_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start().unwrap();
    for home in [Home::Memory, Home::State(dir.path().join("searches.state")), Home::Fleet(redis.url())] {
        let site = shop();
        let searches = Searches { base: site.url(), home: home.clone(), cache: None };
        let summary = Crawler::new(searches).run().await.unwrap();
        let observed = site.observed();
        let mut bodies = observed.bodies_of("/api/search");
        bodies.sort();
        assert_eq!(bodies, ["q=tea", r#"{"q":"coffee"}"#, r#"{"q":"tea"}"#], "{home:?}");
        let posts: Vec<&str> = observed
            .hits
            .iter()
            .filter(|h| h.resource() == "/api/search")
            .map(|h| h.method.as_str())
            .collect();
        assert_eq!(posts, ["POST"; 3], "{home:?}");
        assert_eq!((summary.counts.duplicates, summary.failures), (1, 0), "{home:?}: {summary}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_are_sent_again_on_a_run_the_cache_answers_and_only_they() {
    let dir = tempfile::tempdir().unwrap();
    let site = shop();
    let searches =
        || Searches { base: site.url(), home: Home::Memory, cache: Some(dir.path().join("cache")) };
    Crawler::new(searches()).run().await.unwrap();
    let first = site.observed().hits.len();
    let second = Crawler::new(searches()).run().await.unwrap();
    let observed = site.observed();
    let again: Vec<(&str, String)> =
        observed.hits[first..].iter().map(|hit| (hit.method.as_str(), hit.resource())).collect();
    assert_eq!(again, vec![("POST", "/api/search".to_owned()); 3], "only the searches were sent again");
    assert_eq!(second.counts.from_cache, 2, "robots.txt and the home page from the cache: {second}");
}

/// Logs in from `parse`: the login page's form, filled in and submitted, then the
/// members' pages the login leads to.
struct Member {
    password: &'static str,
}

#[derive(Item, Serialize)]
struct MemberPage {
    #[css("h1.member-title")]
    title: String,
}

static MEMBER_LINKS: std::sync::LazyLock<Selector> =
    std::sync::LazyLock::new(|| Selector::parse("a.member-page").unwrap());

impl SpiderConfig for Member {
    fn config(&self) -> Config {
        Config::new("member")
    }
}

#[async_trait]
impl Spider for Member {
    type Item = MemberPage;

    async fn parse(&self, page: Page, cx: &mut Cx<MemberPage>) -> Result {
        if page.url().path() == "/login" {
            cx.submit(page.form("form#login").await?.set("user", "ann").set("password", self.password))?;
            return Ok(());
        }
        let (item, links) = page.html(|doc| (doc.extract::<MemberPage>(), doc.links(&MEMBER_LINKS))).await?;
        if let Some(item) = item? {
            cx.emit(item);
        }
        cx.follow_all(links);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitted_login_form_keeps_its_hidden_token_and_opens_the_members_area() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("members.jsonl");
    let config = config("member", &site, "/login").output(&out);
    let summary = Crawler::with_config(Member { password: "s3cret" }, config).run().await.unwrap();

    let observed = site.observed();
    let login: Vec<_> = observed.hits.iter().filter(|h| h.method == "POST").collect();
    assert_eq!(login.len(), 1);
    let body = String::from_utf8_lossy(&login[0].body).into_owned();
    assert!(body.starts_with("csrf=t") && body.ends_with("&user=ann&password=s3cret"), "{body}");
    assert_eq!(login[0].status, 303, "the server accepted the token the form carried");
    let members: BTreeSet<(String, u16)> = observed
        .hits
        .iter()
        .filter(|h| h.target.starts_with("/members/"))
        .map(|h| (h.target.split('?').next().unwrap().to_owned(), h.status))
        .collect();
    let expected: BTreeSet<(String, u16)> =
        ["/members/", "/members/page-1", "/members/page-2", "/members/page-3"]
            .map(|p| (p.to_owned(), 200))
            .into();
    assert_eq!(members, expected);
    let mut titles: Vec<String> =
        read_json_lines(&out).iter().map(|item| item["title"].as_str().unwrap().to_owned()).collect();
    titles.sort();
    assert_eq!(titles, ["Members' page 1", "Members' page 2", "Members' page 3"]);
    assert_eq!(summary.failures, 0, "{summary}");
}

/// Logs in from the `start` hook, before the crawl, and starts from where the login led;
/// or, with `forge`, posts the login without the form's token.
struct Login {
    base: String,
    forge: bool,
}

impl SpiderConfig for Login {
    fn config(&self) -> Config {
        Config::new("login").allowed_domain("127.0.0.1")
    }
}

#[async_trait]
impl Spider for Login {
    type Item = MemberPage;

    async fn start(&self, start: &mut Start<'_>) -> Result {
        let login = if self.forge {
            Request::post_form(&format!("{}login", self.base), [("user", "ann"), ("password", "s3cret")])?
        } else {
            let form =
                start.fetch(Request::get(&format!("{}login", self.base))?).await?.form("form#login").await?;
            form.set("user", "ann").set("password", "s3cret").into_request()?
        };
        let welcome = start.fetch(login).await?;
        if welcome.status() != 200 {
            return Err(format!("login refused with {}", welcome.status()).into());
        }
        start.queue(Request::new(welcome.url().clone()));
        Ok(())
    }

    async fn parse(&self, page: Page, cx: &mut Cx<MemberPage>) -> Result {
        Member { password: "" }.parse(page, cx).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_hook_logs_in_first_and_a_login_without_the_token_stops_the_crawl() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("login.jsonl");
    let config = Login { base: site.url(), forge: false }.config().output(&out);
    let summary = Crawler::with_config(Login { base: site.url(), forge: false }, config).run().await.unwrap();
    assert_eq!((summary.counts.items, summary.failures), (3, 0), "{summary}");
    let observed = site.observed();
    let order: Vec<(&str, String)> = observed
        .hits
        .iter()
        .take(4)
        .map(|h| (h.method.as_str(), h.target.split('?').next().unwrap().to_owned()))
        .collect();
    // The hook's requests are asked of robots.txt too (the login's redirect to the members'
    // page among them), which the crawl then knows: it is fetched once.
    let expected = [("GET", "/robots.txt"), ("GET", "/login"), ("POST", "/login"), ("GET", "/members/")];
    assert_eq!(order, expected.map(|(m, p)| (m, p.to_owned())), "the login comes before the crawl");
    let robots = observed.hits.iter().filter(|hit| hit.target == "/robots.txt").count();
    assert_eq!(robots, 1, "robots.txt read by the hook is the crawl's");

    let site = shop();
    let error = Crawler::new(Login { base: site.url(), forge: true }).run().await.unwrap_err();
    assert_eq!(error.to_string(), "the spider's start hook failed: login refused with 403 Forbidden");
    let observed = site.observed();
    let asked: Vec<_> =
        observed.hits.iter().map(|h| (h.method.as_str(), h.target.as_str(), h.status)).collect();
    assert_eq!(
        asked,
        [("GET", "/robots.txt", 404), ("POST", "/login", 403)],
        "nothing crawled after a refused login"
    );
}

/// The start hook's requests keep to the crawl's scope: a login page robots.txt
/// disallows, or one outside `allowed_domains`, is not sent, and the hook is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_hooks_requests_obey_robots_txt_and_allowed_domains() {
    let site = Sandbox::members(MembersSite::new().user("ann", "s3cret").disallow("/login")).unwrap();
    let error = Crawler::new(Login { base: site.url(), forge: false }).run().await.unwrap_err();
    let said = error.to_string();
    assert!(said.contains("/login") && said.contains("robots.txt disallows it"), "{said}");
    let asked: Vec<_> = site.observed().hits.iter().map(|h| h.target.clone()).collect();
    assert_eq!(asked, ["/robots.txt"], "the disallowed login was never sent");
    // With `obey_robots = false` it is.
    let config = Login { base: site.url(), forge: false }.config().obey_robots(false);
    let dir = tempfile::tempdir().unwrap();
    let summary = Crawler::with_config(
        Login { base: site.url(), forge: false },
        config.output(dir.path().join("m.jsonl")),
    )
    .run()
    .await
    .unwrap();
    assert_eq!(summary.counts.items, 3, "{summary}");
    let logins = site.observed().hits.iter().filter(|h| h.target.starts_with("/login")).count();
    assert_eq!(logins, 2, "the login page and its form, sent");
    // Outside the crawl's domains: `localhost` is not `127.0.0.1`.
    let elsewhere = site.url().replace("127.0.0.1", "localhost");
    let before = site.observed().hits.len();
    let error = Crawler::new(Login { base: elsewhere, forge: false }).run().await.unwrap_err();
    assert!(error.to_string().contains("outside `allowed_domains`"), "{error}");
    assert_eq!(site.observed().hits.len(), before, "nothing sent");
}

/// Reads the API's listing pages as JSON, follows `next` and each product, and extracts
/// each product with `#[json]` fields.
struct Api;

#[derive(Deserialize)]
struct Listing {
    products: Vec<Listed>,
    next: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    id: usize,
}

#[derive(Item, Serialize, Debug, PartialEq)]
struct Product {
    #[json("/id")]
    id: usize,
    #[json("/name")]
    name: String,
    #[json("/offers/0/price")]
    price: f64,
    #[json("/offers/0/currency")]
    currency: Option<String>,
    #[json("/tags")]
    tags: Vec<String>,
    #[json("/rating", default)]
    rating: u8,
}

impl SpiderConfig for Api {
    fn config(&self) -> Config {
        Config::new("api")
    }
}

#[async_trait]
impl Spider for Api {
    type Item = Product;

    async fn parse(&self, page: Page, cx: &mut Cx<Product>) -> Result {
        if page.url().path().starts_with("/api/products/") {
            if let Some(product) = page.extract::<Product>().await? {
                cx.emit(product);
            }
            return Ok(());
        }
        let listing: Listing = page.json().await?;
        for product in listing.products {
            cx.follow(page.url().join(&format!("/api/products/{}", product.id))?);
        }
        if let Some(next) = listing.next {
            cx.follow(page.url().join(&next)?);
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_fields_come_from_the_api_and_an_answer_that_is_not_json_fails_its_page_alone() {
    let site = shop();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("api.jsonl");
    let config = config("api", &site, "/api/broken")
        .start_url(format!("{}api/products?page=1", site.url()))
        .output(&out);
    let summary = Crawler::with_config(Api, config).run().await.unwrap();

    let mut items: Vec<serde_json::Value> = read_json_lines(&out);
    items.sort_by_key(|item| item["id"].as_u64());
    let expected: Vec<serde_json::Value> = catalogue(12)
        .iter()
        .map(|book| {
            let tags = if book.availability.starts_with("In stock") {
                vec!["book", "in-stock"]
            } else {
                vec!["book"]
            };
            serde_json::json!({
                "id": book.id, "name": book.title, "price": MembersSite::price(book.id),
                "currency": "GBP", "tags": tags, "rating": 0,
            })
        })
        .collect();
    assert_eq!(items, expected, "every product of the three API pages, read by its #[json] fields");
    let pages: BTreeSet<String> =
        site.observed().hits.iter().map(|h| h.resource()).filter(|r| r.contains("page=")).collect();
    assert_eq!(pages.len(), 3, "{pages:?}");

    assert_eq!((summary.failures, summary.counts.failures_by_reason.get("json")), (1, Some(&1)), "{summary}");
    let filed = read_json_lines(&dir.path().join("api.failures.jsonl"));
    let broken = format!("{}api/broken", site.url());
    assert_eq!(filed[0]["url"], broken.as_str());
    let message = filed[0]["error"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "the answer from {broken} is not the JSON asked for (line 1, column 32): EOF while parsing a \
                value"
        )),
        "{message}"
    );
}
