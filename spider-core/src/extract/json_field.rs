//! A page that is JSON (an API's answer), read by `#[json("/pointer")]` fields of a
//! derived item: the body parsed once per extraction ([`JsonBody::read`]), then each
//! field's JSON pointer (RFC 6901) resolved in it.
//!
//! What a pointer's value gives a field: a string its text, trimmed; a number or boolean
//! its JSON text; an object or array its JSON text; `null`, or nothing at the pointer, no
//! value (a required field is missing, an `Option` is `None`). A `Vec` field takes each
//! element of an array (leaving out `null`s), or the one value that is not an array.

use serde_json::Value;

use crate::extract::item::{ExtractError, ExtractErrorKind, FieldSource};
use crate::extract::stream::Reader;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PageFixture;

    async fn read(
        body: &str,
        pointer: &'static str,
    ) -> (Result<Option<String>, ExtractError>, Result<Vec<String>, ExtractError>) {
        let page = PageFixture::new("https://shop.example/api/p/1", body)
            .content_type("application/json")
            .build()
            .unwrap();
        page.html(move |doc| {
            let json = JsonBody::read(doc);
            (json_first(&json, "f", pointer), json_all(&json, "f", pointer))
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn values_read_as_the_module_says() {
        let body = r#"{"name": " Tea ", "offers": [{"price": 4.5}, {"price": null}], "tags": ["green", null, "loose"], "a/b": {"~": true}}"#;
        assert_eq!(read(body, "/name").await.0.unwrap().as_deref(), Some("Tea"));
        assert_eq!(read(body, "/offers/0/price").await.0.unwrap().as_deref(), Some("4.5"));
        assert_eq!(read(body, "/offers/1/price").await.0.unwrap(), None, "null is no value");
        assert_eq!(read(body, "/missing").await.1.unwrap(), Vec::<String>::new());
        assert_eq!(read(body, "/tags").await.1.unwrap(), ["green", "loose"]);
        assert_eq!(read(body, "/a~1b/~0").await.0.unwrap().as_deref(), Some("true"), "escapes of RFC 6901");
        assert_eq!(read(body, "/offers/0").await.0.unwrap().as_deref(), Some(r#"{"price":4.5}"#));
    }

    #[tokio::test]
    async fn a_page_that_is_not_json_is_an_error_of_the_field() {
        let error = read("<html>", "/name").await.0.unwrap_err();
        assert_eq!(
            error.to_string(),
            "field `f` (JSON `/name`): the page is not JSON: expected value at line 1 column 1"
        );
    }
}
