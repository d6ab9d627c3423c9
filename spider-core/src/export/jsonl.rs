//! JSON Lines: one item per line, so a crawl cut short still leaves whole lines.

use std::io::Write;

use serde::Serialize;

use super::{Exporter, Output};
use crate::error::Error;

pub(super) struct JsonLines {
    out: Output,
    line: Vec<u8>,
}

impl JsonLines {
    pub(super) fn new(out: Output) -> Self {
        JsonLines { out, line: Vec::with_capacity(1024) }
    }
}

impl<I: Serialize> Exporter<I> for JsonLines {
    fn write(&mut self, item: &I) -> Result<(), Error> {
        // Serialise into a scratch line first, so a failing item writes nothing partial.
        self.line.clear();
        serde_json::to_writer(&mut self.line, item).map_err(|e| self.out.export_error(e))?;
        self.line.push(b'\n');
        self.out.writer.write_all(&self.line).map_err(|e| self.out.io_error(e))
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.out.writer.flush().map_err(|e| self.out.io_error(e))
    }
}
