//! The page's JSON-LD (`<script type="application/ld+json">`), where shops publish their
//! product data, read by `#[json_ld("...")]` fields of a derived item.
//!
//! A derived item reads the blocks once per extraction ([`JsonLd::read`]) and then
//! resolves each field's dotted path in them ([`JsonLd::first`], [`JsonLd::all`]):
//!
//! - the objects searched are each block's object, or the objects of a block that is an
//!   array, and the objects of any `@graph`, in page order;
//! - with a type, only the objects whose `@type` is it or lists it (`Product` also
//!   matches `schema:Product` and `https://schema.org/Product`);
//! - along the path an array stands for its first element; the first object where the
//!   path reaches a value other than `null` (or an empty array) gives it;
//! - a string is its text, trimmed, a number or boolean its JSON text, an object or array
//!   its JSON text; [`all`](JsonLd::all) takes every element of a final array.
//!
//! A block that is not valid JSON is skipped; it matters only when no valid block has the
//! path, and then the parser's complaint is the answer instead of "nothing".

use std::sync::LazyLock;

use scraper::Selector;
use serde_json::{Map, Value};

use scraper::ElementRef;

/// The selector of a page's JSON-LD scripts; the streaming engine collects their text
/// with it when an item has `#[json_ld]` fields.
pub const SCRIPTS_CSS: &str = r#"script[type="application/ld+json"]"#;

/// Every JSON-LD script of a document, compiled once per process.
#[allow(clippy::expect_used)]
static SCRIPTS: LazyLock<Selector> = LazyLock::new(|| {
    // A constant the tests below parse.
    Selector::parse(SCRIPTS_CSS).expect("a valid selector")
});

/// The JSON-LD blocks of a page (or of the part of it a `Document` is).
#[derive(Debug, Default)]
pub struct JsonLd {
    blocks: Vec<Value>,
    /// The first block that is not valid JSON: its number on the page (from 1) and why.
    invalid: Option<String>,
}

impl JsonLd {
    /// Parse every JSON-LD block under `root` (a document's, or the part a `Document`
    /// is), once for all of an item's fields.
    pub fn read(root: ElementRef<'_>) -> JsonLd {
        JsonLd::from_scripts(root.select(&SCRIPTS).map(|script| script.text().collect::<String>()))
    }

    /// Parse the texts of a page's JSON-LD scripts, in page order: what [`read`](Self::read)
    /// does with a document's, and the streaming engine with those it collected.
    pub(crate) fn from_scripts<T: AsRef<str>>(scripts: impl Iterator<Item = T>) -> JsonLd {
        let mut json_ld = JsonLd::default();
        for (number, text) in scripts.enumerate() {
            match serde_json::from_str(text.as_ref()) {
                Ok(block) => json_ld.blocks.push(block),
                Err(error) if json_ld.invalid.is_none() => {
                    json_ld.invalid = Some(format!("block {} of the page: {error}", number + 1));
                }
                Err(_) => {}
            }
        }
        json_ld
    }

    /// The value at `path` in the first object (of `of_type`, if given) that has one.
    ///
    /// # Errors
    ///
    /// The complaint about the first invalid block when no valid block has the path.
    pub fn first(&self, path: &str, of_type: Option<&str>) -> Result<Option<String>, String> {
        let found = self.objects(of_type).find_map(|object| text(first_element(resolve(object, path)?)?));
        self.or_invalid(found, Option::is_some)
    }

    /// Every element of the array at `path` (or the one value there) in the first object
    /// (of `of_type`, if given) that has any.
    ///
    /// # Errors
    ///
    /// As for [`first`](Self::first).
    pub fn all(&self, path: &str, of_type: Option<&str>) -> Result<Vec<String>, String> {
        let found = self
            .objects(of_type)
            .filter_map(|object| resolve(object, path))
            .map(|value| match value {
                Value::Array(items) => items.iter().filter_map(text).collect(),
                value => text(value).into_iter().collect(),
            })
            .find(|texts: &Vec<String>| !texts.is_empty())
            .unwrap_or_default();
        self.or_invalid(found, |texts| !texts.is_empty())
    }

    /// `found`, unless it is nothing and a block was invalid: then why that block was.
    fn or_invalid<T>(&self, found: T, something: impl Fn(&T) -> bool) -> Result<T, String> {
        match &self.invalid {
            Some(invalid) if !something(&found) => Err(invalid.clone()),
            _ => Ok(found),
        }
    }

    /// The objects searched, in page order.
    fn objects<'s>(&'s self, of_type: Option<&'s str>) -> impl Iterator<Item = &'s Map<String, Value>> {
        let mut objects = Vec::new();
        for block in &self.blocks {
            collect_objects(block, &mut objects);
        }
        objects.into_iter().filter(move |object| of_type.is_none_or(|wanted| has_type(object, wanted)))
    }
}

/// The objects of `value`: itself, an array's, and those of any `@graph`.
fn collect_objects<'v>(value: &'v Value, objects: &mut Vec<&'v Map<String, Value>>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| collect_objects(item, objects)),
        Value::Object(object) => {
            objects.push(object);
            if let Some(graph) = object.get("@graph") {
                collect_objects(graph, objects);
            }
        }
        _ => {}
    }
}

/// Whether `object`'s `@type` is `wanted` or lists it, with or without a vocabulary
/// prefix (`schema:`, `https://schema.org/`).
fn has_type(object: &Map<String, Value>, wanted: &str) -> bool {
    let is = |value: &Value| {
        value
            .as_str()
            .is_some_and(|name| name == wanted || name.rsplit(['/', ':', '#']).next() == Some(wanted))
    };
    match object.get("@type") {
        Some(Value::Array(names)) => names.iter().any(is),
        Some(name) => is(name),
        None => false,
    }
}

/// The value at the dotted `path` in `object`, an array standing for its first element
/// on the way; `None` when the path stops short or ends at `null` or an empty array.
fn resolve<'v>(object: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    let mut keys = path.split('.');
    let mut value = object.get(keys.next()?)?;
    for key in keys {
        value = first_element(value)?.as_object()?.get(key)?;
    }
    match value {
        Value::Null => None,
        Value::Array(items) if items.is_empty() => None,
        value => Some(value),
    }
}

/// An array's first element (through nested arrays), or the value itself.
fn first_element(mut value: &Value) -> Option<&Value> {
    while let Value::Array(items) = value {
        value = items.first()?;
    }
    Some(value)
}

/// A value as a field's text: a string's own text, trimmed, anything else its JSON.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.trim().to_owned()),
        other => Some(other.to_string()),
    }
}
