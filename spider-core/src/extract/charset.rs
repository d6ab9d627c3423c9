//! Which encoding a page's bytes are in, found as browsers find it (the WHATWG HTML
//! standard's encoding sniffing): a byte order mark, else the `Content-Type`'s charset,
//! else a `<meta charset>` or `<meta http-equiv="Content-Type">` in the first 1024 bytes,
//! else UTF-8. Pages in legacy encodings often declare them only in a `<meta>`, so reading
//! the header alone garbles them.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};

/// How far into the body the `<meta>` prescan looks, as browsers do.
const PRESCAN_BYTES: usize = 1024;

/// The encoding of `body`, whose `Content-Type` names `charset` (if any); the `<meta>`
/// prescan runs only when the body is HTML.
pub(crate) fn sniff(body: &[u8], charset: Option<&str>, html: bool) -> &'static Encoding {
    if let Some((encoding, _)) = Encoding::for_bom(body) {
        return encoding;
    }
    if let Some(declared) = charset.and_then(|label| Encoding::for_label(label.as_bytes())) {
        return declared;
    }
    let head = &body[..body.len().min(PRESCAN_BYTES)];
    html.then(|| prescan(head)).flatten().unwrap_or(UTF_8)
}

/// The encoding the first `<meta>` declaring one names, skipping comments and other tags'
/// attributes. A `<meta>` naming UTF-16 means UTF-8 (the bytes being read are ASCII-like,
/// so they are not UTF-16), and `x-user-defined` means windows-1252, as the standard says.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let mut bytes = Cursor { bytes: head, at: 0 };
    while bytes.at < head.len() {
        let rest = &head[bytes.at..];
        if rest.starts_with(b"<!--") {
            bytes.at += find(&rest[2..], b"-->")? + 5;
            continue;
        }
        if starts_with_ignoring_case(rest, b"<meta")
            && rest.get(5).is_some_and(|b| is_space(*b) || *b == b'/')
        {
            bytes.at += 5;
            if let Some(encoding) = meta_encoding(&mut bytes) {
                return Some(match encoding {
                    e if e == UTF_16BE || e == UTF_16LE => UTF_8,
                    e if e == X_USER_DEFINED => WINDOWS_1252,
                    e => e,
                });
            }
            continue;
        }
        let opens_tag = |offset: usize| rest.get(offset).is_some_and(u8::is_ascii_alphabetic);
        if (rest.starts_with(b"</") && opens_tag(2)) || (rest.starts_with(b"<") && opens_tag(1)) {
            // Another tag: its attributes are skipped whole, so a `>` or `<meta` inside
            // a quoted value is not taken for markup.
            bytes.at += 1;
            while bytes.peek().is_some_and(|b| !is_space(b) && b != b'>') {
                bytes.at += 1;
            }
            while bytes.attribute().is_some() {}
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            bytes.at += find(rest, b">")?;
        }
        bytes.at += 1;
    }
    None
}

/// The encoding a `<meta>` declares, its attributes read from `bytes`: a `charset`
/// attribute, or `http-equiv="content-type"` with a `content` naming a charset.
fn meta_encoding(bytes: &mut Cursor<'_>) -> Option<&'static Encoding> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let (mut pragma, mut from_content, mut from_charset) = (false, None, None);
    while let Some((name, value)) = bytes.attribute() {
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => pragma = value == b"content-type",
            b"content" => from_content = charset_in_content(&value),
            b"charset" => from_charset = Some(Encoding::for_label(&value)),
            _ => {}
        }
        seen.push(name);
    }
    match from_charset {
        Some(declared) => declared,
        None if pragma => from_content.and_then(|label| Encoding::for_label(&label)),
        None => None,
    }
}

/// The charset a `content="text/html; charset=X"` names.
fn charset_in_content(content: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    loop {
        at += find_ignoring_case(&content[at..], b"charset")? + b"charset".len();
        let mut rest = skip_spaces(&content[at..]);
        let Some(after_equals) = rest.strip_prefix(b"=") else {
            continue;
        };
        rest = skip_spaces(after_equals);
        return match rest.first()? {
            quote @ (b'"' | b'\'') => {
                let end = rest[1..].iter().position(|b| b == quote)?;
                Some(rest[1..=end].to_vec())
            }
            _ => Some(rest.iter().take_while(|b| !is_space(**b) && **b != b';').copied().collect()),
        };
    }
}

/// A position in the bytes being prescanned.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The next attribute of a tag, its name and value in lower case; `None` at the tag's
    /// `>` or the end of the bytes.
    fn attribute(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        while self.peek().is_some_and(|b| is_space(b) || b == b'/') {
            self.at += 1;
        }
        let mut name = Vec::new();
        loop {
            match self.peek()? {
                b'>' if name.is_empty() => return None,
                b'=' if !name.is_empty() => {
                    self.at += 1;
                    break;
                }
                b if is_space(b) => {
                    self.skip_spaces();
                    if self.peek()? != b'=' {
                        return Some((name, Vec::new()));
                    }
                    self.at += 1;
                    break;
                }
                b'/' | b'>' => return Some((name, Vec::new())),
                b => {
                    name.push(b.to_ascii_lowercase());
                    self.at += 1;
                }
            }
        }
        self.skip_spaces();
        let mut value = Vec::new();
        match self.peek()? {
            quote @ (b'"' | b'\'') => {
                self.at += 1;
                loop {
                    let b = self.peek()?;
                    self.at += 1;
                    if b == quote {
                        return Some((name, value));
                    }
                    value.push(b.to_ascii_lowercase());
                }
            }
            b'>' => Some((name, value)),
            _ => {
                while let Some(b) = self.peek().filter(|b| !is_space(*b) && *b != b'>') {
                    value.push(b.to_ascii_lowercase());
                    self.at += 1;
                }
                Some((name, value))
            }
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.at += 1;
        }
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn skip_spaces(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !is_space(*b)).unwrap_or(bytes.len());
    &bytes[start..]
}

fn starts_with_ignoring_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

fn find(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    bytes.windows(needle.len()).position(|window| window == needle)
}

fn find_ignoring_case(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    bytes.windows(needle.len()).position(|window| window.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{SHIFT_JIS, WINDOWS_1251};

    fn html(body: &str) -> &'static str {
        sniff(body.as_bytes(), None, true).name()
    }

    #[test]
    fn a_bom_wins_over_the_header_and_the_header_over_a_meta() {
        let body = "<meta charset=shift_jis>".as_bytes();
        assert_eq!(sniff(&[b"\xEF\xBB\xBF", body].concat(), Some("windows-1251"), true), UTF_8);
        assert_eq!(sniff(&[b"\xFF\xFE", body].concat(), None, true), UTF_16LE);
        assert_eq!(sniff(body, Some("windows-1251"), true), WINDOWS_1251);
        assert_eq!(sniff(body, Some("no-such-charset"), true), SHIFT_JIS, "an unknown label is no label");
        assert_eq!(sniff(body, None, false), UTF_8, "no prescan of what is not HTML");
    }

    #[test]
    fn meta_charset_and_http_equiv_are_found_in_the_first_1024_bytes() {
        assert_eq!(html(r#"<!doctype html><html><head><META Charset="Windows-1251">"#), "windows-1251");
        assert_eq!(html("<meta charset='sjis'/>"), "Shift_JIS");
        assert_eq!(
            html(r#"<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">"#),
            "windows-1252",
            "ISO-8859-1 is read as windows-1252, as browsers do"
        );
        assert_eq!(
            html(r#"<meta content='text/html;charset = "koi8-r"' http-equiv=content-type>"#),
            "KOI8-R"
        );
        assert_eq!(html(&format!("{}<meta charset=windows-1251>", " ".repeat(1020))), "UTF-8", "too late");
        assert_eq!(html("<p>no declaration</p>"), "UTF-8");
    }

    #[test]
    fn the_prescan_skips_what_is_not_a_declaring_meta() {
        assert_eq!(html("<!-- <meta charset=koi8-r> --><meta charset=windows-1251>"), "windows-1251");
        assert_eq!(html(r#"<div title="<meta charset=koi8-r>"><meta charset=sjis>"#), "Shift_JIS");
        assert_eq!(
            html(r#"<meta content="text/html; charset=koi8-r"><meta charset=sjis>"#),
            "Shift_JIS",
            "no pragma"
        );
        assert_eq!(html(r#"<meta http-equiv="refresh" content="charset=koi8-r">"#), "UTF-8");
        assert_eq!(html("<meta charset=utf-16le>"), "UTF-8", "a meta cannot mean UTF-16");
        assert_eq!(html("<meta charset=x-user-defined>"), "windows-1252");
        assert_eq!(html("<metadata charset=koi8-r>"), "UTF-8");
        assert_eq!(html("<meta charset=koi8-r charset=sjis>"), "KOI8-R", "the first of an attribute counts");
        assert_eq!(html("<meta charset"), "UTF-8", "cut short");
    }
}
