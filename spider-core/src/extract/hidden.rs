//! Links a person cannot see: the classic honeypot, planted for crawlers that follow
//! every `href` and banning whoever requests one.
//!
//! Only what the page itself says is read, never a stylesheet. A link is hidden when it,
//! or an element around it:
//! - has the `hidden` attribute;
//! - has an inline style declaring `display: none`;
//! - is under `visibility: hidden` — the nearest element declaring `visibility` decides,
//!   since a child may declare `visible` again;
//! - has `aria-hidden="true"` and an inline style that puts it off-screen:
//!   `position: absolute` or `fixed` with a negative `left` or `top`. `aria-hidden` alone
//!   is not enough: icons and decorative duplicates of visible links carry it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use scraper::ElementRef;

/// Whether a page's hidden links are followed, and which were skipped.
#[derive(Debug, Clone, Default)]
pub(crate) struct HiddenLinks {
    pub(crate) follow: bool,
    /// The hidden links met, by their `href`: each counted once, however many of the
    /// spider's rules select it.
    skipped: Arc<Mutex<HashSet<String>>>,
}

impl HiddenLinks {
    /// A page's: its hidden links followed or not.
    pub(crate) fn new(follow: bool) -> Self {
        HiddenLinks { follow, ..HiddenLinks::default() }
    }

    /// Whether the link `element` is to be followed; a hidden one is counted as skipped.
    pub(crate) fn admits(&self, element: ElementRef<'_>) -> bool {
        self.admits_link(element.value().attr("href").unwrap_or_default(), || is_hidden(element))
    }

    /// Whether the link to `href` is to be followed, `hidden` saying whether it is; a
    /// hidden one is counted as skipped.
    pub(crate) fn admits_link(&self, href: &str, hidden: impl FnOnce() -> bool) -> bool {
        if self.follow || !hidden() {
            return true;
        }
        self.skipped.lock().unwrap_or_else(|e| e.into_inner()).insert(href.to_owned());
        false
    }

    /// Hidden links skipped so far, each once.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

/// The rules of the module's documentation, applied to `element` and its ancestors.
pub(crate) fn is_hidden(element: ElementRef<'_>) -> bool {
    let mut visibility_decided = false;
    let ancestors = element.ancestors().filter_map(ElementRef::wrap);
    for node in std::iter::once(element).chain(ancestors) {
        let value = node.value();
        if value.attr("hidden").is_some() {
            return true;
        }
        let style = Style::parse(value.attr("style").unwrap_or(""));
        if style.get("display") == Some("none") {
            return true;
        }
        if !visibility_decided {
            if let Some(visibility) = style.get("visibility") {
                if matches!(visibility, "hidden" | "collapse") {
                    return true;
                }
                visibility_decided = true;
            }
        }
        if value.attr("aria-hidden").is_some_and(|a| a.trim().eq_ignore_ascii_case("true"))
            && style.off_screen()
        {
            return true;
        }
    }
    false
}

/// An inline style's declarations, names and values lower-cased, `!important` dropped;
/// the last declaration of a property wins, as in CSS.
struct Style(Vec<(String, String)>);

impl Style {
    fn parse(style: &str) -> Self {
        let declarations = style.split(';').filter_map(|declaration| {
            let (name, value) = declaration.split_once(':')?;
            let value = value.trim().to_ascii_lowercase();
            let value = value.strip_suffix("!important").unwrap_or(&value).trim().to_owned();
            Some((name.trim().to_ascii_lowercase(), value))
        });
        Style(declarations.collect())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn off_screen(&self) -> bool {
        let positioned = matches!(self.get("position"), Some("absolute" | "fixed"));
        let negative = |side| {
            self.get(side).is_some_and(|v| {
                let number = v.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%');
                number.parse::<f64>().is_ok_and(|n| n < 0.0)
            })
        };
        positioned && (negative("left") || negative("top"))
    }
}

/// What an element's own attributes say of the links in it, as [`is_hidden`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hides {
    /// Whatever is around or inside it: the `hidden` attribute, a style declaring
    /// `display: none`, or `aria-hidden="true"` with a style that puts it off-screen.
    pub(crate) always: bool,
    /// The visibility its style declares, whether hidden (`hidden`, `collapse`): the
    /// nearest element declaring one decides for a link.
    pub(crate) visibility: Option<bool>,
}

/// What an element with `attributes` (names as written, in any case; values decoded)
/// says of the links in it. Of an attribute written twice the first counts, as in the
/// tree. The streaming engine keeps this for each element open, to skip the links the
/// DOM would skip.
pub(crate) fn element_hides<'a>(attributes: impl IntoIterator<Item = (&'a str, Cow<'a, str>)>) -> Hides {
    let (mut hidden, mut aria_hidden, mut style) = (false, None, None);
    for (name, value) in attributes {
        if name.eq_ignore_ascii_case("hidden") {
            hidden = true;
        } else if name.eq_ignore_ascii_case("aria-hidden") {
            aria_hidden.get_or_insert(value);
        } else if name.eq_ignore_ascii_case("style") {
            style.get_or_insert(value);
        }
    }
    let style = Style::parse(style.as_deref().unwrap_or_default());
    let aria_hidden = aria_hidden.is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
    Hides {
        always: hidden || style.get("display") == Some("none") || (aria_hidden && style.off_screen()),
        visibility: style.get("visibility").map(|visibility| matches!(visibility, "hidden" | "collapse")),
    }
}

#[cfg(test)]
mod tests {
    use scraper::{Html, Selector};

    use super::*;

    fn hidden_hrefs(html: &str) -> Vec<String> {
        let doc = Html::parse_document(html);
        let links = Selector::parse("a").unwrap();
        doc.select(&links)
            .filter(|a| is_hidden(*a))
            .filter_map(|a| a.value().attr("href"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn each_way_of_hiding_a_link() {
        let html = r#"
            <a href="/seen">seen</a>
            <div style="display:none"><a href="/display">x</a></div>
            <p style="color: red; DISPLAY : None !important"><span><a href="/display-important">x</a></span></p>
            <span style="visibility: hidden"><a href="/visibility">x</a></span>
            <span style="visibility: hidden"><a style="visibility: visible" href="/visible-again">x</a></span>
            <a hidden href="/hidden-attribute">x</a>
            <div aria-hidden="true" style="position:absolute; left:-9999px"><a href="/off-screen">x</a></div>
            <div aria-hidden="true"><a href="/icon">an icon beside its visible twin</a></div>
            <div style="position:absolute; left:-9999px"><a href="/skip-link">skip to content</a></div>
            <div style="display: block"><a href="/shown">x</a></div>
            <div aria-hidden="true" style="position:absolute; left:0"><a href="/on-screen">x</a></div>
        "#;
        assert_eq!(
            hidden_hrefs(html),
            ["/display", "/display-important", "/visibility", "/hidden-attribute", "/off-screen"]
        );
    }
}
