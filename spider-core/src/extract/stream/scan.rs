//! The streaming pass: one byte scan over a page's tags that tells whether the page
//! nests as the DOM would (`shape.rs`) and collects what the plan's selectors match
//! (`select.rs`, `collect.rs`) as it goes. It reads the markup it accepts as the HTML
//! tokenizer does (tag and attribute names, quoted and unquoted values, the attributes of
//! end tags, a raw-text element's end tag included, comments, the doctype, raw-text
//! elements) and gives up on anything it does not read exactly so: a bogus comment,
//! CDATA, a script whose `<!--` is followed by a `<script`.

use std::borrow::Cow;

use memchr::{memchr, memmem};

use super::collect::{Collector, Streamed, TextKind};
use super::entities::{decode, Context};
use super::plan::Plan;
use super::select::{any_compound_matches, matches, Element};
use super::shape::{is_implied, Attribute, Shape};
use crate::extract::hidden::{element_hides, Hides};

/// A selector matches `<html>`, `<head>` or `<body>`, which the DOM may have where the
/// page does not, and which the shape never opens.
const IMPLIED_MATCH: &str =
    "a selector matching `<html>`, `<head>` or `<body>`, which the DOM may have where the page does not";

impl Plan {
    /// Read `html`, the page's decoded text: what each selector matches, or why the page
    /// does not stream (see `shape.rs`) and must be read from the DOM. With
    /// `skip_hidden`, the links a person cannot see are to be skipped, which only the DOM
    /// can tell: a page that may hide one does not stream when the plan reads links.
    pub(crate) fn run(&self, html: &str, skip_hidden: bool) -> Result<Streamed, &'static str> {
        if html.contains('\0') {
            return Err("a NUL character, which the tree builder drops or replaces");
        }
        run(html, self, skip_hidden && !self.rules.is_empty())
    }
}

/// Read `html` with `plan`: what its selectors match, or why the page must be read from
/// the DOM. With `watch_hidden`, each match knows whether it is hidden as a link, by the
/// elements open around it and its own attributes.
fn run(html: &str, plan: &Plan, watch_hidden: bool) -> Result<Streamed, &'static str> {
    let mut scan = Scan {
        html,
        plan,
        watch_hidden,
        shape: Shape::default(),
        collector: Collector::new(plan.selectors.len()),
        hiding: Hiding::default(),
    };
    scan.shape.rows_in_tables = !plan.sees_tbody;
    let bytes = html.as_bytes();
    // Text runs from `text_from` to the next markup; a `<` that starts none is text.
    let (mut at, mut text_from) = (0, 0);
    while let Some(found) = memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let next = bytes.get(open + 1).copied();
        if next == Some(b'?') {
            return Err("a bogus comment");
        }
        if !(matches!(next, Some(b'!' | b'/')) || next.is_some_and(|c| c.is_ascii_alphabetic())) {
            at = open + 1;
            continue;
        }
        scan.text(&html[text_from..open]);
        at = match next {
            Some(b'!') => declaration(html, open)?,
            Some(b'/') => scan.end_tag(open)?,
            _ => scan.start_tag(open)?,
        };
        text_from = at;
        if let Some(why) = scan.shape.gave_up {
            return Err(why);
        }
    }
    // Elements still open at the end stay as they are: the tree builder moves nothing at
    // the end of the input.
    scan.text(&html[text_from..]);
    match scan.shape.gave_up {
        Some(why) => Err(why),
        None => Ok(scan.collector.finish()),
    }
}

struct Scan<'a, 'p> {
    html: &'a str,
    plan: &'p Plan,
    watch_hidden: bool,
    shape: Shape<'a>,
    collector: Collector,
    hiding: Hiding,
}

/// The open elements that hide the links in them, by their depth among the open ones:
/// those that hide whatever is in them, and those that declare a visibility (whether
/// hidden), the nearest of which decides (`hidden.rs`).
#[derive(Debug, Default)]
struct Hiding {
    always: Vec<usize>,
    visibility: Vec<(usize, bool)>,
}

impl Hiding {
    fn open(&mut self, depth: usize, hides: Hides) {
        if hides.always {
            self.always.push(depth);
        }
        if let Some(hidden) = hides.visibility {
            self.visibility.push((depth, hidden));
        }
    }

    /// The elements deeper than `depth` closed.
    fn close_below(&mut self, depth: usize) {
        self.always.retain(|at| *at <= depth);
        self.visibility.retain(|(at, _)| *at <= depth);
    }

    fn hidden(&self) -> bool {
        !self.always.is_empty() || self.visibility.last().is_some_and(|(_, hidden)| *hidden)
    }
}

impl<'a> Scan<'a, '_> {
    /// A run of text between two tags.
    fn text(&mut self, text: &str) {
        self.shape.text(text);
        self.collector.text(text, TextKind::Decoded);
    }

    /// An end tag: its attributes are read as the tokenizer reads them, to find where it
    /// ends, and dropped, as the tokenizer drops them.
    fn end_tag(&mut self, at: usize) -> Result<usize, &'static str> {
        let html = self.html;
        if !html.as_bytes().get(at + 2).is_some_and(u8::is_ascii_alphabetic) {
            return Err("a bogus end tag");
        }
        let (raw, end) = tag_name(html, at + 2);
        let (after, _) = tag_rest(html, end, |_| Ok(()))?;
        let name = lower(raw);
        if !self.shape.end_tag_counts(&name) {
            return Ok(after);
        }
        self.close(&name);
        Ok(after)
    }

    /// End tag `name`: the element closes, and so does the text of its matches. A stray
    /// `</p>` is an empty paragraph, opened and closed here.
    fn close(&mut self, name: &str) {
        if self.shape.end(name) && self.shape.gave_up.is_none() {
            let empty = self.shape.attributes.len();
            if let Err(why) = self.select("p", empty, false, true) {
                self.shape.give_up_at(why);
            }
        }
        self.closed_below();
    }

    /// The elements deeper than the open ones closed: their matches' text is whole, and
    /// they hide nothing more.
    fn closed_below(&mut self) {
        let depth = self.shape.open.len();
        self.collector.close_below(depth);
        self.hiding.close_below(depth);
    }

    fn start_tag(&mut self, at: usize) -> Result<usize, &'static str> {
        let html = self.html;
        let bytes = html.as_bytes();
        let (raw, i) = tag_name(html, at + 1);
        let name = lower(raw);
        let attributes_from = self.shape.attributes.len();
        let attributes = &mut self.shape.attributes;
        let (after, self_closing) = tag_rest(html, i, |attribute| {
            attributes.push(attribute);
            Ok(())
        })?;
        let hides = match self.watch_hidden {
            true => element_hides(
                self.shape.attributes[attributes_from..]
                    .iter()
                    .map(|a| (a.name, decode(a.value, Context::Attribute))),
            ),
            false => Hides::default(),
        };
        let foreign = matches!(&*name, "svg" | "math") || self.shape.is_open(&["svg", "math"]);
        let has_content = !(is_void(&name) || (self_closing && foreign));
        let attributes_from = self.shape.close_implied_by(&name, attributes_from);
        self.closed_below();
        // The element counts for itself: a link with `hidden` is hidden.
        self.hiding.open(self.shape.open.len() + 1, hides);
        self.select(&name, attributes_from, foreign, has_content)?;
        // Inside `<svg>` or `<math>` the tokenizer reads every element's content as
        // markup: a `<title>` or `<style>` there is no raw text.
        let text = if foreign { None } else { raw_text(&name) };
        let newline_dropped = matches!(&*name, "pre" | "textarea" | "listing");
        self.shape.start(name.clone(), has_content, attributes_from, foreign);
        // An element with no content never opened.
        self.hiding.close_below(self.shape.open.len());
        if newline_dropped && matches!(bytes.get(after), Some(b'\n' | b'\r' | b'&')) {
            return Err("a newline right after `<pre>`, `<textarea>` or `<listing>`");
        }
        let Some(kind) = text else { return Ok(after) };
        let (content_end, end) = raw_text_end(html, after, raw)?;
        let content = &html[after..content_end];
        if name == "script" && double_escaped(content) {
            return Err("`<!--` then `<script` inside a script");
        }
        self.collector.text(content, kind);
        self.close(&name);
        Ok(end)
    }

    /// Match the plan's selectors against the start tag just read (`name`, its attributes
    /// from `attributes_from` on), before it opens.
    fn select(
        &mut self,
        name: &str,
        attributes_from: usize,
        foreign: bool,
        has_content: bool,
    ) -> Result<(), &'static str> {
        let Shape { open, attributes, .. } = &self.shape;
        let element = Element { name, attributes: &attributes[attributes_from..], foreign };
        if is_implied(name) {
            for wanted in &self.plan.selectors {
                if any_compound_matches(&wanted.parsed, element)? {
                    return Err(IMPLIED_MATCH);
                }
            }
            return Ok(());
        }
        for (index, wanted) in self.plan.selectors.iter().enumerate() {
            if !matches(&wanted.parsed, element, open, attributes)? {
                continue;
            }
            let values =
                wanted.attributes.iter().map(|name| element.attribute(name).map(Cow::into_owned)).collect();
            let capture_at = (wanted.text && has_content).then_some(open.len() + 1);
            self.collector.matched(index, values, self.hiding.hidden(), capture_at);
        }
        Ok(())
    }
}

/// The rest of a tag from `from`, just past its name, as the tokenizer reads it: each
/// attribute (names, `=`, quoted and unquoted values, a `/` between them) given to
/// `attribute`; where the tag ends, past its `>`, and whether it closes itself. The
/// same for start tags, end tags and the end tag of a raw-text element, whose quoted
/// values may hold a `>`.
fn tag_rest<'a>(
    html: &'a str,
    mut i: usize,
    mut attribute: impl FnMut(Attribute<'a>) -> Result<(), &'static str>,
) -> Result<(usize, bool), &'static str> {
    let bytes = html.as_bytes();
    loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i) {
            None => return Err("an unclosed tag"),
            Some(b'>') => return Ok((i + 1, false)),
            Some(b'/') if bytes.get(i + 1) == Some(&b'>') => return Ok((i + 2, true)),
            Some(b'/') => i += 1,
            Some(_) => {
                let (read, end) = read_attribute(html, i)?;
                attribute(read)?;
                i = end;
            }
        }
    }
}

/// One attribute from `from`, and where the tag goes on after it. Its name's first
/// character is part of it whatever it is (an `=` too), and a quote or `<` in it is a
/// character of the name, as the tokenizer reads them.
fn read_attribute(html: &str, from: usize) -> Result<(Attribute<'_>, usize), &'static str> {
    let bytes = html.as_bytes();
    let first = html[from..].chars().next().map_or(1, char::len_utf8);
    let name_end = bytes[from + first..]
        .iter()
        .position(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>' | b'='))
        .map_or(bytes.len(), |n| from + first + n);
    let name = &html[from..name_end];
    let mut i = name_end;
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if bytes.get(i) != Some(&b'=') {
        return Ok((Attribute { name, value: "" }, i));
    }
    i += 1;
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    let (value, end) = match bytes.get(i) {
        Some(&quote @ (b'"' | b'\'')) => {
            let close = memchr(quote, &bytes[i + 1..]).ok_or("an unclosed attribute value")?;
            (&html[i + 1..i + 1 + close], i + close + 2)
        }
        _ => {
            let end = bytes[i..]
                .iter()
                .position(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'>'))
                .map_or(bytes.len(), |n| i + n);
            (&html[i..end], end)
        }
    };
    Ok((Attribute { name, value }, end))
}

/// Whether a script's content, up to the first `</script>`, may not be where it ends:
/// after a `<!--` (the tokenizer's "script data escaped" state) a `<script` followed by a
/// space, `/` or `>` starts the double-escaped state, in which `</script>` ends nothing.
/// Without one, the first `</script>` ends the script, `<!--` or not, as old pages'
/// scripts wrapped in a comment have it.
fn double_escaped(content: &str) -> bool {
    let Some(comment) = memmem::find(content.as_bytes(), b"<!--") else { return false };
    let bytes = &content.as_bytes()[comment..];
    let mut at = 0;
    while let Some(found) = memchr(b'<', &bytes[at..]) {
        let tag = at + found + 1;
        if bytes.get(tag..tag + 6).is_some_and(|name| name.eq_ignore_ascii_case(b"script"))
            && matches!(bytes.get(tag + 6), Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        {
            return true;
        }
        at = tag;
    }
    false
}

/// A comment or the doctype at `at`; where the text goes on.
fn declaration(html: &str, at: usize) -> Result<usize, &'static str> {
    let rest = &html[at..];
    if let Some(body) = rest.strip_prefix("<!--") {
        if body.starts_with('>') || body.starts_with("->") {
            return Err("an abruptly closed comment");
        }
        let end = body.find("-->").ok_or("an unclosed comment")?;
        if body[..end].contains("--!") {
            return Err("a comment the tokenizer closes early");
        }
        return Ok(at + 4 + end + 3);
    }
    if rest.get(..9).is_some_and(|head| head.eq_ignore_ascii_case("<!doctype")) {
        let end = memchr(b'>', rest.as_bytes()).ok_or("an unclosed doctype")?;
        return Ok(at + end + 1);
    }
    Err("a bogus comment or CDATA section")
}

/// The tag name starting at `from`, as written, and where it ends.
fn tag_name(html: &str, from: usize) -> (&str, usize) {
    let bytes = html.as_bytes();
    let end = bytes[from..]
        .iter()
        .position(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        .map_or(bytes.len(), |n| from + n);
    (&html[from..end], end)
}

/// A tag name in lower case, copied only when the page wrote it otherwise.
fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Elements with no content and no end tag.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Elements whose content is text up to their own end tag, and how that text is read.
/// `<noscript>` is one because the DOM is built with scripting on, as a browser does.
fn raw_text(name: &str) -> Option<TextKind> {
    match name {
        "title" | "textarea" => Some(TextKind::Decoded),
        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(TextKind::Raw),
        _ => None,
    }
}

/// Where the content of raw-text element `name` starting at `from` ends, and where its
/// end tag ends: at the first `</name` followed by a space, `/` or `>`, the tag then read
/// to its end as any other.
fn raw_text_end(html: &str, from: usize, name: &str) -> Result<(usize, usize), &'static str> {
    let bytes = html.as_bytes();
    let mut at = from;
    loop {
        let found = at + memmem::find(&bytes[at..], b"</").ok_or("an unclosed raw-text element")?;
        let after = found + 2 + name.len();
        if bytes.get(found + 2..after).is_some_and(|tag| tag.eq_ignore_ascii_case(name.as_bytes()))
            && matches!(bytes.get(after), Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        {
            let (end, _) = tag_rest(html, after, |_| Ok(()))?;
            return Ok((found, end));
        }
        at = found + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `href` the pass matched, with whether it is hidden as a link.
    fn links(page: &str) -> Vec<(String, bool)> {
        let plan = Plan::new(&[], &["a[href]"]).unwrap();
        let streamed = run(page, &plan, true).unwrap();
        streamed.matches(0).iter().map(|found| (found.attributes[0].clone().unwrap(), found.hidden)).collect()
    }

    #[test]
    fn a_link_is_hidden_by_the_elements_open_around_it_and_its_own_attributes() {
        let page = r#"<a href="/seen">x</a><div style="display:none"><p><a href="/display">x</a></p></div>
            <span style="visibility : hidden"><a href="/visibility">x</a><a style="visibility: visible" href="/again">x</a></span>
            <A HREF="/attribute" HIDDEN>x</A><img hidden src="x.png"><a href="/after-img">x</a>
            <div aria-hidden="true"><a href="/icon">x</a></div>
            <div style="position:fixed; top:-50px" ARIA-HIDDEN=" True "><a href="/off-screen">x</a></div>
            <ul><li style="display:none">one<li><a href="/second-item">x</a></ul>"#;
        let hidden: Vec<(String, bool)> = [
            ("/seen", false),
            ("/display", true),
            ("/visibility", true),
            ("/again", false),
            ("/attribute", true),
            ("/after-img", false),
            ("/icon", false),
            ("/off-screen", true),
            ("/second-item", false),
        ]
        .map(|(href, hidden)| (href.to_owned(), hidden))
        .into();
        assert_eq!(links(page), hidden);
    }

    #[test]
    fn a_hiding_style_is_read_decoded_as_the_tree_has_it() {
        assert_eq!(
            links(r#"<div style="display&#58;none"><a href="/encoded">x</a></div><a href="/seen">x</a>"#),
            [("/encoded".to_owned(), true), ("/seen".to_owned(), false)]
        );
    }
}
