//! The sitemap reader: the bytes of a sitemap (gzipped or not) to the URLs it lists, read
//! as a stream, within the protocol's limits.
//!
//! The protocol (sitemaps.org) allows a file 50,000 URLs and 50 MB uncompressed at most.
//! Reading stops at the first of: the end of the document, the 50,001st entry, the 50 MB
//! (of inflated XML), or the first mistake in the XML; whatever was read before stays in
//! the [`Listing`], and [`Problem`] says why the rest was not. CPU work: callers run it
//! on the parse pool.

mod lastmod;

use std::io::{BufReader, Read};

use flate2::read::MultiGzDecoder;
use quick_xml::events::{BytesRef, Event};
use quick_xml::Reader;
use url::Url;

pub(crate) use lastmod::Since;

/// How many URLs a file may list, as the protocol has it.
pub(crate) const MAX_URLS: usize = 50_000;

use crate::error::reason::Reason;
use crate::request::SITEMAP_MAX_BYTES as MAX_BYTES;

/// The most a reading takes: entries, and bytes of XML after inflating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) urls: usize,
    pub(crate) bytes: usize,
}

impl Limits {
    /// The protocol's.
    pub(crate) const PROTOCOL: Limits = Limits { urls: MAX_URLS, bytes: MAX_BYTES };
}

/// What a sitemap lists.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// A `<urlset>`'s `<url><loc>`s, less those [`Since`] skips.
    pub(crate) pages: Vec<Url>,
    /// A `<sitemapindex>`'s `<sitemap><loc>`s.
    pub(crate) sitemaps: Vec<Url>,
    /// Why reading stopped before the end of the document, when it did.
    pub(crate) problem: Option<Problem>,
}

/// Why a sitemap was not read to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// More entries than the limit; the first `limit` were taken.
    TooManyUrls { limit: usize },
    /// More bytes than the limit (inflated); the entries within it were taken.
    TooLarge { limit: usize },
    /// The XML (or the gzip around it) is broken; the detail says where.
    Malformed(String),
    /// Readable, but not a sitemap: another root element, or not XML at all.
    NotASitemap(String),
}

impl Problem {
    /// The reason stats count it by.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            Problem::TooManyUrls { .. } => Reason::SitemapTooManyUrls,
            Problem::TooLarge { .. } => Reason::SitemapTooLarge,
            Problem::Malformed(_) => Reason::SitemapMalformed,
            Problem::NotASitemap(_) => Reason::NotASitemap,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::TooManyUrls { limit } => {
                write!(f, "the sitemap lists more than {limit} URLs; the first {limit} were taken")
            }
            Problem::TooLarge { limit } => {
                write!(f, "the sitemap is over {limit} bytes uncompressed; the URLs within them were taken")
            }
            Problem::Malformed(detail) | Problem::NotASitemap(detail) => f.write_str(detail),
        }
    }
}

/// Read the sitemap in `body`, fetched from `base` (a relative `<loc>` is resolved against
/// it). A body starting with gzip's magic bytes is inflated first.
pub(crate) fn read(body: &[u8], base: &Url, since: Option<Since>, limits: Limits) -> Listing {
    let gzipped = body.starts_with(&[0x1f, 0x8b]);
    let source: Box<dyn Read + '_> =
        if gzipped { Box::new(MultiGzDecoder::new(body)) } else { Box::new(body) };
    let capped = Capped { inner: source, left: limits.bytes, over: false, probed: false };
    let mut reader = Reader::from_reader(BufReader::new(capped));
    let mut walk = Walk::new(base, since, limits);
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf);
        let over = reader.get_ref().get_ref().over;
        let step = match event {
            // A file cut at the limit ends in the middle of something: that is the limit's doing.
            _ if over => Err(Problem::TooLarge { limit: limits.bytes }),
            Ok(Event::Eof) => walk.end(),
            Ok(event) => walk.event(event),
            Err(quick_xml::Error::Io(error)) if gzipped => {
                Err(Problem::Malformed(format!("the gzip stream is damaged: {error}")))
            }
            Err(error) => {
                let at = reader.error_position();
                let inflated = if gzipped { " of the inflated XML" } else { "" };
                Err(Problem::Malformed(format!("XML error at byte {at}{inflated}: {error}")))
            }
        };
        match step {
            Ok(Step::Go) => {}
            Ok(Step::Done) => break,
            Err(problem) => {
                walk.listing.problem = Some(problem);
                break;
            }
        }
        buf.clear();
    }
    walk.listing
}

/// Whether to read on.
enum Step {
    Go,
    Done,
}

/// The document's root element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Root {
    #[default]
    NotYet,
    UrlSet,
    Index,
}

/// Where the reading is in the document, and what it found.
struct Walk<'a> {
    base: &'a Url,
    since: Option<Since>,
    limits: Limits,
    root: Root,
    /// The root's namespace prefix, `sm:` in `<sm:urlset>`; its entries' names carry it too.
    prefix: Vec<u8>,
    /// Elements open.
    depth: usize,
    /// Entries (`<url>` or `<sitemap>`) begun.
    entries: usize,
    /// Inside an entry.
    in_entry: bool,
    /// The current entry's `<loc>` and `<lastmod>`, and which of them is open.
    loc: Option<String>,
    lastmod: Option<String>,
    field: Option<Field>,
    listing: Listing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    LastMod,
}

impl<'a> Walk<'a> {
    fn new(base: &'a Url, since: Option<Since>, limits: Limits) -> Self {
        Walk {
            base,
            since,
            limits,
            root: Root::NotYet,
            prefix: Vec::new(),
            depth: 0,
            entries: 0,
            in_entry: false,
            loc: None,
            lastmod: None,
            field: None,
            listing: Listing::default(),
        }
    }

    fn event(&mut self, event: Event<'_>) -> Result<Step, Problem> {
        match event {
            Event::Start(start) => {
                self.depth += 1;
                self.open(start.name().as_ref())
            }
            Event::End(_) => {
                self.depth = self.depth.saturating_sub(1);
                self.close()
            }
            Event::Text(text) => {
                let text =
                    text.decode().map_err(|e| Problem::Malformed(format!("text is not UTF-8: {e}")))?;
                self.text(&text)
            }
            Event::CData(data) => {
                let text =
                    data.decode().map_err(|e| Problem::Malformed(format!("CDATA is not UTF-8: {e}")))?;
                self.text(&text)
            }
            Event::GeneralRef(reference) => self.text(&resolve(&reference)?),
            // `<url/>` lists nothing; declarations, comments and the like say nothing.
            Event::Empty(_)
            | Event::Comment(_)
            | Event::Decl(_)
            | Event::PI(_)
            | Event::DocType(_)
            | Event::Eof => Ok(Step::Go),
        }
    }

    /// An element opens, `depth` deep.
    fn open(&mut self, name: &[u8]) -> Result<Step, Problem> {
        match self.depth {
            1 => self.root(name),
            2 if self.is(name, self.entry_name()) => {
                self.entries += 1;
                if self.entries > self.limits.urls {
                    return Err(Problem::TooManyUrls { limit: self.limits.urls });
                }
                self.in_entry = true;
                self.loc = None;
                self.lastmod = None;
                Ok(Step::Go)
            }
            3 if self.in_entry => {
                self.field = if self.is(name, b"loc") {
                    Some(Field::Loc)
                } else if self.is(name, b"lastmod") {
                    Some(Field::LastMod)
                } else {
                    None
                };
                Ok(Step::Go)
            }
            _ => Ok(Step::Go),
        }
    }

    /// The element that opened at `depth + 1` closes.
    fn close(&mut self) -> Result<Step, Problem> {
        match self.depth {
            0 => Ok(Step::Done),
            1 if self.in_entry => {
                self.in_entry = false;
                self.take_entry();
                Ok(Step::Go)
            }
            2 => {
                self.field = None;
                Ok(Step::Go)
            }
            _ => Ok(Step::Go),
        }
    }

    fn text(&mut self, text: &str) -> Result<Step, Problem> {
        let target = match (self.depth, self.field) {
            (3, Some(Field::Loc)) => &mut self.loc,
            (3, Some(Field::LastMod)) => &mut self.lastmod,
            (0, _) if self.root == Root::NotYet && !blank(text) => {
                let start: String = text.trim().chars().take(40).collect();
                return Err(Problem::NotASitemap(format!("the body is not XML: it starts with {start:?}")));
            }
            _ => return Ok(Step::Go),
        };
        target.get_or_insert_with(String::new).push_str(text);
        Ok(Step::Go)
    }

    fn root(&mut self, name: &[u8]) -> Result<Step, Problem> {
        let (prefix, local) = match name.iter().position(|&b| b == b':') {
            Some(colon) => name.split_at(colon + 1),
            None => (&[][..], name),
        };
        self.root = match local {
            b"urlset" => Root::UrlSet,
            b"sitemapindex" => Root::Index,
            other => {
                let other = String::from_utf8_lossy(other);
                return Err(Problem::NotASitemap(format!(
                    "the document is <{other}>, not a <urlset> or a <sitemapindex>"
                )));
            }
        };
        self.prefix = prefix.to_vec();
        Ok(Step::Go)
    }

    fn entry_name(&self) -> &'static [u8] {
        match self.root {
            Root::Index => b"sitemap",
            Root::UrlSet | Root::NotYet => b"url",
        }
    }

    /// Whether `name` is `local` in the root's namespace prefix.
    fn is(&self, name: &[u8], local: &[u8]) -> bool {
        name.strip_prefix(self.prefix.as_slice()) == Some(local)
    }

    /// The entry just closed: its URL, when it has one that parses and `since` keeps.
    fn take_entry(&mut self) {
        let (Some(loc), lastmod) = (self.loc.take(), self.lastmod.take()) else {
            return;
        };
        let url = match self.base.join(loc.trim()) {
            Ok(url) => url,
            Err(error) => {
                tracing::debug!(target: "spiderling", loc = %loc.trim(), %error, "a sitemap <loc> that is \
                    not a URL: skipped");
                return;
            }
        };
        match self.root {
            Root::Index => self.listing.sitemaps.push(url),
            Root::UrlSet if self.keeps(lastmod.as_deref()) => self.listing.pages.push(url),
            Root::UrlSet | Root::NotYet => {}
        }
    }

    fn keeps(&self, lastmod: Option<&str>) -> bool {
        match (self.since, lastmod) {
            (Some(since), Some(lastmod)) => since.keeps(lastmod),
            _ => true,
        }
    }

    /// The end of the body.
    fn end(&mut self) -> Result<Step, Problem> {
        match self.root {
            Root::NotYet => Err(Problem::NotASitemap("the body holds no XML element".to_owned())),
            _ if self.depth > 0 => Err(Problem::Malformed(format!(
                "the document ends before its last {} elements close",
                self.depth
            ))),
            _ => Ok(Step::Done),
        }
    }
}

/// Whitespace only, or a byte order mark.
fn blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || c == '\u{feff}')
}

/// The text an entity or character reference stands for.
fn resolve(reference: &BytesRef<'_>) -> Result<String, Problem> {
    let bad = |detail: String| Problem::Malformed(format!("a reference in the text: {detail}"));
    if let Some(c) = reference.resolve_char_ref().map_err(|e| bad(e.to_string()))? {
        return Ok(c.to_string());
    }
    let name = reference.decode().map_err(|e| bad(e.to_string()))?;
    quick_xml::escape::resolve_predefined_entity(&name)
        .map(str::to_owned)
        .ok_or_else(|| bad(format!("&{name}; is not an XML entity")))
}

/// A reader that ends after `left` bytes and notes whether more were there.
struct Capped<R> {
    inner: R,
    left: usize,
    /// More bytes followed the limit.
    over: bool,
    probed: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            if !self.probed {
                // One byte more tells a file that ends at the limit from one that goes on.
                self.probed = true;
                self.over = self.inner.read(&mut [0u8; 1])? > 0;
            }
            return Ok(0);
        }
        let room = buf.len().min(self.left);
        let read = self.inner.read(&mut buf[..room])?;
        self.left -= read;
        Ok(read)
    }
}

#[cfg(test)]
mod tests;
