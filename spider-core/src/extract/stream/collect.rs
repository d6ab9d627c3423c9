//! What a pass keeps of the elements the plan's selectors match: per selector, each match
//! in page order with the attributes the plan wants, decoded, and its text when wanted.

use super::entities::{decode, normalise_newlines, Context};

/// Per selector of the plan, its matches in page order.
#[derive(Debug)]
pub(crate) struct Streamed {
    matches: Vec<Vec<Match>>,
}

/// One matching element: its text (all of it, untrimmed) if the plan wants text, the
/// plan's attributes, decoded, in the plan's order, and whether it is hidden as a link
/// (`hidden.rs`), when the pass watches for that.
#[derive(Debug, Default)]
pub(super) struct Match {
    pub(super) text: String,
    pub(super) attributes: Vec<Option<String>>,
    pub(super) hidden: bool,
}

impl Streamed {
    pub(super) fn matches(&self, selector: usize) -> &[Match] {
        self.matches.get(selector).map_or(&[], Vec::as_slice)
    }
}

/// How a run of text is read: character references are decoded in ordinary text and in
/// `<title>` and `<textarea>`, not in scripts, styles and the other raw-text elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextKind {
    Decoded,
    Raw,
}

/// The matches so far, and those still open whose text is wanted.
#[derive(Debug)]
pub(super) struct Collector {
    matches: Vec<Vec<Match>>,
    /// Open matches collecting text, innermost last: (selector, match, the depth of
    /// their element among the open ones).
    capturing: Vec<(usize, usize, usize)>,
}

impl Collector {
    pub(super) fn new(selectors: usize) -> Self {
        Collector { matches: (0..selectors).map(|_| Vec::new()).collect(), capturing: Vec::new() }
    }

    /// Selector `selector` matched an element, `hidden` as a link or not; with
    /// `capture_at`, its text is wanted and it is open at that depth.
    pub(super) fn matched(
        &mut self,
        selector: usize,
        attributes: Vec<Option<String>>,
        hidden: bool,
        capture_at: Option<usize>,
    ) {
        let Some(matches) = self.matches.get_mut(selector) else { return };
        matches.push(Match { text: String::new(), attributes, hidden });
        if let Some(depth) = capture_at {
            self.capturing.push((selector, matches.len() - 1, depth));
        }
    }

    /// A text node (a run of text between two tags), added to every open match.
    pub(super) fn text(&mut self, raw: &str, kind: TextKind) {
        if self.capturing.is_empty() || raw.is_empty() {
            return;
        }
        let text = match kind {
            TextKind::Decoded => decode(raw, Context::Text),
            TextKind::Raw => normalise_newlines(raw),
        };
        for &(selector, index, _) in &self.capturing {
            if let Some(found) = self.matches.get_mut(selector).and_then(|matches| matches.get_mut(index)) {
                found.text.push_str(&text);
            }
        }
    }

    /// Elements deeper than `depth` closed: their matches' text is whole.
    pub(super) fn close_below(&mut self, depth: usize) {
        while self.capturing.last().is_some_and(|&(_, _, at)| at > depth) {
            self.capturing.pop();
        }
    }

    pub(super) fn finish(self) -> Streamed {
        Streamed { matches: self.matches }
    }
}
