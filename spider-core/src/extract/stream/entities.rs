//! Character references decoded exactly as html5ever's tokenizer decodes them, with the
//! table it decodes with (`markup5ever::data`), so streamed text and attributes are the
//! DOM's byte for byte: the longest name that is an entity wins (`&notit;` is `¬it;`),
//! the legacy names without `;` decode in text but not in an attribute when a letter,
//! digit or `=` follows, and numbers out of range, zero or surrogates become U+FFFD while
//! 0x80–0x9F are read as windows-1252.

use std::borrow::Cow;

use markup5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

/// Where the text was found: the attribute rule for names without `;` differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    Text,
    Attribute,
}

/// `raw` with its character references decoded and its line breaks normalised (`\r\n`
/// and `\r` to `\n`), as the HTML parser sees it.
pub(crate) fn decode(raw: &str, context: Context) -> Cow<'_, str> {
    if memchr::memchr2(b'&', b'\r', raw.as_bytes()).is_none() {
        return Cow::Borrowed(raw);
    }
    let normalised = normalise_newlines(raw);
    if !normalised.contains('&') {
        return Cow::Owned(normalised.into_owned());
    }
    let mut out = String::with_capacity(normalised.len());
    let mut rest: &str = &normalised;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match reference(after, context) {
            Some((decoded, used)) => {
                out.extend(decoded.into_iter().flatten());
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Line breaks as the input stream's preprocessing leaves them, and nothing else: the
/// text of scripts, styles and the other elements whose references are not decoded.
pub(super) fn normalise_newlines(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\r') {
        return Cow::Borrowed(raw);
    }
    Cow::Owned(raw.replace("\r\n", "\n").replace('\r', "\n"))
}

/// The characters of the reference at the start of `text` (just after its `&`) and the
/// bytes it spans, or `None` when it is not one and the `&` stays.
fn reference(text: &str, context: Context) -> Option<([Option<char>; 2], usize)> {
    match text.as_bytes().first()? {
        b'#' => numeric(&text[1..]).map(|(c, used)| ([Some(c), None], used + 1)),
        c if c.is_ascii_alphanumeric() => named(text, context),
        _ => None,
    }
}

fn numeric(text: &str) -> Option<(char, usize)> {
    let (base, start) = match text.as_bytes().first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let digits = text[start..].bytes().take_while(|b| char::from(*b).is_digit(base)).count();
    if digits == 0 {
        return None;
    }
    let mut number: u32 = 0;
    let mut too_big = false;
    for digit in text[start..start + digits].chars().filter_map(|c| c.to_digit(base)) {
        number = number.wrapping_mul(base);
        too_big |= number > 0x10FFFF;
        number = number.wrapping_add(digit);
    }
    let mut used = start + digits;
    if text[used..].starts_with(';') {
        used += 1;
    }
    let c = match number {
        n if n > 0x10FFFF || too_big => '\u{FFFD}',
        0x00 | 0xD800..=0xDFFF => '\u{FFFD}',
        0x80..=0x9F => C1_REPLACEMENTS
            .get((number - 0x80) as usize)
            .copied()
            .flatten()
            .or_else(|| char::from_u32(number))
            .unwrap_or('\u{FFFD}'),
        n => char::from_u32(n).unwrap_or('\u{FFFD}'),
    };
    Some((c, used))
}

/// A named reference: html5ever reads while the name read so far is a prefix of some
/// entity, and keeps the longest full match.
fn named(text: &str, context: Context) -> Option<([Option<char>; 2], usize)> {
    let mut matched: Option<((u32, u32), usize)> = None;
    for (at, c) in text.char_indices() {
        let end = at + c.len_utf8();
        match NAMED_ENTITIES.get(&text[..end]) {
            Some(&(0, _)) => {}
            Some(&found) => matched = Some((found, end)),
            None => break,
        }
    }
    let ((first, second), len) = matched?;
    let ends_with_semicolon = text[..len].ends_with(';');
    let next = text[len..].chars().next();
    if !ends_with_semicolon
        && context == Context::Attribute
        && next.is_some_and(|c| c == '=' || c.is_ascii_alphanumeric())
    {
        return None;
    }
    Some(([char::from_u32(first), (second != 0).then(|| char::from_u32(second)).flatten()], len))
}

#[cfg(test)]
mod tests {
    use super::{decode, Context};

    #[test]
    fn references_decode_as_the_html_parser_decodes_them() {
        for (raw, text, attribute) in [
            ("a &amp; b", "a & b", "a & b"),
            ("&notit; &notin;", "¬it; ∉", "&notit; ∉"),
            ("&ampx &amp=", "&x &=", "&ampx &amp="),
            ("&#65;&#x42;&#X43", "ABC", "ABC"),
            (
                "&#128; &#0; &#x110000; &#xD800;",
                "€ \u{FFFD} \u{FFFD} \u{FFFD}",
                "€ \u{FFFD} \u{FFFD} \u{FFFD}",
            ),
            ("&#; &#x; &bogus; & x", "&#; &#x; &bogus; & x", "&#; &#x; &bogus; & x"),
            ("a\r\nb\rc", "a\nb\nc", "a\nb\nc"),
            ("&NotEqualTilde; &nbsp", "\u{2242}\u{338} \u{a0}", "\u{2242}\u{338} \u{a0}"),
        ] {
            assert_eq!(decode(raw, Context::Text), text, "{raw}");
            assert_eq!(decode(raw, Context::Attribute), attribute, "{raw}");
        }
    }
}
