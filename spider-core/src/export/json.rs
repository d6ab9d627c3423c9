//! A JSON array, for tools that want one document; `]` is written at the end.

use std::io::Write;

use serde::Serialize;

use super::{Exporter, Output};
use crate::error::Error;

pub(super) struct JsonArray {
    out: Output,
    item: Vec<u8>,
    written: usize,
}

impl JsonArray {
    pub(super) fn new(out: Output) -> Self {
        JsonArray { out, item: Vec::with_capacity(1024), written: 0 }
    }
}

impl<I: Serialize> Exporter<I> for JsonArray {
    fn write(&mut self, item: &I) -> Result<(), Error> {
        self.item.clear();
        self.item.extend_from_slice(if self.written == 0 { b"[\n" } else { b",\n" });
        serde_json::to_writer(&mut self.item, item).map_err(|e| self.out.export_error(e))?;
        self.out.writer.write_all(&self.item).map_err(|e| self.out.io_error(e))?;
        self.written += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        let end: &[u8] = if self.written == 0 { b"[]\n" } else { b"\n]\n" };
        self.out.writer.write_all(end).map_err(|e| self.out.io_error(e))?;
        self.out.writer.flush().map_err(|e| self.out.io_error(e))
    }
}
