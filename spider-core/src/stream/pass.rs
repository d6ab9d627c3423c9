//! One `lol_html` pass over a page that `scan.rs` found streams: every element matching
//! a plan's selectors, with the text and attributes the plan wants, in page order.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, EndTag, TextChunk, TextType};
use lol_html::{ElementContentHandlers, HtmlRewriter, Settings};

use super::entities::{decode, Context};
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

/// What the pass keeps per selector while the tokens go by; end-tag handlers must own
/// what they touch, hence the `Rc`.
#[derive(Debug, Default)]
struct Collected {
    matches: Vec<Match>,
    /// Matches whose element is open and whose text is wanted, innermost last.
    open: Vec<usize>,
    /// The current text node so far.
    raw: String,
}

/// A handler stopped the pass: the page does not stream after all.
const GAVE_UP: &str =
    "a selector matching `<html>`, `<head>` or `<body>`, which the DOM may have where the page does not";

impl Plan {
    /// Run the pass over `html`, the page's decoded text; `Err` with the reason when the
    /// page does not stream (see `shape.rs`) and must be read from the DOM. With
    /// `skip_hidden`, the links a person cannot see are to be skipped, which only the DOM
    /// can tell: a page that may hide one does not stream when the plan reads links.
    pub(crate) fn run(&self, html: &str, skip_hidden: bool) -> Result<Streamed, &'static str> {
        if html.contains('\0') {
            return Err("a NUL character, which the tree builder drops or replaces");
        }
        let watch_hidden = skip_hidden && !self.rules.is_empty();
        super::scan::check(html, &self.tested_attributes, !self.sees_tbody, watch_hidden)?;
        let collected: Vec<Rc<RefCell<Collected>>> =
            self.selectors.iter().map(|_| Rc::new(RefCell::new(Collected::default()))).collect();
        let mut handlers = Vec::new();
        for (wanted, collected) in self.selectors.iter().zip(&collected) {
            let on_element = Rc::clone(collected);
            let mut content =
                ElementContentHandlers::default().element(move |element: &mut Element<'_, '_>| {
                    matched(&on_element, wanted.text, &wanted.attributes, element)
                });
            if wanted.text {
                let on_text = Rc::clone(collected);
                content = content.text(move |chunk: &mut TextChunk<'_>| {
                    text(&mut on_text.borrow_mut(), chunk);
                    Ok(())
                });
            }
            handlers.push((Cow::Borrowed(&wanted.compiled), content));
        }
        let settings = Settings { element_content_handlers: handlers, ..Settings::new() };
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let written = rewriter.write(html.as_bytes()).and_then(|()| rewriter.end());
        written.map_err(|_| GAVE_UP)?;
        let matches = collected
            .into_iter()
            .map(|collected| Rc::try_unwrap(collected).map(|cell| cell.into_inner().matches))
            .collect::<Result<_, _>>()
            .map_err(|_| "a handler outlived the pass")?;
        Ok(Streamed { matches })
    }
}

fn matched(
    collected: &Rc<RefCell<Collected>>,
    text: bool,
    attributes: &[&'static str],
    element: &mut Element<'_, '_>,
) -> lol_html::HandlerResult {
    if matches!(element.tag_name().as_str(), "html" | "head" | "body") {
        return Err(GAVE_UP.into());
    }
    let attributes = attributes
        .iter()
        .map(|name| element.get_attribute(name).map(|raw| decode(&raw, Context::Attribute).into_owned()))
        .collect();
    let mut state = collected.borrow_mut();
    state.matches.push(Match { text: String::new(), attributes });
    if text && element.can_have_content() {
        let index = state.matches.len() - 1;
        state.open.push(index);
        drop(state);
        let on_end = Rc::clone(collected);
        element.on_end_tag(Box::new(move |_: &mut EndTag<'_>| {
            on_end.borrow_mut().open.pop();
            Ok(())
        }))?;
    }
    Ok(())
}

/// A chunk of text inside an open match: a whole text node is decoded at once (a
/// reference may straddle chunks) and added to every open match of the selector.
fn text(state: &mut Collected, chunk: &TextChunk<'_>) {
    state.raw.push_str(chunk.as_str());
    if !chunk.last_in_text_node() {
        return;
    }
    let raw = std::mem::take(&mut state.raw);
    let decoded = match chunk.text_type() {
        TextType::Data | TextType::RCData => decode(&raw, Context::Text),
        _ => normalise_newlines(&raw),
    };
    let Collected { matches, open, .. } = state;
    for &index in open.iter() {
        if let Some(found) = matches.get_mut(index) {
            found.text.push_str(&decoded);
        }
    }
}

/// Line breaks normalised, nothing else: text where references are not decoded.
fn normalise_newlines(raw: &str) -> Cow<'_, str> {
    if raw.contains('\r') {
        Cow::Owned(raw.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(raw)
    }
}
