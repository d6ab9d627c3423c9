//! Compile-time checks of the derives: each file in `ui/fail` is one mistake, its
//! `.stderr` the message a user sees; each file in `ui/pass` must build.

#[test]
fn derive_errors_point_at_the_mistake() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
