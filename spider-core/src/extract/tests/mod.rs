//! Tests of extraction's parts through pages made from saved HTML: above every part they
//! test, so that no part needs a page to be tested.

mod form;
mod json_field;
mod json_ld;
mod stream;
