//! Compile-time checks of the derives: each file in `ui/fail` is one mistake, its
//! `.stderr` the message a user sees.
//!
//! Only failing cases live here, so trybuild type-checks its copy of the dependency tree
//! instead of building it; the cases that must build are modules of the facade's
//! `tests/it/derive.rs`.

#[test]
fn derive_errors_point_at_the_mistake() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
