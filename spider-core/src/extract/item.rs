//! Items extracted from a page: the runtime side of `#[derive(Item)]`.
//!
//! The derive writes an [`Item`] impl whose selectors are parsed once per process; the
//! helpers in `field` read raw values from the parsed document
//! (CSS matches, the page's JSON-LD, a JSON page's values, the page's own facts), and the impl turns them into
//! typed fields.

use crate::error::extract::ExtractError;
use crate::extract::document::Document;
use crate::extract::stream::{FieldRead, Found};

/// Something a page can be turned into; write it with `#[derive(Item)]`.
///
/// `extract` returns `Ok(None)` when the page has none of the item's fields (a listing
/// page, for a book item), and an [`ExtractError`] naming the field and where it reads
/// when it has some but a required one is missing or does not parse.
pub trait Item: Sized + Send + 'static {
    /// Read the item from a parsed page.
    ///
    /// # Errors
    ///
    /// [`ExtractError`] when the page has the item only in part.
    fn extract(doc: &Document<'_>) -> Result<Option<Self>, ExtractError>;

    /// The item's `#[css]` fields when the streaming engine can read all of them (each in
    /// the streaming subset, reading text or an attribute, and no `#[json_ld]` field), or
    /// why not: a spider forcing `extract = "stream"` fails to compile with that reason.
    /// The default keeps a hand-written item on the DOM. The derive writes it.
    const STREAM: Result<&'static [FieldRead], &'static str> = Err("a hand-written Item reads the DOM");

    /// The CSS selectors of the fields the item cannot do without: a rendered page is
    /// read once all of them match (or its render runs out of time). The derive writes it;
    /// a hand-written item waits for the page's network to go quiet instead.
    const AWAIT: &'static [&'static str] = &[];

    /// Read the item from a streaming pass over a page, with the same answers as
    /// [`extract`](Self::extract); called only when [`STREAM`](Self::STREAM) is `Ok`,
    /// so the default, for items that do not stream, is never reached.
    ///
    /// # Errors
    ///
    /// As for [`extract`](Self::extract).
    fn extract_streamed(found: &Found<'_>) -> Result<Option<Self>, ExtractError> {
        let _ = found;
        Ok(None)
    }
}

/// The item of a spider that only follows links: there never is one.
#[derive(Debug, serde::Serialize)]
pub enum Nothing {}

impl Item for Nothing {
    const STREAM: Result<&'static [FieldRead], &'static str> = Ok(&[]);

    fn extract(_: &Document<'_>) -> Result<Option<Self>, ExtractError> {
        Ok(None)
    }

    fn extract_streamed(_: &Found<'_>) -> Result<Option<Self>, ExtractError> {
        Ok(None)
    }
}

impl Document<'_> {
    /// Extract an item from this document (see [`Item::extract`]).
    ///
    /// # Errors
    ///
    /// [`ExtractError`] when the page has the item only in part.
    pub fn extract<T: Item>(&self) -> Result<Option<T>, ExtractError> {
        T::extract(self)
    }
}
