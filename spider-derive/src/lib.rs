//! Derive macros for Spiderling, re-exported by the `spiderling` facade.
//!
//! Both check what they can at compile time (keys, literals, URLs, selectors) and point
//! their errors at the offending token. Generated code calls only
//! `spiderling::__private`, and this crate is pinned to the runtime's exact version.
//!
//! Each derive goes parse → model → check → expand: `spider/` and `item/` each hold an
//! `attr.rs` (the typed model, checked while it is read) and an `expand.rs`.

mod errors;
mod item;
mod spider;

use proc_macro::TokenStream;

/// Parse a selector with the runtime's parser, explaining a failure in words.
fn check_selector(css: &str) -> Result<(), String> {
    spider_settings::check_selector(css, |css| {
        scraper::Selector::parse(css).map(drop).map_err(|e| format!("{e:?}"))
    })
}

/// Derive a spider's settings, and with `rule(...)`s (or `item` / `follow`) its whole crawl, from
/// `#[spider(...)]`.
///
/// ```
/// use spiderling::prelude::*;
/// # #[derive(Item, Serialize)] struct Book { #[css("h1")] title: String }
///
/// #[derive(Spider, Default)]
/// #[spider(
///     name = "books",
///     start_urls = ["http://127.0.0.1:8000/"],
///     allowed_domains = ["127.0.0.1"],
///     profile = "general",          // a preset; the keys below win over it
///     concurrency = 16,
///     rpm = 6000,
///     delay = "10ms..50ms",
///     follow = "a.next, h3 > a",    // links to follow on every page
///     item = Book,                  // emitted when a page has one
/// )]
/// struct Books;
///
/// fn main() -> std::process::ExitCode {
///     # if true { return std::process::ExitCode::SUCCESS; }
///     spiderling::cli::main::<Books>()
/// }
/// ```
///
/// Without `rule(...)`s, `item` and `follow`, write the crawl yourself:
/// `#[async_trait] impl Spider for Books { type Item = ...; async fn parse(...) }`.
///
/// The keys, from the settings' one table (`spider_settings::KEYS`), which `--set` and the
/// environment read too:
///
#[doc = include_str!(concat!(env!("OUT_DIR"), "/keys.md"))]
///
/// Besides them, `rule(...)`, repeatable, is a link rule instead of `follow` and `item` (see
/// below). Every key not marked "in `#[spider(...)]` only" can be changed at run time
/// without a rebuild: `SPIDERLING_RPM=300` or `--set rpm=300` with `spiderling::cli::main`.
/// Proxy credentials belong there (or in the variable `env:VAR` names), never in code.
///
/// # Link rules
///
/// When a site's pages are of several kinds, `rule(...)`s say which links to take and
/// what the pages they reach are for, as Scrapy's `Rule` and `LinkExtractor` do: here
/// listing pages are only searched for links, and book pages only scraped, ahead of
/// further listings.
///
/// ```
/// use spiderling::prelude::*;
/// # #[derive(Item, Serialize)] struct Book { #[css("h1")] title: String }
///
/// #[derive(Spider, Default)]
/// #[spider(
///     start_urls = ["http://127.0.0.1:8000/"],
///     allowed_domains = ["127.0.0.1"],
///     rule(allow = r"/catalogue/page-\d+\.html", follow),
///     rule(css = "h3 > a", allow = r"/book_\d+\.html$", parse = Book, priority = 10),
/// )]
/// struct Books;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> spiderling::Result {
/// let listing = Page::fixture(
///     "http://127.0.0.1:8000/catalogue/page-1.html",
///     r#"<h3><a href="book_1.html">Atlas</a></h3> <a href="page-2.html">next</a> <a href="/about">about</a>"#,
/// )?;
/// let (_, follows) = spiderling::testing::parse_page(&Books, listing).await?;
/// let taken: Vec<(&str, i32)> = follows.iter().map(|r| (r.url().path(), r.priority())).collect();
/// assert_eq!(taken, [("/catalogue/page-2.html", 0), ("/catalogue/book_1.html", 10)]);
/// # Ok(()) }
/// ```
///
/// | option | meaning | default |
/// | --- | --- | --- |
/// | `css` | CSS selector, checked: where on the page to look for links (`href`) | `"a[href], area[href]"` |
/// | `allow` | a regex or a list of them, checked: a URL is taken when one of them matches | every URL |
/// | `deny` | the same: a URL is not taken when one of them matches | none |
/// | `follow` | flag: the pages reached are searched for links, with every rule | off |
/// | `parse` | a `#[derive(Item)]` type: the pages reached are parsed into it, emitted when there | none |
/// | `priority` | whole number, may be negative: higher is fetched sooner among a host's requests | 0 |
/// | `files` | flag: take links to files that are not pages (archives, images, audio, video, documents, programs, stylesheets, scripts) too | off |
/// | `impersonate` | a browser profile, as the key (`"chrome"`, `"firefox"`, `"auto"`, `"none"`), checked: the wire the rule's requests are sent with, each on identities of that profile | the key's |
///
/// A rule needs `follow`, `parse` or both. The regexes search the link's canonical URL
/// (absolute, without its fragment, the query's pairs sorted), anywhere in it unless
/// anchored. On a page that follows, the rules take links in the order they are written,
/// and a link one rule took is not taken again by a later one: the first rule wins. A
/// page does what the rule that reached it says; the rule's number, from 0, travels in
/// the request's meta under the reserved key `"spiderling:rule"`, and a redirect keeps it.
/// A page no rule reached (a start URL, a `--start-urls` line) does what the first rule
/// taking its URL says, and only follows when none does. A URL from a sitemap is queued
/// for the first rule taking it, and skipped when none does. The spider's item is the
/// type the `parse` rules name. Rules that parse several types name the spider's item
/// with `item = Found`, an enum with a variant of each, itself `#[derive(Item)]` (see
/// there); each rule's pages are parsed into its own type, and such a spider reads its
/// pages with the DOM.
///
/// # Engines: streaming or DOM
///
/// Building a DOM is most of the CPU a page costs, and a derived spider knows at compile
/// time everything a page will be asked: its item's fields and its rules' selectors. When
/// all of them stream, the spider reads each page in one streaming pass over its tags,
/// matching the selectors as elements open, with no DOM, and gives the same items and
/// links byte for byte; when one does not, it parses each page into a DOM as a
/// hand-written `parse` does. What streams:
///
/// | streams | read from the DOM |
/// | --- | --- |
/// | type (`h1`), `.class`, `#id`, `*` with a condition (`*.x`) | a bare `*`; `html`, `head`, `body` (the parser adds them where a page leaves them out) |
/// | `[attr]`, `[attr=v]`, `~=`, `^=`, `$=`, `*=`, `\|=` | case flags (`[a=v i]`), namespaces, escapes |
/// | descendant (`a b`) and child (`a > b`) combinators, lists (`a, b`) | `+`, `~`, every pseudo-class (`:nth-child`, `:not`, `:first-child`...) |
/// | `#[css]` fields reading text or `attr`, `#[json_ld]` and `#[page]` fields | `#[css(..., html)]` fields (inner HTML) |
///
/// End tags a page leaves out stream where the parser's rule is plain: a `<li>` closing
/// the previous `<li>`, a block closing the `<p>` it starts in, `</ul>` its last `<li>`,
/// a cell closing the open cell, a row the open row, `</table>` all inside it, the end of
/// the page whatever is open, a stray `</p>` (an empty paragraph). A page whose markup
/// html5ever would build into another tree than its tags say (misnested formatting tags,
/// content moved out of a table, a table written without the elements the parser adds
/// when a selector could tell, `<template>`, an element inside `<svg>` or `<math>` that a
/// selector matches...) is read from the DOM by a streaming spider too: answers never
/// depend on the engine. The summary counts the pages streamed.
///
/// `extract = "dom"` forces the DOM (so does `--set extract=dom` for one run, or
/// `Config::dom_only`); `extract = "stream"` makes a selector that does not stream a
/// compile error, at the rule's selector or, for the item's fields, at the item type with
/// the field named:
///
/// ```compile_fail
/// use spiderling::prelude::*;
/// # #[derive(Item, Serialize)] struct Book { #[css("h1")] title: String }
///
/// #[derive(Spider, Default)]
/// #[spider(extract = "stream", follow = "li:nth-child(2) > a", item = Book)]
/// struct Books;
/// ```
#[proc_macro_derive(Spider, attributes(spider))]
pub fn derive_spider(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    spider::derive(&input).into()
}

/// Derive item extraction: each field reads the page's HTML with `#[css(...)]`, its
/// JSON-LD with `#[json_ld(...)]`, or the page's own facts with `#[page(...)]`.
///
/// ```
/// use spiderling::prelude::*;
///
/// #[derive(Item, Serialize)]
/// struct Book {
///     #[css("h1.title")]                       title: String,          // required text
///     #[css("p.price", parse = parse_price)]   price: f64,             // your parser
///     #[css("p.stock")]                        stock: Option<u32>,     // FromStr, may be missing
///     #[css("a.tag")]                          tags: Vec<String>,      // every match
///     #[css("a.cover", attr = "href")]         cover: Option<Url>,     // resolved against the page
///     #[css("div.blurb", html)]                blurb: Option<String>,  // inner HTML
///     #[css("p.rating", default)]              rating: u8,             // Default when missing
/// }
/// fn parse_price(text: &str) -> std::result::Result<f64, std::num::ParseFloatError> {
///     text.trim_start_matches('£').parse()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::result::Result<(), spiderling::Error> {
/// let page = Page::fixture("https://books.example/b", r#"<h1 class="title">Atlas</h1><p class="price">£3.50</p>"#)?;
/// let book = page.extract::<Book>().await?.expect("the page has a book");
/// assert_eq!((book.title.as_str(), book.price, book.rating), ("Atlas", 3.5, 0));
/// # Ok(()) }
/// ```
///
/// | `#[css(...)]` option | meaning |
/// | --- | --- |
/// | `"selector"` | first argument, checked at compile time, compiled once per process |
/// | `attr = "name"` | read an attribute instead of the text; `href`, `src`, `action`, `poster`, `cite`, `data` are resolved against the page URL |
/// | `html` | read the inner HTML instead of the text |
/// | `parse = function` | convert with `fn(&str) -> Result<T, E>` (`E: Display`) instead of `FromStr` |
/// | `default` | use `Default::default()` when nothing matches |
///
/// The field's type decides how many matches it takes: `T` exactly one (required),
/// `Option<T>` one if any, `Vec<T>` all. A page has the item when one of its required
/// `css` or `json_ld` fields is found (any of them, if none is required); a page with the
/// item in part is an error naming the field and where it reads.
///
/// # Structured data and page facts
///
/// Shops publish their product data as JSON-LD (`<script type="application/ld+json">`),
/// often more exactly than their HTML shows it; and an item often needs to say where and
/// when it was found. Both go beside CSS fields:
///
/// ```
/// use spiderling::prelude::*;
/// use spiderling::testing::PageFixture;
///
/// #[derive(Item, Serialize)]
/// struct Product {
///     #[css("h1")]                                      title: String,
///     #[json_ld("offers.price", type = "Product")]      price: f64,          // JSON-LD, FromStr
///     #[json_ld("sku", type = "Product")]               sku: Option<String>,
///     #[json_ld("image")]                               images: Vec<Url>,    // every element
///     #[page(url)]                                      url: Url,            // before redirects
///     #[page(final_url)]                                final_url: String,
///     #[page(status)]                                   status: u16,
///     #[page(fetched_at)]                               fetched_at: String,  // RFC 3339, UTC
///     #[page(depth)]                                    depth: u32,
///     #[page(meta = "category", default)]               category: String,    // from Request::with_meta
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::result::Result<(), spiderling::Error> {
/// let html = r#"<h1>Atlas</h1><script type="application/ld+json">
///     {"@context": "https://schema.org", "@type": "Product", "sku": "A-17",
///      "image": ["https://shop.example/a.jpg", "https://shop.example/b.jpg"],
///      "offers": {"@type": "Offer", "price": "12.50"}}
/// </script>"#;
/// let page = PageFixture::new("https://shop.example/p/17", html)
///     .redirected_from("https://shop.example/latest")
///     .meta("category", "maps")
///     .build()?;
/// let product = page.extract::<Product>().await?.expect("the page has a product");
/// assert_eq!((product.price, product.sku.as_deref()), (12.5, Some("A-17")));
/// assert_eq!(product.url.as_str(), "https://shop.example/latest");
/// assert_eq!((product.final_url.as_str(), product.status), ("https://shop.example/p/17", 200));
/// assert_eq!((product.depth, product.category.as_str()), (0, "maps"));
/// # Ok(()) }
/// ```
///
/// `#[json_ld("dotted.path", ...)]` reads the page's JSON-LD blocks, parsed once per
/// extraction and only for an item that has such fields. The objects searched are each
/// block's object, the objects of a block that is an array, and those of any `@graph`, in
/// page order; the first one where the path reaches a value (not `null`) gives it. Along
/// the path an array stands for its first element; a `Vec<T>` field takes every element of
/// a final array. A string gives its text, a number or boolean its JSON text, an object or
/// array its JSON text; then `FromStr` or `parse` as for CSS fields, and `Option` and
/// `default` the same way (a URL stays as the page wrote it: into `Url` only when it is
/// absolute). A block that is not valid JSON is skipped; if no valid block
/// has the path, the field is an error naming it, its path and the parser's complaint.
/// On a part of a page (`Document::within`), only the blocks inside that part are read.
///
/// | `#[json_ld(...)]` option | meaning |
/// | --- | --- |
/// | `"path"` | first argument: keys separated by dots, such as `"offers.price"` |
/// | `type = "Product"` | only objects whose `@type` is or lists it (`schema:Product` and `https://schema.org/Product` too): a shop's `BreadcrumbList` or `Organization` is passed over |
/// | `parse = function`, `default` | as for `#[css]` |
///
/// # JSON answers
///
/// An API answers with JSON, not HTML. `#[json("/pointer")]` reads a value of the page's
/// body, parsed as JSON once per extraction, at a JSON pointer (RFC 6901: keys and array
/// indexes after `/`, a `/` in a key written `~1`, a `~` written `~0`; `""` the whole
/// answer), checked at compile time. Values convert as for `#[json_ld]`: a string its
/// text, a number or boolean its JSON text, `null` no value; a `Vec<T>` field takes each
/// element of an array. A page that is not JSON makes each such field an error naming it
/// and the parser's line and column. Take such items in a hand-written `parse` with
/// `page.extract()`: the link rules of a derived spider parse only HTML answers.
///
/// ```
/// use spiderling::prelude::*;
/// use spiderling::testing::PageFixture;
///
/// #[derive(Item, Serialize)]
/// struct Offer {
///     #[json("/name")]              name: String,
///     #[json("/offers/0/price")]    price: f64,
///     #[json("/tags")]              tags: Vec<String>,
///     #[json("/stock", default)]    stock: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::result::Result<(), spiderling::Error> {
/// let body = r#"{"name": "Atlas", "offers": [{"price": 12.5}], "tags": ["maps", "travel"]}"#;
/// let page = PageFixture::new("https://shop.example/api/products/17", body).content_type("application/json").build()?;
/// let offer = page.extract::<Offer>().await?.expect("the answer has an offer");
/// assert_eq!((offer.name.as_str(), offer.price, offer.tags.len(), offer.stock), ("Atlas", 12.5, 2, 0));
/// # Ok(()) }
/// ```
///
/// `#[page(...)]` reads one of the page's own facts, as text converted like the others
/// (`FromStr` into `String`, `Url`, `u16`, `u32`..., or `parse = function`). Page fields
/// never decide whether a page has the item; an item made of page fields only, every page
/// has.
///
/// | `#[page(...)]` | the text | type |
/// | --- | --- | --- |
/// | `url` | the URL the crawl asked for, before redirects | `T` |
/// | `final_url` | the URL of the answer, after redirects | `T` |
/// | `status` | the HTTP status, such as `200` | `T` |
/// | `fetched_at` | when the answer arrived, RFC 3339 in UTC, such as `2025-01-01T09:30:00.250Z` | `T` |
/// | `depth` | links followed from a start URL | `T` |
/// | `meta = "key"` | the request's meta value: a JSON string its text, another value its JSON | `T` (an error when missing), `Option<T>` or `T` with `default` |
/// | `markdown` | the main content as Markdown: the article a reader's view shows, links absolute | `T` (an error for a page with none), `Option<T>` or `T` with `default` |
/// | `text` | the main content as text | as `markdown` |
/// | `title`, `author`, `published`, `lang`, `description`, `site_name` | the page's metadata, from `<meta>`, OpenGraph and JSON-LD | as `markdown` |
///
/// # Checks and keys
///
/// A derived spider sends each item through its pipeline before writing it (see
/// `Stages::checked`): an item whose required `String` field (`T`, not `default`) is empty
/// or blank is dropped, counted as `empty FIELD`; `#[item(validate = function)]` above the
/// struct drops one for which `fn(&Self) -> Result<(), E>` (`E: Display`) fails, counted
/// as `invalid`, with the error in the failures file. `#[item(key)]` on a field keeps one
/// item per value of that field, the first, for the whole crawl: across the runs of a
/// state file and the workers of a fleet (the others counted as `duplicate`).
///
/// ```
/// use spiderling::prelude::*;
///
/// #[derive(Item, Serialize)]
/// #[item(validate = priced)]
/// struct Book {
///     #[css("h1.title")]
///     title: String,
///     #[css("p.price", parse = pounds)]
///     price: f64,
///     #[json_ld("sku", type = "Product")]
///     #[item(key)]
///     sku: String,
/// }
///
/// fn pounds(text: &str) -> std::result::Result<f64, std::num::ParseFloatError> {
///     text.trim_start_matches('£').parse()
/// }
///
/// fn priced(book: &Book) -> std::result::Result<(), String> {
///     if book.price > 0.0 { Ok(()) } else { Err(format!("{} has no price", book.title)) }
/// }
///
/// let free = Book { title: "Atlas".into(), price: 0.0, sku: "A-1".into() };
/// assert_eq!(free.check().map_err(|why| why.reason()), Err("invalid"));
/// let untitled = Book { title: " ".into(), price: 3.5, sku: "A-2".into() };
/// assert_eq!(untitled.check().map_err(|why| why.reason()), Err("empty title"));
/// assert!(untitled.key().is_some());
/// ```
///
/// # Items of several types
///
/// On an enum whose variants each hold one type deriving Item, the item of a spider whose
/// rules parse pages into several types (`item = Found`): each variant is `From` its type,
/// an item's checks and key are its type's (the key kept apart per type, so a book and a
/// review with one `sku` do not meet), and it reads a page as the first of its types the
/// page holds whole. `#[serde(untagged)]` writes each as its own struct, whose name is the type
/// the outputs route it by (`?type=Book`).
///
/// ```
/// use spiderling::prelude::*;
/// # #[derive(Item, Serialize)] struct Book { #[css("h1.title")] title: String }
/// # #[derive(Item, Serialize)] struct Review { #[css("p.review")] text: String }
///
/// #[derive(Item, Serialize)]
/// #[serde(untagged)]
/// enum Found {
///     Book(Book),
///     Review(Review),
/// }
///
/// let found = Found::from(Book { title: "Atlas".into() });
/// assert!(matches!(found, Found::Book(_)));
/// ```
#[proc_macro_derive(Item, attributes(css, json_ld, json, page, item))]
pub fn derive_item(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    item::derive(&input).into()
}
