//! The wire: how a request leaves this machine and how its answer is judged.

pub(crate) mod block;
pub(crate) mod classify;
pub(crate) mod route;
pub(crate) mod transport;
