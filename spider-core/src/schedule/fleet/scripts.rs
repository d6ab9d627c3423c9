//! The fleet's Lua scripts, which Redis runs one at a time: a round (`round.lua`), the
//! reservation of starts (`reserve.lua`) and the count of a part's queues (`count.lua`).

/// The script of a round.
pub(super) const ROUND: &str = include_str!("round.lua");
/// The script that reserves starts under the rate ceiling of a crawl in parts.
pub(super) const RESERVE: &str = include_str!("reserve.lua");
/// The script that counts one part's queues.
pub(super) const COUNT: &str = include_str!("count.lua");

/// A call of the round script for `worker` on the crawl at `prefix`: the round's JSON,
/// then each request it enqueues. The crawl's `meta` key is named so that a cluster
/// client sends it to the master of the crawl's slot.
pub(super) fn round_call<'a>(
    script: &'a redis::Script,
    prefix: &str,
    worker: &str,
    json: &str,
    requests: &[String],
) -> redis::ScriptInvocation<'a> {
    let mut call = script.key(format!("{prefix}:meta"));
    call.arg(prefix).arg(worker).arg(json);
    for request in requests {
        call.arg(request);
    }
    call
}
