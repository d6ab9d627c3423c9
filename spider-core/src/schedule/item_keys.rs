//! The keys of the items a crawl kept (`#[item(key)]`), so that it keeps one item per key.
//!
//! A page's task asks for its items' keys once its pipeline kept them, and writes the
//! items whose keys were its own. In one process the keys are a set in memory, and with
//! a state file they are its `item_keys` table too, written with each checkpoint and read
//! back on resume: a key is durable exactly when the page whose item holds it is, so a
//! page fetched again after a kill finds its keys free. A fleet's workers ask Redis,
//! which remembers each key with the page that took it (`fleet/item_keys.rs`): a page taken
//! over from a killed worker takes its own keys again.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::request::canonical::Fingerprint;

/// The keys kept so far, where the crawl keeps them.
pub(crate) enum KeptKeys {
    /// This process's: an empty crawl's, or a state file's.
    Local(Mutex<HashSet<ItemKey>>),
    /// The fleet's, in Redis.
    #[cfg(feature = "fleet")]
    Fleet(Box<crate::schedule::fleet::FleetKeys>),
}

impl KeptKeys {
    /// The keys of a crawl that kept none yet, or of a state file's earlier runs.
    pub(crate) fn local(kept: impl IntoIterator<Item = ItemKey>) -> Self {
        KeptKeys::Local(Mutex::new(kept.into_iter().collect()))
    }

    /// Take `keys` for the page `owner`: for each, whether it is this page's (taken now,
    /// or before by the same page) rather than another's. A key given twice is the
    /// first one's only.
    ///
    /// # Errors
    ///
    /// [`Error::Fleet`] when the fleet's Redis stays out of reach.
    pub(crate) async fn claim(&self, owner: Fingerprint, keys: &[ItemKey]) -> Result<Vec<bool>, Error> {
        match self {
            KeptKeys::Local(kept) => {
                let _ = owner;
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                Ok(keys.iter().map(|key| kept.insert(*key)).collect())
            }
            #[cfg(feature = "fleet")]
            KeptKeys::Fleet(fleet) => fleet.claim(owner, keys).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_the_first_items_and_a_state_files_keys_stay_taken() {
        let kept = KeptKeys::local([ItemKey(7)]);
        let page = Fingerprint(1);
        let taken = kept.claim(page, &[ItemKey(1), ItemKey(7), ItemKey(1), ItemKey(2)]).await.unwrap();
        assert_eq!(taken, [true, false, false, true]);
        assert_eq!(kept.claim(Fingerprint(2), &[ItemKey(2)]).await.unwrap(), [false]);
    }
}
