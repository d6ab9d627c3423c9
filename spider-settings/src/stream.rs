//! Which CSS selectors the streaming engine answers exactly as the DOM does: shared by
//! the derive (which picks a spider's engine at compile time) and the runtime.
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

/// Why `css` (already a valid selector) does not stream, in words; `Ok` when it does.
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
pub fn stream_selector(css: &str) -> Result<(), String> {
    let mut rest = css.trim();
    loop {
        rest = compound(rest)?.trim_start();
        match rest.as_bytes().first() {
            None => return Ok(()),
            Some(b',' | b'>') => rest = rest[1..].trim_start(),
            Some(_)
                if rest.len() < css.len()
                    && css.as_bytes()[css.len() - rest.len() - 1].is_ascii_whitespace() => {}
            Some(_) => return Err(unsupported(rest)),
        }
    }
}

/// One compound selector at the start of `text`; what follows it.
fn compound(text: &str) -> Result<&str, String> {
    let mut rest = text;
    if let Some(after) = rest.strip_prefix('*') {
        if !after.starts_with(['.', '#', '[']) {
            return Err("a bare `*` does not stream (it matches the `<html>`, `<head>` and `<body>` the parser adds where a page leaves them out); qualify it, as in `*.x` or `*[href]`".to_owned());
        }
        rest = after;
    } else {
        let (name, after) = ident(rest);
        if matches!(name.to_ascii_lowercase().as_str(), "html" | "head" | "body") {
            return Err(format!(
                "`{name}` does not stream (the parser adds it where a page leaves it out); select below it"
            ));
        }
        rest = after;
    }
    loop {
        match rest.as_bytes().first() {
            Some(b'.' | b'#') => {
                let (name, after) = ident(&rest[1..]);
                if name.is_empty() {
                    return Err(unsupported(rest));
                }
                rest = after;
            }
            Some(b'[') => rest = attribute(&rest[1..])?,
            _ if rest.len() == text.len() => return Err(unsupported(rest)),
            _ => return Ok(rest),
        }
    }
}

/// `name]`, `name=value]` or `name op "value"]`, the `[` already read.
fn attribute(text: &str) -> Result<&str, String> {
    let (name, rest) = ident(text.trim_start());
    if name.is_empty() {
        return Err(unsupported(text));
    }
    let rest = rest.trim_start();
    let rest = match rest.as_bytes() {
        [b']', ..] => return Ok(&rest[1..]),
        [b'=', ..] => &rest[1..],
        [b'~' | b'^' | b'$' | b'*' | b'|', b'=', ..] => &rest[2..],
        _ => return Err(unsupported(rest)),
    };
    let rest = rest.trim_start();
    let rest = match rest.as_bytes().first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let body = &rest[1..];
            let end = body.find(char::from(quote)).ok_or_else(|| unsupported(rest))?;
            if body[..end].contains('\\') {
                return Err("escapes in attribute values do not stream".to_owned());
            }
            &body[end + 1..]
        }
        _ => {
            let (value, after) = ident(rest);
            if value.is_empty() {
                return Err(unsupported(rest));
            }
            after
        }
    };
    rest.trim_start()
        .strip_prefix(']')
        .ok_or_else(|| "attribute selectors with a case flag (`i`, `s`) do not stream".to_owned())
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
    use super::stream_selector;

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
            assert_eq!(stream_selector(css), Ok(()), "{css}");
        }
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
