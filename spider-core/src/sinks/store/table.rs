//! What a table is to its delivery task: a [`Table`] (a database's table or a bucket)
//! that is handed [`Chunk`]s and answers with its [`Trouble`], writing them as its
//! [`Batching`] gathers them.

use std::sync::Arc;
use std::time::Duration;

/// The most items one transaction writes: chunks waiting are joined up to it.
pub(super) const BATCH_ITEMS: u64 = 5_000;

/// The items of the pages one checkpoint commits, as JSON lines; of one type, when a
/// table takes one type only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Its place in the crawl's order of chunks, from 1.
    pub(crate) seq: u64,
    pub(crate) items: Vec<u8>,
    pub(crate) count: u64,
    /// The type of its items; `None`: of every type, for every table.
    pub(crate) item_type: Option<String>,
}

impl Chunk {
    /// This chunk as `table` sees it: whole when the table takes its type, else empty (its
    /// number alone), so that the table knows it lacks nothing up to it.
    pub(super) fn for_table(self: &Arc<Chunk>, table: Option<&str>) -> Arc<Chunk> {
        match (table, self.item_type.as_deref()) {
            (Some(wanted), Some(item_type)) if wanted != item_type => Arc::new(Chunk {
                seq: self.seq,
                items: Vec::new(),
                count: 0,
                item_type: self.item_type.clone(),
            }),
            _ => self.clone(),
        }
    }
}

/// Why a write to a table failed: worth trying again (the server is down, the connection
/// dropped), or not (a column missing: it will not appear by waiting).
#[derive(Debug)]
#[cfg_attr(not(any(feature = "state", feature = "postgres", feature = "s3")), allow(dead_code))]
pub(super) enum Trouble {
    Down(String),
    Refused(String),
}

/// A table's database (or a bucket), as its delivery task drives it.
#[async_trait::async_trait]
pub(super) trait Table: Send {
    /// Connect if need be, and read the last chunk number `crawl` wrote to this table.
    async fn committed(&mut self, crawl: &str) -> Result<u64, Trouble>;

    /// Write the items of `chunks` and record the last one's number, all or nothing.
    async fn write(&mut self, crawl: &str, chunks: &[Arc<Chunk>]) -> Result<(), Trouble>;

    /// Forget the connection after an operation was cut off by its deadline: it may be
    /// in the middle of anything.
    fn reset(&mut self) {}

    /// How items are gathered into one write. A table writes what is there at once; a
    /// bucket makes objects of a size.
    fn batching(&self) -> Batching {
        Batching { items: BATCH_ITEMS, bytes: u64::MAX, wait: Duration::ZERO }
    }
}

/// How a table's items are gathered into one write: up to `items` of them and about
/// `bytes` of their JSON lines (a chunk is never split), the first waiting at most `wait`
/// for more.
#[derive(Debug, Clone, Copy)]
pub(super) struct Batching {
    pub(super) items: u64,
    pub(super) bytes: u64,
    pub(super) wait: Duration,
}
