//! A page's items on its task, between `parse` and the dispatcher: each through the
//! spider's pipeline (`Spider::pipeline`), the keys of those kept taken for this page
//! (`schedule::keys`), then the kept ones encoded for the outputs.

use crate::engine::protocol::Sorted;
use crate::engine::Shared;
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
    let mut dropped = Vec::new();
    let mut keys = Vec::new();
    // Most pages of a spider without checks go straight to the encoder, found as found.
    let mut kept = if shared.pipeline.runs() && !found.is_empty() {
        let mut kept = Vec::with_capacity(found.len());
        for item in found {
            match shared.pipeline.run(item).await {
                Ok((item, key)) => {
                    keys.extend(key.map(|key| (kept.len(), key)));
                    kept.push(item);
                }
                Err((why, item)) => dropped.push(filed(request, &why, item.as_ref())),
            }
        }
        kept
    } else {
        found
    };
    let mut kept_keys = Vec::with_capacity(keys.len());
    if !keys.is_empty() {
        let asked: Vec<ItemKey> = keys.iter().map(|(_, key)| *key).collect();
        let mine = shared.kept_keys.claim(request.fingerprint(), &asked).await.map_err(Unsorted::Keys)?;
        let mut duplicate = vec![false; kept.len()];
        for ((at, key), mine) in keys.into_iter().zip(mine) {
            if mine {
                kept_keys.push(key);
            } else {
                duplicate[at] = true;
            }
        }
        let mut marks = duplicate.into_iter();
        kept.retain(|item| {
            let duplicate = marks.next().unwrap_or(false);
            if duplicate {
                let why = Dropped::new("duplicate").because("an item with this key was kept before");
                dropped.push(filed(request, &why, Some(item)));
            }
            !duplicate
        });
    }
    let items = match &shared.encoder {
        Some(encoder) => encoder.encode(&kept).map_err(Unsorted::Encode)?,
        None => Encoded::counted(kept.len()),
    };
    Ok(Sorted { items, dropped, kept_keys })
}

/// What the failures file says of an item `request`'s page dropped.
fn filed<I: serde::Serialize>(request: &Request, why: &Dropped, item: Option<&I>) -> DroppedItem {
    DroppedItem {
        page: (request.url().to_string(), request.method().to_string()),
        reason: why.reason(),
        detail: why.detail().map(str::to_owned),
        item: item.and_then(|item| serde_json::to_string(item).ok()),
    }
}
