//! The streaming engine: a derived spider's items and links read in one pass over the
//! page's tags, with no DOM.
//!
//! A derived spider knows at compile time every selector a page will be asked about:
//! its item's `#[css]` fields and its link rules' selectors. When all of them are in the
//! streaming subset (`spider_settings::stream_selector`) and every field reads text or an
//! attribute, the derive gives the spider a [`Plan`], and each page is answered by
//! [`Plan::run`]: one pass that collects, per selector, the text and attributes of every
//! matching element. The item is then built by the same generated code that builds it
//! from the DOM, through the [`Reader`] trait both engines implement, so conversion,
//! `Option` / `Vec` / required and the "page has the item in part" error cannot differ.
//!
//! What the engine reads it decodes as the DOM path does: the page's text decoded by
//! [`Page::text`](crate::Page::text)'s rules, character references by html5ever's own
//! table and rules (`entities.rs`), line breaks normalised, a newline right after
//! `<pre>` / `<textarea>` / `<listing>` dropped. Where the tree html5ever builds would
//! not nest as the tokens do (`shape.rs`), [`Plan::run`] says why and the page is
//! parsed into the DOM instead: a page is never answered by a guess.

mod collect;
mod entities;
mod plan;
mod scan;
mod select;
mod shape;

use url::Url;

use crate::extract::facts::{Facts, PageField};
use crate::extract::field::{attribute_value, Reader, Source};
use crate::extract::json_ld::JsonLd;

pub(crate) use collect::Streamed;
pub use plan::FieldRead;
pub(crate) use plan::Plan;

/// What a page's pass found, with the page's facts: what a streamed item is read from.
#[derive(Debug)]
pub struct Found<'a> {
    plan: &'a Plan,
    streamed: Streamed,
    facts: &'a Facts,
}

impl<'a> Found<'a> {
    pub(crate) fn new(plan: &'a Plan, streamed: Streamed, facts: &'a Facts) -> Self {
        Found { plan, streamed, facts }
    }

    /// The values of item field `field` (its number among the item's `#[css]` fields),
    /// in page order.
    fn values(&self, field: usize, source: Source) -> impl Iterator<Item = String> + '_ {
        let at = self.plan.fields.get(field).copied().unwrap_or(usize::MAX);
        let wanted = self.plan.selectors.get(at);
        self.streamed.matches(at).iter().filter_map(move |found| match source {
            Source::Text => Some(found.text.trim().to_owned()),
            Source::Attr(name) => {
                let slot = wanted?.attributes.iter().position(|wanted| *wanted == name)?;
                let value = found.attributes.get(slot)?.as_deref()?;
                attribute_value(name, value, &self.facts.url)
            }
            Source::Html => None,
        })
    }

    /// The `href`s link rule `rule` finds, resolved against the page URL, less the hidden
    /// ones when the page skips them (counted as the DOM counts them).
    pub(crate) fn links(&self, rule: usize) -> Vec<Url> {
        let Some(&at) = self.plan.rules.get(rule) else { return Vec::new() };
        let Some(slot) = self.plan.selectors[at].attributes.iter().position(|name| *name == "href") else {
            return Vec::new();
        };
        self.streamed
            .matches(at)
            .iter()
            .map(|found| (found.attributes.get(slot).and_then(Option::as_deref), found.hidden))
            .filter(|(href, hidden)| self.facts.hidden.admits_link(href.unwrap_or_default(), || *hidden))
            .filter_map(|(href, _)| self.facts.url.join(href?.trim()).ok())
            .collect()
    }
}

impl Reader for Found<'_> {
    fn first(&self, field: usize, _: &scraper::Selector, source: Source) -> Option<String> {
        self.values(field, source).next()
    }

    fn all(&self, field: usize, _: &scraper::Selector, source: Source) -> Vec<String> {
        self.values(field, source).collect()
    }

    fn page_field(&self, field: PageField) -> Option<String> {
        self.facts.field(field)
    }

    fn json_ld(&self, field: usize) -> JsonLd {
        let at = self.plan.fields.get(field).copied().unwrap_or(usize::MAX);
        JsonLd::from_scripts(self.streamed.matches(at).iter().map(|script| script.text.as_str()))
    }

    fn body(&self) -> &[u8] {
        &self.facts.body
    }
}
