//! The members' shop: a login form with a hidden CSRF token, a members-only area, and a
//! JSON API of the catalogue, paged; for requests with bodies, forms and JSON answers.
//!
//! | path | answer |
//! | --- | --- |
//! | `GET /` | links to the login page and the API |
//! | `GET /login` | `form#login`, POSTing to `/login`: a hidden `csrf` token (new on each visit), `user`, `password` |
//! | `POST /login` | a stale or missing token: 403; a wrong user or password: 401 with the form again; else 303 to `/members/` with `Set-Cookie: session=S; Path=/; HttpOnly` |
//! | `GET /members/`, `/members/page-N` | with the session's cookie: the index links each of the pages; without it: 403 and a link to the login |
//! | `GET /api/products?page=N` | `{"page": N, "pages": P, "products": [...], "next": URL or null}` |
//! | `GET /api/products/ID` | one product: `{"id", "name", "offers": [{"price", "currency"}], "tags": [...]}` |
//! | `GET /api/broken` | `application/json` that is not JSON: cut off mid-array |
//! | `POST /api/search` | `{"ok": true}`: for bodies as the server records them ([`Hit::body`](crate::Hit::body)) |
//!
//! The session is only ever the cookie, as on most sites: a crawler that does not send
//! back what the login set never gets past the login.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use percent_encoding::percent_decode;

use crate::catalogue::{book, Book};

/// The members' shop, its users and its catalogue (see the module's table).
///
/// # Examples
///
/// ```
/// use spider_sandbox::{MembersSite, Sandbox};
///
/// let site = MembersSite::new().user("ann", "s3cret").products(25).page_size(10);
/// assert_eq!(site.api_pages(), 3);
/// let sandbox = Sandbox::members(site)?;
/// assert!(sandbox.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct MembersSite {
    users: Vec<(String, String)>,
    products: usize,
    page_size: usize,
    member_pages: usize,
    disallow: Vec<String>,
}

impl Default for MembersSite {
    fn default() -> Self {
        MembersSite { users: Vec::new(), products: 30, page_size: 10, member_pages: 3, disallow: Vec::new() }
    }
}

impl MembersSite {
    /// A shop with no users, 30 products, 10 per API page and 3 members' pages.
    pub fn new() -> Self {
        MembersSite::default()
    }

    /// Let `user` log in with `password`.
    #[must_use]
    pub fn user(mut self, user: &str, password: &str) -> Self {
        self.users.push((user.to_owned(), password.to_owned()));
        self
    }

    /// How many products the API lists (default 30).
    #[must_use]
    pub fn products(mut self, products: usize) -> Self {
        self.products = products;
        self
    }

    /// Products per API page (default 10, at least 1).
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Have robots.txt disallow `path` (a prefix) to every agent; with none, there is no
    /// robots.txt (404: everything allowed).
    #[must_use]
    pub fn disallow(mut self, path: &str) -> Self {
        self.disallow.push(path.to_owned());
        self
    }

    /// The API's page count.
    pub fn api_pages(&self) -> usize {
        self.products.div_ceil(self.page_size).max(1)
    }

    /// How many pages the members' index links (3).
    pub fn member_pages(&self) -> usize {
        self.member_pages
    }

    /// The price of product `id` as the API gives it, a number of pounds.
    pub fn price(id: usize) -> f64 {
        pounds(&book(id))
    }
}

fn pounds(book: &Book) -> f64 {
    book.price.trim_start_matches('£').parse().unwrap_or(0.0)
}

/// An answer, for the server to send.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn new(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Self {
        Reply { status, content_type, headers: Vec::new(), body: body.into() }
    }

    pub(crate) fn html(status: u16, body: String) -> Self {
        Reply::new(status, "text/html; charset=utf-8", body)
    }

    pub(crate) fn json(body: String) -> Self {
        Reply::new(200, "application/json", body)
    }
}

/// A request as the members' shop reads it.
pub(crate) struct Asked<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: &'a str,
    pub(crate) cookie: Option<&'a str>,
    pub(crate) body: &'a [u8],
}

/// The shop serving: its tokens and sessions.
#[derive(Debug)]
pub(crate) struct Members {
    site: MembersSite,
    tokens: Mutex<HashSet<String>>,
    sessions: Mutex<HashSet<String>>,
    issued: AtomicU64,
}

impl Members {
    pub(crate) fn new(site: MembersSite) -> Self {
        Members { site, tokens: Mutex::default(), sessions: Mutex::default(), issued: AtomicU64::new(0) }
    }

    /// A value no one can guess from the ones before it.
    fn secret(&self, kind: &str) -> String {
        let n = self.issued.fetch_add(1, Ordering::Relaxed) + 1;
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("{kind}{:016x}", (n as u128 ^ nanos).wrapping_mul(0x9e37_79b9_7f4a_7c15) as u64)
    }

    pub(crate) fn answer(&self, asked: &Asked<'_>) -> Reply {
        match (asked.method, asked.path) {
            ("GET", "/") => Reply::html(
                200,
                r#"<h1>The members' shop</h1><a href="/login">Log in</a> <a href="/api/products?page=1">API</a>"#.to_owned(),
            ),
            ("GET", "/login") => self.login_page(200, ""),
            ("POST", "/login") => self.log_in(asked.body),
            ("GET", path) if path == "/members/" || path.starts_with("/members/page-") => self.members(asked),
            ("GET", "/api/products") => self.product_page(field(asked.query.as_bytes(), "page")),
            ("GET", "/api/broken") => Reply::json(r#"{"products": [{"id": 1, "name": "#.to_owned()),
            ("GET", path) if path.starts_with("/api/products/") => {
                let id = path["/api/products/".len()..].parse().ok();
                let id = id.filter(|id| (1..=self.site.products).contains(id));
                id.map_or_else(
                    || Reply::new(404, "application/json", "{}"),
                    |id| Reply::json(product(&book(id))),
                )
            }
            ("POST", "/api/search") => Reply::json(r#"{"ok": true}"#.to_owned()),
            ("GET", "/robots.txt") if !self.site.disallow.is_empty() => {
                let rules: String = self.site.disallow.iter().map(|path| format!("Disallow: \
                    {path}\n")).collect();
                Reply::new(200, "text/plain", format!("User-agent: *\n{rules}"))
            }
            _ => Reply::new(404, "text/plain", "not found"),
        }
    }

    fn login_page(&self, status: u16, message: &str) -> Reply {
        let token = self.secret("t");
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).insert(token.clone());
        Reply::html(
            status,
            format!(
                r#"<h1>Log in</h1><p class="message">{message}</p>
<form id="login" action="/login" method="post">
  <input type="hidden" name="csrf" value="{token}">
  <label>User <input name="user"></label>
  <label>Password <input type="password" name="password"></label>
  <button type="submit">Log in</button>
</form>"#
            ),
        )
    }

    fn log_in(&self, body: &[u8]) -> Reply {
        let token = field(body, "csrf").unwrap_or_default();
        // A token works once: a replayed form is refused like a forged one.
        if !self.tokens.lock().unwrap_or_else(|e| e.into_inner()).remove(&token) {
            return Reply::html(
                403,
                "<p>The form's CSRF token is missing or stale: load the login page again.</p>".to_owned(),
            );
        }
        let (user, password) =
            (field(body, "user").unwrap_or_default(), field(body, "password").unwrap_or_default());
        if !self.site.users.iter().any(|(u, p)| *u == user && *p == password) {
            return self.login_page(401, "Wrong user or password.");
        }
        let session = self.secret("s");
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).insert(session.clone());
        let mut reply = Reply::new(303, "text/plain", "");
        reply.headers.push(("location", "/members/".to_owned()));
        reply.headers.push(("set-cookie", format!("session={session}; Path=/; HttpOnly")));
        reply
    }

    fn members(&self, asked: &Asked<'_>) -> Reply {
        let from_cookie = asked.cookie.and_then(|cookie| {
            cookie.split(';').find_map(|pair| pair.trim().strip_prefix("session=").map(str::to_owned))
        });
        let known =
            from_cookie.filter(|s| self.sessions.lock().unwrap_or_else(|e| e.into_inner()).contains(s));
        let Some(_) = known else {
            return Reply::html(
                403,
                r#"<p class="members-only">Members only: <a href="/login">log in</a>.</p>"#.to_owned(),
            );
        };
        if asked.path == "/members/" {
            let links: String = (1..=self.site.member_pages)
                .map(|n| format!(r#"<li><a class="member-page" href="/members/page-{n}">Page {n}</a></li>"#))
                .collect();
            return Reply::html(200, format!("<h1>Members</h1><ul>{links}</ul>"));
        }
        let n: usize = asked.path["/members/page-".len()..].parse().unwrap_or(0);
        if !(1..=self.site.member_pages).contains(&n) {
            return Reply::new(404, "text/plain", "not found");
        }
        Reply::html(
            200,
            format!(
                r#"<h1 class="member-title">Members' page {n}</h1><p class="secret">Offer {n} for members</p>"#
            ),
        )
    }

    fn product_page(&self, page: Option<String>) -> Reply {
        let pages = self.site.api_pages();
        let Some(page) = page.and_then(|p| p.parse::<usize>().ok()).filter(|p| (1..=pages).contains(p))
        else {
            return Reply::new(404, "application/json", r#"{"error": "no such page"}"#);
        };
        let first = (page - 1) * self.site.page_size + 1;
        let last = (page * self.site.page_size).min(self.site.products);
        let products: Vec<String> = (first..=last).map(|id| product(&book(id))).collect();
        let next =
            if page < pages { format!(r#""/api/products?page={}""#, page + 1) } else { "null".to_owned() };
        Reply::json(format!(
            r#"{{"page": {page}, "pages": {pages}, "products": [{}], "next": {next}}}"#,
            products.join(", ")
        ))
    }
}

/// A product as the API gives it. Titles come from word lists: nothing in them needs
/// escaping in JSON.
fn product(book: &Book) -> String {
    let tags =
        if book.availability.starts_with("In stock") { r#"["book", "in-stock"]"# } else { r#"["book"]"# };
    format!(
        r#"{{"id": {}, "name": "{}", "offers": [{{"price": {:.2}, "currency": "GBP"}}], "tags": {tags}}}"#,
        book.id,
        book.title,
        pounds(book)
    )
}

/// The first value of `name` in URL-encoded `pairs` (a query, or a form's body).
fn field(pairs: &[u8], name: &str) -> Option<String> {
    pairs.split(|b| *b == b'&').find_map(|pair| {
        let (key, value) = match pair.iter().position(|b| *b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &b""[..]),
        };
        (decode(key) == name).then(|| decode(value))
    })
}

fn decode(text: &[u8]) -> String {
    let spaced: Vec<u8> = text.iter().map(|b| if *b == b'+' { b' ' } else { *b }).collect();
    percent_decode(&spaced).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask<'a>(method: &'a str, path: &'a str, query: &'a str, body: &'a [u8]) -> Asked<'a> {
        Asked { method, path, query, cookie: None, body }
    }

    #[test]
    fn a_login_needs_the_token_the_form_carried_and_works_once() {
        let shop = Members::new(MembersSite::new().user("ann", "s3 cret"));
        let form = String::from_utf8_lossy(&shop.answer(&ask("GET", "/login", "", b"")).body).into_owned();
        let token = form
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default();
        let body = format!("csrf={token}&user=ann&password=s3+cret");
        let ok = shop.answer(&ask("POST", "/login", "", body.as_bytes()));
        assert_eq!(ok.status, 303);
        assert_eq!(ok.headers[0], ("location", "/members/".to_owned()));
        let cookie = ok.headers[1].1.split(';').next().unwrap_or_default().to_owned();
        let with_session = Asked { cookie: Some(&cookie), ..ask("GET", "/members/page-2", "", b"") };
        assert_eq!(shop.answer(&with_session).status, 200);
        assert_eq!(shop.answer(&ask("GET", "/members/page-2", "", b"")).status, 403, "no session");
        assert_eq!(shop.answer(&ask("POST", "/login", "", body.as_bytes())).status, 403, "replayed");
    }
}
