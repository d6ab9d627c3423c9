//! Tables items go to (`output = "postgres://…?table=…"`, `sqlite://…`), exactly once,
//! through an outbox.
//!
//! A table cannot be cut back to a length as the items file is, so its items pass through
//! an outbox first: the items of the pages a checkpoint commits are one [`Chunk`], numbered
//! in order, written into the state file in the checkpoint's own transaction. Only then is
//! the chunk handed to each table's delivery task, which writes a batch of chunks and the
//! number of the last one (a row of `spiderling_commits`, by crawl and table) in one
//! transaction of the table's database. A resumed crawl hands the state file's chunks to
//! the tables again, and each skips the chunks its database says it has: after a kill at
//! any moment, every item is in every table once. The state file forgets a chunk once
//! every table has it.
//!
//! When a table takes the items of one type only (`type=Book`), a checkpoint's items are
//! a chunk per type, numbered one after the other; a table is handed every chunk, those of
//! other types emptied, so that the last number it holds still says it has every item for
//! it up to there.
//!
//! A table that is down (a server restarting, a full disk) holds up nothing: its chunks
//! wait in memory and in the state file while its task backs off and tries again, and the
//! crawl goes on. Down for longer than `store_patience`, it stops the crawl with
//! [`Error::Table`]; the chunks it lacks are still in the state file for the next run.

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_tls;
#[cfg(any(feature = "state", feature = "postgres"))]
mod rows;
#[cfg(feature = "s3")]
mod s3;
#[cfg(feature = "state")]
mod sqlite;
mod table;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spider_settings::{StoreKind, StoreUri};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::error::Error;
use crate::sinks::Lines;
pub(crate) use table::Chunk;
use table::{Batching, Table, Trouble};

/// Where a crawl's outbox starts: the name its tables know it by, the next chunk
/// number, and the chunks an earlier run handed out that some table may lack.
#[derive(Debug, Default)]
pub(crate) struct Outboxed {
    pub(crate) crawl: String,
    pub(crate) next_seq: u64,
    pub(crate) held: Vec<Chunk>,
}

impl Outboxed {
    /// A crawl's first outbox, kept in memory, numbered from 1: named by the time it
    /// starts (`20261203T065646Z`, a bucket's `{time}`) and a random tag.
    pub(crate) fn new() -> Self {
        let start = spider_settings::rfc3339(std::time::SystemTime::now());
        let time = format!("{}Z", start.get(..19).unwrap_or_default().replace(['-', ':'], ""));
        Outboxed { crawl: format!("{time}-{:08x}", rand::random::<u32>()), next_seq: 1, held: Vec::new() }
    }
}

/// The longest wait between tries at a table that is down.
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest one read or write of a table may take (or `store_patience`, when shorter),
/// and a second more for each megabyte a write sends, so a large object to a slow bucket
/// is not cut off while it goes: a server that takes the connection and never answers is
/// a table down, not a crawl that hangs.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);
const BYTES_A_SECOND: u64 = 1_000_000;

/// The crawl's outbox: the items of pages not yet checkpointed, by type, and a delivery
/// task per table.
pub(crate) struct Outbox {
    pending: Vec<Lines>,
    next_seq: u64,
    /// Chunks handed to the tables, with their item counts, until every table has them.
    sent: VecDeque<(u64, u64)>,
    deliveries: Vec<Delivery>,
}

/// One table's delivery task and what it reports.
struct Delivery {
    store: String,
    /// The one type of items it takes, if it takes one only.
    item_type: Option<String>,
    chunks: Option<mpsc::UnboundedSender<Arc<Chunk>>>,
    /// The last chunk number the table holds; `None` until it was first asked.
    committed: watch::Receiver<Option<u64>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Why the task gave up, when it did.
    failed: Arc<Mutex<Option<Error>>>,
}

impl Outbox {
    /// Start a delivery task for each of `config`'s tables, for the crawl `crawl` (its
    /// chunks' names in the tables), numbering new chunks from `next_seq`. `held` are
    /// the chunks an earlier run handed out that some table may lack: handed out again
    /// first. `None` without tables.
    pub(crate) fn open(config: &spider_settings::Config, from: Outboxed) -> Result<Option<Outbox>, Error> {
        let Outboxed { crawl, next_seq, held } = from;
        let crawl = crawl.as_str();
        if config.stores.is_empty() {
            return Ok(None);
        }
        let mut deliveries = Vec::new();
        for text in &config.stores {
            let uri = StoreUri::parse(text).map_err(Error::Config)?;
            let table = open_table(&uri, &config.name)?;
            let (chunks, rx) = mpsc::unbounded_channel();
            let (report, committed) = watch::channel(None);
            let failed = Arc::new(Mutex::new(None));
            let to = Target { store: uri.to_string(), crawl: crawl.to_owned(), kept: config.state.is_some() };
            let gave_up = failed.clone();
            let patience = config.store_patience;
            let task = tokio::spawn(async move {
                if let Err(error) = deliver(table, &to, rx, report, patience).await {
                    tracing::error!(target: "spiderling", store = %to.store, %error, "the table takes no \
                        more items");
                    *gave_up.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(error);
                }
            });
            deliveries.push(Delivery {
                store: uri.to_string(),
                item_type: uri.item_type().map(str::to_owned),
                chunks: Some(chunks),
                committed,
                task: Some(task),
                failed,
            });
        }
        let mut outbox = Outbox { pending: Vec::new(), next_seq, sent: VecDeque::new(), deliveries };
        for chunk in held {
            if !chunk.items.is_empty() {
                tracing::info!(target: "spiderling", chunk = chunk.seq, items = chunk.count, "handing the \
                    tables items an earlier run held");
            }
            outbox.next_seq = outbox.next_seq.max(chunk.seq + 1);
            outbox.send(chunk);
        }
        Ok(Some(outbox))
    }

    /// Add a page's items, as JSON lines by type.
    pub(crate) fn add(&mut self, parts: &[Lines]) {
        for part in parts {
            match self.pending.iter_mut().find(|pending| pending.item_type == part.item_type) {
                Some(pending) => {
                    pending.lines.extend_from_slice(&part.lines);
                    pending.count += part.count;
                }
                None => self.pending.push(part.clone()),
            }
        }
    }

    /// The items added since the last chunks, as the next chunks (one per type), if there
    /// are any.
    pub(crate) fn take(&mut self) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        for part in std::mem::take(&mut self.pending).into_iter().filter(|part| part.count > 0) {
            chunks.push(Chunk {
                seq: self.next_seq,
                items: part.lines,
                count: part.count,
                item_type: part.item_type.map(str::to_owned),
            });
            self.next_seq += 1;
        }
        chunks
    }

    /// Hand a chunk to every table (emptied for one that takes another type): call only
    /// once it is durable (in the state file's committed checkpoint), or at once without a
    /// state file.
    pub(crate) fn send(&mut self, chunk: Chunk) {
        self.sent.push_back((chunk.seq, chunk.count));
        let chunk = Arc::new(chunk);
        for delivery in &self.deliveries {
            if let Some(chunks) = &delivery.chunks {
                let _ = chunks.send(chunk.for_table(delivery.item_type.as_deref()));
            }
        }
    }

    /// The last chunk number every table holds: the state file may forget those.
    pub(crate) fn delivered(&mut self) -> u64 {
        let low = self.deliveries.iter().map(|d| d.committed.borrow().unwrap_or(0)).min().unwrap_or(0);
        while self.sent.front().is_some_and(|(seq, _)| *seq <= low) {
            self.sent.pop_front();
        }
        low
    }

    /// Items handed out that some table does not hold yet.
    pub(crate) fn held(&mut self) -> u64 {
        self.delivered();
        self.sent.iter().map(|(_, count)| count).sum()
    }

    /// The error of a table whose task gave up, once.
    pub(crate) fn trouble(&mut self) -> Option<Error> {
        self.deliveries.iter().find_map(Delivery::gave_up)
    }

    /// Wait until every table holds every chunk handed out (each task gives up after
    /// `store_patience` of trouble); the first error is returned.
    pub(crate) async fn finish(&mut self) -> Result<(), Error> {
        let mut first = None;
        for delivery in &mut self.deliveries {
            delivery.chunks = None;
            if let Some(task) = delivery.task.take() {
                if let Err(error) = task.await {
                    first.get_or_insert(Error::Table {
                        store: delivery.store.clone(),
                        message: error.to_string(),
                    });
                }
            }
            if let Some(error) = delivery.gave_up() {
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Delivery {
    fn gave_up(&self) -> Option<Error> {
        self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// What a delivery task writes to: the table (as shown, for messages), the crawl whose
/// chunks it numbers, and whether a state file keeps the chunks it lacks.
struct Target {
    store: String,
    crawl: String,
    kept: bool,
}

/// The table or bucket `uri` names, for the spider `spider`.
#[cfg_attr(not(feature = "s3"), allow(unused_variables))]
fn open_table(uri: &StoreUri, spider: &str) -> Result<Box<dyn Table>, Error> {
    match uri.kind() {
        #[cfg(feature = "state")]
        StoreKind::Sqlite(path) => Ok(Box::new(sqlite::Sqlite::new(path.clone(), uri))),
        #[cfg(feature = "postgres")]
        StoreKind::Postgres(url) => Ok(Box::new(postgres::Postgres::new(url, uri)?)),
        #[cfg(not(feature = "state"))]
        StoreKind::Sqlite(_) => Err(Error::left_out("output = \"sqlite://…\"", "state")),
        #[cfg(not(feature = "postgres"))]
        StoreKind::Postgres(_) => Err(Error::left_out("output = \"postgres://…\"", "postgres")),
        #[cfg(feature = "s3")]
        StoreKind::S3(bucket) => Ok(Box::new(s3::Bucket::new(bucket, uri, spider)?)),
        #[cfg(not(feature = "s3"))]
        StoreKind::S3(_) => Err(Error::left_out("output = \"s3://…\"", "s3")),
    }
}

/// What an operation of `table` cut off after `within` comes to: the table is down, and
/// its connection forgotten.
fn cut_off(table: &mut dyn Table, within: Duration) -> Trouble {
    table.reset();
    Trouble::Down(format!("no answer within {within:?}"))
}

/// A table's delivery task: write the chunks handed to it in batches, in order, skipping
/// those its database holds already; through trouble, back off and try again, up to
/// `patience`.
async fn deliver(
    mut table: Box<dyn Table>,
    to: &Target,
    mut chunks: mpsc::UnboundedReceiver<Arc<Chunk>>,
    report: watch::Sender<Option<u64>>,
    patience: Duration,
) -> Result<(), Error> {
    let mut queue: VecDeque<(Instant, Arc<Chunk>)> = VecDeque::new();
    let mut committed: Option<u64> = None;
    let mut closed = false;
    let mut failing: Option<(Instant, Duration)> = None;
    let Batching { items: batch_items, bytes: batch_bytes, wait } = table.batching();
    let answer_within = patience.min(ANSWER_WITHIN);
    loop {
        while let Ok(chunk) = chunks.try_recv() {
            queue.push_back((Instant::now(), chunk));
        }
        if let Some(done) = committed {
            while queue.front().is_some_and(|(_, chunk)| chunk.seq <= done) {
                queue.pop_front();
            }
            let queued: u64 = queue.iter().map(|(_, chunk)| chunk.count).sum();
            let queued_bytes: usize = queue.iter().map(|(_, chunk)| chunk.items.len()).sum();
            // A batch is written when it is full, when its first items have waited long
            // enough, or when no more will come.
            let due = queue.front().map(|(at, _)| *at + wait);
            let full = queued >= batch_items || queued_bytes as u64 >= batch_bytes;
            let ready = closed || full || due.is_some_and(|due| due <= Instant::now());
            if queue.is_empty() || !ready {
                if queue.is_empty() && closed {
                    return Ok(());
                }
                let next = async {
                    match due {
                        Some(due) => tokio::time::timeout_at(due, chunks.recv()).await.ok(),
                        None => Some(chunks.recv().await),
                    }
                };
                match next.await {
                    Some(Some(chunk)) => queue.push_back((Instant::now(), chunk)),
                    Some(None) => closed = true,
                    // The first items' wait ran out: their batch is due.
                    None => {}
                }
                continue;
            }
        }
        let started = Instant::now();
        let tried = match committed {
            None => {
                let asked = tokio::time::timeout(answer_within, table.committed(&to.crawl)).await;
                let asked = asked.unwrap_or_else(|_| Err(cut_off(&mut *table, answer_within)));
                asked.map(|done| {
                    committed = Some(done);
                    report.send_replace(Some(done));
                })
            }
            Some(_) => {
                let mut batch = Vec::new();
                let (mut items, mut bytes) = (0, 0);
                for (_, chunk) in &queue {
                    let over =
                        items + chunk.count > batch_items || bytes + chunk.items.len() as u64 > batch_bytes;
                    if !batch.is_empty() && over {
                        break;
                    }
                    items += chunk.count;
                    bytes += chunk.items.len() as u64;
                    batch.push(chunk.clone());
                }
                let last = batch.last().map_or(0, |chunk| chunk.seq);
                // Chunks of other types only: nothing to write, and nothing lacking.
                let written = if items == 0 {
                    Ok(())
                } else {
                    let within = answer_within + Duration::from_secs(bytes / BYTES_A_SECOND);
                    let written = tokio::time::timeout(within, table.write(&to.crawl, &batch)).await;
                    written.unwrap_or_else(|_| Err(cut_off(&mut *table, within)))
                };
                written.map(|()| {
                    committed = Some(last);
                    report.send_replace(Some(last));
                })
            }
        };
        match tried {
            Ok(()) => {
                if let Some((since, _)) = failing.take() {
                    tracing::info!(
                        target: "spiderling",
                        store = %to.store,
                        down_for = ?since.elapsed(),
                        "the table takes items again"
                    );
                }
            }
            Err(Trouble::Refused(message)) => return Err(Error::Table { store: to.store.clone(), message }),
            Err(Trouble::Down(message)) => {
                // A write whose answer was lost may have committed: ask the table again
                // what it holds before writing anything.
                committed = None;
                let now = Instant::now();
                let (since, wait) = failing.get_or_insert((started, Duration::from_millis(100)));
                if now.duration_since(*since) >= patience {
                    let kept = if to.kept {
                        "its items are kept in the state file for the next run"
                    } else {
                        "the items it lacks are not kept anywhere for it: crawl with a state file to keep \
                            them for a next run"
                    };
                    return Err(Error::Table {
                        store: to.store.clone(),
                        message: format!(
                            "down for {patience:?}, longer than store_patience: {message}; {kept}"
                        ),
                    });
                }
                tracing::warn!(
                    target: "spiderling",
                    store = %to.store,
                    error = %message,
                    retry_in = ?*wait,
                    "the table refused a write: holding its items, trying again"
                );
                tokio::time::sleep(*wait).await;
                *wait = (*wait * 2).min(BACKOFF_MAX);
            }
        }
    }
}
