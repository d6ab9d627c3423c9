//! Interstitials: a challenge, a captcha, a consent or a login wall answered in place of
//! the page, often with 200.
//!
//! Told by what the answer is, not by a word it contains: ordinary pages carry search
//! forms, consent banners, captcha-guarded comment forms and anti-bot sensor scripts
//! beside their content; an interstitial is all of it. So only a *thin* page (little
//! visible text, few links: [`THIN_TEXT`], [`THIN_LINKS`]) is one, and then only when its
//! main content is what such pages are made of: a challenge or captcha vendor's script or
//! widget, the words of a challenge or a captcha, a form (most of the page's text inside
//! it; a password field makes it a login wall), a consent notice, or a script that sets a
//! cookie and loads the page again. The scan stops as soon as a page is not thin, so an
//! ordinary page costs a few kilobytes of it.
//!
//! The task asks this only of a page that gave no item, after its parse: an item found
//! is the page itself, whatever else it carries.

use memchr::memmem;

/// Visible text, in bytes other than whitespace, past which a page is not thin. A
/// challenge page shows a sentence or two; a consent wall some paragraphs.
const THIN_TEXT: usize = 2_000;
/// Links past which a page is not thin: a wall links its policy and little else.
const THIN_LINKS: usize = 20;
/// A consent notice is all the page says only under this much visible text.
const CONSENT_TEXT: usize = 800;
/// A page that is only a script shows at most this much text.
const SCRIPT_ONLY_TEXT: usize = 200;
/// Elements whose content is raw text, not markup: skipped whole, the title read.
const RAW_TEXT: &[&[u8]] = &[b"script", b"style", b"svg", b"noscript", b"template", b"title", b"textarea"];
/// Of a thin page, the bytes searched for vendors' markers.
const MARKERS_WITHIN: usize = 512 * 1024;

/// Scripts and widgets of challenge and bot-defence services, as their pages carry them
/// (compared in lower case). Their sensor scripts on ordinary pages have other paths.
const CHALLENGE_VENDORS: &[&str] = &[
    "_cf_chl_opt",
    "cf-chl-",
    "challenge-platform/h/",
    "challenges.cloudflare.com",
    "captcha-delivery.com",
    "px-captcha",
    "_incapsula_resource",
    "/_sec/cp_challenge",
    "sec-if-cpt",
    "awswafcookiedomainlist",
    "kpsdk",
    "sucuri_cloudproxy",
    "ddos-guard",
];

/// Captcha widgets (compared in lower case).
const CAPTCHA_VENDORS: &[&str] = &[
    "g-recaptcha",
    "recaptcha/api",
    "h-captcha",
    "hcaptcha.com",
    "cf-turnstile",
    "funcaptcha",
    "arkoselabs",
    "geetest",
];

/// What a challenge page says while it checks the browser (in its title or text).
const CHALLENGE_WORDS: &[&str] = &[
    "just a moment",
    "checking your browser",
    "checking if the site connection is secure",
    "security check",
    "ddos protection",
];

/// What a captcha page says.
const CAPTCHA_WORDS: &[&str] = &[
    "captcha",
    "are you a robot",
    "not a robot",
    "are you human",
    "verify you are human",
    "verifying you are human",
    "prove you are",
    "unusual traffic",
    "press & hold",
    "press and hold",
];

/// What a consent notice says.
const CONSENT_WORDS: &[&str] = &[
    "consent",
    "use cookies",
    "uses cookies",
    "accept cookies",
    "accept all cookies",
    "cookie settings",
    "cookie preferences",
    "before you continue",
    "we value your privacy",
    "your privacy choices",
];

/// What stood in for the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interstitial {
    /// A bot-defence service's check of the browser.
    Challenge,
    /// A captcha.
    Captcha,
    /// A form with a password field.
    Login,
    /// A form and little else: an age gate, a captcha of the site's own.
    Form,
    /// A consent notice.
    Consent,
}

impl Interstitial {
    /// Its name in the log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Interstitial::Challenge => "challenge",
            Interstitial::Captcha => "captcha",
            Interstitial::Login => "login wall",
            Interstitial::Form => "form wall",
            Interstitial::Consent => "consent wall",
        }
    }
}

/// What the HTML `body` stands in place of its page as, if it does (see the module).
pub(crate) fn interstitial(body: &[u8]) -> Option<Interstitial> {
    let shape = Shape::of(body)?;
    let lower = body[..body.len().min(MARKERS_WITHIN)].to_ascii_lowercase();
    let carries = |markers: &[&str]| markers.iter().any(|m| memmem::find(&lower, m.as_bytes()).is_some());
    let says = |words: &[&str]| words.iter().any(|w| shape.words.contains(w));
    let form_is_main = shape.forms > 0 && shape.form_text * 2 >= shape.text;
    // A challenge or a captcha is something to do: words about one on a page with
    // nothing to do are about something else.
    let active = shape.forms > 0 || shape.controls > 0 || shape.scripts > 0;
    if carries(CHALLENGE_VENDORS) {
        Some(Interstitial::Challenge)
    } else if carries(CAPTCHA_VENDORS) {
        Some(Interstitial::Captcha)
    } else if form_is_main && shape.password {
        Some(Interstitial::Login)
    } else if active && says(CHALLENGE_WORDS) {
        Some(Interstitial::Challenge)
    } else if active && says(CAPTCHA_WORDS) {
        Some(Interstitial::Captcha)
    } else if form_is_main {
        Some(Interstitial::Form)
    } else if shape.text <= CONSENT_TEXT && (shape.links > 0 || active) && says(CONSENT_WORDS) {
        Some(Interstitial::Consent)
    } else if shape.text <= SCRIPT_ONLY_TEXT && shape.links == 0 && shape.scripts > 0 && reloads(&lower) {
        Some(Interstitial::Challenge)
    } else {
        None
    }
}

/// What a thin page is made of.
#[derive(Debug, Default)]
struct Shape {
    /// Visible text, in bytes other than whitespace.
    text: usize,
    /// Of it, inside a form.
    form_text: usize,
    links: usize,
    forms: usize,
    /// Buttons, inputs, selects and frames: what a person acts on.
    controls: usize,
    password: bool,
    /// The title and the visible text outside links, in lower case, words separated by
    /// one space: what the page says, not where it leads.
    words: String,
    /// Scripts, inline or not.
    scripts: usize,
}

impl Shape {
    /// The shape of `body`, or `None` once it is past thin.
    fn of(body: &[u8]) -> Option<Shape> {
        let mut shape = Shape::default();
        let mut form_depth = 0usize;
        let mut in_link = false;
        let mut at = 0;
        while at < body.len() {
            if body[at] != b'<' {
                let end = memchr::memchr(b'<', &body[at..]).map_or(body.len(), |n| at + n);
                let visible =
                    if in_link { visible_bytes(&body[at..end]) } else { shape.add_words(&body[at..end]) };
                shape.text += visible;
                if form_depth > 0 {
                    shape.form_text += visible;
                }
                if shape.text > THIN_TEXT {
                    return None;
                }
                at = end;
                continue;
            }
            if body[at..].starts_with(b"<!--") {
                at = memmem::find(&body[at + 4..], b"-->").map_or(body.len(), |n| at + 4 + n + 3);
                continue;
            }
            let Some(tag) = Tag::at(body, at) else {
                // A `<` that opens no tag is text.
                shape.add_words(b"<");
                at += 1;
                continue;
            };
            at = tag.end;
            if tag.closing {
                if tag.name.eq_ignore_ascii_case(b"form") {
                    form_depth = form_depth.saturating_sub(1);
                } else if tag.name.eq_ignore_ascii_case(b"a") {
                    in_link = false;
                }
                continue;
            }
            let is = |names: &[&[u8]]| names.iter().any(|name| tag.name.eq_ignore_ascii_case(name));
            if is(RAW_TEXT) {
                let close = closing_tag(body, at, tag.name);
                if is(&[b"title"]) {
                    shape.add_words(&body[at..close]);
                }
                shape.scripts += usize::from(is(&[b"script"]));
                at = close;
            } else if is(&[b"a", b"area"]) && tag.has(b"href") {
                in_link = tag.name.len() == 1;
                shape.links += 1;
                if shape.links > THIN_LINKS {
                    return None;
                }
            } else if is(&[b"form"]) {
                shape.forms += 1;
                form_depth += 1;
            } else if is(&[b"input", b"button", b"select", b"iframe"]) {
                shape.controls += 1;
                shape.password |= tag.has(b"password");
            }
        }
        Some(shape)
    }

    /// Add the words of `text` to [`words`](Self::words); returns its bytes other than
    /// whitespace.
    fn add_words(&mut self, text: &[u8]) -> usize {
        for word in text.split(u8::is_ascii_whitespace).filter(|word| !word.is_empty()) {
            if !self.words.is_empty() {
                self.words.push(' ');
            }
            self.words.push_str(&String::from_utf8_lossy(word).to_ascii_lowercase());
        }
        visible_bytes(text)
    }
}

/// Whether a page of scripts (in lower case) sets a cookie and loads a page again: a
/// challenge that needs no person. (A page that only refreshes to another is a redirect.)
fn reloads(lower: &[u8]) -> bool {
    memmem::find(lower, b"document.cookie").is_some() && memmem::find(lower, b"location").is_some()
}

/// The bytes of `text` other than whitespace.
fn visible_bytes(text: &[u8]) -> usize {
    text.iter().filter(|b| !b.is_ascii_whitespace()).count()
}

/// A tag as the scan reads it.
struct Tag<'a> {
    name: &'a [u8],
    attributes: &'a [u8],
    closing: bool,
    /// Just past its `>`.
    end: usize,
}

impl<'a> Tag<'a> {
    /// The tag opening at `body[at]` (a `<`), if one does.
    fn at(body: &'a [u8], at: usize) -> Option<Tag<'a>> {
        let mut start = at + 1;
        let closing = body.get(start) == Some(&b'/');
        if closing {
            start += 1;
        }
        let name_len = body[start..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'-').count();
        if name_len == 0 {
            // `<!doctype>`, `<?xml?>` and the like are skipped whole; a bare `<` is text.
            let skipped = matches!(body.get(start), Some(b'!' | b'?'));
            return skipped.then(|| {
                let end = memchr::memchr(b'>', &body[start..]).map_or(body.len(), |n| start + n + 1);
                Tag { name: &[], attributes: &[], closing: true, end }
            });
        }
        let name_end = start + name_len;
        // The tag ends at the first `>` outside a quoted value.
        let mut quote = None;
        let mut end = body.len();
        for (offset, byte) in body[name_end..].iter().enumerate() {
            match (quote, *byte) {
                (None, b'"' | b'\'') => quote = Some(*byte),
                (Some(open), byte) if byte == open => quote = None,
                (None, b'>') => {
                    end = name_end + offset + 1;
                    break;
                }
                _ => {}
            }
        }
        let attributes = &body[name_end..end.saturating_sub(1).max(name_end)];
        Some(Tag { name: &body[start..name_end], attributes, closing, end })
    }

    /// Whether its attributes mention `word` (compared without case).
    fn has(&self, word: &[u8]) -> bool {
        self.attributes.windows(word.len()).any(|window| window.eq_ignore_ascii_case(word))
    }
}

/// Where the element of raw text named `name` that starts at `from` ends: at its closing
/// tag, or at the end of the body.
fn closing_tag(body: &[u8], from: usize, name: &[u8]) -> usize {
    let mut at = from;
    while let Some(n) = memmem::find(&body[at..], b"</") {
        let start = at + n;
        let candidate = &body[start + 2..];
        if candidate.len() >= name.len() && candidate[..name.len()].eq_ignore_ascii_case(name) {
            return start;
        }
        at = start + 2;
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(html: &str) -> Option<Interstitial> {
        interstitial(html.as_bytes())
    }

    #[test]
    fn walls_and_challenges_are_told_by_what_they_are() {
        let cases = [
            (
                "<html><head><title>Just a \
                 moment...</title><script>window._cf_chl_opt={cvId:'3'};</script></head><body><noscript>Enable JavaScript and cookies to continue</noscript></body></html>",
                Interstitial::Challenge,
            ),
            (
                "<title>Are you a robot?</title><h1>Are you a robot?</h1><div class=\"g-recaptcha\" \
                    data-sitekey=\"k\"></div>",
                Interstitial::Captcha,
            ),
            ("<title>One moment</title><form id=\"w\" method=\"post\">Prove you are a person <input \
                name=\"answer\"></form>", Interstitial::Captcha),
            (
                "<h2>Sign in</h2><form action=/login>Email <input name=e> Password <input type=\"password\" \
                    name=p></form>",
                Interstitial::Login,
            ),
            (
                "<form method=post><h2>How old are you?</h2><select \
                    name=y></select><button>Enter</button></form>",
                Interstitial::Form,
            ),
            (
                "<title>Before you continue</title><div id=\"consent-wall\">We use cookies. <a \
                    href=\"/\">Accept</a></div>",
                Interstitial::Consent,
            ),
            (
                "<html><body><script>document.cookie='t=1;path=/';location.reload();</script></body></html>",
                Interstitial::Challenge,
            ),
        ];
        for (html, kind) in cases {
            assert_eq!(judged(html), Some(kind), "{html}");
        }
    }

    #[test]
    fn a_search_form_a_consent_banner_or_a_sensor_script_beside_content_is_no_wall() {
        let article =
            "<p>".to_owned() + &"A paragraph of the article, as long as articles are. ".repeat(60) + "</p>";
        for extra in [
            "<form action=/search><input name=q><button>Search</button></form>",
            "<footer>We use cookies to give you consent choices. <a href=/privacy>Privacy</a></footer>",
            "<script src=\"/cdn-cgi/challenge-platform/scripts/jsd/main.js\"></script><div \
                class=g-recaptcha></div>",
            "<div id=comments><form><textarea></textarea><div class=g-recaptcha></div></form></div>",
        ] {
            assert_eq!(judged(&format!("<h1>Title</h1>{article}{extra}")), None, "{extra}");
        }
        let menu: String = (0..30).map(|n| format!("<a href=\"/c/{n}\">Category {n}</a>")).collect();
        assert_eq!(
            judged(&format!("<nav>{menu}</nav><form><input name=q></form>")),
            None,
            "a page of many links"
        );
    }

    #[test]
    fn thin_ordinary_pages_are_pages() {
        for html in [
            "<h1 class=\"title\">Product 1</h1><p class=\"price\">£1.00</p><a href=\"/\">home</a>",
            "<html><body><h1>The cookie shop</h1><ul><li><a href=\"/product/1\">Product \
                1</a></li></ul></body></html>",
            "<h2>Your cart</h2><a href=\"/checkout/2\">next</a>",
            "<div id=\"root\"></div><script src=\"/app.js\"></script>",
            "<p>Out of print.</p><p>Try <a href=/>the catalogue</a>.</p>",
            "<meta http-equiv=\"refresh\" content=\"0; url=/new\"><p>Moved</p>",
            "<h2>Hostile site</h2><ul><li><a href=\"/captcha/1\">captcha 1</a></li><li><a href=/page/1>page \
                1</a></li></ul>",
            "<h1>The captcha, explained</h1><p>A captcha asks whether you are a robot.</p>",
            "",
        ] {
            assert_eq!(judged(html), None, "{html}");
        }
    }

    #[test]
    fn the_scan_survives_what_html_throws_at_it() {
        for html in [
            "<",
            "<a",
            "<!--",
            "<script>",
            "<title>x",
            "<a href='>'",
            "</",
            "<!doctype",
            "a < b > c",
            "<form",
        ] {
            let _ = judged(html);
        }
        assert_eq!(
            judged("<p title='x > y'>Just a moment</p><script>check()</script>"),
            Some(Interstitial::Challenge),
            "a quoted > ends no tag"
        );
    }
}
