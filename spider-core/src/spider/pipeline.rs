//! What happens to an item between `parse` and the outputs: its [`Stages`], in order, on
//! the task of the page that found it. The crawl counts every item dropped by reason, and
//! files it in the failures file with its page and the item itself.

use async_trait::async_trait;

use crate::extract::item::{Dropped, Item, ItemKey};

/// A stage of the items' pipeline: cleans an item, or drops it.
///
/// Stages run in the order [`Stages::then`] adds them, on the task of the page that found
/// the item, one item at a time; a stage may await (look something up, ask a service).
///
/// # Examples
///
/// ```
/// use spider_core::{async_trait, Dropped, Pipeline, Verdict};
///
/// #[derive(serde::Serialize)]
/// struct Book {
///     title: String,
///     price: f64,
/// }
///
/// /// Titles without the shop's padding; free books are not books for sale.
/// struct Tidy;
///
/// #[async_trait]
/// impl Pipeline<Book> for Tidy {
///     async fn process(&self, mut book: Book) -> Verdict<Book> {
///         if book.price <= 0.0 {
///             return Verdict::Drop(Dropped::new("free").because(format!("{} costs nothing", book.title)));
///         }
///         book.title = book.title.trim().to_owned();
///         Verdict::Keep(book)
///     }
/// }
/// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # let book = runtime.block_on(Tidy.process(Book { title: " Dune ".into(), price: 9.0 }));
/// # assert!(matches!(book, Verdict::Keep(Book { ref title, .. }) if title == "Dune"));
/// ```
#[async_trait]
pub trait Pipeline<I>: Send + Sync + 'static {
    /// Keep the item (as it came, or changed), or drop it with a reason.
    async fn process(&self, item: I) -> Verdict<I>;
}

/// What a stage made of an item.
#[derive(Debug)]
pub enum Verdict<I> {
    /// The item goes on to the next stage, then to the outputs.
    Keep(I),
    /// The item goes nowhere; counted by its reason, and filed in the failures file.
    Drop(Dropped),
}

/// The stages a spider's items go through ([`Spider::pipeline`](crate::Spider::pipeline)):
/// the item's own check first ([`Item::check`]), then each stage in the order added,
/// then, for an item with a key ([`Item::key`]), the crawl's memory of the keys it kept.
///
/// # Examples
///
/// A derived item's checks and key, and a stage of one's own after them:
///
/// ```
/// use spider_core::{async_trait, Pipeline, Stages, Verdict};
/// # #[derive(serde::Serialize)] struct Book { title: String }
/// # impl spider_core::Item for Book {
/// #     fn extract(_: &spider_core::Document<'_>) -> Result<Option<Self>, spider_core::ExtractError> { Ok(None) }
/// # }
///
/// struct Shout;
///
/// #[async_trait]
/// impl Pipeline<Book> for Shout {
///     async fn process(&self, book: Book) -> Verdict<Book> {
///         Verdict::Keep(Book { title: book.title.to_uppercase() })
///     }
/// }
///
/// let stages = Stages::<Book>::checked().then(Shout);
/// assert_eq!(stages.len(), 1);
/// ```
pub struct Stages<I> {
    check: Option<Check<I>>,
    key: Option<Key<I>>,
    stages: Vec<Box<dyn Pipeline<I>>>,
}

/// [`Item::check`] of an item type.
type Check<I> = fn(&I) -> Result<(), Dropped>;

/// [`Item::key`] of an item type.
type Key<I> = fn(&I) -> Option<ItemKey>;

impl<I: Send + 'static> Stages<I> {
    /// No stage at all: every item `parse` emits is written. A hand-written spider's
    /// default, whose item need not be a derived one.
    pub fn new() -> Self {
        Stages { check: None, key: None, stages: Vec::new() }
    }

    /// The item's own check ([`Item::check`]: its required text fields not empty, its
    /// `#[item(validate = ...)]`) and its key ([`Item::key`], `#[item(key)]`): a derived
    /// spider's stages before those `pipeline = [...]` adds.
    pub fn checked() -> Self
    where
        I: Item,
    {
        Stages { check: Some(I::check), key: Some(I::key), stages: Vec::new() }
    }

    /// Add `stage` after the others.
    #[must_use]
    pub fn then(mut self, stage: impl Pipeline<I>) -> Self {
        self.stages.push(Box::new(stage));
        self
    }

    /// How many stages were added (the item's check and key not among them).
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether no stage was added.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Whether an item can be dropped at all: with nothing to run, the task skips the
    /// pipeline.
    pub(crate) fn runs(&self) -> bool {
        self.check.is_some() || self.key.is_some() || !self.stages.is_empty()
    }

    /// Run `item` through the check and the stages: the item kept, with its key, or why
    /// not, with the item when the check dropped it (a stage keeps what it dropped).
    pub(crate) async fn run(&self, item: I) -> Result<(I, Option<ItemKey>), (Dropped, Option<I>)> {
        if let Some(check) = self.check {
            if let Err(dropped) = check(&item) {
                return Err((dropped, Some(item)));
            }
        }
        let mut item = item;
        for stage in &self.stages {
            item = match stage.process(item).await {
                Verdict::Keep(item) => item,
                Verdict::Drop(dropped) => return Err((dropped, None)),
            };
        }
        let key = self.key.and_then(|key| key(&item));
        Ok((item, key))
    }
}

impl<I: Send + 'static> Default for Stages<I> {
    fn default() -> Self {
        Stages::new()
    }
}

impl<I> std::fmt::Debug for Stages<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("checked", &self.check.is_some())
            .field("keyed", &self.key.is_some())
            .field("stages", &self.stages.len())
            .finish()
    }
}
