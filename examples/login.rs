//! A crawl behind a login form, and a JSON API beside it.
//!
//! ```text
//! cargo run --example login                                   # writes members.jsonl
//! SHOP_USER=ann SHOP_PASSWORD=s3cret cargo run --example login
//! ```
//!
//! The members' shop of the sandbox (127.0.0.1:8767) has a login form with a hidden CSRF
//! token, a members-only area, and a paged JSON API of its products. The spider's `start`
//! hook logs in before the crawl: it reads the login page's form (the token comes with
//! it), fills in the user and password from the environment, posts it, and starts the
//! crawl from the members' page the login redirected to, and from the API's first page.
//! `parse` reads the members' pages with CSS and the API's answers as JSON: the listing
//! pages into a `Deserialize` struct, each product with `#[json]` fields.
//!
//! The shop knows its members by the session cookie the login sets and nothing else: the
//! cookie the `start` hook's login was given is every identity's, so the crawl's requests
//! send it back.

use std::process::ExitCode;
use std::sync::LazyLock;

use spider_sandbox::{MembersSite, Sandbox};
use spiderling::prelude::*;

const SHOP: &str = "http://127.0.0.1:8767/";

#[derive(Spider, Default)]
#[spider(name = "login", allowed_domains = ["127.0.0.1"], output = "members.jsonl")]
struct Login;

/// What the crawl finds: members' offers and the API's products, in one output.
#[derive(Serialize)]
#[serde(untagged)]
enum Found {
    Member(MemberOffer),
    Product(Product),
}

#[derive(Item, Serialize)]
struct MemberOffer {
    #[css("h1.member-title")]
    page: String,
    #[css("p.secret")]
    offer: String,
}

#[derive(Item, Serialize)]
struct Product {
    #[json("/id")]
    id: u64,
    #[json("/name")]
    name: String,
    #[json("/offers/0/price")]
    price: f64,
    #[json("/tags")]
    tags: Vec<String>,
}

/// A page of the API's listing: read into this, only the fields the spider needs.
#[derive(Deserialize)]
struct Listing {
    products: Vec<Listed>,
    next: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    id: u64,
}

static MEMBER_PAGES: LazyLock<Selector> = LazyLock::new(|| css("a.member-page"));

#[allow(clippy::expect_used)]
fn css(selector: &str) -> Selector {
    Selector::parse(selector).expect("a selector written in this file")
}

/// Credentials come from the environment, never from code; the sandbox's own by default.
fn credential(name: &str, sandbox_default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| sandbox_default.to_owned())
}

#[async_trait]
impl Spider for Login {
    type Item = Found;

    async fn start(&self, start: &mut Start<'_>) -> Result {
        let login_page = start.fetch(Request::get(&format!("{SHOP}login"))?).await?;
        let form = login_page
            .form("form#login")
            .await?
            .set("user", credential("SHOP_USER", "ann"))
            .set("password", credential("SHOP_PASSWORD", "s3cret"));
        let members = start.fetch(form.into_request()?).await?;
        if members.status() != 200 {
            return Err(format!("the shop refused the login: {}", members.status()).into());
        }
        start.queue(Request::new(members.url().clone()));
        start.queue(Request::get(&format!("{SHOP}api/products?page=1"))?);
        Ok(())
    }

    async fn parse(&self, page: Page, cx: &mut Cx<Found>) -> Result {
        let path = page.url().path().to_owned();
        if path.starts_with("/members/") {
            let (offer, links) =
                page.html(|doc| (doc.extract::<MemberOffer>(), doc.links(&MEMBER_PAGES))).await?;
            if let Some(offer) = offer? {
                cx.emit(Found::Member(offer));
            }
            cx.follow_all(links);
        } else if path == "/api/products" {
            let listing: Listing = page.json().await?;
            for product in listing.products {
                cx.follow(page.url().join(&format!("/api/products/{}", product.id))?);
            }
            if let Some(next) = listing.next {
                cx.follow(page.url().join(&next)?);
            }
        } else if let Some(product) = page.extract::<Product>().await? {
            cx.emit(Found::Product(product));
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    let shop = MembersSite::new().user("ann", "s3cret");
    let site = match Sandbox::members_on(shop, 8767) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve the members' shop on 127.0.0.1:8767: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("members' shop at {}", site.url());
    spiderling::cli::main::<Login>()
}
