//! What one streaming pass looks for, compiled once per spider from its item's fields and
//! its link rules: the [`Plan`] that `scan.rs` runs over each page.

use spider_settings::{Combinator, StreamSelector};

use crate::extract::field::Source;

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
    pub(super) selectors: Vec<Wanted>,
    /// Per item field: its selector's index.
    pub(super) fields: Vec<usize>,
    /// Per link rule: its selector's index.
    pub(super) rules: Vec<usize>,
    /// Whether some selector could tell a `<tbody>` the tree builder adds.
    pub(super) sees_tbody: bool,
}

#[derive(Debug)]
pub(super) struct Wanted {
    pub(super) css: &'static str,
    pub(super) parsed: StreamSelector,
    pub(super) text: bool,
    pub(super) attributes: Vec<&'static str>,
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
