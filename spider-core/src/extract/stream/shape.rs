//! Whether a page's tokens nest the way html5ever's tree does, so that matching on the
//! token stream finds what matching on the tree finds.
//!
//! html5ever does not keep a page's markup as written: it closes a `<p>` when a block
//! opens inside it, adds a `<tbody>` between `<table>` and `<tr>`, moves text and tags
//! out of tables ("foster parenting"), reopens misnested `<b>`s, drops a stray `<td>`,
//! turns `</p>` without a `<p>` into an empty paragraph. The streaming engine imitates
//! only the plainest of it: end tags a page leaves out, where the tree builder's rule is
//! one step (`close_implied_by`, `end`). `scan.rs` reads the page's tags once (the same
//! pass that matches the selectors) and this tracks the elements they open, with their
//! attributes, giving up on a page (the caller parses it into the DOM instead) at the
//! first tag where the two could differ. Well-formed pages, the common case, stream;
//! anything else is answered by the DOM, never guessed.

use std::borrow::Cow;
use std::ops::Range;

use super::entities::{decode, Context};

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

/// The parts of a table a page may leave open, innermost first: what a tag closes is a
/// part and all inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TablePart {
    Cell,
    Row,
    Group,
}

/// Elements whose end tags the tree builder implies where a page leaves them out
/// ("generate implied end tags").
fn end_implied(name: &str) -> bool {
    matches!(name, "dd" | "dt" | "li" | "optgroup" | "option" | "p" | "rb" | "rp" | "rt" | "rtc")
}

/// End tags that close their element together with the elements above it whose end is
/// implied: the blocks, lists and their items, paragraphs, headings, buttons, selects.
/// Not the formatting elements' (the adoption agency algorithm) nor a table's.
fn closes_implied(name: &str) -> bool {
    is_heading(name)
        || matches!(name, "li" | "dd" | "dt" | "p" | "button" | "select")
        || (closes_p(name) && !matches!(name, "form" | "table" | "hr" | "plaintext" | "xmp"))
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

/// Where the tree builder is before the page's content begins: its insertion modes up to
/// "in body", as far as they decide what a tag does. Before the body the tree builder
/// ignores every end tag but a few, so a stray `</p>` there is no paragraph.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// "initial", "before html", "before head" and "in head": a `<noscript>` stays in the
    /// head.
    #[default]
    Head,
    /// "after head", after a `</head>`: a head element still goes to the head, a
    /// `<noscript>` starts the body.
    AfterHead,
    /// "in body" and every mode after it.
    Body,
}

/// Start tags the tree builder puts in the head while the body has not begun.
fn in_head(name: &str) -> bool {
    matches!(
        name,
        "html"
            | "head"
            | "base"
            | "basefont"
            | "bgsound"
            | "link"
            | "meta"
            | "noframes"
            | "script"
            | "style"
            | "template"
            | "title"
    )
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
    phase: Phase,
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
        self.name_below(self.open.len())
    }

    /// The nearest open element among `names`.
    fn nearest(&self, names: &[&str]) -> Option<&str> {
        self.open.iter().rev().map(|open| &*open.name).find(|name| names.contains(name))
    }

    /// Close the open elements start tag `name` ends before it opens, as the tree builder
    /// does with end tags a page leaves out: a `<li>` the previous `<li>` (a `<dd>` or
    /// `<dt>` the previous one), through only elements whose end is implied too; an
    /// `<option>` an open `<option>`; a block the `<p>` it would otherwise sit in, when that
    /// `<p>` is the element last opened; a cell the open cell, a row the open row, a row
    /// group the open group (`table_parts_closed`). Anything less plain is left to
    /// `misplaced`.
    /// The tag's own attributes, read already from `attributes_from` on, are kept; where
    /// they start after the closes is returned.
    pub(super) fn close_implied_by(&mut self, name: &str, attributes_from: usize) -> usize {
        let ends: &[&str] = match name {
            "li" => &["li"],
            "dd" | "dt" => &["dd", "dt"],
            _ => &[],
        };
        let mut kept = self.open.len();
        for at in (0..kept).rev() {
            let open = &*self.open[at].name;
            if ends.contains(&open) {
                kept = at;
                break;
            }
            if !matches!(open, "p" | "option" | "optgroup" | "rb" | "rp" | "rt" | "rtc") {
                break;
            }
        }
        let in_select = self.is_open(&["select"]);
        if (matches!(name, "option" | "optgroup") || (name == "hr" && in_select))
            && self.name_below(kept) == "option"
        {
            kept -= 1;
        }
        if matches!(name, "optgroup" | "hr") && in_select && self.name_below(kept) == "optgroup" {
            kept -= 1;
        }
        // A `<table>` closes the `<p>` only in a page with a doctype: not in quirks mode.
        if closes_p(name) && name != "table" && self.name_below(kept) == "p" {
            kept -= 1;
        }
        let part = match name {
            "td" | "th" => Some(TablePart::Cell),
            "tr" => Some(TablePart::Row),
            "tbody" | "thead" | "tfoot" => Some(TablePart::Group),
            _ => None,
        };
        if let Some(part) = part.filter(|_| !self.is_open(&["svg", "math"])) {
            kept = self.table_parts_closed(kept, part);
        }
        if kept == self.open.len() || self.closes_a_form(kept) {
            return attributes_from;
        }
        let own = self.attributes.split_off(attributes_from);
        self.pop_to(kept);
        let from = self.attributes.len();
        self.attributes.extend(own);
        from
    }

    /// The name of the element last opened among the first `kept` open ones.
    fn name_below(&self, kept: usize) -> &str {
        kept.checked_sub(1).and_then(|at| self.open.get(at)).map_or("", |open| &open.name)
    }

    /// How many of the first `kept` open elements stay open once the table parts a page
    /// leaves open are closed, up to `upto`, as the tree builder closes them: the open
    /// cell with all inside it (a cell's formatting elements end with it), then the row and
    /// the row group (or head or foot) when innermost. Nothing past the nearest `<table>`,
    /// which bounds them.
    fn table_parts_closed(&self, mut kept: usize, upto: TablePart) -> usize {
        for at in (0..kept).rev() {
            match &*self.open[at].name {
                "td" | "th" => {
                    kept = at;
                    break;
                }
                "table" => break,
                _ => {}
            }
        }
        if upto >= TablePart::Row && self.name_below(kept) == "tr" {
            kept -= 1;
        }
        if upto >= TablePart::Group && matches!(self.name_below(kept), "tbody" | "thead" | "tfoot") {
            kept -= 1;
        }
        kept
    }

    /// Whether closing the open elements from `kept` up would close a `<form>` without its
    /// end tag: the tree builder still holds it as the page's form then and ignores the
    /// next `<form>` tag, which the shape does not follow, so the page gives up.
    fn closes_a_form(&mut self, kept: usize) -> bool {
        let form =
            self.open.get(kept..).is_some_and(|closed| closed.iter().any(|open| &*open.name == "form"));
        if form {
            self.give_up_at("a `<form>` closed by the end of its table cell");
        }
        form
    }

    /// The open elements from `at` up closed.
    fn pop_to(&mut self, at: usize) {
        while self.open.len() > at {
            let Some(open) = self.open.pop() else { return };
            if let Some(watched) = watched(&open.name) {
                self.watched[watched] -= 1;
            }
            self.attributes.truncate(open.attributes.start);
        }
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
        self.phase = match self.phase {
            Phase::Body => Phase::Body,
            phase if in_head(&name) || (name == "noscript" && phase == Phase::Head) => phase,
            _ => Phase::Body,
        };
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
        // Inside `<svg>` an `<image>` is SVG's own, not HTML's misspelt `<img>`.
        if gives_up(name) && !(name == "image" && self.is_open(&["svg", "math"])) {
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

    /// Whether end tag `name` (lower case) does anything: before the body, the tree
    /// builder ignores all but `</head>`, which ends the head, and `</body>`, `</html>`
    /// and `</br>`, which begin the body as any content would.
    pub(super) fn end_tag_counts(&mut self, name: &str) -> bool {
        match (self.phase, name) {
            (Phase::Body, _) => true,
            (Phase::Head, "head") => {
                self.phase = Phase::AfterHead;
                false
            }
            (_, "body" | "html" | "br") => {
                self.phase = Phase::Body;
                true
            }
            _ => false,
        }
    }

    /// An end tag `name` (lower case): it closes the element last opened, or, for the
    /// end tags that close their element with those above it whose end the tree builder
    /// implies (a `</ul>` its last `<li>`, a `</div>` a `<p>`), the nearest such element.
    /// A `</p>` with no `<p>` open in its scope is an empty paragraph in the DOM: `true`,
    /// for the caller to match it. Any other (one that closes something else, or nothing:
    /// a `</br>` is a line break in the DOM) gives up.
    pub(super) fn end(&mut self, name: &str) -> bool {
        if is_implied(name) {
            return false;
        }
        if name == "p" && !self.p_in_button_scope() {
            if let Some(why) = self.misplaced("p") {
                self.give_up_at(why);
            }
            return true;
        }
        let inside = match name {
            "tr" => Some(TablePart::Cell),
            "tbody" | "thead" | "tfoot" => Some(TablePart::Row),
            "table" => Some(TablePart::Group),
            _ => None,
        };
        if let Some(inside) = inside.filter(|_| !self.is_open(&["svg", "math"])) {
            let kept = self.table_parts_closed(self.open.len(), inside);
            if !self.closes_a_form(kept) {
                self.pop_to(kept);
            }
        }
        if matches!(name, "td" | "th") && !self.is_open(&["svg", "math"]) {
            let cell = self.open.iter().rposition(|open| matches!(&*open.name, "td" | "th" | "table"));
            if let Some(at) = cell.filter(|&at| same_name(&self.open[at].name, name)) {
                if !self.closes_a_form(at + 1) {
                    self.pop_to(at + 1);
                }
            }
        }
        let mut closes = None;
        for at in (0..self.open.len()).rev() {
            let open = &*self.open[at].name;
            if same_name(open, name) {
                closes = Some(at);
                break;
            }
            if !(closes_implied(name) && end_implied(open)) {
                break;
            }
        }
        match closes {
            Some(at) => self.pop_to(at),
            None => self.give_up_at("an element closed out of order, or never opened"),
        }
        false
    }

    /// Whether a `<p>` is open with nothing between it and the last opened element that
    /// bounds a `</p>`'s reach (a button, a table or a cell, foreign content...).
    fn p_in_button_scope(&self) -> bool {
        for open in self.open.iter().rev() {
            if &*open.name == "p" {
                return true;
            }
            let bounds = open.foreign
                || matches!(
                    &*open.name,
                    "button"
                        | "applet"
                        | "caption"
                        | "table"
                        | "td"
                        | "th"
                        | "marquee"
                        | "object"
                        | "template"
                );
            if bounds {
                return false;
            }
        }
        false
    }

    /// Text outside any element's content model: text in a table outside its cells is
    /// moved before the table.
    pub(super) fn text(&mut self, text: &str) {
        if self.phase != Phase::Body && !decode(text, Context::Text).chars().all(is_html_space) {
            self.phase = Phase::Body;
        }
        if matches!(self.parent(), "table" | "tbody" | "thead" | "tfoot" | "tr" | "colgroup")
            && !text.trim_matches(|c: char| c.is_ascii_whitespace()).is_empty()
        {
            self.give_up_at("text inside a table outside its cells");
        }
    }
}

/// Whether two tag names are the same: a byte loop, since names are a few bytes long and
/// a call to `memcmp` for each costs more than comparing them.
pub(super) fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// The characters HTML counts as white space, which leave the tree builder where it is
/// before the body.
fn is_html_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}
