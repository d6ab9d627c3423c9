//! Matching a streaming selector (`spider_settings::StreamSelector`) against the tag
//! being read and the elements open around it, as `scraper` matches it against the tree:
//! type names without case, classes and ids with case (`scraper` matches in no-quirks
//! mode), attribute names without case, attribute values decoded, and without case for
//! the attributes HTML compares that way.

use std::borrow::Cow;

use spider_settings::{AttributeOp, Combinator, Complex, Compound, Condition, StreamSelector};

use super::entities::{decode, Context};
use super::shape::{same_name, Attribute, Open};

/// An element as a selector sees it: the tag being read, or one open around it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Element<'s, 'a> {
    pub(super) name: &'s str,
    pub(super) attributes: &'s [Attribute<'a>],
    pub(super) foreign: bool,
}

/// A selector matched an SVG or MathML element, whose names and values the tree keeps
/// otherwise (camel-cased names, values compared with case): left to the DOM.
const FOREIGN_MATCH: &str = "a selector matching an element inside `<svg>` or `<math>`";

impl<'s, 'a> Element<'s, 'a> {
    pub(super) fn open(open: &'s Open<'a>, attributes: &'s [Attribute<'a>]) -> Self {
        Element { name: &open.name, attributes: &attributes[open.attributes.clone()], foreign: open.foreign }
    }

    /// The first attribute called `name` (duplicates are dropped by the tokenizer), its
    /// value decoded.
    pub(super) fn attribute(&self, name: &str) -> Option<Cow<'a, str>> {
        self.attributes
            .iter()
            .find(|attribute| attribute.name.eq_ignore_ascii_case(name))
            .map(|attribute| decode(attribute.value, Context::Attribute))
    }
}

/// Whether `selector` matches `element`, whose open ancestors are `ancestors` (outermost
/// first, their attributes in `attributes`); `Err` when the answer is the DOM's to give.
pub(super) fn matches(
    selector: &StreamSelector,
    element: Element<'_, '_>,
    ancestors: &[Open<'_>],
    attributes: &[Attribute<'_>],
) -> Result<bool, &'static str> {
    for complex in &selector.alternatives {
        let Some(last) = complex.compounds.len().checked_sub(1) else { continue };
        if complex_matches(complex, last, element, ancestors, attributes)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether any compound of `selector` matches `element`, wherever it stands.
pub(super) fn any_compound_matches(
    selector: &StreamSelector,
    element: Element<'_, '_>,
) -> Result<bool, &'static str> {
    for compound in selector.alternatives.iter().flat_map(|complex| &complex.compounds) {
        if compound_matches(compound, element)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether compounds `..=last` of `complex` match with compound `last` on `element`.
fn complex_matches(
    complex: &Complex,
    last: usize,
    element: Element<'_, '_>,
    ancestors: &[Open<'_>],
    attributes: &[Attribute<'_>],
) -> Result<bool, &'static str> {
    if !complex.compounds.get(last).map_or(Ok(false), |compound| compound_matches(compound, element))? {
        return Ok(false);
    }
    let Some(before) = last.checked_sub(1) else { return Ok(true) };
    match complex.combinators.get(before) {
        None => Ok(false),
        Some(Combinator::Child) => match ancestors.split_last() {
            Some((parent, above)) => {
                complex_matches(complex, before, Element::open(parent, attributes), above, attributes)
            }
            None => Ok(false),
        },
        Some(Combinator::Descendant) => {
            for at in (0..ancestors.len()).rev() {
                let ancestor = Element::open(&ancestors[at], attributes);
                if complex_matches(complex, before, ancestor, &ancestors[..at], attributes)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

fn compound_matches(compound: &Compound, element: Element<'_, '_>) -> Result<bool, &'static str> {
    if compound.name.as_deref().is_some_and(|name| !same_name(name, element.name)) {
        return Ok(false);
    }
    for condition in &compound.conditions {
        let holds = match condition {
            Condition::Class(class) => element
                .attribute("class")
                .is_some_and(|classes| classes.split_ascii_whitespace().any(|one| one == class)),
            Condition::Id(id) => element.attribute("id").is_some_and(|value| value == *id),
            Condition::Attribute { name, test } => match (element.attribute(name), test) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(value), Some((op, wanted))) => compares(*op, &value, wanted, without_case(name)),
            },
        };
        if !holds {
            return Ok(false);
        }
    }
    if element.foreign && !foreign_match_holds(compound, element.name) {
        return Err(FOREIGN_MATCH);
    }
    Ok(true)
}

/// Whether a match of `compound` on an element named `name` inside `<svg>` or `<math>`
/// is one `scraper` finds on the tree too: the tree builder renames SVG's mixed-case
/// elements and attributes (`clipPath`, `viewBox`) and puts `xlink:` ones in a
/// namespace, and a foreign element's attribute values compare with case. So only an
/// element whose name stays as written, and conditions on classes, ids and attributes
/// the tree keeps as written (`href`, `aria-*`, `data-*`...), compared with case.
fn foreign_match_holds(compound: &Compound, name: &str) -> bool {
    let kept = |attribute: &str| {
        attribute.starts_with("data-")
            || attribute.starts_with("aria-")
            || matches!(
                attribute,
                "href" | "class" | "id" | "role" | "title" | "style" | "hidden" | "fill" | "d"
            )
    };
    !renamed_in_svg(name)
        && compound.conditions.iter().all(|condition| match condition {
            Condition::Class(_) | Condition::Id(_) => true,
            Condition::Attribute { name, test } => kept(name) && (test.is_none() || !without_case(name)),
        })
}

/// SVG elements the tree builder names in mixed case, as the page has them lower-cased.
#[rustfmt::skip]
fn renamed_in_svg(name: &str) -> bool {
    matches!(
        name,
        "altglyph" | "altglyphdef" | "altglyphitem" | "animatecolor" | "animatemotion" |
        "animatetransform" | "clippath" | "feblend" | "fecolormatrix" | "fecomponenttransfer" |
        "fecomposite" | "feconvolvematrix" | "fediffuselighting" | "fedisplacementmap" |
        "fedistantlight" | "fedropshadow" | "feflood" | "fefunca" | "fefuncb" | "fefuncg" |
        "fefuncr" | "fegaussianblur" | "feimage" | "femerge" | "femergenode" | "femorphology" |
        "feoffset" | "fepointlight" | "fespecularlighting" | "fespotlight" | "fetile" |
        "feturbulence" | "foreignobject" | "glyphref" | "lineargradient" | "radialgradient" |
        "textpath"
    )
}

/// `[name op wanted]` on an attribute whose value is `value`.
fn compares(op: AttributeOp, value: &str, wanted: &str, without_case: bool) -> bool {
    let same = |a: &str, b: &str| if without_case { a.eq_ignore_ascii_case(b) } else { a == b };
    let starts = |with: &str| value.get(..with.len()).is_some_and(|head| same(head, with));
    match op {
        AttributeOp::Equals => same(value, wanted),
        AttributeOp::Word => {
            !wanted.is_empty()
                && !wanted.contains(|c: char| c.is_ascii_whitespace())
                && value.split_ascii_whitespace().any(|word| same(word, wanted))
        }
        AttributeOp::DashPrefix => {
            same(value, wanted) || (starts(wanted) && value.as_bytes().get(wanted.len()) == Some(&b'-'))
        }
        AttributeOp::Prefix => !wanted.is_empty() && starts(wanted),
        AttributeOp::Suffix => {
            !wanted.is_empty()
                && value.len() >= wanted.len()
                && value.get(value.len() - wanted.len()..).is_some_and(|tail| same(tail, wanted))
        }
        AttributeOp::Substring => {
            !wanted.is_empty()
                && if without_case {
                    value.to_ascii_lowercase().contains(&wanted.to_ascii_lowercase())
                } else {
                    value.contains(wanted)
                }
        }
    }
}

/// Attributes whose values selectors compare without ASCII case on HTML elements (the
/// HTML standard's list, which `scraper`'s selectors follow).
#[rustfmt::skip]
fn without_case(name: &str) -> bool {
    matches!(
        name,
        "accept" | "accept-charset" | "align" | "alink" | "axis" | "bgcolor" | "charset" |
        "checked" | "clear" | "codetype" | "color" | "compact" | "declare" | "defer" | "dir" |
        "direction" | "disabled" | "enctype" | "face" | "frame" | "hreflang" | "http-equiv" |
        "lang" | "language" | "link" | "media" | "method" | "multiple" | "nohref" | "noresize" |
        "noshade" | "nowrap" | "readonly" | "rel" | "rev" | "rules" | "scope" | "scrolling" |
        "selected" | "shape" | "target" | "text" | "type" | "valign" | "valuetype" | "vlink"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_comparisons_follow_the_selectors_standard() {
        use AttributeOp::*;
        for (op, value, wanted, holds) in [
            (Equals, "a b", "a b", true),
            (Word, "x  item y", "item", true),
            (Word, "x item", "", false),
            (Word, "a b", "a b", false),
            (DashPrefix, "en-GB", "en", true),
            (DashPrefix, "english", "en", false),
            (Prefix, "/p/1", "/p", true),
            (Prefix, "/p/1", "", false),
            (Suffix, "x.pdf", ".pdf", true),
            (Suffix, "pdf", "x.pdf", false),
            (Substring, "abc", "b", true),
            (Substring, "abc", "", false),
        ] {
            assert_eq!(compares(op, value, wanted, false), holds, "{op:?} {value:?} {wanted:?}");
        }
        assert!(compares(Equals, "TEXT/HTML", "text/html", without_case("type")));
        assert!(!compares(Equals, "Next", "next", without_case("rel-x")));
        assert!(compares(Substring, "Application/LD+JSON", "ld+json", true));
    }
}
