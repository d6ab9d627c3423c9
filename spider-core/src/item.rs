//! Items extracted from a page by CSS selectors: the runtime side of `#[derive(Item)]`.
//!
//! The derive writes an [`Item`] impl whose selectors are parsed once per process; the
//! helpers in [`__private`](crate::__private) read raw values from the parsed document,
//! and the impl turns them into typed fields.

use std::fmt;

use crate::page::Document;

/// Something a page can be turned into; write it with `#[derive(Item)]`.
///
/// `extract` returns `Ok(None)` when the page has none of the item's fields (a listing
/// page, for a book item), and an [`ExtractError`] naming the field and selector when it
/// has some but a required one is missing or does not parse.
pub trait Item: Sized + Send + 'static {
    /// Read the item from a parsed page.
    ///
    /// # Errors
    ///
    /// [`ExtractError`] when the page has the item only in part.
    fn extract(doc: &Document<'_>) -> Result<Option<Self>, ExtractError>;
}

/// A field of an item that could not be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractError {
    /// The field's name.
    pub field: &'static str,
    /// Its selector.
    pub selector: &'static str,
    /// What went wrong.
    pub kind: ExtractErrorKind,
}

/// Why a field could not be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractErrorKind {
    /// No element matched a required field.
    Missing,
    /// The text was there but did not parse into the field's type.
    Parse {
        /// The text found.
        text: String,
        /// The parser's complaint.
        message: String,
    },
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExtractErrorKind::Missing => {
                write!(f, "field `{}`: nothing matches `{}`", self.field, self.selector)
            }
            ExtractErrorKind::Parse { text, message } => write!(
                f,
                "field `{}` (selector `{}`): cannot parse {text:?}: {message}",
                self.field, self.selector
            ),
        }
    }
}

impl std::error::Error for ExtractError {}
