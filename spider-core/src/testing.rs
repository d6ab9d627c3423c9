//! Helpers for testing a spider without a server: a saved page ([`PageFixture`],
//! [`Page::fixture`](crate::Page::fixture)) and a spider's `parse` run on one
//! ([`parse_page`]).

pub use crate::extract::fixture::PageFixture;
pub use crate::spider::parse_page;
