//! Which CSS selectors the streaming engine answers exactly as the DOM does: shared by
//! the derive (which picks a spider's engine at compile time) and the runtime, which
//! matches the parsed [`StreamSelector`] as a page's tags go by.
//!
//! The streaming engine matches elements as the tokens of a page go by, so a selector
//! streams when it only looks at an element and its ancestors, never at siblings or at
//! what comes later. Kept deliberately small:
//!
//! | streams | does not (the spider uses the DOM) |
//! | --- | --- |
//! | type (`h1`), universal with a condition (`*.x`), `.class`, `#id` | a bare `*`, `html`, `head`, `body` (implied by the parser when a page omits them) |
//! | `[attr]`, `[attr=v]`, `~=`, `^=`, `$=`, `*=`, `\|=` | case flags (`[a=v i]`), namespaces, escapes |
//! | descendant (`a b`) and child (`a > b`) combinators, lists (`a, b`) | `+`, `~`, every pseudo-class (`:nth-child`, `:not`, ...) |

/// A selector in the streaming subset, parsed: any of its alternatives (`a, b`) matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSelector {
    /// The comma-separated alternatives, in the order written.
    pub alternatives: Vec<Complex>,
}

/// Compound selectors joined by combinators, read right to left when matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Complex {
    /// The compounds, leftmost first; the last one is the element matched.
    pub compounds: Vec<Compound>,
    /// `combinators[i]` joins `compounds[i]` to `compounds[i + 1]`.
    pub combinators: Vec<Combinator>,
}

/// How two compounds are related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combinator {
    /// `a b`: an ancestor.
    Descendant,
    /// `a > b`: the parent.
    Child,
}

/// One element's conditions: its type (`None` for `*`) and every class, id and attribute
/// condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compound {
    /// The type, written in lower case (one in upper case does not stream); `None` for
    /// `*`, which always has a condition.
    pub name: Option<String>,
    /// The conditions, all of which must hold.
    pub conditions: Vec<Condition>,
}

/// One condition of a compound selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `.x`: one of the element's classes, with case.
    Class(String),
    /// `#x`: the element's id, with case.
    Id(String),
    /// `[name]` or `[name op value]`; the name written in lower case.
    Attribute {
        /// The attribute's name, written in lower case.
        name: String,
        /// The comparison and the value compared with, `None` for a bare `[name]`.
        test: Option<(AttributeOp, String)>,
    },
}

/// An attribute selector's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeOp {
    /// `=`: the whole value.
    Equals,
    /// `~=`: one of its whitespace-separated words.
    Word,
    /// `|=`: the value, or its start followed by `-`.
    DashPrefix,
    /// `^=`: its start.
    Prefix,
    /// `$=`: its end.
    Suffix,
    /// `*=`: somewhere in it.
    Substring,
}

/// `css` (already a valid selector) parsed when it streams; why it does not, in words.
///
/// # Errors
///
/// The first feature of `css` outside the streaming subset.
///
/// # Examples
///
/// ```
/// assert!(spider_settings::stream_selector("article.product h3 > a[href]").is_ok());
/// let why = spider_settings::stream_selector("li:nth-child(2)").unwrap_err();
/// assert!(why.contains("pseudo-class"));
/// ```
pub fn stream_selector(css: &str) -> Result<StreamSelector, String> {
    let mut alternatives = Vec::new();
    let mut complex = Complex { compounds: Vec::new(), combinators: Vec::new() };
    let mut rest = css.trim();
    loop {
        let (parsed, after) = compound(rest)?;
        complex.compounds.push(parsed);
        rest = after.trim_start();
        match rest.as_bytes().first() {
            None => {
                alternatives.push(complex);
                return Ok(StreamSelector { alternatives });
            }
            Some(b',') => {
                alternatives.push(std::mem::replace(
                    &mut complex,
                    Complex { compounds: Vec::new(), combinators: Vec::new() },
                ));
                rest = rest[1..].trim_start();
            }
            Some(b'>') => {
                complex.combinators.push(Combinator::Child);
                rest = rest[1..].trim_start();
            }
            Some(_) if rest.len() < after.len() => complex.combinators.push(Combinator::Descendant),
            Some(_) => return Err(unsupported(rest)),
        }
    }
}

/// One compound selector at the start of `text`; what follows it.
fn compound(text: &str) -> Result<(Compound, &str), String> {
    let mut rest = text;
    let name = if let Some(after) = rest.strip_prefix('*') {
        if !after.starts_with(['.', '#', '[']) {
            return Err("a bare `*` does not stream (it matches the `<html>`, `<head>` and `<body>` the \
                parser adds where a page leaves them out); qualify it, as in `*.x` or `*[href]`"
                .to_owned());
        }
        rest = after;
        None
    } else {
        let (name, after) = ident(rest);
        if matches!(name.to_ascii_lowercase().as_str(), "html" | "head" | "body") {
            return Err(format!(
                "`{name}` does not stream (the parser adds it where a page leaves it out); select below it"
            ));
        }
        rest = after;
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(upper_case(name));
        }
        (!name.is_empty()).then(|| name.to_owned())
    };
    let mut conditions = Vec::new();
    loop {
        match rest.as_bytes().first() {
            Some(&kind @ (b'.' | b'#')) => {
                let (value, after) = ident(&rest[1..]);
                if value.is_empty() {
                    return Err(unsupported(rest));
                }
                conditions.push(if kind == b'.' {
                    Condition::Class(value.to_owned())
                } else {
                    Condition::Id(value.to_owned())
                });
                rest = after;
            }
            Some(b'[') => {
                let (condition, after) = attribute(&rest[1..])?;
                conditions.push(condition);
                rest = after;
            }
            _ if rest.len() == text.len() => return Err(unsupported(rest)),
            _ => return Ok((Compound { name, conditions }, rest)),
        }
    }
}

/// A type or attribute name in upper case: `scraper` compares it without case on HTML
/// elements but with case inside `<svg>` and `<math>`, where the scan cannot tell which
/// the DOM would find.
fn upper_case(name: &str) -> String {
    format!(
        "`{name}` in upper case does not stream (inside `<svg>` the tree compares names with case); \
        write it in lower case"
    )
}

/// `name]`, `name=value]` or `name op "value"]`, the `[` already read.
fn attribute(text: &str) -> Result<(Condition, &str), String> {
    let (name, rest) = ident(text.trim_start());
    if name.is_empty() {
        return Err(unsupported(text));
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(upper_case(name));
    }
    let name = name.to_owned();
    let rest = rest.trim_start();
    let (op, rest) = match rest.as_bytes() {
        [b']', ..] => return Ok((Condition::Attribute { name, test: None }, &rest[1..])),
        [b'=', ..] => (AttributeOp::Equals, &rest[1..]),
        [b'~', b'=', ..] => (AttributeOp::Word, &rest[2..]),
        [b'|', b'=', ..] => (AttributeOp::DashPrefix, &rest[2..]),
        [b'^', b'=', ..] => (AttributeOp::Prefix, &rest[2..]),
        [b'$', b'=', ..] => (AttributeOp::Suffix, &rest[2..]),
        [b'*', b'=', ..] => (AttributeOp::Substring, &rest[2..]),
        _ => return Err(unsupported(rest)),
    };
    let rest = rest.trim_start();
    let (value, rest) = match rest.as_bytes().first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let body = &rest[1..];
            let end = body.find(char::from(quote)).ok_or_else(|| unsupported(rest))?;
            if body[..end].contains('\\') {
                return Err("escapes in attribute values do not stream".to_owned());
            }
            (&body[..end], &body[end + 1..])
        }
        _ => {
            let (value, after) = ident(rest);
            if value.is_empty() {
                return Err(unsupported(rest));
            }
            (value, after)
        }
    };
    let rest = rest
        .trim_start()
        .strip_prefix(']')
        .ok_or_else(|| "attribute selectors with a case flag (`i`, `s`) do not stream".to_owned())?;
    Ok((Condition::Attribute { name, test: Some((op, value.to_owned())) }, rest))
}

/// The longest CSS name at the start of `text`, and what follows it.
fn ident(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || !c.is_ascii()))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// What a selector has at `rest` that the streaming engine does not match.
fn unsupported(rest: &str) -> String {
    let feature = match rest.as_bytes().first() {
        Some(b':') => "pseudo-classes and pseudo-elements (`:nth-child`, `:not`, `::before`, ...)",
        Some(b'+') => "the next-sibling combinator `+`",
        Some(b'~') => "the subsequent-sibling combinator `~`",
        Some(b'|') => "namespaces",
        Some(b'\\') => "escapes",
        _ => "this selector's syntax",
    };
    format!("{feature} cannot stream (at `{rest}`)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_selectors_and_ancestor_combinators_stream() {
        for css in [
            "h1",
            "*.x",
            "p.price",
            "#main .x",
            "h3 > a",
            "div>a",
            "a.next, h3 > a",
            "a[href]",
            "script[type=\"application/ld+json\"]",
            "a[ href ^= '/p' ]",
            "a[data-x|=en]",
            "article.product_pod h3 a",
        ] {
            assert!(stream_selector(css).is_ok(), "{css}");
        }
    }

    #[test]
    fn a_name_in_upper_case_does_not_stream() {
        // Inside `<svg>` the tree compares `[DATA-V]` with case and finds no `data-v`.
        for css in ["A[href]", "a[HREF]", "div, [DATA-V*=B]"] {
            let refused = stream_selector(css).unwrap_err();
            assert!(refused.contains("upper case"), "{css}: {refused}");
        }
    }

    #[test]
    fn a_streaming_selector_is_parsed_into_its_alternatives_compounds_and_conditions() {
        let parsed = stream_selector("article.product  h3>a[href ^= '/p'], *#main").unwrap();
        let [first, second] = parsed.alternatives.as_slice() else { panic!("two alternatives: {parsed:?}") };
        assert_eq!(first.combinators, [Combinator::Descendant, Combinator::Child]);
        let names: Vec<_> = first.compounds.iter().map(|compound| compound.name.as_deref()).collect();
        assert_eq!(names, [Some("article"), Some("h3"), Some("a")]);
        assert_eq!(first.compounds[0].conditions, [Condition::Class("product".into())]);
        assert_eq!(
            first.compounds[2].conditions,
            [Condition::Attribute { name: "href".into(), test: Some((AttributeOp::Prefix, "/p".into())) }]
        );
        assert_eq!(
            second.compounds,
            [Compound { name: None, conditions: vec![Condition::Id("main".into())] }]
        );
    }

    #[test]
    fn siblings_pseudo_classes_and_implied_elements_do_not() {
        for (css, says) in [
            ("li:first-child", "pseudo-classes"),
            ("h1 + p", "`+`"),
            ("h1 ~ p", "`~`"),
            ("body > div", "`body`"),
            ("* > a", "bare `*`"),
            ("div, html", "`html`"),
            ("a[href=x i]", "case flag"),
            ("a[href='\\x']", "escapes"),
            ("svg|a", "namespaces"),
        ] {
            let why = stream_selector(css).unwrap_err();
            assert!(why.contains(says), "{css}: {why}");
        }
    }
}
