//! Items to bytes, on the task that found them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Format;
use crate::error::Error;

/// Encodes a page's items for the output file and the tables. Stateless, so every task
/// shares one.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// The output file's format, and the file for error messages.
    file: Option<(Format, PathBuf)>,
    /// Whether the items go to tables too, as JSON lines.
    tables: bool,
}

/// A page's items, encoded: what the dispatcher appends to the output file.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    /// The records, in the order emitted: lines of JSON or CSV, or for a JSON array the
    /// items separated by `,\n` (the sink writes what comes before the first).
    pub(crate) records: Vec<u8>,
    /// How many items.
    pub(crate) count: u64,
    /// CSV only: the header row, written once, before the file's first record.
    pub(crate) header: Option<Vec<u8>>,
    /// With tables, the items as JSON lines, for the outbox.
    pub(crate) lines: Vec<u8>,
}

impl Encoded {
    /// Items counted but not written: a crawl without an output file.
    pub(crate) fn counted(count: usize) -> Self {
        Encoded { count: count as u64, ..Encoded::default() }
    }
}

impl Encoder {
    /// An encoder for the format of `path`, and JSON lines for the tables with `tables`;
    /// `None` when items go nowhere.
    pub(crate) fn for_output(path: Option<&Path>, tables: bool) -> Result<Option<Self>, Error> {
        let file = path.map(|path| Ok::<_, Error>((Format::of(path)?, path.to_owned()))).transpose()?;
        Ok((file.is_some() || tables).then_some(Encoder { file, tables }))
    }

    /// Encode `items`. One that cannot be encoded in this format (a nested field in CSV)
    /// is an error naming the output file.
    pub(crate) fn encode<I: Serialize>(&self, items: &[I]) -> Result<Encoded, Error> {
        let mut encoded = Encoded::counted(items.len());
        if self.tables {
            encoded.lines = json_lines(items).map_err(|e| Error::Table {
                store: "every table".to_owned(),
                message: format!("an item cannot be written as JSON: {e}"),
            })?;
        }
        let Some((format, path)) = &self.file else { return Ok(encoded) };
        if *format == Format::JsonLines && self.tables {
            encoded.records.clone_from(&encoded.lines);
            return Ok(encoded);
        }
        // Room for typical items, so serialising grows the buffer once or never.
        encoded.records.reserve(items.len() * 256);
        let problem =
            |e: &dyn std::fmt::Display| Error::Export { path: path.clone(), message: e.to_string() };
        match format {
            Format::JsonLines => {
                for item in items {
                    serde_json::to_writer(&mut encoded.records, item).map_err(|e| problem(&e))?;
                    encoded.records.push(b'\n');
                }
            }
            Format::Json => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        encoded.records.extend_from_slice(b",\n");
                    }
                    serde_json::to_writer(&mut encoded.records, item).map_err(|e| problem(&e))?;
                }
            }
            Format::Csv => {
                let mut records = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
                for item in items {
                    records.serialize(item).map_err(|e| problem(&e))?;
                }
                encoded.records = records.into_inner().map_err(|e| problem(&e))?;
                if let Some(first) = items.first() {
                    encoded.header = Some(csv_header(first).map_err(|e| problem(&e))?);
                }
            }
        }
        Ok(encoded)
    }
}

fn json_lines<I: Serialize>(items: &[I]) -> serde_json::Result<Vec<u8>> {
    let mut lines = Vec::with_capacity(items.len() * 256);
    for item in items {
        serde_json::to_writer(&mut lines, item)?;
        lines.push(b'\n');
    }
    Ok(lines)
}

/// The header row for `item`'s fields: the csv crate writes it only before a first record,
/// so write both and keep what comes before the record.
fn csv_header<I: Serialize>(item: &I) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut with_header = csv::Writer::from_writer(Vec::new());
    with_header.serialize(item)?;
    let mut bare = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    bare.serialize(item)?;
    let (mut both, record) = (with_header.into_inner()?, bare.into_inner()?);
    both.truncate(both.len().saturating_sub(record.len()));
    Ok(both)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Book {
        title: &'static str,
        price: f64,
    }

    const BOOKS: [Book; 2] = [Book { title: "A, b", price: 1.5 }, Book { title: "C", price: 2.0 }];

    fn encode(name: &str) -> Encoded {
        match Encoder::for_output(Some(Path::new(name)), false).and_then(|e| e.unwrap().encode(&BOOKS)) {
            Ok(encoded) => encoded,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn each_format_encodes_records_the_sink_can_join() {
        let lines = encode("a.jsonl");
        assert_eq!(lines.records, b"{\"title\":\"A, b\",\"price\":1.5}\n{\"title\":\"C\",\"price\":2.0}\n");
        let array = encode("a.json");
        assert_eq!(array.records, b"{\"title\":\"A, b\",\"price\":1.5},\n{\"title\":\"C\",\"price\":2.0}");
        let csv = encode("a.csv");
        assert_eq!(csv.records, b"\"A, b\",1.5\nC,2.0\n");
        assert_eq!(csv.header.as_deref(), Some(&b"title,price\n"[..]));
        assert_eq!((lines.count, array.count, csv.count), (2, 2, 2));
    }

    #[test]
    fn a_nested_field_in_csv_names_the_file() {
        #[derive(Serialize)]
        struct Nested {
            inner: Vec<Vec<u8>>,
        }
        let encoder = Encoder::for_output(Some(Path::new("out.csv")), false).map_err(|e| e.to_string());
        let error = encoder
            .and_then(|e| e.unwrap().encode(&[Nested { inner: vec![vec![1]] }]).map_err(|e| e.to_string()));
        assert!(error.is_err_and(|e| e.contains("out.csv")));
    }
}
