//! One `lol_html` pass over a page: every element matching a plan's selectors, with the
//! text and attributes the plan wants, in page order.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, TextChunk, TextType};
use lol_html::{DocumentContentHandlers, ElementContentHandlers, HtmlRewriter, Settings};

use super::entities::{decode, Context};
use super::shape::{Shape, Start};
use super::Plan;

/// Per selector of the plan, its matches in page order.
#[derive(Debug)]
pub(crate) struct Streamed {
    matches: Vec<Vec<Match>>,
}

/// One matching element: its text (all of it, untrimmed) if the plan wants text, and
/// the plan's attributes, decoded, in the plan's order.
#[derive(Debug, Default)]
pub(super) struct Match {
    pub(super) text: String,
    pub(super) attributes: Vec<Option<String>>,
}

impl Streamed {
    pub(super) fn matches(&self, selector: usize) -> &[Match] {
        self.matches.get(selector).map_or(&[], Vec::as_slice)
    }
}

/// What the pass keeps while the tokens go by; shared by the handlers (end-tag handlers
/// must own what they touch).
#[derive(Debug, Default)]
struct Pass {
    shape: Shape,
    matches: Vec<Vec<Match>>,
    /// Per selector, the id of the element it last matched: a list (`a, b`) matching
    /// an element twice still counts it once.
    last_matched: Vec<u64>,
    /// The current element's number, counted from 1 in page order.
    element: u64,
    /// Matches whose element is open and which want its text, with that element's depth.
    collecting: Vec<(usize, usize, usize)>,
    /// The current text node so far, while some match collects it.
    raw: String,
    /// Whether the current element is an `<html>`, `<head>` or `<body>`, which the DOM
    /// may have where the tokens do not.
    implied: bool,
    /// After `<pre>`, `<textarea>`, `<listing>`: a first newline is not text.
    skip_newline: bool,
}

/// The pass stopped early: the page does not stream (the message is `lol_html`'s).
const GAVE_UP: &str = "the page does not stream";

impl Plan {
    /// Run the pass over `html`, the page's decoded text; `Err` with the reason when the
    /// page does not stream (see `shape.rs`) and must be read from the DOM.
    pub(crate) fn run(&self, html: &str) -> Result<Streamed, &'static str> {
        if html.contains('\0') {
            return Err("a NUL character, which the tree builder drops or replaces");
        }
        let mut shape = Shape::default();
        shape.rows_in_tables = !self.sees_tbody;
        let pass = Rc::new(RefCell::new(Pass {
            shape,
            matches: self.selectors.iter().map(|_| Vec::new()).collect(),
            last_matched: vec![0; self.selectors.len()],
            ..Pass::default()
        }));
        let every: lol_html::Selector = "*".parse().map_err(|_| "lol_html does not parse `*`")?;
        let mut handlers = vec![(
            Cow::Owned(every),
            ElementContentHandlers::default()
                .element(|element: &mut Element<'_, '_>| self.open(&pass, element)),
        )];
        for (at, wanted) in self.selectors.iter().enumerate() {
            let pass = Rc::clone(&pass);
            handlers.push((
                Cow::Borrowed(&wanted.compiled),
                ElementContentHandlers::default().element(move |element: &mut Element<'_, '_>| {
                    let mut state = pass.borrow_mut();
                    state.matched(at, wanted.text, &wanted.attributes, element);
                    if state.shape.gave_up.is_some() {
                        return Err(GAVE_UP.into());
                    }
                    Ok(())
                }),
            ));
        }
        let document = DocumentContentHandlers::default()
            .text(|chunk: &mut TextChunk<'_>| {
                pass.borrow_mut().text(chunk);
                Ok(())
            })
            .comments(|_: &mut lol_html::html_content::Comment<'_>| {
                let mut pass = pass.borrow_mut();
                pass.skip_newline = false;
                Ok(())
            });
        let settings = Settings {
            element_content_handlers: handlers,
            document_content_handlers: vec![document],
            ..Settings::new()
        };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let written = rewriter.write(html.as_bytes()).and_then(|()| rewriter.end());
        let mut pass = Rc::try_unwrap(pass).map_err(|_| "a handler outlived the pass")?.into_inner();
        pass.shape.finish();
        if let Some(why) = pass.shape.gave_up {
            return Err(why);
        }
        if written.is_err() {
            return Err("lol_html stopped on the page");
        }
        if end_tags(html, b"p") != pass.shape.closed_paragraphs {
            return Err("a `</p>` that closes no `<p>`");
        }
        if end_tags(html, b"br") > 0 {
            return Err("a `</br>`");
        }
        Ok(Streamed { matches: pass.matches })
    }

    /// The start tag of any element: track the shape, and stop as soon as it differs
    /// from the DOM's.
    fn open(&self, pass: &Rc<RefCell<Pass>>, element: &mut Element<'_, '_>) -> lol_html::HandlerResult {
        let name = element.tag_name();
        let mut state = pass.borrow_mut();
        let start = state.shape.start(&name, element.can_have_content());
        state.implied = start == Start::Implied;
        state.skip_newline = matches!(name.as_str(), "pre" | "textarea" | "listing");
        state.element += 1;
        let raw_tested = self
            .tested_attributes
            .iter()
            .filter_map(|attribute| element.get_attribute(attribute))
            .any(|value| value.contains(['&', '\r']));
        if raw_tested {
            state.shape.give_up_at(
                "a character reference or carriage return in an attribute value a selector compares",
            );
            return Err(GAVE_UP.into());
        }
        if state.shape.gave_up.is_some() {
            return Err(GAVE_UP.into());
        }
        match start {
            Start::Opened(id) => {
                drop(state);
                let pass = Rc::clone(pass);
                element.on_end_tag(Box::new(move |end: &mut lol_html::html_content::EndTag<'_>| {
                    let mut state = pass.borrow_mut();
                    if end.name() != name {
                        // lol_html closed it at an ancestor's end tag, where html5ever may
                        // have restructured the tree (misnested formatting elements).
                        state.shape.give_up_at("an element closed by another's end tag");
                    }
                    state.closed(id);
                    if state.shape.gave_up.is_some() {
                        return Err(GAVE_UP.into());
                    }
                    Ok(())
                }))
            }
            Start::Alone | Start::Implied => Ok(()),
        }
    }
}

impl Pass {
    fn matched(&mut self, at: usize, text: bool, attributes: &[&'static str], element: &Element<'_, '_>) {
        if self.last_matched[at] == self.element {
            return;
        }
        if self.implied {
            self.shape.give_up_at("a selector matching `<html>`, `<head>` or `<body>`");
            return;
        }
        self.last_matched[at] = self.element;
        let attributes = attributes
            .iter()
            .map(|name| element.get_attribute(name).map(|raw| decode(&raw, Context::Attribute).into_owned()))
            .collect();
        let found = &mut self.matches[at];
        if text && element.can_have_content() {
            self.collecting.push((at, found.len(), self.shape.depth()));
        }
        found.push(Match { text: String::new(), attributes });
    }

    fn closed(&mut self, id: u64) {
        self.shape.end(id);
        self.skip_newline = false;
        let depth = self.shape.depth();
        while self.collecting.last().is_some_and(|(_, _, open)| *open > depth) {
            self.collecting.pop();
        }
    }

    fn text(&mut self, chunk: &TextChunk<'_>) {
        let raw = chunk.as_str();
        self.shape.text(raw);
        if !self.collecting.is_empty() {
            self.raw.push_str(raw);
        }
        if !chunk.last_in_text_node() {
            return;
        }
        let skip_newline = std::mem::take(&mut self.skip_newline);
        if self.collecting.is_empty() {
            return;
        }
        let raw = std::mem::take(&mut self.raw);
        let decoded = match chunk.text_type() {
            TextType::Data | TextType::RCData => decode(&raw, Context::Text),
            _ => decode_newlines(&raw),
        };
        let text = if skip_newline { decoded.strip_prefix('\n').unwrap_or(&decoded) } else { &decoded };
        for &(at, index, _) in &self.collecting {
            if let Some(found) = self.matches[at].get_mut(index) {
                found.text.push_str(text);
            }
        }
    }
}

/// Line breaks normalised, nothing else: text where references are not decoded.
fn decode_newlines(raw: &str) -> Cow<'_, str> {
    if raw.contains('\r') {
        Cow::Owned(raw.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(raw)
    }
}

/// How many `</name>` end tags the page's text has. A `</p>` that closed no `<p>` is an
/// empty paragraph in the DOM and a `</br>` a line break, neither seen by the pass, so
/// the page streams only when every `</p>` closed a `<p>` and there is no `</br>` (one
/// in a script or a comment makes the count differ too, and the page is read from the
/// DOM: careful, never wrong).
fn end_tags(html: &str, name: &[u8]) -> usize {
    let bytes = html.as_bytes();
    memchr::memmem::find_iter(bytes, b"</")
        .filter(|&at| {
            let after = at + 2 + name.len();
            bytes.get(at + 2..after).is_some_and(|tag| tag.eq_ignore_ascii_case(name))
                && matches!(
                    bytes.get(after),
                    None | Some(b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
                )
        })
        .count()
}
