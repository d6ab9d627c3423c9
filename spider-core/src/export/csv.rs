//! CSV with a header row taken from the first item's field names. Items must be flat:
//! a nested field is an error naming the output file.

use std::io::Write;

use serde::Serialize;

use super::{Exporter, Output};
use crate::error::Error;

pub(super) struct Csv {
    out: Output,
    wrote_header: bool,
}

impl Csv {
    pub(super) fn new(out: Output) -> Self {
        Csv { out, wrote_header: false }
    }
}

impl<I: Serialize> Exporter<I> for Csv {
    fn write(&mut self, item: &I) -> Result<(), Error> {
        // Each record (and the header, before the first) goes to a scratch buffer first,
        // so an item that fails half-way writes nothing partial.
        let mut record = csv::WriterBuilder::new()
            .has_headers(!self.wrote_header)
            .buffer_capacity(256)
            .from_writer(Vec::new());
        record.serialize(item).map_err(|e| self.out.export_error(e))?;
        let bytes = record.into_inner().map_err(|e| self.out.export_error(e))?;
        self.out.writer.write_all(&bytes).map_err(|e| self.out.io_error(e))?;
        self.wrote_header = true;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.out.writer.flush().map_err(|e| self.out.io_error(e))
    }
}
