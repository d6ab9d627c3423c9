//! Why an item could not be read from a page: which field, where it reads, and what went
//! wrong. Written by the derived items' readers, carried by [`Error::Extract`](super::Error::Extract).

use std::fmt;

/// A field of an item that could not be filled.
///
/// # Examples
///
/// ```
/// use spider_core::{ExtractError, ExtractErrorKind, FieldSource};
///
/// let error = ExtractError {
///     field: "price",
///     from: FieldSource::JsonLd { path: "offers.price", of_type: Some("Product") },
///     kind: ExtractErrorKind::Missing,
/// };
/// assert_eq!(error.to_string(), "field `price`: the page has no JSON-LD `offers.price` of a `Product`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractError {
    /// The field's name.
    pub field: &'static str,
    /// Where the field reads, as its attribute says.
    pub from: FieldSource,
    /// What went wrong.
    pub kind: ExtractErrorKind,
}

/// Where a field of a derived item reads its value: the attribute above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldSource {
    /// `#[css("...")]`: the selector.
    Css(&'static str),
    /// `#[json_ld("...")]`: the dotted path into the page's JSON-LD, and the `@type` the
    /// objects it is read from must have, if the field names one.
    JsonLd {
        /// Such as `offers.price`.
        path: &'static str,
        /// Such as `Product`.
        of_type: Option<&'static str>,
    },
    /// `#[json("...")]`: a JSON pointer into a page that is JSON, such as an API's answer.
    Json(&'static str),
    /// `#[page(...)]`: one of the page's own facts (`url`, `status`...), by name.
    Page(&'static str),
    /// `#[page(meta = "...")]`: a key of the request's meta.
    Meta(&'static str),
}

impl fmt::Display for FieldSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldSource::Css(selector) => write!(f, "selector `{selector}`"),
            FieldSource::JsonLd { path, of_type: None } => write!(f, "JSON-LD `{path}`"),
            FieldSource::JsonLd { path, of_type: Some(of_type) } => {
                write!(f, "JSON-LD `{path}` of a `{of_type}`")
            }
            FieldSource::Json(pointer) => write!(f, "JSON `{pointer}`"),
            FieldSource::Page(name) => write!(f, "page `{name}`"),
            FieldSource::Meta(key) => write!(f, "meta `{key}`"),
        }
    }
}

/// Why a field could not be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractErrorKind {
    /// A required field found nothing: no element matched, no JSON-LD object has the
    /// path, the request's meta has no such key.
    Missing,
    /// The text was there but did not parse into the field's type.
    Parse {
        /// The text found.
        text: String,
        /// The parser's complaint.
        message: String,
    },
    /// A JSON-LD field: a `<script type="application/ld+json">` block of the page is not
    /// valid JSON, and no block that is has the field's path.
    InvalidJsonLd {
        /// The JSON parser's complaint, with the block's number on the page.
        message: String,
    },
    /// A `#[json("...")]` field: the page's body is not valid JSON.
    InvalidJson {
        /// The JSON parser's complaint, with its line and column.
        message: String,
    },
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ExtractError { field, from, kind } = self;
        match (kind, from) {
            (ExtractErrorKind::Missing, FieldSource::Css(selector)) => {
                write!(f, "field `{field}`: nothing matches `{selector}`")
            }
            (ExtractErrorKind::Missing, FieldSource::Meta(_)) => {
                write!(f, "field `{field}`: the request has no {from}")
            }
            (ExtractErrorKind::Missing, _) => write!(f, "field `{field}`: the page has no {from}"),
            (ExtractErrorKind::Parse { text, message }, _) => {
                write!(f, "field `{field}` ({from}): cannot parse {text:?}: {message}")
            }
            (ExtractErrorKind::InvalidJson { message }, _) => {
                write!(f, "field `{field}` ({from}): the page is not JSON: {message}")
            }
            (ExtractErrorKind::InvalidJsonLd { message }, _) => write!(
                f,
                "field `{field}` ({from}): no valid JSON-LD block has it, and a block is not valid JSON: \
                    {message}"
            ),
        }
    }
}

impl std::error::Error for ExtractError {}
