//! What becomes of a request that met trouble, decided apart from the dispatcher's state:
//! sent again at once past a consent wall, retried after a wait, or given up, and how long
//! its host (with the hosts sharing its budget) pauses first when a limiter refused it.
//!
//! The dispatcher gathers the facts (the wait drawn for this attempt, whether this is the
//! budget's first refusal and whether its controller paces it already) and carries out the
//! plan; the decision itself is a pure function of them, so each rule is tested here.

use std::time::Duration;

use crate::wire::classify::Trouble;

/// The longest a budget already paced by its controller pauses at a refusal without a
/// `Retry-After`: its controller cuts the pace at a refusal, and a limiter counting over a
/// second lets the slower pace through within one.
pub(super) const REFUSED_AGAIN: Duration = Duration::from_millis(250);

/// The walls (consent pages that hand the identity a cookie) an attempt may pass besides
/// the retries, the one a fresh identity meets with its first answer not counted: a wall
/// met again and again, cookie and all, is given up.
pub(super) const WALLS: u8 = 3;

/// A limiter's refusal as the budget it hit took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refusal {
    /// The budget's first: it is paced from a slow start from now on.
    pub(super) first: bool,
    /// The budget's controller paced it already.
    pub(super) paced: bool,
}

/// What the dispatcher knows of a request's trouble when it decides.
#[derive(Debug, Clone, Copy)]
pub(super) struct Facts {
    pub(super) trouble: Trouble,
    pub(super) retry_after: Option<Duration>,
    /// The backoff drawn for the next attempt (decorrelated jitter, `schedule/retry.rs`).
    pub(super) wait: Duration,
    /// Attempts made so far, and the most a request gets after its first (`retries`).
    pub(super) attempts: u32,
    pub(super) retries: u32,
    /// Walls passed in this attempt.
    pub(super) walls: u8,
    /// How the budget took a limiter's refusal; set with `Trouble::SlowDown` only.
    pub(super) refusal: Option<Refusal>,
}

/// The decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryPlan {
    /// How long the host and those sharing its budget pause before anything else of
    /// theirs goes, when a limiter refused the request.
    pub(super) pause: Option<Duration>,
    pub(super) next: Next,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Past a wall that handed the identity a cookie: sent again at once, `walls` times
    /// now, not counted as an attempt.
    PassWall {
        walls: u8,
    },
    /// Tried again after `wait`.
    Retry {
        wait: Duration,
    },
    GiveUp,
}

/// What becomes of a request whose answer was `facts.trouble`.
pub(super) fn plan(facts: &Facts) -> RetryPlan {
    if let Trouble::PassWall { first } = facts.trouble {
        if first || facts.walls < WALLS {
            let walls = facts.walls + u8::from(!first);
            return RetryPlan { pause: None, next: Next::PassWall { walls } };
        }
    }
    let mut wait = facts.wait;
    let pause = facts.refusal.map(|refusal| {
        // The first refusal pauses the budget for a backoff; after it the controller's cut
        // pace is what keeps the hosts under the limit, and a long pause would only idle
        // them. A paced request's turn comes when the pace gives it one: a backoff of its
        // own would only leave it to the crawl's end.
        let paced = !refusal.first && refusal.paced;
        let pause = match facts.retry_after {
            Some(after) => after,
            None if paced => wait.min(REFUSED_AGAIN),
            None => wait,
        };
        if paced {
            wait = pause;
        }
        pause
    });
    // A wall that keeps coming back, cookie and all, is no wall to pass.
    let spent = facts.attempts >= facts.retries || matches!(facts.trouble, Trouble::PassWall { .. });
    let next = if spent { Next::GiveUp } else { Next::Retry { wait } };
    RetryPlan { pause, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(2);

    fn facts(trouble: Trouble) -> Facts {
        Facts { trouble, retry_after: None, wait: WAIT, attempts: 0, retries: 3, walls: 0, refusal: None }
    }

    fn refused(first: bool, paced: bool) -> Facts {
        Facts { refusal: Some(Refusal { first, paced }), ..facts(Trouble::SlowDown) }
    }

    #[test]
    fn a_wall_is_passed_at_once_up_to_three_times_an_attempt_then_given_up() {
        let first = plan(&facts(Trouble::PassWall { first: true }));
        assert_eq!(
            first,
            RetryPlan { pause: None, next: Next::PassWall { walls: 0 } },
            "a new identity's wall is free"
        );
        let mut walls = 0;
        for expected in 1..=WALLS {
            let planned = plan(&Facts { walls, ..facts(Trouble::PassWall { first: false }) });
            assert_eq!(planned.next, Next::PassWall { walls: expected });
            walls = expected;
        }
        let again = plan(&Facts { walls, ..facts(Trouble::PassWall { first: false }) });
        assert_eq!(
            again,
            RetryPlan { pause: None, next: Next::GiveUp },
            "a wall met a fourth time is no wall"
        );
    }

    #[test]
    fn trouble_is_retried_after_its_wait_until_the_retries_are_spent() {
        for trouble in [Trouble::TryAgain, Trouble::SwitchIdentity] {
            assert_eq!(plan(&facts(trouble)), RetryPlan { pause: None, next: Next::Retry { wait: WAIT } });
            let spent = Facts { attempts: 3, ..facts(trouble) };
            assert_eq!(plan(&spent), RetryPlan { pause: None, next: Next::GiveUp });
        }
    }

    #[test]
    fn a_limiters_first_refusal_pauses_the_budget_for_the_backoff_or_its_retry_after() {
        assert_eq!(
            plan(&refused(true, false)),
            RetryPlan { pause: Some(WAIT), next: Next::Retry { wait: WAIT } }
        );
        let told = Facts { retry_after: Some(Duration::from_secs(7)), ..refused(true, true) };
        assert_eq!(plan(&told).pause, Some(Duration::from_secs(7)), "Retry-After is the pause");
    }

    #[test]
    fn once_paced_a_refusal_pauses_at_most_250_ms_and_retries_at_the_pace_s_turn() {
        assert_eq!(
            plan(&refused(false, true)),
            RetryPlan { pause: Some(REFUSED_AGAIN), next: Next::Retry { wait: REFUSED_AGAIN } }
        );
        let short = Facts { wait: Duration::from_millis(100), ..refused(false, true) };
        assert_eq!(plan(&short).pause, Some(Duration::from_millis(100)), "never longer than the backoff");
        let unpaced = refused(false, false);
        assert_eq!(plan(&unpaced).pause, Some(WAIT), "without a controller, the whole backoff");
    }

    #[test]
    fn a_refusal_that_spends_the_last_retry_still_pauses_the_budget() {
        let spent = Facts { attempts: 3, ..refused(true, false) };
        assert_eq!(plan(&spent), RetryPlan { pause: Some(WAIT), next: Next::GiveUp });
    }
}
