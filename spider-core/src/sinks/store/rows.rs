//! A batch of items as a table's rows: their fields, each field's column type, and the
//! rows as one JSON array, which both databases read into a table with a function of
//! their own (`json_populate_recordset`, `json_each`).

use std::sync::Arc;

use serde_json::Value;

use super::table::Chunk;

/// The type of a column, as the items' values show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Text,
    Integer,
    Real,
    Boolean,
    /// An array or an object: JSON in the table.
    Json,
}

/// A batch of items ready for one statement.
#[derive(Debug)]
pub(crate) struct Rows {
    /// Every field of the batch's items, in the order first met, with its type.
    pub(crate) fields: Vec<(String, Column)>,
    /// The items as one JSON array of objects.
    pub(crate) json: String,
    pub(crate) count: usize,
}

impl Rows {
    /// Read the items of `chunks`. With `key`, only the last item of each key is kept, as
    /// an upsert would leave it, and an item without the key is refused.
    ///
    /// # Errors
    ///
    /// What is wrong with an item that a table cannot hold: not an object, or no `key`.
    pub(crate) fn read(chunks: &[Arc<Chunk>], key: Option<&str>) -> Result<Rows, String> {
        let mut items = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for chunk in chunks {
            for line in chunk.items.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()) {
                match serde_json::from_slice::<Value>(line) {
                    Ok(Value::Object(item)) => {
                        // A map sorts its keys: the line's own order names the columns.
                        if item.keys().any(|name| !names.contains(name)) {
                            let FieldNames(found) = serde_json::from_slice(line).unwrap_or_default();
                            names.extend(
                                found
                                    .into_iter()
                                    .filter(|name| item.contains_key(name))
                                    .filter(|name| !names.contains(name))
                                    .collect::<Vec<_>>(),
                            );
                        }
                        items.push(item);
                    }
                    Ok(other) => {
                        return Err(format!(
                            "an item is {}, and a table's row needs named fields: emit a struct or a map",
                            kind(&other)
                        ))
                    }
                    Err(error) => return Err(format!("an item is not JSON ({error})")),
                }
            }
        }
        if let Some(key) = key {
            let mut last = std::collections::HashMap::new();
            for (at, item) in items.iter().enumerate() {
                match item.get(key) {
                    Some(value) if !value.is_null() => {
                        last.insert(value.to_string(), at);
                    }
                    _ => {
                        return Err(format!("an item has no `{key}`, the table's key: every item needs one"))
                    }
                }
            }
            let mut at = 0;
            items.retain(|item| {
                at += 1;
                item.get(key).is_some_and(|value| last.get(&value.to_string()) == Some(&(at - 1)))
            });
        }
        let fields = names
            .into_iter()
            .map(|name| {
                let column = items.iter().filter_map(|item| item.get(&name)).fold(None, merge);
                (name, column.unwrap_or(Column::Text))
            })
            .collect();
        let count = items.len();
        let json = Value::Array(items.into_iter().map(Value::Object).collect()).to_string();
        Ok(Rows { fields, json, count })
    }
}

impl Rows {
    /// The fields as a quoted column list: `"url", "title"`.
    pub(crate) fn columns(&self) -> String {
        let names: Vec<String> = self.fields.iter().map(|(field, _)| format!("\"{field}\"")).collect();
        names.join(", ")
    }

    /// The end of an insert that upserts by `key`, the same in PostgreSQL and SQLite:
    /// every other field takes the new row's value; nothing without a key.
    pub(crate) fn upsert(&self, key: Option<&str>) -> String {
        let Some(key) = key else { return String::new() };
        let set: Vec<String> = self
            .fields
            .iter()
            .filter(|(field, _)| field != key)
            .map(|(field, _)| format!("\"{field}\" = excluded.\"{field}\""))
            .collect();
        if set.is_empty() {
            format!(" ON CONFLICT (\"{key}\") DO NOTHING")
        } else {
            format!(" ON CONFLICT (\"{key}\") DO UPDATE SET {}", set.join(", "))
        }
    }

    /// The table made from these rows' fields, with `types` naming each column's type in
    /// the database and `key` as its primary key.
    pub(crate) fn create(&self, table: &str, key: Option<&str>, types: fn(Column) -> &'static str) -> String {
        let mut defined: Vec<String> =
            self.fields.iter().map(|(field, column)| format!("\"{field}\" {}", types(*column))).collect();
        if let Some(key) = key {
            defined.push(format!("PRIMARY KEY (\"{key}\")"));
        }
        format!("CREATE TABLE IF NOT EXISTS {table} ({})", defined.join(", "))
    }

    /// Why a table of `columns` cannot hold these rows: the first field it has no column
    /// for.
    pub(crate) fn missing_from(&self, table: &str, columns: &[String]) -> Option<String> {
        let (missing, _) = self.fields.iter().find(|(field, _)| !columns.contains(field))?;
        Some(format!(
            "table {table} has no column for the items' field `{missing}` (it has {}); add one, or write to \
                another table",
            columns.join(", ")
        ))
    }
}

/// An object's keys in the order written.
#[derive(Default)]
struct FieldNames(Vec<String>);

impl<'de> serde::Deserialize<'de> for FieldNames {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = FieldNames;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FieldNames, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    names.push(name);
                }
                Ok(FieldNames(names))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

/// The column type that holds every value seen so far and `value`.
fn merge(column: Option<Column>, value: &Value) -> Option<Column> {
    let this = match value {
        Value::Null => return column,
        Value::Bool(_) => Column::Boolean,
        Value::Number(n) if n.is_i64() => Column::Integer,
        Value::Number(_) => Column::Real,
        Value::String(_) => Column::Text,
        Value::Array(_) | Value::Object(_) => Column::Json,
    };
    Some(match (column, this) {
        (None, this) => this,
        (Some(Column::Integer), Column::Real) | (Some(Column::Real), Column::Integer) => Column::Real,
        (Some(seen), this) if seen == this => seen,
        // Mixed kinds: text holds any of them.
        (Some(_), _) => Column::Text,
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: u64, lines: &str) -> Arc<Chunk> {
        Arc::new(Chunk {
            seq,
            items: lines.as_bytes().to_vec(),
            count: lines.lines().count() as u64,
            item_type: None,
        })
    }

    #[test]
    fn fields_are_typed_by_every_value_and_kept_in_order() {
        let chunks = [
            chunk(1, "{\"url\":\"a\",\"price\":1,\"tags\":[\"x\"],\"note\":null}\n"),
            chunk(2, "{\"url\":\"b\",\"price\":2.5,\"stock\":true}\n"),
        ];
        let rows = Rows::read(&chunks, None).unwrap();
        let fields: Vec<_> = rows.fields.iter().map(|(name, column)| (name.as_str(), *column)).collect();
        assert_eq!(
            fields,
            [
                ("url", Column::Text),
                ("price", Column::Real),
                ("tags", Column::Json),
                ("note", Column::Text),
                ("stock", Column::Boolean)
            ]
        );
        assert_eq!(rows.count, 2);
    }

    #[test]
    fn a_key_keeps_the_last_item_of_each_and_refuses_an_item_without_it() {
        let chunks = [
            chunk(1, "{\"url\":\"a\",\"n\":1}\n{\"url\":\"b\",\"n\":2}\n"),
            chunk(2, "{\"url\":\"a\",\"n\":3}\n"),
        ];
        let rows = Rows::read(&chunks, Some("url")).unwrap();
        assert_eq!(rows.json, r#"[{"n":2,"url":"b"},{"n":3,"url":"a"}]"#);
        assert_eq!(rows.fields, [("url".to_owned(), Column::Text), ("n".to_owned(), Column::Integer)]);
        assert!(Rows::read(&[chunk(1, "{\"n\":1}\n")], Some("url")).unwrap_err().contains("no `url`"));
        assert!(Rows::read(&[chunk(1, "\"just text\"\n")], None).unwrap_err().contains("a string"));
    }
}
