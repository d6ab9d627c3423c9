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
mod scan;
mod select;
mod shape;

use spider_settings::{Combinator, StreamSelector};
use url::Url;

use crate::extract::facts::{Facts, PageField};
use crate::extract::field::{attribute_value, Reader, Source};
use crate::extract::json_ld::JsonLd;

pub(crate) use collect::Streamed;

/// One `#[css]` field of a derived item, as its plan lists it.
#[derive(Debug, Clone, Copy)]
pub struct FieldRead {
    /// The field's selector, in the streaming subset.
    pub css: &'static str,
    /// What it reads: the text or an attribute (never `html`, which does not stream).
    pub source: Source,
}

/// What one pass collects, compiled once per spider: the distinct selectors of the
/// item's fields and of the link rules, and what each needs from its matches.
#[derive(Debug)]
pub(crate) struct Plan {
    selectors: Vec<Wanted>,
    /// Per item field: its selector's index.
    fields: Vec<usize>,
    /// Per link rule: its selector's index.
    rules: Vec<usize>,
    /// Whether some selector could tell a `<tbody>` the tree builder adds.
    sees_tbody: bool,
}

#[derive(Debug)]
struct Wanted {
    css: &'static str,
    parsed: StreamSelector,
    text: bool,
    attributes: Vec<&'static str>,
}

impl Plan {
    /// The plan for an item reading `fields` and link rules on `rules`; `None` when
    /// one of them does not stream (the spider then uses the DOM).
    pub(crate) fn new(fields: &[FieldRead], rules: &[&'static str]) -> Option<Plan> {
        let mut plan =
            Plan { selectors: Vec::new(), fields: Vec::new(), rules: Vec::new(), sees_tbody: false };
        for field in fields {
            let at = plan.selector(field.css)?;
            match field.source {
                Source::Text => plan.selectors[at].text = true,
                Source::Attr(name) => plan.wants_attribute(at, name),
                Source::Html => return None,
            }
            plan.fields.push(at);
        }
        for css in rules {
            let at = plan.selector(css)?;
            plan.wants_attribute(at, "href");
            plan.rules.push(at);
        }
        Some(plan)
    }

    fn selector(&mut self, css: &'static str) -> Option<usize> {
        if let Some(at) = self.selectors.iter().position(|wanted| wanted.css == css) {
            return Some(at);
        }
        let parsed = spider_settings::stream_selector(css).ok()?;
        self.sees_tbody |= sees_tbody(&parsed);
        self.selectors.push(Wanted { css, parsed, text: false, attributes: Vec::new() });
        Some(self.selectors.len() - 1)
    }

    /// Read `html`, the page's decoded text: what each selector matches, or why the page
    /// does not stream (see `shape.rs`) and must be read from the DOM. With
    /// `skip_hidden`, the links a person cannot see are to be skipped, which only the DOM
    /// can tell: a page that may hide one does not stream when the plan reads links.
    pub(crate) fn run(&self, html: &str, skip_hidden: bool) -> Result<Streamed, &'static str> {
        if html.contains('\0') {
            return Err("a NUL character, which the tree builder drops or replaces");
        }
        scan::run(html, self, skip_hidden && !self.rules.is_empty())
    }

    fn wants_attribute(&mut self, at: usize, name: &'static str) {
        let attributes = &mut self.selectors[at].attributes;
        if !attributes.contains(&name) {
            attributes.push(name);
        }
    }
}

/// Whether `selector` could match differently with the `<tbody>` html5ever puts between
/// a `<table>` and a `<tr>` written right in it: when it names `tbody`, or a child
/// combinator's right side could be a `<tr>` (its type is `tr`, or it has none).
/// Over-counting is harmless: such a spider's pages with bare rows use the DOM.
fn sees_tbody(selector: &StreamSelector) -> bool {
    selector.alternatives.iter().any(|complex| {
        let names_tbody = complex.compounds.iter().any(|compound| compound.name.as_deref() == Some("tbody"));
        let child_may_be_a_row =
            complex.combinators.iter().zip(complex.compounds.iter().skip(1)).any(|(combinator, right)| {
                *combinator == Combinator::Child && right.name.as_deref().is_none_or(|name| name == "tr")
            });
        names_tbody || child_may_be_a_row
    })
}

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
