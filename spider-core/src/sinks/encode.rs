//! Items to bytes, on the task that found them: for each items file in its format, and as
//! JSON lines for the tables; each output given the items of the type it takes, or all.

use std::path::PathBuf;

use serde::Serialize;
use spider_settings::{Config, ItemsFile, StoreUri};

use super::format::Format;
use super::item_type::item_type;
use crate::error::Error;

/// Encodes a page's items for the items files and the tables. Stateless, so every task
/// shares one.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// The items files, in the order `output` names them.
    files: Vec<Target>,
    /// The types the tables take, `None` for a table that takes every type.
    table_types: Vec<Option<String>>,
    /// Whether the items go to tables too, as JSON lines.
    tables: bool,
    /// Whether a table takes one type only: the lines are then split by type.
    typed_tables: bool,
    /// Whether any output takes one type only: each item's type is read then.
    typed: bool,
}

/// One items file: its format, its path for error messages, the type it takes.
#[derive(Debug)]
struct Target {
    format: Format,
    path: PathBuf,
    item_type: Option<String>,
}

/// A page's items, encoded: what the dispatcher appends to each items file and hands the
/// tables.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    /// Per items file, in the encoder's order.
    pub(crate) files: Vec<Records>,
    /// How many items the page kept, whatever their outputs.
    pub(crate) count: u64,
    /// With tables, the items as JSON lines: one part of every item, or one per type when
    /// a table takes one type only.
    pub(crate) lines: Vec<Lines>,
    /// The types of the items no output took, each once: worth a word to the user.
    pub(crate) unrouted: Vec<Option<&'static str>>,
}

/// A page's items for one items file.
#[derive(Debug, Default)]
pub(crate) struct Records {
    /// The records, in the order emitted: lines of JSON or CSV, or for a JSON array the
    /// items separated by `,\n` (the sink writes what comes before the first).
    pub(crate) records: Vec<u8>,
    /// How many items.
    pub(crate) count: u64,
    /// CSV only: the header row, written once, before the file's first record.
    pub(crate) header: Option<Vec<u8>>,
}

/// Items of one type as JSON lines, for the tables that take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lines {
    /// Their type (`""` for items that serialize under no name, which no table of one
    /// type takes); `None` when no table takes one type only (every item is here).
    pub(crate) item_type: Option<&'static str>,
    pub(crate) lines: Vec<u8>,
    pub(crate) count: u64,
}

impl Encoded {
    /// Items counted but not written: a crawl without outputs.
    pub(crate) fn counted(count: usize) -> Self {
        Encoded { count: count as u64, ..Encoded::default() }
    }
}

impl Encoder {
    /// An encoder for `config`'s items files and tables; `None` when items go nowhere.
    pub(crate) fn for_outputs(config: &Config) -> Result<Option<Self>, Error> {
        let files = config.outputs.iter().map(Target::of).collect::<Result<Vec<_>, _>>()?;
        let stores = config.stores.iter().map(|store| StoreUri::parse(store).map_err(Error::Config));
        let stores = stores.collect::<Result<Vec<_>, _>>()?;
        let table_types: Vec<Option<String>> =
            stores.iter().map(|store| store.item_type().map(str::to_owned)).collect();
        let typed_tables = table_types.iter().any(Option::is_some);
        let typed = typed_tables || files.iter().any(|file| file.item_type.is_some());
        let tables = !stores.is_empty();
        Ok((!files.is_empty() || tables).then_some(Encoder {
            files,
            table_types,
            tables,
            typed_tables,
            typed,
        }))
    }

    /// Encode `items`. One that cannot be encoded in a file's format (a nested field in
    /// CSV) is an error naming the file.
    pub(crate) fn encode<I: Serialize>(&self, items: &[I]) -> Result<Encoded, Error> {
        let types: Vec<Option<&'static str>> =
            if self.typed { items.iter().map(item_type).collect() } else { Vec::new() };
        let takes = |wanted: Option<&str>, at: usize| match wanted {
            None => true,
            Some(wanted) => types.get(at).copied().flatten() == Some(wanted),
        };
        // Each item as one JSON line, written once for every output that reads JSON.
        let json = self.tables || self.files.iter().any(|file| file.format != Format::Csv);
        let lines =
            if json { json_lines(items).map_err(|e| self.json_problem(&e))? } else { JsonLines::default() };
        let mut encoded = Encoded::counted(items.len());
        for file in &self.files {
            let wanted = file.item_type.as_deref();
            let chosen = (0..items.len()).filter(|&at| takes(wanted, at));
            encoded.files.push(match file.format {
                Format::JsonLines => lines.joined(chosen, b""),
                Format::Json => {
                    let mut records = lines.joined(chosen, b",\n");
                    records.records.pop();
                    records
                }
                Format::Csv => csv(items, chosen, &file.path)?,
            });
        }
        if self.typed {
            let files = self.files.iter().map(|file| file.item_type.as_deref());
            let takers: Vec<Option<&str>> =
                files.chain(self.table_types.iter().map(Option::as_deref)).collect();
            for at in 0..items.len() {
                let item_type = types.get(at).copied().flatten();
                if !takers.iter().any(|&wanted| takes(wanted, at)) && !encoded.unrouted.contains(&item_type) {
                    encoded.unrouted.push(item_type);
                }
            }
        }
        if self.tables {
            encoded.lines = if self.typed_tables {
                let mut parts: Vec<Lines> = Vec::new();
                for at in 0..items.len() {
                    let item_type = Some(types.get(at).copied().flatten().unwrap_or(""));
                    let part = match parts.iter().position(|part| part.item_type == item_type) {
                        Some(found) => &mut parts[found],
                        None => {
                            parts.push(Lines { item_type, lines: Vec::new(), count: 0 });
                            let last = parts.len() - 1;
                            &mut parts[last]
                        }
                    };
                    part.lines.extend_from_slice(lines.line(at));
                    part.count += 1;
                }
                parts
            } else if items.is_empty() {
                Vec::new()
            } else {
                vec![Lines { item_type: None, lines: lines.bytes, count: items.len() as u64 }]
            };
        }
        Ok(encoded)
    }

    /// An item that is not JSON: the error of the first output that writes JSON.
    fn json_problem(&self, error: &serde_json::Error) -> Error {
        match self.files.iter().find(|file| file.format != Format::Csv) {
            Some(file) => Error::Export { path: file.path.clone(), message: error.to_string() },
            None => Error::Table {
                store: "every table".to_owned(),
                message: format!("an item cannot be written as JSON: {error}"),
            },
        }
    }
}

impl Target {
    fn of(file: &ItemsFile) -> Result<Target, Error> {
        Ok(Target {
            format: Format::of(&file.path)?,
            path: file.path.clone(),
            item_type: file.item_type.clone(),
        })
    }
}

/// A page's items as JSON lines, each line's end kept.
#[derive(Debug, Default)]
struct JsonLines {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl JsonLines {
    /// The line of the item at `at`, its `\n` included.
    fn line(&self, at: usize) -> &[u8] {
        let start = at.checked_sub(1).and_then(|before| self.ends.get(before)).copied().unwrap_or(0);
        let end = self.ends.get(at).copied().unwrap_or(start);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The lines of the items `chosen` as a file's records: JSON Lines as they are, or a
    /// JSON array's items with `between` (`,\n`) in place of each newline but the last,
    /// which the caller cuts.
    fn joined(&self, chosen: impl Iterator<Item = usize>, between: &[u8]) -> Records {
        let mut records = Records::default();
        records.records.reserve(self.bytes.len());
        for at in chosen {
            if records.count > 0 && !between.is_empty() {
                // The newline ending the previous line gives way to the separator's.
                records.records.pop();
                records.records.extend_from_slice(between);
            }
            records.records.extend_from_slice(self.line(at));
            records.count += 1;
        }
        records
    }
}

fn json_lines<I: Serialize>(items: &[I]) -> serde_json::Result<JsonLines> {
    let mut lines =
        JsonLines { bytes: Vec::with_capacity(items.len() * 256), ends: Vec::with_capacity(items.len()) };
    for item in items {
        serde_json::to_writer(&mut lines.bytes, item)?;
        lines.bytes.push(b'\n');
        lines.ends.push(lines.bytes.len());
    }
    Ok(lines)
}

/// The items `chosen` as CSV rows, with the header of the first: all of one type, whose
/// fields the header names.
fn csv<I: Serialize>(
    items: &[I],
    chosen: impl Iterator<Item = usize>,
    path: &std::path::Path,
) -> Result<Records, Error> {
    let problem = |e: &dyn std::fmt::Display| Error::Export { path: path.to_owned(), message: e.to_string() };
    let mut rows = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    let mut records = Records::default();
    let mut first_type = None;
    for item in chosen.filter_map(|at| items.get(at)) {
        let this = item_type(item);
        match first_type {
            None => first_type = Some(this),
            Some(first) if first != this => return Err(problem(&several_types(first, this))),
            Some(_) => {}
        }
        if records.header.is_none() {
            records.header = Some(csv_header(item).map_err(|e| problem(&e))?);
        }
        rows.serialize(item).map_err(|e| problem(&e))?;
        records.count += 1;
    }
    records.records = rows.into_inner().map_err(|e| problem(&e))?;
    Ok(records)
}

/// Why a CSV file cannot take items of the types `first` and `then`.
fn several_types(first: Option<&str>, then: Option<&str>) -> String {
    let named = |item_type: Option<&str>| item_type.unwrap_or("(no name)").to_owned();
    format!(
        "items of two types, {} and {}, go to this CSV file, whose rows have one header: give each type a \
            file of its own, FILE.csv?type=NAME",
        named(first),
        named(then)
    )
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

    #[derive(Serialize)]
    struct Review {
        stars: u8,
    }

    #[derive(Serialize)]
    #[serde(untagged)]
    enum Found {
        Book(Book),
        Review(Review),
    }

    const BOOKS: [Book; 2] = [Book { title: "A, b", price: 1.5 }, Book { title: "C", price: 2.0 }];

    fn encoder(outputs: &[&str]) -> Encoder {
        let config = outputs.iter().fold(Config::new("x"), |config, output| config.output(*output));
        Encoder::for_outputs(&config).unwrap().unwrap()
    }

    #[test]
    fn each_format_encodes_records_the_sink_can_join() {
        let encoded = encoder(&["a.jsonl", "a.json", "a.csv"]).encode(&BOOKS).unwrap();
        let [lines, array, csv] = &encoded.files[..] else { panic!("{encoded:?}") };
        assert_eq!(lines.records, b"{\"title\":\"A, b\",\"price\":1.5}\n{\"title\":\"C\",\"price\":2.0}\n");
        assert_eq!(array.records, b"{\"title\":\"A, b\",\"price\":1.5},\n{\"title\":\"C\",\"price\":2.0}");
        assert_eq!(csv.records, b"\"A, b\",1.5\nC,2.0\n");
        assert_eq!(csv.header.as_deref(), Some(&b"title,price\n"[..]));
        assert_eq!((lines.count, array.count, csv.count, encoded.count), (2, 2, 2, 2));
        assert!(encoded.lines.is_empty(), "no tables");
    }

    #[test]
    fn each_output_gets_the_items_of_its_type() {
        let items = [
            Found::Book(Book { title: "A", price: 1.0 }),
            Found::Review(Review { stars: 4 }),
            Found::Book(Book { title: "B", price: 2.0 }),
        ];
        let encoder = encoder(&[
            "books.csv?type=Book",
            "reviews.json?type=Review",
            "all.jsonl",
            "sqlite://x.db?table=books&type=Book",
        ]);
        let encoded = encoder.encode(&items).unwrap();
        let [books, reviews, all] = &encoded.files[..] else { panic!("{encoded:?}") };
        assert_eq!((books.records.as_slice(), books.count), (&b"A,1.0\nB,2.0\n"[..], 2));
        assert_eq!(books.header.as_deref(), Some(&b"title,price\n"[..]));
        assert_eq!((reviews.records.as_slice(), reviews.count), (&b"{\"stars\":4}"[..], 1));
        assert_eq!(all.count, 3);
        let parts: Vec<(Option<&str>, &[u8], u64)> =
            encoded.lines.iter().map(|p| (p.item_type, p.lines.as_slice(), p.count)).collect();
        assert_eq!(
            parts,
            [
                (Some("Book"), &b"{\"title\":\"A\",\"price\":1.0}\n{\"title\":\"B\",\"price\":2.0}\n"[..], 2),
                (Some("Review"), &b"{\"stars\":4}\n"[..], 1)
            ]
        );
        assert!(encoded.unrouted.is_empty(), "every item went somewhere");
        let none = encoder.encode(&[Found::Review(Review { stars: 1 })]).unwrap();
        assert_eq!(
            (none.files[0].count, none.files[0].header.as_ref()),
            (0, None),
            "a page of none: no header"
        );
        let books_only = self::encoder(&["books.jsonl?type=Book", "sqlite://x.db?table=b&type=Book"]);
        let encoded = books_only.encode(&items).unwrap();
        assert_eq!(encoded.unrouted, [Some("Review")], "told once, whoever else went somewhere");
        let mixed = self::encoder(&["all.csv"]).encode(&items).map_err(|e| e.to_string());
        assert!(mixed.is_err_and(|e| e.contains("all.csv") && e.contains("Book and Review")));
    }

    #[test]
    fn a_nested_field_in_csv_names_the_file() {
        #[derive(Serialize)]
        struct Nested {
            inner: Vec<Vec<u8>>,
        }
        let error =
            encoder(&["out.csv"]).encode(&[Nested { inner: vec![vec![1]] }]).map_err(|e| e.to_string());
        assert!(error.is_err_and(|e| e.contains("out.csv")));
    }
}
