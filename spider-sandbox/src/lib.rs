//! Local target sites for Spiderling's examples, tests and benchmarks.
//!
//! Each [`Sandbox`] serves on `127.0.0.1` from a thread of its own (so a test may pause
//! or load its own runtime without touching the server) and records what it received:
//! every request with its arrival time, the most requests in flight at once, the
//! connections accepted. Tests assert on that record, not on the crawler's counters.
//!
//! The demo site is a book shop with a fixed [`catalogue`]; its layout is documented on
//! [`DemoSite`]. The hostile site ([`HostileSite`]) rate-limits, bans, fails, stalls,
//! resets connections and serves bad bodies.

mod catalogue;
mod demo;
mod hostile;
mod record;
mod server;

pub use catalogue::{catalogue, Book};
pub use demo::DemoSite;
pub use hostile::{HostileSite, IdentityLimit};
pub use record::{Hit, Observed};
pub use server::{Sandbox, IDENTITY_HEADER};
