//! Throttles: the per-host slots and politeness pauses ([`slots`]), the global rate
//! ceiling ([`rate`]), and in adaptive mode ([`adaptive`]) the controller that sets each
//! host's slots and pace from its block rate. The engine's admission decides, in its
//! order, what may go under them; these only count and wait for nothing.

pub(crate) mod adaptive;
mod delay;
mod pace;
mod rate;
mod slots;

pub(crate) use delay::pause;
pub(crate) use pace::Pace;
pub(crate) use rate::RateGate;
pub(crate) use slots::{HostSlots, LaneState, SlotState};
