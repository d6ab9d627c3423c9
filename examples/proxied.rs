//! A crawl that a per-IP limit would stop, finished through a rotating gateway, offline.
//!
//! ```text
//! cargo run --release --example proxied
//! cargo run --release --example proxied -- --set proxy=direct     # see the limit bite
//! ```
//!
//! The hostile sandbox site (127.0.0.1:8767) answers each client IP 5 requests per second,
//! then 429, and bans one that keeps going. The mock gateway (127.0.0.1:8768) gives every
//! connection a new exit address. The spider's route is `direct > env:SHOP_PROXY`: each
//! host starts direct, the cheap tier, and climbs to the gateway when it keeps being
//! blocked; every proxied request then leaves from a new exit. The gateway's URL, with the
//! sandbox's credentials, goes in the environment, never in code. The summary shows the
//! traffic through the gateway and its price at `proxy_price_per_gb`.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::time::Duration;

use spider_sandbox::{GatewayConfig, HostileSite, IdentityLimit, MockGateway, Sandbox};
use spiderling::prelude::*;

#[derive(Spider, Default)]
#[spider(
    name = "shop",
    start_urls = ["http://127.0.0.1:8767/"],
    allowed_domains = ["127.0.0.1"],
    concurrency = 8,
    proxy = "direct > env:SHOP_PROXY",
    geo = "us",
    proxy_price_per_gb = 8.0,
    follow = "a[href]",
    item = Product,
    output = "products.jsonl",
)]
struct Shop;

#[derive(Item, Serialize)]
struct Product {
    #[css("h1.title")]
    title: String,
    #[css("p.price")]
    price: String,
}

fn main() -> ExitCode {
    let limit = IdentityLimit {
        requests: 5,
        per: Duration::from_secs(1),
        ban_after: 10,
        ban_for: Duration::from_secs(60),
    };
    let site = HostileSite { pages: 200, limit: Some(limit), ..HostileSite::empty() };
    let (site, gateway) =
        match (Sandbox::hostile_on(site, 8767), MockGateway::start_on(GatewayConfig::default(), 8768)) {
            (Ok(site), Ok(gateway)) => (site, gateway),
            (Err(error), _) | (_, Err(error)) => {
                eprintln!("error: cannot serve the sandbox on 127.0.0.1:8767 and :8768: {error}");
                return ExitCode::FAILURE;
            }
        };
    if std::env::var_os("SHOP_PROXY").is_none() {
        // The sandbox's own credentials; a real gateway's come from your environment.
        std::env::set_var("SHOP_PROXY", gateway.url_with_credentials());
    }
    println!("hostile site at {}, gateway at {}", site.url(), gateway.url());
    let code = spiderling::cli::main::<Shop>();
    let (seen, through) = (site.observed(), gateway.observed());
    let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let direct = seen.hits.iter().filter(|hit| hit.peer == local).count();
    let exits: BTreeSet<IpAddr> =
        seen.hits.iter().map(|hit| hit.peer).filter(|peer| *peer != local).collect();
    println!(
        "the site saw {} requests: {} direct, {} through the gateway from {} exit addresses; answered 429 \
            ×{}, 403 ×{}",
        seen.hits.len(),
        direct,
        through.requests.len(),
        exits.len(),
        seen.answered(429),
        seen.answered(403),
    );
    code
}
