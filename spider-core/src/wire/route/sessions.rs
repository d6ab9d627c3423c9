//! Sticky sessions: each logical task (a request's session key, inherited by its
//! follow-ups) is pinned, on each route tier, to one gateway session id, so the gateway
//! keeps one exit identity for it. A session that gets blocked, or whose gateway cannot be
//! reached, is retired and its task gets a fresh id.

use std::collections::HashMap;
use std::sync::Arc;

use rand::distr::{Alphanumeric, SampleString};
use rand::rngs::SmallRng;

/// One task's current session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    /// The gateway it was opened on: an id means nothing to another gateway.
    pub(crate) gateway: usize,
}

/// A logical task on one route tier: a host that climbs keeps its task's session on the
/// tier below for when it comes back down.
pub(crate) type TaskOnTier = (Arc<str>, usize);

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_task: HashMap<TaskOnTier, Session>,
}

impl Sessions {
    /// The task's session, opened on `gateway()` when it has none.
    pub(crate) fn current(
        &mut self,
        task: &TaskOnTier,
        rng: &mut SmallRng,
        gateway: impl FnOnce() -> Option<usize>,
    ) -> Option<Session> {
        if let Some(session) = self.by_task.get(task) {
            return Some(session.clone());
        }
        let session = Session { id: new_id(rng), gateway: gateway()? };
        self.by_task.insert(task.clone(), session.clone());
        Some(session)
    }

    /// Retire the task's session, whichever it is: its identity was replaced before a
    /// block.
    pub(crate) fn forget(&mut self, task: &TaskOnTier) {
        self.by_task.remove(task);
    }

    /// Retire `id` if it is still the task's session; the task's next request opens a new
    /// one. Requests in flight on the old id retire nothing twice.
    pub(crate) fn retire(&mut self, task: &TaskOnTier, id: &Arc<str>) -> bool {
        let current = self.by_task.get(task).is_some_and(|session| session.id == *id);
        if current {
            self.by_task.remove(task);
        }
        current
    }
}

fn new_id(rng: &mut SmallRng) -> Arc<str> {
    Arc::from(Alphanumeric.sample_string(rng, 12).to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_task_keeps_its_session_until_it_is_retired() {
        let (mut sessions, mut rng) = (Sessions::default(), SmallRng::seed_from_u64(7));
        let (a, b) = ((Arc::from("a"), 0), (Arc::from("b"), 0));
        let first = sessions.current(&a, &mut rng, || Some(0)).unwrap();
        assert_eq!(sessions.current(&a, &mut rng, || Some(1)).unwrap().id, first.id);
        assert_ne!(sessions.current(&b, &mut rng, || Some(0)).unwrap().id, first.id);
        assert!(sessions.retire(&a, &first.id));
        assert!(!sessions.retire(&a, &first.id), "retired once");
        let second = sessions.current(&a, &mut rng, || Some(1)).unwrap();
        assert_ne!(second.id, first.id);
        assert_eq!(second.gateway, 1);
    }
}
