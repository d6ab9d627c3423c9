//! An item's type, as `?type=NAME` routes it: the name it serializes under, read from its
//! `Serialize` impl, so any item has one without a trait of ours: a struct's name (its
//! `#[serde(rename)]` if it has one), or for an enum of items the variant's
//! (`#[serde(untagged)]` serializes each as its own struct, whose name it is).
//!
//! The serializer below stops at the first name it is told, before any field is written.

use std::fmt;

use serde::ser::{Impossible, Serialize, Serializer};

/// The name `item` serializes under; `None` for a value without one (a map, a number).
pub(crate) fn item_type<T: Serialize + ?Sized>(item: &T) -> Option<&'static str> {
    match item.serialize(Named) {
        Err(Stop(name)) => name,
        Ok(()) => None,
    }
}

/// A serializer that answers with the first name it is given.
struct Named;

/// Its one answer, as an error so that serializing ends there.
#[derive(Debug)]
struct Stop(Option<&'static str>);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Stop {}

impl serde::ser::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop(None)
    }
}

type Nothing = Impossible<(), Stop>;

impl Serializer for Named {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Nothing;
    type SerializeTuple = Nothing;
    type SerializeTupleStruct = Nothing;
    type SerializeTupleVariant = Nothing;
    type SerializeMap = Nothing;
    type SerializeStruct = Nothing;
    type SerializeStructVariant = Nothing;

    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Nothing, Stop> {
        Err(Stop(Some(name)))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<(), Stop> {
        Err(Stop(Some(name)))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, _: &T) -> Result<(), Stop> {
        Err(Stop(Some(name)))
    }

    fn serialize_tuple_struct(self, name: &'static str, _: usize) -> Result<Nothing, Stop> {
        Err(Stop(Some(name)))
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Stop> {
        Err(Stop(Some(variant)))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<(), Stop> {
        Err(Stop(Some(variant)))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Nothing, Stop> {
        Err(Stop(Some(variant)))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Nothing, Stop> {
        Err(Stop(Some(variant)))
    }

    fn serialize_bool(self, _: bool) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_i64(self, _: i64) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_u64(self, _: u64) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_f64(self, _: f64) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_i8(self, _: i8) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_i16(self, _: i16) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_i32(self, _: i32) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_u8(self, _: u8) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_u16(self, _: u16) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_u32(self, _: u32) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_f32(self, _: f32) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_char(self, _: char) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_str(self, _: &str) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_none(self) -> Result<(), Stop> {
        Err(Stop(None))
    }

    /// `Some(item)` is the item's.
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Stop> {
        Err(Stop(None))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Nothing, Stop> {
        Err(Stop(None))
    }

    fn serialize_tuple(self, _: usize) -> Result<Nothing, Stop> {
        Err(Stop(None))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Nothing, Stop> {
        Err(Stop(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Book {
        title: &'static str,
    }

    #[derive(serde::Serialize)]
    #[serde(rename = "Volume")]
    struct Renamed {
        title: &'static str,
    }

    #[derive(serde::Serialize)]
    struct Review(&'static str);

    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Found {
        Book(Book),
        Review(Review),
    }

    #[derive(serde::Serialize)]
    enum Tagged {
        Book(Book),
    }

    #[test]
    fn an_item_is_of_the_type_it_serializes_as() {
        assert_eq!(item_type(&Book { title: "a" }), Some("Book"));
        assert_eq!(item_type(&Renamed { title: "a" }), Some("Volume"));
        assert_eq!(item_type(&Found::Book(Book { title: "a" })), Some("Book"), "untagged: its struct's");
        assert_eq!(item_type(&Found::Review(Review("fine"))), Some("Review"));
        assert_eq!(item_type(&Tagged::Book(Book { title: "a" })), Some("Book"), "tagged: its variant's");
        assert_eq!(item_type(&Some(Book { title: "a" })), Some("Book"));
        assert_eq!(item_type(&serde_json::json!({"title": "a"})), None);
        assert_eq!(item_type(&3), None);
    }
}
