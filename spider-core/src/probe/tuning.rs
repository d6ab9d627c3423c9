//! How hard the probe pushes and how it reads what it sees: its constants, in one place.

/// The share of the highest clean rate reported as safe.
pub(super) const MARGIN: f64 = 0.9;
/// How much faster each ramp step goes than the last clean one.
pub(super) const GROWTH: f64 = 1.5;
/// The bisection stops when the blocked rate is within this factor of the clean one.
pub(super) const PRECISION: f64 = 1.05;
/// A step lasts long enough for at least this many requests, whatever its `step`.
pub(super) const MIN_STEP_REQUESTS: f64 = 3.0;
/// A clean step that got less than this share of the rate asked could not go faster:
/// the ramp ends there rather than asking for rates it cannot send.
pub(super) const SATURATED: f64 = 0.8;
/// The slowest rate tried when even the start rate is blocked: one request a minute.
pub(super) const FLOOR_RPS: f64 = 1.0 / 60.0;
