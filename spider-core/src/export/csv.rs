//! CSV with a header row taken from the first item's field names. Items must be flat:
//! a nested field is an error naming the output file.

use serde::Serialize;

use super::{Exporter, Output};
use crate::error::Error;

pub(super) struct Csv {
    path: std::path::PathBuf,
    writer: csv::Writer<std::io::BufWriter<std::fs::File>>,
}

impl Csv {
    pub(super) fn new(out: Output) -> Self {
        Csv { path: out.path, writer: csv::Writer::from_writer(out.writer) }
    }

    fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::Export { path: self.path.clone(), message: message.to_string() }
    }
}

impl<I: Serialize> Exporter<I> for Csv {
    fn write(&mut self, item: &I) -> Result<(), Error> {
        self.writer.serialize(item).map_err(|e| self.error(e))
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.writer.flush().map_err(|source| Error::Io { path: self.path.clone(), source })
    }
}
