//! Extraction: what is read from an answer.

pub(crate) mod charset;
pub(crate) mod content_type;
pub(crate) mod document;
pub(crate) mod facts;
pub(crate) mod field;
pub(crate) mod fixture;
pub(crate) mod form;
pub(crate) mod hidden;
pub(crate) mod item;
pub(crate) mod json_field;
pub(crate) mod json_ld;
pub(crate) mod main_content;
pub(crate) mod non_page;
pub(crate) mod page;
pub(crate) mod parse_pool;
pub(crate) mod sitemap;
pub(crate) mod stream;

#[cfg(test)]
mod tests;
