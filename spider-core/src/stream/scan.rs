//! One byte scan over a page's tags, to tell whether the page streams (`shape.rs`)
//! before `lol_html` reads it: much cheaper than watching every element through
//! `lol_html`'s handlers. It reads only what structure needs (tag names, attribute
//! boundaries, comments, raw-text elements) and gives up on anything it does not read
//! exactly as the tokenizer does: a bogus comment, CDATA, `<!--` in a script, an
//! attribute name starting with a quote.

use memchr::{memchr, memmem};

use super::shape::Shape;

/// Elements whose content is text up to their own end tag.
const RAW_TEXT: &[&str] = &["script", "style", "xmp", "iframe", "noembed", "noframes", "textarea", "title"];

/// Attributes whose values selectors compare without case in HTML (`type`, `lang`...):
/// a value with upper case is left to the DOM.
const CASE_INSENSITIVE: &[&str] =
    &["accept", "align", "charset", "dir", "lang", "language", "media", "method", "rel", "rev", "type"];

/// Elements with no content and no end tag.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen",
    "link", "meta", "param", "source", "track", "wbr",
];

/// Why a page whose links are read is left to the DOM when it may hide one: the stream
/// sees a link, not the elements around it that hide it.
pub(super) const MAY_HIDE_A_LINK: &str =
    "an attribute that may hide a link (`hidden`, `aria-hidden`, a hiding style)";

/// Whether `html` nests as html5ever's tree would, for selectors that compare the values
/// of `tested` attributes and (unless `rows_in_tables`) could see an implied `<tbody>`,
/// and (with `watch_hidden`) carries no attribute that may hide a link; the reason when
/// it does not.
pub(super) fn check(
    html: &str,
    tested: &[String],
    rows_in_tables: bool,
    watch_hidden: bool,
) -> Result<(), &'static str> {
    let mut shape = Shape::default();
    shape.rows_in_tables = rows_in_tables;
    let bytes = html.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr(b'<', &bytes[at..]) {
        shape.text(&html[at..at + found]);
        at += found;
        at = match bytes.get(at + 1) {
            Some(b'!') => declaration(html, at)?,
            Some(b'/') => end_tag(html, at, &mut shape)?,
            Some(c) if c.is_ascii_alphabetic() => start_tag(html, at, tested, watch_hidden, &mut shape)?,
            _ => at + 1,
        };
        if let Some(why) = shape.gave_up {
            return Err(why);
        }
    }
    shape.text(&html[at..]);
    shape.finish();
    shape.gave_up.map_or(Ok(()), Err)
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
        let end = rest.find('>').ok_or("an unclosed doctype")?;
        return Ok(at + end + 1);
    }
    Err("a bogus comment or CDATA section")
}

/// The tag name starting at `from`, lower case, and where it ends.
fn tag_name(html: &str, from: usize) -> (String, usize) {
    let bytes = html.as_bytes();
    let end = bytes[from..]
        .iter()
        .position(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        .map_or(bytes.len(), |n| from + n);
    (html[from..end].to_ascii_lowercase(), end)
}

fn end_tag(html: &str, at: usize, shape: &mut Shape) -> Result<usize, &'static str> {
    if !html.as_bytes().get(at + 2).is_some_and(u8::is_ascii_alphabetic) {
        return Err("a bogus end tag");
    }
    let (name, end) = tag_name(html, at + 2);
    let close = html[end..].find('>').ok_or("an unclosed end tag")?;
    if !html[end..end + close].trim_matches(|c: char| c.is_ascii_whitespace()).is_empty() {
        return Err("an end tag with attributes");
    }
    shape.end(&name);
    Ok(end + close + 1)
}

fn start_tag(
    html: &str,
    at: usize,
    tested: &[String],
    watch_hidden: bool,
    shape: &mut Shape,
) -> Result<usize, &'static str> {
    let bytes = html.as_bytes();
    let (name, mut i) = tag_name(html, at + 1);
    let self_closing = loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i) {
            None => return Err("an unclosed start tag"),
            Some(b'>') => break false,
            Some(b'/') if bytes.get(i + 1) == Some(&b'>') => break true,
            Some(b'/') => i += 1,
            Some(b'"' | b'\'' | b'<' | b'=') => return Err("an attribute name the tokenizer reads oddly"),
            Some(_) => i = attribute(html, i, tested, watch_hidden)?,
        }
    };
    let after = i + if self_closing { 2 } else { 1 };
    let foreign = matches!(name.as_str(), "svg" | "math") || shape.is_open(&["svg", "math"]);
    let alone = VOID.contains(&name.as_str()) || (self_closing && foreign);
    shape.start(&name, !alone);
    if matches!(name.as_str(), "pre" | "textarea" | "listing")
        && matches!(bytes.get(after), Some(b'\n' | b'\r' | b'&'))
    {
        return Err("a newline right after `<pre>`, `<textarea>` or `<listing>`");
    }
    if !RAW_TEXT.contains(&name.as_str()) {
        return Ok(after);
    }
    if foreign {
        return Err("a raw-text element inside `<svg>` or `<math>`");
    }
    let end = raw_text_end(html, after, &name).ok_or("an unclosed raw-text element")?;
    if name == "script" && html[after..end].contains("<!--") {
        return Err("`<!--` inside a script");
    }
    shape.end(&name);
    Ok(end)
}

/// One attribute from `from`; where the tag goes on. A tested attribute whose value has
/// a reference or a carriage return gives up: `lol_html` compares values as written; so
/// does one that may hide a link, with `watch_hidden`.
fn attribute(html: &str, from: usize, tested: &[String], watch_hidden: bool) -> Result<usize, &'static str> {
    let bytes = html.as_bytes();
    let name_end = bytes[from..]
        .iter()
        .position(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>' | b'='))
        .map_or(bytes.len(), |n| from + n);
    let mut i = name_end;
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if bytes.get(i) != Some(&b'=') {
        if watch_hidden && crate::hidden::attribute_may_hide(&html[from..name_end], "") {
            return Err(MAY_HIDE_A_LINK);
        }
        return Ok(i);
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
    let name = &html[from..name_end];
    if watch_hidden && crate::hidden::attribute_may_hide(name, value) {
        return Err(MAY_HIDE_A_LINK);
    }
    if tested.iter().any(|tested| tested.eq_ignore_ascii_case(name)) {
        if value.contains(['&', '\r']) {
            return Err("a character reference or carriage return in an attribute value a selector compares");
        }
        if CASE_INSENSITIVE.iter().any(|known| known.eq_ignore_ascii_case(name))
            && value.bytes().any(|b| b.is_ascii_uppercase())
        {
            return Err("an upper-case value of an attribute HTML compares without case");
        }
    }
    Ok(end)
}

/// Where the end tag of raw-text element `name` whose content starts at `from` ends.
fn raw_text_end(html: &str, from: usize, name: &str) -> Option<usize> {
    let bytes = html.as_bytes();
    let mut at = from;
    loop {
        let found = at + memmem::find(&bytes[at..], b"</")?;
        let after = found + 2 + name.len();
        if bytes.get(found + 2..after).is_some_and(|tag| tag.eq_ignore_ascii_case(name.as_bytes()))
            && matches!(bytes.get(after), Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        {
            return Some(after + memchr(b'>', &bytes[after..])? + 1);
        }
        at = found + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_may_hide_a_link_is_told_by_its_attributes() {
        for page in [
            r#"<div style="display:none"><a href="/trap">x</a></div>"#,
            r#"<p style="visibility : hidden">"#,
            r#"<span aria-hidden="true">"#,
            r#"<div hidden><a href="/trap">x</a></div>"#,
            r#"<A HREF="/t" HIDDEN>x</A>"#,
        ] {
            assert!(check(page, &[], true, true) == Err(MAY_HIDE_A_LINK), "{page}");
            assert!(check(page, &[], true, false) != Err(MAY_HIDE_A_LINK), "not watched: {page}");
        }
        for page in [
            r#"<input type="hidden" name="csrf" value="k">"#,
            "<h1>The hidden garden</h1>",
            r#"<p style="display: block">"#,
        ] {
            assert!(check(page, &[], true, true) != Err(MAY_HIDE_A_LINK), "{page}");
        }
    }
}
