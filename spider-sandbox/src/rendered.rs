//! The client-rendered shop: pages sent as empty shells that a script fills in from a JSON
//! API, beside pages served whole, for the rendering tier.
//!
//! | path | answer |
//! | --- | --- |
//! | `GET /robots.txt` | everything allowed, but the path of [`RenderedSite::disallow`] |
//! | `GET /` | links to `/list/` and `/plain/`; sets `Set-Cookie: visitor=V; Path=/` |
//! | `GET /list/` | a shell: the script fetches `/api/list?page=1` and writes a link `a.product` per product, then a `button.more` while pages are left; each click fetches the next page and adds its links; the button is removed after the last |
//! | `GET /api/list?page=N` | `{"products": [ids], "more": bool}` |
//! | `GET /product/ID` | a shell: after the site's delay, the script fetches `/api/product/ID?cookie=…` (the page's `document.cookie`) and writes `h1.name` and `p.price`; it sets `document.cookie = "consent=yes; path=/"` |
//! | `GET /api/product/ID` | `{"id", "name", "price"}` |
//! | `GET /plain/` | a listing served whole: a link `a.plain` per server-rendered product |
//! | `GET /plain/ID` | a product served whole: `h1.name`, `p.price` |
//! | `GET /app.js` | the script every page loads (also the whole ones, where it does nothing): its requests count the pages rendered |
//! | `GET /logo.png`, `GET /style.css` | an image and a style sheet every page links |
//!
//! Each hit's kind, as [`RenderedSite::kind`] names it, is how tests count what the site
//! received: pages, API calls, scripts, images and styles.

use bytes::Bytes;

use crate::catalogue::book;
use crate::members::Reply;

/// The client-rendered shop (see the module's table).
///
/// # Examples
///
/// ```
/// use spider_sandbox::{RenderedSite, Sandbox};
///
/// let site = RenderedSite::new().products(12).page_size(5).plain(4);
/// assert_eq!(site.list_pages(), 3);
/// let sandbox = Sandbox::rendered(site)?;
/// assert!(sandbox.url().starts_with("http://127.0.0.1:"));
/// assert_eq!(RenderedSite::kind("/api/list?page=2"), "api");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RenderedSite {
    products: usize,
    page_size: usize,
    plain: usize,
    delay_ms: u64,
    latency_ms: u64,
    disallow: Option<String>,
}

impl Default for RenderedSite {
    fn default() -> Self {
        RenderedSite { products: 20, page_size: 5, plain: 20, delay_ms: 300, latency_ms: 0, disallow: None }
    }
}

impl RenderedSite {
    /// 20 client-rendered products listed 5 a page, 20 served whole, a 300 ms delay.
    pub fn new() -> Self {
        RenderedSite::default()
    }

    /// Client-rendered products (default 20).
    #[must_use]
    pub fn products(mut self, products: usize) -> Self {
        self.products = products;
        self
    }

    /// Products per page of the API's listing (default 5, at least 1).
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Products served whole (default 20).
    #[must_use]
    pub fn plain(mut self, plain: usize) -> Self {
        self.plain = plain;
        self
    }

    /// How long a product page's script waits before it fetches the product (default
    /// 300 ms): longer than a page's network stays quiet, so only waiting for the item's
    /// selectors reads it.
    #[must_use]
    pub fn delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// How long every answer but robots.txt's takes (default 0): long enough, requests
    /// the browser makes at once overlap at the server, which counts them in flight.
    #[must_use]
    pub fn latency_ms(mut self, latency_ms: u64) -> Self {
        self.latency_ms = latency_ms;
        self
    }

    /// A path prefix robots.txt disallows for every agent (default none), such as
    /// `/style.css`, which every page links.
    #[must_use]
    pub fn disallow(mut self, path: &str) -> Self {
        self.disallow = Some(path.to_owned());
        self
    }

    /// How long an answer to `path` is held back (see [`latency_ms`](Self::latency_ms)).
    pub(crate) fn latency(&self, path: &str) -> std::time::Duration {
        let ms = if path == "/robots.txt" { 0 } else { self.latency_ms };
        std::time::Duration::from_millis(ms)
    }

    /// The pages of the API's listing, that is one plus the clicks on "load more".
    pub fn list_pages(&self) -> usize {
        self.products.div_ceil(self.page_size).max(1)
    }

    /// How many client-rendered products there are.
    pub fn product_count(&self) -> usize {
        self.products
    }

    /// How many products are served whole.
    pub fn plain_count(&self) -> usize {
        self.plain
    }

    /// Product `id`'s name and price, as the API and the whole pages give them.
    pub fn product(id: usize) -> (String, String) {
        let book = book(id);
        (book.title, book.price)
    }

    /// What a request target is: `page`, `api`, `script`, `image`, `style` or `robots`.
    pub fn kind(target: &str) -> &'static str {
        let path = target.split('?').next().unwrap_or(target);
        match path {
            "/robots.txt" => "robots",
            "/app.js" => "script",
            "/logo.png" => "image",
            "/style.css" => "style",
            _ if path.starts_with("/api/") => "api",
            _ => "page",
        }
    }

    pub(crate) fn answer(&self, path: &str, query: &str) -> Reply {
        let id = |prefix: &str| path.strip_prefix(prefix).and_then(|id| id.parse::<usize>().ok());
        match path {
            "/robots.txt" => {
                let disallow = self.disallow.as_deref().map(|path| format!("Disallow: {path}\n"));
                Reply::new(
                    200,
                    "text/plain",
                    format!("User-agent: *\n{}Allow: /\n", disallow.unwrap_or_default()),
                )
            }
            "/" => {
                let mut reply = Reply::html(
                    200,
                    shell("home", "", r#"<a href="/list/">Catalogue</a> <a href="/plain/">Classics</a>"#),
                );
                reply.headers.push(("set-cookie", "visitor=v1; Path=/".to_owned()));
                reply
            }
            "/list/" => Reply::html(200, shell("list", "", r#"<div id="products"></div>"#)),
            "/api/list" => {
                let page =
                    query_value(query, "page").and_then(|n| n.parse::<usize>().ok()).unwrap_or(1).max(1);
                let first = (page - 1) * self.page_size + 1;
                let last = (page * self.page_size).min(self.products);
                let ids: Vec<String> = (first..=last).map(|id| id.to_string()).collect();
                let more = last < self.products;
                Reply::json(format!(r#"{{"products": [{}], "more": {more}}}"#, ids.join(", ")))
            }
            "/plain/" => {
                let links: String = (1..=self.plain)
                    .map(|id| format!(r#"<a class="plain" href="/plain/{id}">{id}</a> "#))
                    .collect();
                Reply::html(200, shell("static", "", &links))
            }
            "/app.js" => Reply::new(200, "text/javascript", script(self.delay_ms)),
            "/logo.png" => Reply::new(200, "image/png", Bytes::from_static(PNG)),
            "/style.css" => Reply::new(200, "text/css", "body { font-family: sans-serif; }"),
            _ => {
                if let Some(id) = id("/product/").filter(|id| (1..=self.products).contains(id)) {
                    return Reply::html(
                        200,
                        shell("product", &format!(r#" data-id="{id}""#), r#"<div id="product"></div>"#),
                    );
                }
                if let Some(id) = id("/api/product/").filter(|id| (1..=self.products).contains(id)) {
                    let (name, price) = RenderedSite::product(id);
                    let json = serde_json::json!({ "id": id, "name": name, "price": price });
                    return Reply::json(json.to_string());
                }
                if let Some(id) = id("/plain/").filter(|id| (1..=self.plain).contains(id)) {
                    let (name, price) = RenderedSite::product(1000 + id);
                    let body = format!(r#"<h1 class="name">{name}</h1><p class="price">{price}</p>"#);
                    return Reply::html(200, shell("static", "", &body));
                }
                Reply::html(404, "<h1>not found</h1>".to_owned())
            }
        }
    }
}

/// A page: its kind for the script, the body given, the script, a style sheet and a logo.
fn shell(kind: &str, data: &str, body: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>Shop</title><link rel="stylesheet" href="/style.css"></head><body data-page="{kind}"{data}><img src="/logo.png" alt="logo">{body}<script src="/app.js"></script></body></html>"#
    )
}

/// The shop's one script.
fn script(delay_ms: u64) -> String {
    format!(
        r#"(function () {{
  var body = document.body, kind = body.dataset.page;
  if (kind === 'list') {{
    var list = document.getElementById('products'), page = 0;
    function more() {{
      page += 1;
      return fetch('/api/list?page=' + page).then(function (r) {{ return r.json(); }}).then(function (data) {{
        data.products.forEach(function (id) {{
          var a = document.createElement('a');
          a.className = 'product'; a.href = '/product/' + id; a.textContent = 'Product ' + id;
          list.appendChild(a);
        }});
        var button = document.querySelector('button.more');
        if (data.more && !button) {{
          button = document.createElement('button');
          button.className = 'more'; button.textContent = 'Load more';
          button.addEventListener('click', function () {{ button.disabled = true; more().then(function () {{ button.disabled = false; }}); }});
          body.appendChild(button);
        }} else if (!data.more && button) {{
          button.remove();
        }}
      }});
    }}
    more();
  }} else if (kind === 'product') {{
    document.cookie = 'consent=yes; path=/';
    setTimeout(function () {{
      fetch('/api/product/' + body.dataset.id + '?cookie=' + encodeURIComponent(document.cookie))
        .then(function (r) {{ return r.json(); }})
        .then(function (p) {{
          var h1 = document.createElement('h1'); h1.className = 'name'; h1.textContent = p.name;
          var price = document.createElement('p'); price.className = 'price'; price.textContent = p.price;
          var into = document.getElementById('product'); into.appendChild(h1); into.appendChild(price);
        }});
    }}, {delay_ms});
  }}
}})();
"#
    )
}

/// The value of `name` in a query string.
fn query_value<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|pair| pair.split_once('=').filter(|(key, _)| *key == name).map(|(_, value)| value))
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00,
    0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05,
    0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42,
    0x60, 0x82,
];
