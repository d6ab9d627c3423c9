//! A page's items on its task, between `parse` and the dispatcher: each through the
//! spider's pipeline (`Spider::pipeline`), the keys of those kept taken for this page
//! (`schedule::keys`), then the kept ones encoded for the outputs.

use crate::engine::protocol::Sorted;
use crate::engine::shared::Shared;
use crate::error::Error;
use crate::extract::item::{Dropped, ItemKey};
use crate::request::Request;
use crate::sinks::failures::DroppedItem;
use crate::sinks::Encoded;
use crate::spider::Spider;

/// Why a page's items could not be sorted.
pub(in crate::engine) enum Unsorted {
    /// The fleet's Redis did not answer for their keys: the page is worth another try.
    Keys(Error),
    /// An item the output cannot hold: the crawl stops.
    Encode(Error),
}

/// Run `found`, the items `parse` emitted on `request`'s page, through the pipeline and
/// the keys kept so far; encode those kept.
pub(in crate::engine) async fn sort<S: Spider>(
    shared: &Shared<S>,
    request: &Request,
    found: Vec<S::Item>,
) -> Result<Sorted, Unsorted> {
    let crate::spider::pipeline::Sorted { mut kept, keys, dropped } = shared.pipeline.sort(found).await;
    let mut dropped: Vec<DroppedItem> =
        dropped.into_iter().map(|(why, item)| filed(request, &why, item)).collect();
    let mut kept_keys = Vec::with_capacity(keys.len());
    if !keys.is_empty() {
        let asked: Vec<ItemKey> = keys.iter().map(|(_, key)| *key).collect();
        let mine = shared.kept_keys.claim(request.fingerprint(), &asked).await.map_err(Unsorted::Keys)?;
        let mut duplicate = vec![false; kept.count()];
        for ((at, key), mine) in keys.into_iter().zip(mine) {
            if mine {
                kept_keys.push(key);
            } else if let Some(mark) = duplicate.get_mut(at) {
                *mark = true;
            }
        }
        let why = Dropped::new("duplicate").because("an item with this key was kept before");
        dropped.extend(kept.remove(&duplicate).into_iter().map(|item| filed(request, &why, item)));
    }
    let items = match &shared.encoder {
        Some(encoder) => kept.encode(encoder).map_err(Unsorted::Encode)?,
        None => Encoded::counted(kept.count()),
    };
    Ok(Sorted { items, dropped, kept_keys })
}

/// What the failures file says of an item `request`'s page dropped.
fn filed(request: &Request, why: &Dropped, item: Option<String>) -> DroppedItem {
    DroppedItem {
        page: (request.url().to_string(), request.method().to_string()),
        reason: why.reason(),
        detail: why.detail().map(str::to_owned),
        item,
    }
}
