//! What a derived item's fields read, the same on either engine: selectors compiled once,
//! an element's text, inner HTML or attribute (URLs resolved against the page), the page's
//! own facts, JSON-LD, and the conversion of the raw text into the field's type with its
//! error. Generated code reaches these through `__private`.

use std::fmt::Display;
use std::str::FromStr;

use scraper::Selector;
use url::Url;

use crate::error::extract::{ExtractError, ExtractErrorKind, FieldSource};
use crate::extract::facts::PageField;
use crate::extract::json_ld::JsonLd;

static SELECTORS_COMPILED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many selectors [`selector`] has compiled in this process, for the test that pins
/// "once per process".
pub fn selectors_compiled() -> usize {
    SELECTORS_COMPILED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Parse a selector the derive has already checked at compile time; the generated code
/// keeps it in a `static`, so this runs once per selector per process.
#[allow(clippy::expect_used)]
pub fn selector(css: &'static str) -> Selector {
    SELECTORS_COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // The derive parsed this exact text with this exact version of `scraper`.
    Selector::parse(css).expect("selector was checked at compile time")
}

/// What a field reads from each matching element.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The element's text, trimmed.
    Text,
    /// The element's inner HTML.
    Html,
    /// An attribute; `href`, `src` and the like are resolved against the page URL.
    Attr(&'static str),
}

/// An attribute's value as a field reads it, trimmed; `href`, `src` and the like
/// resolved against the page URL (`None` when they do not resolve). Both engines read
/// attributes through this.
pub fn attribute_value(name: &str, value: &str, base: &Url) -> Option<String> {
    let value = value.trim();
    if matches!(name, "href" | "src" | "action" | "poster" | "cite" | "data") {
        base.join(value).ok().map(String::from)
    } else {
        Some(value.to_owned())
    }
}

/// A `#[json_ld("path")]` field's value (see [`JsonLd::first`]).
///
/// # Errors
///
/// The field's [`ExtractError`] when no valid block has the path and one is invalid.
pub fn json_ld_first(
    json_ld: &JsonLd,
    field: &'static str,
    path: &'static str,
    of_type: Option<&'static str>,
) -> Result<Option<String>, ExtractError> {
    json_ld.first(path, of_type).map_err(|message| invalid_json_ld(field, path, of_type, message))
}

/// A `Vec` `#[json_ld("path")]` field's values (see [`JsonLd::all`]).
///
/// # Errors
///
/// As for [`json_ld_first`].
pub fn json_ld_all(
    json_ld: &JsonLd,
    field: &'static str,
    path: &'static str,
    of_type: Option<&'static str>,
) -> Result<Vec<String>, ExtractError> {
    json_ld.all(path, of_type).map_err(|message| invalid_json_ld(field, path, of_type, message))
}

fn invalid_json_ld(
    field: &'static str,
    path: &'static str,
    of_type: Option<&'static str>,
    message: String,
) -> ExtractError {
    let from = FieldSource::JsonLd { path, of_type };
    ExtractError { field, from, kind: ExtractErrorKind::InvalidJsonLd { message } }
}

/// Convert with `FromStr`.
///
/// # Errors
///
/// The field's [`ExtractError`] naming the text and the parser's complaint.
pub fn from_str<T>(text: String, field: &'static str, from: FieldSource) -> Result<T, ExtractError>
where
    T: FromStr,
    T::Err: Display,
{
    T::from_str(&text).map_err(|e| parse_error(field, from, text, e))
}

/// Convert with the field's `parse = function`.
///
/// # Errors
///
/// The field's [`ExtractError`] naming the text and the function's complaint.
pub fn with<T, E: Display>(
    text: String,
    field: &'static str,
    from: FieldSource,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, ExtractError> {
    parse(&text).map_err(|e| parse_error(field, from, text, e))
}

fn parse_error(field: &'static str, from: FieldSource, text: String, e: impl Display) -> ExtractError {
    ExtractError { field, from, kind: ExtractErrorKind::Parse { text, message: e.to_string() } }
}

/// A required field that found nothing.
pub fn missing(field: &'static str, from: FieldSource) -> ExtractError {
    ExtractError { field, from, kind: ExtractErrorKind::Missing }
}

/// Where a derived item's generated code reads raw values: the DOM
/// (`Document`) or a streaming pass (`Found`). One generated body
/// serves both, so the two engines cannot build an item differently.
pub trait Reader {
    /// The first value of `#[css]` field number `field` (`selector` is its selector, for
    /// the DOM).
    fn first(&self, field: usize, selector: &scraper::Selector, source: Source) -> Option<String>;
    /// Every value of that field, in page order.
    fn all(&self, field: usize, selector: &scraper::Selector, source: Source) -> Vec<String>;
    /// One of the page's own facts.
    fn page_field(&self, field: PageField) -> Option<String>;
    /// The page's JSON-LD blocks; `field` is the number the item's plan gives the
    /// JSON-LD scripts' selector (after its `#[css]` fields), for the stream.
    fn json_ld(&self, field: usize) -> JsonLd;
    /// The page's body as fetched, which `#[json]` fields read.
    fn body(&self) -> &[u8];
}
