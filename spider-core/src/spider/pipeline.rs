//! What happens to an item between `parse` and the outputs: its [`Stages`], in order, on
//! the task of the page that found it. A stage may keep the item's type or turn it into
//! another; the outputs write whatever the last stage gives. The crawl counts every item
//! dropped by reason, and files it in the failures file with its page and the item itself.

use std::any::{Any, TypeId};
use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;
use serde::Serialize;

use crate::error::Error;
use crate::extract::item::{Dropped, Item, ItemKey};
use crate::sinks::{Encoded, Encoder};

/// A stage of the items' pipeline: cleans an item, turns it into another type, or drops
/// it. `O`, what it gives, is the item's own type unless said otherwise.
///
/// Stages run in the order [`Stages::then`] adds them, on the task of the page that found
/// the item, one item at a time; a stage may await (look something up, ask a service).
///
/// # Examples
///
/// A stage that keeps the type:
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
///
/// A stage that gives another type, the one the outputs then write:
///
/// ```
/// use spider_core::{async_trait, Pipeline, Verdict};
/// # #[derive(serde::Serialize)] struct Book { title: String, price: f64 }
///
/// /// What the shop's database keeps of a book: its price in pence.
/// #[derive(serde::Serialize)]
/// struct Listing {
///     title: String,
///     pence: u64,
/// }
///
/// struct ToListing;
///
/// #[async_trait]
/// impl Pipeline<Book, Listing> for ToListing {
///     async fn process(&self, book: Book) -> Verdict<Listing> {
///         let pence = (book.price * 100.0).round() as u64;
///         Verdict::Keep(Listing { title: book.title, pence })
///     }
/// }
/// ```
#[async_trait]
pub trait Pipeline<I, O = I>: Send + Sync + 'static {
    /// Keep the item (as it came, changed, or as another type), or drop it with a reason.
    async fn process(&self, item: I) -> Verdict<O>;
}

/// What a stage made of an item.
#[derive(Debug)]
pub enum Verdict<O> {
    /// The item goes on to the next stage, then to the outputs.
    Keep(O),
    /// The item goes nowhere; counted by its reason, and filed in the failures file.
    Drop(Dropped),
}

/// What the outputs write: any item that serializes. Every `Serialize` type that can be
/// sent between threads is one; the name exists so that a pipeline's signature can say
/// "whatever the last stage gives" (`Stages<Book, impl Record>`).
pub trait Record: Serialize + Send + 'static {}

impl<T: Serialize + Send + 'static> Record for T {}

/// The stages a spider's items go through ([`Spider::pipeline`](crate::Spider::pipeline)):
/// the item's own check first ([`Item::check`]), then each stage in the order added;
/// `I` is the type `parse` emits, `O` the type the last stage gives, which the outputs
/// write. The item's key ([`Item::key`]) is read after the stages, or, when one turns
/// the item into another type, just before the first that does, and, for an item with a
/// key, checked against the crawl's memory of the keys it kept.
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
pub struct Stages<I, O = I> {
    check: Option<Check<I>>,
    /// Every stage added, as one step from `I` to `O`.
    steps: Box<dyn Steps<I, O>>,
    /// The key of an `O`, read after the last stage: `Item::key` while `O` is still the
    /// item's own type.
    key: Option<Key<O>>,
    count: usize,
    /// With nothing to run at all, the items as they came are already `O`s: `O` is `I`.
    unchanged: Option<fn(Vec<I>) -> Vec<O>>,
}

/// [`Item::check`] of an item type.
type Check<I> = fn(&I) -> Result<(), Dropped>;

/// [`Item::key`] of an item type.
type Key<I> = fn(&I) -> Option<ItemKey>;

/// An item on its way through the stages, with its key once read.
type Step<'a, O> = Pin<Box<dyn Future<Output = Result<(O, Option<ItemKey>), Dropped>> + Send + 'a>>;

/// The stages added so far, from an `I` to an `O`.
trait Steps<I, O>: Send + Sync {
    fn run(&self, item: I, key: Option<ItemKey>) -> Step<'_, O>;
}

/// No stage: the item as it came.
struct Unchanged;

impl<I: Send + 'static> Steps<I, I> for Unchanged {
    fn run(&self, item: I, key: Option<ItemKey>) -> Step<'_, I> {
        Box::pin(std::future::ready(Ok((item, key))))
    }
}

/// The stages before, then one more; `read` reads the key between them, when the stage
/// turns the item into another type.
struct Then<I, O, P> {
    before: Box<dyn Steps<I, O>>,
    read: Option<Key<O>>,
    stage: Box<dyn Pipeline<O, P>>,
}

impl<I: Send + 'static, O: Send + 'static, P: Send + 'static> Steps<I, P> for Then<I, O, P> {
    fn run(&self, item: I, key: Option<ItemKey>) -> Step<'_, P> {
        Box::pin(async move {
            let (item, key) = self.before.run(item, key).await?;
            let key = self.read.map_or(key, |read| read(&item));
            match self.stage.process(item).await {
                Verdict::Keep(item) => Ok((item, key)),
                Verdict::Drop(dropped) => Err(dropped),
            }
        })
    }
}

impl<I: Send + 'static> Stages<I> {
    /// No stage at all: every item `parse` emits is written. A hand-written spider's
    /// default, whose item need not be a derived one.
    pub fn new() -> Self {
        Stages {
            check: None,
            steps: Box::new(Unchanged),
            key: None,
            count: 0,
            unchanged: Some(|items| items),
        }
    }

    /// The item's own check ([`Item::check`]: its required text fields not empty, its
    /// `#[item(validate = ...)]`) and its key ([`Item::key`], `#[item(key)]`): a derived
    /// spider's stages before those `pipeline = [...]` adds.
    pub fn checked() -> Self
    where
        I: Item,
    {
        Stages {
            check: Some(I::check),
            steps: Box::new(Unchanged),
            key: Some(I::key),
            count: 0,
            unchanged: None,
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> Stages<I, O> {
    /// Add `stage` after the others: it takes what the last one gives, an `O`, and gives
    /// a `P`, the item's type from then on.
    #[must_use]
    pub fn then<P: Send + 'static>(self, stage: impl Pipeline<O, P>) -> Stages<I, P> {
        // A stage that keeps the type keeps the key for after it; one that changes it
        // has the key read before it, while the item is still of a type that has it.
        let (read, key) = if TypeId::of::<O>() == TypeId::of::<P>() {
            let key: Option<Box<dyn Any>> = self.key.map(|key| Box::new(key) as Box<dyn Any>);
            (None, key.and_then(|key| key.downcast::<Key<P>>().ok()).map(|key| *key))
        } else {
            (self.key, None)
        };
        let steps = Box::new(Then { before: self.steps, read, stage: Box::new(stage) });
        Stages { check: self.check, steps, key, count: self.count + 1, unchanged: None }
    }

    /// How many stages were added (the item's check and key not among them).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no stage was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Run `item` through the check and the stages: the item kept, with its key, or why
    /// not, with the item as JSON when the check dropped it (a stage keeps what it dropped).
    async fn run(&self, item: I) -> Result<(O, Option<ItemKey>), (Dropped, Option<String>)>
    where
        I: Serialize,
    {
        if let Some(check) = self.check {
            if let Err(dropped) = check(&item) {
                return Err((dropped, serde_json::to_string(&item).ok()));
            }
        }
        let (item, key) = self.steps.run(item, None).await.map_err(|dropped| (dropped, None))?;
        let key = self.key.map_or(key, |read| read(&item));
        Ok((item, key))
    }
}

impl<I: Send + 'static> Default for Stages<I> {
    fn default() -> Self {
        Stages::new()
    }
}

impl<I, O> std::fmt::Debug for Stages<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("checked", &self.check.is_some())
            .field("keyed", &self.key.is_some())
            .field("stages", &self.count)
            .finish()
    }
}

/// A page's items after the pipeline, for the engine, which never names the type the
/// last stage gives.
pub(crate) struct Sorted {
    /// The items kept, in the order found.
    pub(crate) kept: Box<dyn Kept>,
    /// The keys of the kept items that have one, by their place in `kept`.
    pub(crate) keys: Vec<(usize, ItemKey)>,
    /// The items dropped: why, and the item as JSON when the check dropped it.
    pub(crate) dropped: Vec<(Dropped, Option<String>)>,
}

/// The items a page kept, of the type its pipeline ends with.
pub(crate) trait Kept: Send {
    /// Remove the items whose mark is set, giving back each as JSON, for the failures
    /// file.
    fn remove(&mut self, marked: &[bool]) -> Vec<Option<String>>;

    /// The items encoded for the outputs.
    fn encode(&self, encoder: &Encoder) -> Result<Encoded, Error>;

    /// How many.
    fn count(&self) -> usize;
}

impl<O: Record> Kept for Vec<O> {
    fn remove(&mut self, marked: &[bool]) -> Vec<Option<String>> {
        let mut removed = Vec::new();
        let mut marks = marked.iter();
        self.retain(|item| {
            let marked = marks.next().copied().unwrap_or(false);
            if marked {
                removed.push(serde_json::to_string(item).ok());
            }
            !marked
        });
        removed
    }

    fn encode(&self, encoder: &Encoder) -> Result<Encoded, Error> {
        encoder.encode(self)
    }

    fn count(&self) -> usize {
        self.len()
    }
}

/// A spider's pipeline as the engine holds it: the stages of [`Stages`], whatever their
/// last type.
pub(crate) trait Sort<I>: Send + Sync {
    /// Run a page's items through the stages.
    fn sort(&self, found: Vec<I>) -> Pin<Box<dyn Future<Output = Sorted> + Send + '_>>;
}

impl<I: Record, O: Record> Sort<I> for Stages<I, O> {
    fn sort(&self, found: Vec<I>) -> Pin<Box<dyn Future<Output = Sorted> + Send + '_>> {
        Box::pin(async move {
            // Most pages of a spider without checks go straight to the encoder.
            if let Some(unchanged) = self.unchanged {
                return Sorted { kept: Box::new(unchanged(found)), keys: Vec::new(), dropped: Vec::new() };
            }
            let mut kept = Vec::with_capacity(found.len());
            let (mut keys, mut dropped) = (Vec::new(), Vec::new());
            for item in found {
                match self.run(item).await {
                    Ok((item, key)) => {
                        keys.extend(key.map(|key| (kept.len(), key)));
                        kept.push(item);
                    }
                    Err(why) => dropped.push(why),
                }
            }
            Sorted { kept: Box::new(kept), keys, dropped }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, PartialEq)]
    struct Book {
        sku: &'static str,
        title: String,
    }

    impl Item for Book {
        fn extract(
            _: &crate::extract::document::Document<'_>,
        ) -> Result<Option<Self>, crate::error::extract::ExtractError> {
            Ok(None)
        }

        fn check(&self) -> Result<(), Dropped> {
            if self.title.is_empty() {
                return Err(Dropped::new("empty title"));
            }
            Ok(())
        }

        fn key(&self) -> Option<ItemKey> {
            ItemKey::of(self.sku)
        }
    }

    #[derive(Debug, Serialize, PartialEq)]
    struct Listing {
        shouted: String,
    }

    struct Trim;

    #[async_trait]
    impl Pipeline<Book> for Trim {
        async fn process(&self, book: Book) -> Verdict<Book> {
            Verdict::Keep(Book { sku: "trimmed", title: book.title.trim().to_owned() })
        }
    }

    struct ToListing;

    #[async_trait]
    impl Pipeline<Book, Listing> for ToListing {
        async fn process(&self, book: Book) -> Verdict<Listing> {
            if book.title == "skip" {
                return Verdict::Drop(Dropped::new("skipped"));
            }
            Verdict::Keep(Listing { shouted: book.title.to_uppercase() })
        }
    }

    fn book(title: &str) -> Book {
        Book { sku: "a", title: title.to_owned() }
    }

    async fn run<O: Record>(stages: &Stages<Book, O>, item: Book) -> Result<(O, Option<ItemKey>), Dropped> {
        stages.run(item).await.map_err(|(dropped, _)| dropped)
    }

    #[tokio::test]
    async fn a_stage_that_keeps_the_type_is_followed_by_the_key_of_what_it_gave() {
        let stages = Stages::<Book>::checked().then(Trim);
        let (item, key) = run(&stages, book(" Dune ")).await.unwrap();
        assert_eq!((item.title.as_str(), key), ("Dune", ItemKey::of("trimmed")));
    }

    #[tokio::test]
    async fn a_stage_of_another_type_gives_the_outputs_its_type_with_the_key_read_before_it() {
        let stages = Stages::<Book>::checked().then(Trim).then(ToListing);
        assert_eq!(stages.len(), 2);
        let (item, key) = run(&stages, book(" Dune ")).await.unwrap();
        assert_eq!((item, key), (Listing { shouted: "DUNE".into() }, ItemKey::of("trimmed")));
        assert_eq!(run(&stages, book("skip")).await.unwrap_err().reason(), "skipped");
        let (dropped, json) = stages.run(book("")).await.unwrap_err();
        assert_eq!(dropped.reason(), "empty title");
        assert_eq!(json.as_deref(), Some(r#"{"sku":"a","title":""}"#), "the check files the item it dropped");
    }

    #[tokio::test]
    async fn without_stages_the_items_are_sorted_as_found() {
        let sorted = Stages::<Book>::new().sort(vec![book(""), book("b")]).await;
        assert_eq!((sorted.kept.count(), sorted.keys.len(), sorted.dropped.len()), (2, 0, 0));
        let sorted =
            Stages::<Book>::checked().then(ToListing).sort(vec![book(""), book("b"), book("skip")]).await;
        assert_eq!((sorted.kept.count(), sorted.keys.len(), sorted.dropped.len()), (1, 1, 2));
    }
}
