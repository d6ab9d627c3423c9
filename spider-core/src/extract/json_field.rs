//! A page that is JSON (an API's answer), read by `#[json("/pointer")]` fields of a
//! derived item: the body parsed once per extraction ([`JsonBody::read`]), then each
//! field's JSON pointer (RFC 6901) resolved in it.
//!
//! What a pointer's value gives a field: a string its text, trimmed; a number or boolean
//! its JSON text; an object or array its JSON text; `null`, or nothing at the pointer, no
//! value (a required field is missing, an `Option` is `None`). A `Vec` field takes each
//! element of an array (leaving out `null`s), or the one value that is not an array.

use serde_json::Value;

use crate::error::extract::{ExtractError, ExtractErrorKind, FieldSource};
use crate::extract::field::Reader;

/// A page's body as JSON, or why it is not JSON.
#[derive(Debug)]
pub struct JsonBody(Result<Value, String>);

impl JsonBody {
    /// Parse the body of `doc`'s page (a UTF-8 byte order mark skipped), once for all of
    /// an item's fields.
    pub fn read(doc: &impl Reader) -> JsonBody {
        let body = doc.body();
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        JsonBody(serde_json::from_slice(body).map_err(|error| error.to_string()))
    }

    fn at(&self, field: &'static str, pointer: &'static str) -> Result<Option<&Value>, ExtractError> {
        match &self.0 {
            Ok(json) => Ok(json.pointer(pointer).filter(|value| !value.is_null())),
            Err(message) => Err(ExtractError {
                field,
                from: FieldSource::Json(pointer),
                kind: ExtractErrorKind::InvalidJson { message: message.clone() },
            }),
        }
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.trim().to_owned(),
        other => other.to_string(),
    }
}

/// A `#[json("/pointer")]` field's value.
///
/// # Errors
///
/// The field's [`ExtractError`] when the page is not JSON.
pub fn json_first(
    json: &JsonBody,
    field: &'static str,
    pointer: &'static str,
) -> Result<Option<String>, ExtractError> {
    Ok(json.at(field, pointer)?.map(text))
}

/// A `Vec` `#[json("/pointer")]` field's values.
///
/// # Errors
///
/// As for [`json_first`].
pub fn json_all(
    json: &JsonBody,
    field: &'static str,
    pointer: &'static str,
) -> Result<Vec<String>, ExtractError> {
    Ok(match json.at(field, pointer)? {
        Some(Value::Array(values)) => values.iter().filter(|value| !value.is_null()).map(text).collect(),
        Some(value) => vec![text(value)],
        None => Vec::new(),
    })
}
