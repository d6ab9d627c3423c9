//! The cookie shop: a site that knows its visitors the way ordinary shops do, by a cookie
//! set on the first page and by the address it arrives from, and that bans whoever
//! follows a link no person can see.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A shop that needs cookies. Its layout:
///
/// - `/`: the home page. A visitor without a known `visitor` cookie is given one
///   (`Set-Cookie: visitor=…; Path=/`), and with `wall_first` gets the consent wall in
///   its place. It links the honeypots first, then each
///   `/product/I`, the checkout `/checkout/1`, and `/elsewhere` on the other loopback
///   spelling (another site, for cookies that must not go there).
/// - `/product/I` (1 to `products`): the product (`h1.title`, `p.price`) for a known
///   visitor; anyone else gets a consent wall served with 200 (`id="consent-wall"`,
///   the marker to configure) that sets a new `visitor` cookie.
/// - honeypots, each inside an element a person cannot see: `/trap/display` (inline
///   `display:none`), `/trap/visibility` (`visibility:hidden`), `/trap/hidden` (the
///   `hidden` attribute), `/trap/aria` (`aria-hidden="true"` off-screen). Requesting one
///   bans the address it came from and the `visitor` cookie it carried: from then on
///   both get 403 on every page.
/// - `/welcome`: a redirect (302) to `/product/1` that gives a new visitor its cookie on the
///   way.
/// - `/checkout/1`, `/checkout/2`, `/checkout/3`: a session bound to one cookie and one
///   address. Step 1 (for a known visitor) sets a `cart` cookie tied to the address it
///   was set for; steps 2 and 3 answer 403 unless the `cart` cookie comes from that same
///   address. Step 3 is the order (`h1.title` "Order placed").
///
/// With a [`SessionLimit`] the shop is the session-limited site: each `visitor` cookie and
/// each address may make so many requests in a window; past that, every page is a captcha
/// served with 200 (`id="captcha-wall"`, [`CAPTCHA_MARKER`]), which counts as a request
/// too, so a client that keeps going stays behind it.
///
/// robots.txt is 404: everything may be crawled.
///
/// # Examples
///
/// ```
/// use spider_sandbox::{Sandbox, ShopSite};
///
/// let shop = Sandbox::shop(ShopSite { products: 3, ..ShopSite::default() })?;
/// assert!(shop.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShopSite {
    /// Product pages.
    pub products: usize,
    /// The most requests a visitor cookie, and an address, may make in a window.
    pub limit: Option<SessionLimit>,
    /// How long each page takes to answer (robots.txt answers at once).
    pub latency: Duration,
    /// The home page too is behind the consent wall for a visitor without a cookie, as
    /// the start page a crawl meets first.
    pub wall_first: bool,
}

impl Default for ShopSite {
    fn default() -> Self {
        ShopSite { products: 6, limit: None, latency: Duration::ZERO, wall_first: false }
    }
}

/// A limit per session and per address: at most `requests` in any `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimit {
    /// Requests allowed in a window, the captchas served past them counted too.
    pub requests: usize,
    /// The sliding window they are counted over.
    pub window: Duration,
}

/// What the shop handed out, as a test asks it (`Sandbox::shop_tally`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShopTally {
    /// `visitor` cookies handed out: one per consent wall passed, or per first home page.
    pub cookies_issued: u64,
    /// Of those, how many ever came back on a request.
    pub cookies_used: u64,
    /// Captcha pages served.
    pub captchas: u64,
}

/// The marker of the consent wall, for `block_markers`.
pub const CONSENT_MARKER: &str = "consent-wall";

/// The marker of the session-limited shop's captcha page, for `block_markers`.
pub const CAPTCHA_MARKER: &str = "captcha-wall";

/// What the shop remembers: the cookies it handed out, carts and their addresses, bans.
#[derive(Debug, Default)]
struct Memory {
    issued: u64,
    visitors: HashSet<String>,
    carts: HashMap<String, IpAddr>,
    banned_peers: HashSet<IpAddr>,
    banned_visitors: HashSet<String>,
    /// Visitor cookies that came back at least once.
    used: HashSet<String>,
    /// When each cookie and each address made its recent requests, with a limit.
    by_visitor: HashMap<String, VecDeque<Instant>>,
    by_peer: HashMap<IpAddr, VecDeque<Instant>>,
    captchas: u64,
}

/// Whether one more request at `now` keeps `times` within `limit`; it is counted either way.
fn within(times: &mut VecDeque<Instant>, limit: SessionLimit, now: Instant) -> bool {
    while times.front().is_some_and(|t| now.duration_since(*t) >= limit.window) {
        times.pop_front();
    }
    times.push_back(now);
    times.len() <= limit.requests
}

/// The shop and its memory, as the server runs it.
#[derive(Debug)]
pub(crate) struct Shop {
    site: ShopSite,
    memory: Mutex<Memory>,
}

/// One answer of the shop.
pub(crate) struct ShopAnswer {
    pub(crate) status: u16,
    pub(crate) set_cookie: Option<String>,
    /// Where a redirect leads.
    pub(crate) location: Option<&'static str>,
    pub(crate) html: String,
}

impl ShopAnswer {
    fn page(html: String) -> Self {
        ShopAnswer { status: 200, set_cookie: None, location: None, html }
    }

    fn refused(why: &str) -> Self {
        ShopAnswer {
            status: 403,
            set_cookie: None,
            location: None,
            html: format!("<h1>Forbidden</h1><p>{why}</p>"),
        }
    }
}

impl Shop {
    pub(crate) fn new(site: ShopSite) -> Self {
        Shop { site, memory: Mutex::new(Memory::default()) }
    }

    pub(crate) fn latency(&self) -> Duration {
        self.site.latency
    }

    pub(crate) fn tally(&self) -> ShopTally {
        let memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        ShopTally {
            cookies_issued: memory.visitors.len() as u64,
            cookies_used: memory.used.len() as u64,
            captchas: memory.captchas,
        }
    }

    /// The answer to `path` from `peer` carrying the cookie header `cookie`; `elsewhere`
    /// is the other site's `host:port`.
    pub(crate) fn answer(
        &self,
        path: &str,
        peer: IpAddr,
        cookie: Option<&str>,
        elsewhere: &str,
    ) -> Option<ShopAnswer> {
        let cookie_of = |name: &str| {
            let pairs = cookie.unwrap_or("").split(';').filter_map(|pair| pair.trim().split_once('='));
            pairs.into_iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_owned())
        };
        let (visitor, cart) = (cookie_of("visitor"), cookie_of("cart"));
        let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        if path == "/robots.txt" {
            return None;
        }
        if memory.banned_peers.contains(&peer)
            || visitor.as_ref().is_some_and(|v| memory.banned_visitors.contains(v))
        {
            return Some(ShopAnswer::refused("banned"));
        }
        if path.starts_with("/trap/") {
            memory.banned_peers.insert(peer);
            memory.banned_visitors.extend(visitor);
            return Some(ShopAnswer::refused("a person cannot see that link: banned"));
        }
        let known = visitor.as_ref().is_some_and(|v| memory.visitors.contains(v));
        if let Some(visitor) = visitor.as_ref().filter(|_| known) {
            memory.used.insert(visitor.clone());
        }
        if let Some(limit) = self.site.limit {
            let now = Instant::now();
            let mut fine = within(memory.by_peer.entry(peer).or_default(), limit, now);
            if let Some(visitor) = visitor.as_ref().filter(|_| known) {
                fine &= within(memory.by_visitor.entry(visitor.clone()).or_default(), limit, now);
            }
            if !fine {
                memory.captchas += 1;
                let html = format!(
                    "<title>One moment</title><form id=\"{CAPTCHA_MARKER}\" method=\"post\">\
                     Prove you are a person <input name=\"answer\"></form>"
                );
                return Some(ShopAnswer::page(html));
            }
        }
        let welcome = |memory: &mut Memory| {
            memory.issued += 1;
            let token = format!("v{}-{:08x}", memory.issued, memory.issued.wrapping_mul(0x9e37_79b9) as u32);
            memory.visitors.insert(token.clone());
            format!("visitor={token}; Path=/")
        };
        let wall = |memory: &mut Memory| {
            let html = format!(
                "<title>Before you continue</title><div id=\"{CONSENT_MARKER}\">We use cookies. \
                 <a href=\"/\">Accept</a></div>"
            );
            ShopAnswer { status: 200, set_cookie: Some(welcome(memory)), location: None, html }
        };
        match path {
            "/" if !known && self.site.wall_first => Some(wall(&mut memory)),
            "/" => {
                let mut answer = ShopAnswer::page(self.home(elsewhere));
                if !known {
                    answer.set_cookie = Some(welcome(&mut memory));
                }
                Some(answer)
            }
            _ if !known && (path.starts_with("/product/") || path.starts_with("/checkout/")) => {
                Some(wall(&mut memory))
            }
            "/welcome" => Some(ShopAnswer {
                status: 302,
                set_cookie: (!known).then(|| welcome(&mut memory)),
                location: Some("/product/1"),
                html: String::new(),
            }),
            "/checkout/1" => {
                memory.issued += 1;
                let token = format!("c{}", memory.issued);
                memory.carts.insert(token.clone(), peer);
                let html = "<h2>Your cart</h2><a href=\"/checkout/2\">next</a>".to_owned();
                Some(ShopAnswer {
                    status: 200,
                    set_cookie: Some(format!("cart={token}; Path=/checkout")),
                    location: None,
                    html,
                })
            }
            "/checkout/2" | "/checkout/3" => {
                match cart.as_ref().and_then(|c| memory.carts.get(c)) {
                    Some(owner) if *owner == peer => {}
                    Some(_) => return Some(ShopAnswer::refused("this cart was opened from another address")),
                    None => return Some(ShopAnswer::refused("no cart")),
                }
                let html = if path == "/checkout/2" {
                    "<h2>Delivery</h2><a href=\"/checkout/3\">place the order</a>".to_owned()
                } else {
                    "<h1 class=\"title\">Order placed</h1><p class=\"price\">£0.00</p>".to_owned()
                };
                Some(ShopAnswer::page(html))
            }
            _ => {
                let id: usize = path.strip_prefix("/product/")?.parse().ok()?;
                (1..=self.site.products).contains(&id).then(|| {
                    ShopAnswer::page(format!(
                        "<h1 class=\"title\">Product {id}</h1><p class=\"price\">£{id}.00</p><a \
                            href=\"/\">home</a>"
                    ))
                })
            }
        }
    }

    fn home(&self, elsewhere: &str) -> String {
        let mut html = String::from(
            "<html><body><h1>The cookie shop</h1>\n\
             <div style=\"display:none\"><a href=\"/trap/display\">offers</a></div>\n\
             <span style=\"visibility: hidden\"><a href=\"/trap/visibility\">offers</a></span>\n\
             <a hidden href=\"/trap/hidden\">offers</a>\n\
             <div aria-hidden=\"true\" style=\"position:absolute; left:-9999px\"><a \
                 href=\"/trap/aria\">offers</a></div>\n<ul>\n",
        );
        for id in 1..=self.site.products {
            html.push_str(&format!("<li><a href=\"/product/{id}\">Product {id}</a></li>\n"));
        }
        html.push_str(&format!(
            "</ul>\n<a href=\"/checkout/1\">checkout</a>\n<a \
                href=\"http://{elsewhere}/elsewhere\">partner</a>\n</body></html>"
        ));
        html
    }
}
