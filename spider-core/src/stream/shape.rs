//! Whether a page's tokens nest the way html5ever's tree does, so that matching on the
//! token stream finds what matching on the tree finds.
//!
//! html5ever does not keep a page's markup as written: it closes a `<p>` when a block
//! opens inside it, adds a `<tbody>` between `<table>` and `<tr>`, moves text and tags
//! out of tables ("foster parenting"), reopens misnested `<b>`s, drops a stray `<td>`,
//! turns `</p>` without a `<p>` into an empty paragraph. The streaming engine does none
//! of that. Rather than imitate the tree builder, `scan.rs` reads the page's tags once
//! (the same pass that matches the selectors) and this tracks the elements they open,
//! with their attributes, giving up on a page (the caller parses it into the DOM instead)
//! at the first tag where the two could differ. Well-formed pages, the common case,
//! stream; anything else is answered by the DOM, never guessed.

use std::borrow::Cow;
use std::ops::Range;

/// Elements the tree builder treats specially enough that a page having one is not
/// streamed: `<template>` (a separate fragment), `<plaintext>`, `<image>` (renamed
/// `<img>`), frames, ruby annotations (implicitly closed by each other), `<isindex>`.
fn gives_up(name: &str) -> bool {
    matches!(
        name,
        "template" | "plaintext" | "image" | "frameset" | "frame" | "isindex" | "rb" | "rp" | "rt" | "rtc"
    )
}

/// Start tags that close an open `<p>`.
#[rustfmt::skip]
fn closes_p(name: &str) -> bool {
    is_heading(name) || matches!(
        name,
        "address" | "article" | "aside" | "blockquote" | "center" | "details" | "dialog" | "dir" |
        "div" | "dl" | "fieldset" | "figcaption" | "figure" | "footer" | "header" | "hgroup" |
        "main" | "menu" | "nav" | "ol" | "p" | "search" | "section" | "summary" | "ul" | "pre" |
        "listing" | "form" | "li" | "dd" | "dt" | "plaintext" | "table" | "hr" | "xmp"
    )
}

/// HTML start tags that end `<svg>` or `<math>` content early.
#[rustfmt::skip]
fn breaks_foreign(name: &str) -> bool {
    is_heading(name) || matches!(
        name,
        "b" | "big" | "blockquote" | "body" | "br" | "center" | "code" | "dd" | "div" | "dl" |
        "dt" | "em" | "embed" | "head" | "hr" | "i" | "img" | "li" | "listing" | "menu" | "meta" |
        "nobr" | "ol" | "p" | "pre" | "ruby" | "s" | "small" | "span" | "strong" | "strike" |
        "sub" | "sup" | "table" | "tt" | "u" | "ul" | "var" | "font"
    )
}

/// The elements whose being open the rules ask about, each with its place in
/// [`Shape::watched`].
fn watched(name: &str) -> Option<usize> {
    Some(match name {
        "p" => 0,
        "svg" => 1,
        "math" => 2,
        "select" => 3,
        "a" => 4,
        "form" => 5,
        "button" => 6,
        "nobr" => 7,
        _ => return None,
    })
}

/// Elements the parser may open without a tag, whose own tags the engine lets pass.
pub(super) fn is_implied(name: &str) -> bool {
    matches!(name, "html" | "head" | "body")
}

/// An element open on the token stream: its name, lower case, and its attributes as
/// written, which descendant selectors test.
#[derive(Debug)]
pub(super) struct Open<'a> {
    pub(super) name: Cow<'a, str>,
    /// Where its attributes are in [`Shape::attributes`].
    pub(super) attributes: Range<usize>,
    /// Whether it is SVG or MathML content (`<svg>`, `<math>` or inside one).
    pub(super) foreign: bool,
}

/// An attribute as written: its name in the page's case, its value undecoded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attribute<'a> {
    pub(super) name: &'a str,
    pub(super) value: &'a str,
}

/// The elements open on the token stream, and whether the page still streams.
#[derive(Debug, Default)]
pub(super) struct Shape<'a> {
    pub(super) open: Vec<Open<'a>>,
    /// The attributes of the open elements, then those of the tag being read.
    pub(super) attributes: Vec<Attribute<'a>>,
    /// How many of each [`watched`] element are open, so asking costs no walk of `open`.
    watched: [u32; 8],
    /// Why the page does not stream, once known.
    pub(super) gave_up: Option<&'static str>,
    /// Whether a `<tr>` may sit right in its `<table>`: the tree builder puts a `<tbody>`
    /// between them, which only matters to selectors that could see it.
    pub(super) rows_in_tables: bool,
}

impl<'a> Shape<'a> {
    pub(super) fn give_up_at(&mut self, why: &'static str) {
        self.gave_up.get_or_insert(why);
    }

    /// Whether one of `names`, each [`watched`], is open.
    pub(super) fn is_open(&self, names: &[&str]) -> bool {
        names.iter().filter_map(|name| watched(name)).any(|at| self.watched[at] > 0)
    }

    fn parent(&self) -> &str {
        self.open.last().map_or("", |open| &open.name)
    }

    /// The nearest open element among `names`.
    fn nearest(&self, names: &[&str]) -> Option<&str> {
        self.open.iter().rev().map(|open| &*open.name).find(|name| names.contains(name))
    }

    /// A start tag `name` (lower case) whose attributes are [`Shape::attributes`] from
    /// `attributes_from` on; `has_content` is false for void elements and self-closed
    /// foreign ones, which leave their attributes behind. `<html>`, `<head>` and
    /// `<body>`, which the tree builder adds where a page leaves them out, are let pass
    /// and never open (no streaming selector can name them).
    pub(super) fn start(
        &mut self,
        name: Cow<'a, str>,
        has_content: bool,
        attributes_from: usize,
        foreign: bool,
    ) {
        if is_implied(&name) {
            if !self.open.is_empty() {
                self.give_up_at("an `<html>`, `<head>` or `<body>` tag inside the page");
            }
        } else if let Some(why) = self.misplaced(&name) {
            self.give_up_at(why);
        }
        if !has_content || is_implied(&name) {
            self.attributes.truncate(attributes_from);
            return;
        }
        if let Some(at) = watched(&name) {
            self.watched[at] += 1;
        }
        self.open.push(Open { name, attributes: attributes_from..self.attributes.len(), foreign });
    }

    /// Why the tree builder would put `name` elsewhere than its place in the tokens.
    fn misplaced(&self, name: &str) -> Option<&'static str> {
        let parent = self.parent();
        if gives_up(name) {
            return Some("an element the tree builder treats specially");
        }
        if self.is_open(&["svg", "math"]) && breaks_foreign(name) {
            return Some("HTML inside `<svg>` or `<math>`");
        }
        if closes_p(name) && self.is_open(&["p"]) {
            return Some("a block inside an open `<p>`");
        }
        let reopened = match name {
            "li" => self.nearest(&["li", "ul", "ol"]) == Some("li"),
            "dd" | "dt" => matches!(self.nearest(&["dd", "dt", "dl"]), Some("dd" | "dt")),
            "a" | "form" | "button" | "nobr" | "select" => self.is_open(&[name]),
            "option" | "optgroup" => matches!(parent, "option" | "optgroup"),
            _ => is_heading(name) && is_heading(parent),
        };
        if reopened {
            return Some("an element that implicitly closes an open one");
        }
        let in_select = self.is_open(&["select"]);
        if in_select && !matches!(name, "option" | "optgroup" | "hr" | "script") {
            return Some("an element the tree builder drops from a `<select>`");
        }
        let table_place = match name {
            "caption" | "colgroup" | "tbody" | "thead" | "tfoot" => Some(parent == "table"),
            "tr" => Some(
                matches!(parent, "tbody" | "thead" | "tfoot") || (parent == "table" && self.rows_in_tables),
            ),
            "td" | "th" => Some(parent == "tr"),
            "col" => Some(parent == "colgroup"),
            _ => None,
        };
        let allowed_here = match parent {
            "table" | "tbody" | "thead" | "tfoot" | "tr" | "colgroup" => {
                table_place == Some(true) || matches!(name, "script" | "style")
            }
            _ => table_place.is_none(),
        };
        (!allowed_here).then_some("a table not written as the tree builder builds it")
    }

    /// An end tag `name` (lower case): it must close the element last opened. One that
    /// closes another, or nothing (a stray `</p>` is an empty paragraph in the DOM, a
    /// `</br>` a line break), gives up.
    pub(super) fn end(&mut self, name: &str) {
        if is_implied(name) {
            return;
        }
        match self.open.pop() {
            Some(open) if same_name(&open.name, name) => {
                if let Some(at) = watched(name) {
                    self.watched[at] -= 1;
                }
                self.attributes.truncate(open.attributes.start);
            }
            _ => self.give_up_at("an element closed implicitly, out of order, or never opened"),
        }
    }

    /// Text outside any element's content model: text in a table outside its cells is
    /// moved before the table.
    pub(super) fn text(&mut self, text: &str) {
        if matches!(self.parent(), "table" | "tbody" | "thead" | "tfoot" | "tr" | "colgroup")
            && !text.trim_matches(|c: char| c.is_ascii_whitespace()).is_empty()
        {
            self.give_up_at("text inside a table outside its cells");
        }
    }

    /// The page ended: an element still open was closed by the tree builder somewhere
    /// the tokens do not say.
    pub(super) fn finish(&mut self) {
        if !self.open.is_empty() {
            self.give_up_at("an element left open at the end of the page");
        }
    }
}

/// Whether two tag names are the same: a byte loop, since names are a few bytes long and
/// a call to `memcmp` for each costs more than comparing them.
pub(super) fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}
