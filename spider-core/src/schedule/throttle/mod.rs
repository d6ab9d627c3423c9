//! Admission: what a request waits for between the frontier and the network.
//!
//! In order: a free slot of its host whose politeness pause has elapsed ([`slots`]), a
//! global slot (a count of requests in flight, owned by the engine's dispatcher), and a
//! token of the global rate ceiling ([`rate`]). Only the dispatcher waits on these, and it
//! waits for the earliest of them with nothing reserved, so a host waiting for its pause
//! never holds a global slot and never delays another host. In adaptive mode ([`adaptive`])
//! each host's slots and pace are set by a controller that watches its block rate.

pub(crate) mod adaptive;
mod delay;
mod rate;
mod slots;

pub(crate) use delay::pause;
pub(crate) use rate::RateGate;
pub(crate) use slots::{HostSlots, SlotState};
