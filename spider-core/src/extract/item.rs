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

    /// Whether the item is worth keeping, the first stage of its pipeline
    /// ([`Stages::checked`](crate::Stages::checked)): the derive drops one whose required
    /// text field is empty or blank (reason `empty FIELD`), then asks the struct's
    /// `#[item(validate = path)]` function (reason `invalid`, its error the detail).
    ///
    /// # Errors
    ///
    /// [`Dropped`], why the item is not kept.
    fn check(&self) -> Result<(), Dropped> {
        Ok(())
    }

    /// The item's key, `#[item(key)]` on a field: of the items with one key, the crawl
    /// keeps the first (reason `duplicate` for the others), across the runs of a state
    /// file and the workers of a fleet. `None`: the item has no key (the field is `None`,
    /// or none is marked), and is kept.
    fn key(&self) -> Option<ItemKey> {
        None
    }
}

/// An item's key as the crawl remembers it: a 128-bit hash of the key field's JSON, so
/// that every key costs the same few bytes, whatever its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ItemKey(pub(crate) u128);

impl ItemKey {
    /// The key of a field's value; `None` for a value that is JSON `null` (a `None`) or
    /// that does not serialize.
    pub fn of<T: serde::Serialize + ?Sized>(value: &T) -> Option<ItemKey> {
        let json = serde_json::to_vec(value).ok()?;
        (json != b"null").then(|| ItemKey(xxhash_rust::xxh3::xxh3_128(&json)))
    }

    /// The key of an item of type `item_type` among items of several types (an enum of
    /// them): two types' keys never meet, though their fields' values may.
    ///
    /// # Examples
    ///
    /// ```
    /// use spider_core::ItemKey;
    /// let sku = ItemKey::of("9780").unwrap();
    /// assert_ne!(sku.within("Book"), sku.within("Review"));
    /// assert_eq!(sku.within("Book"), ItemKey::of("9780").unwrap().within("Book"));
    /// ```
    #[must_use]
    pub fn within(self, item_type: &str) -> ItemKey {
        let mut bytes = item_type.as_bytes().to_vec();
        bytes.extend_from_slice(&self.0.to_be_bytes());
        ItemKey(xxhash_rust::xxh3::xxh3_128(&bytes))
    }

    /// The key as 16 bytes, for the state file and the fleet's Redis.
    #[cfg(any(feature = "state", feature = "fleet"))]
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// The key stored as [`to_bytes`](Self::to_bytes) wrote it.
    #[cfg(feature = "state")]
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<ItemKey> {
        Some(ItemKey(u128::from_be_bytes(bytes.try_into().ok()?)))
    }
}

/// Why an item was not kept: a reason the crawl counts items by (in the summary, the
/// stats file, the metrics), kept to a few words so that the counts stay few, and a
/// detail for the failures file.
///
/// # Examples
///
/// ```
/// use spider_core::Dropped;
///
/// let dropped = Dropped::new("no price").because("the price was 0.00");
/// assert_eq!((dropped.reason(), dropped.detail()), ("no price", Some("the price was 0.00")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    reason: &'static str,
    detail: Option<String>,
}

impl Dropped {
    /// Dropped for `reason`, the words it is counted by.
    pub fn new(reason: &'static str) -> Self {
        Dropped { reason, detail: None }
    }

    /// With what the failures file says of this item beside its reason.
    #[must_use]
    pub fn because(mut self, detail: impl std::fmt::Display) -> Self {
        self.detail = Some(detail.to_string());
        self
    }

    /// The reason it is counted by.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// What more the failures file says.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
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
