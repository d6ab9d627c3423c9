//! Derive macros for Spiderling: `#[derive(Spider)]` and `#[derive(Item)]`.
//!
//! Not written yet: until they are, a spider is a plain `impl Spider` (see the
//! `spiderling` crate docs). The crate exists so the facade's re-export and the
//! workspace layout are in place.
