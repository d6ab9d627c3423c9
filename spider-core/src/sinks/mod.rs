//! Sinks: where a crawl's items and failures are written, the tables items go to
//! (`store`), and the archive of what was fetched (`warc`). A page's items are encoded on
//! its own task, for each items file in the format its extension names (each given the
//! items of the type it takes, `item_type.rs`), and appended to the files by the
//! dispatcher as it finishes the page; a request given up is a line of the failures file.
//!
//! Splitting the two keeps serialisation off the dispatcher and lets the dispatcher alone
//! decide the order of the file: every byte in it belongs to a page the dispatcher has
//! finished, so the file's length at a checkpoint of the state file is exactly the items
//! of the pages that checkpoint records as done (see `schedule::state`).

mod encode;
pub(crate) mod failures;
mod file;
mod format;
mod item_type;
mod sink;
pub(crate) mod store;
pub(crate) mod warc;

pub(crate) use encode::{Encoded, Encoder, Lines};
#[cfg(feature = "state")]
pub(crate) use file::check_resumable;
pub(crate) use file::AppendFile;
#[cfg(feature = "s3")]
pub(crate) use format::Compression;
#[cfg(feature = "fleet")]
pub(crate) use format::Format;
#[cfg(feature = "s3")]
pub(crate) use sink::compress;
pub(crate) use sink::{check_appendable, Committed, Sink};
