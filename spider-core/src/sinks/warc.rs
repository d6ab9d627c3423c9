//! WARC/1.1 archives (`warc = "crawl.warc.gz"`): every page fetched as a request, a
//! response and a metadata record, each its own gzip member, with a CDXJ index beside.
//!
//! A page's records are built and compressed on its task ([`Archived::new`]); the
//! dispatcher appends them to the file as it finishes the page, as it does the page's
//! items, so the file's length at a checkpoint covers exactly the pages that checkpoint
//! records as done and a resumed crawl cuts the file back to it. A payload the archive
//! holds already (the same body under another URL, or fetched again) is written as a
//! `revisit` record that refers to the first, its headers only.
//!
//! Past `warc_max_bytes` the archive goes on in the next file of its series
//! (`crawl.warc.gz`, `crawl-00001.warc.gz`, ...), between two pages; a checkpoint
//! records the last file's number with its length ([`Archive`]), and a resumed crawl
//! cuts that file back and deletes the files after it, whose records no checkpoint kept.
//!
//! With the HTTP cache too, the archive is where the cache keeps its bodies: each page
//! written tells where its payload lies ([`Stored`], the record a revisit refers to for
//! one), the cache keeps that instead of a copy, and reads it back ([`read_payload`]). A
//! new crawl then goes on after the files already there instead of replacing them.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Version};

use super::AppendFile;
use crate::error::Error;

const REVISIT_PROFILE: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
const NOT_MODIFIED_PROFILE: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// A page's records for the archive, prepared on its task.
#[derive(Debug)]
pub(crate) struct Archived {
    uri: String,
    date: String,
    /// `sha1:BASE32` of the body.
    digest: String,
    /// The request, response and metadata records, each a gzip member.
    full: Vec<u8>,
    /// Where in `full` the response record's member lies.
    response: std::ops::Range<usize>,
    /// The request record alone, and the response's HTTP head, for a revisit instead.
    request: Vec<u8>,
    head: Vec<u8>,
    response_id: String,
    /// A `304` to a revalidation: `full` is the request and a `server-not-modified`
    /// revisit, written as they are.
    not_modified: bool,
}

impl Archived {
    /// The records of one exchange. The request record holds what the crawl sent that
    /// is no secret (method, target, host, user agent); the response's body is the one
    /// the crawl read, decoded, so its `Content-Encoding` and framing headers are
    /// replaced by its length.
    pub(crate) fn new(
        url: &url::Url,
        method: &str,
        user_agent: &str,
        status: StatusCode,
        version: Version,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Archived {
        let date = spider_settings::rfc3339(SystemTime::now());
        let uri = url.as_str().to_owned();
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let host = url.host_str().unwrap_or_default();
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let http = match version {
            Version::HTTP_2 => "HTTP/2",
            Version::HTTP_10 => "HTTP/1.0",
            _ => "HTTP/1.1",
        };
        let request_block =
            format!("{method} {target} {http}\r\nHost: {host}\r\nUser-Agent: {user_agent}\r\n\r\n");
        let mut head = format!("{http} {} {}\r\n", status.as_u16(), status.canonical_reason().unwrap_or(""));
        for (name, value) in headers {
            if matches!(name.as_str(), "content-encoding" | "transfer-encoding" | "content-length") {
                continue;
            }
            head.push_str(name.as_str());
            head.push_str(": ");
            head.push_str(&String::from_utf8_lossy(value.as_bytes()));
            head.push_str("\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let digest = sha1(body);
        let response_id = record_id();
        let mut response_block = head.clone().into_bytes();
        response_block.extend_from_slice(body);
        let request_record = gzip(&record(
            "request",
            &record_id(),
            &date,
            &uri,
            &[("WARC-Concurrent-To", &response_id), ("Content-Type", "application/http;msgtype=request")],
            request_block.as_bytes(),
        ));
        let metadata = format!("fetchedBy: spiderling/{}\r\n", env!("CARGO_PKG_VERSION"));
        let mut full = request_record.clone();
        let response_start = full.len();
        full.extend(gzip(&record(
            "response",
            &response_id,
            &date,
            &uri,
            &[("Content-Type", "application/http;msgtype=response"), ("WARC-Payload-Digest", &digest)],
            &response_block,
        )));
        let response = response_start..full.len();
        full.extend(gzip(&record(
            "metadata",
            &record_id(),
            &date,
            &uri,
            &[("WARC-Concurrent-To", &response_id), ("Content-Type", "application/warc-fields")],
            metadata.as_bytes(),
        )));
        let not_modified = status == StatusCode::NOT_MODIFIED;
        if not_modified {
            let revisit = record(
                "revisit",
                &response_id,
                &date,
                &uri,
                &[
                    ("Content-Type", "application/http;msgtype=response"),
                    ("WARC-Profile", NOT_MODIFIED_PROFILE),
                ],
                head.as_bytes(),
            );
            full = request_record.clone();
            full.extend(gzip(&revisit));
        }
        Archived {
            uri,
            date,
            digest,
            full,
            response,
            request: request_record,
            head: head.into_bytes(),
            response_id,
            not_modified,
        }
    }
}

impl Archived {
    /// The payload's digest, `sha1:BASE32`, as `WARC-Payload-Digest` names it.
    pub(crate) fn digest(&self) -> &str {
        &self.digest
    }
}

/// Where a payload lies in the archive: a response record's gzip member in one of its
/// files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    /// The file, its path absolute.
    pub(crate) file: PathBuf,
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

/// How much of an archive is committed: the number of its last file and that file's
/// length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Archive {
    pub(crate) file: u64,
    pub(crate) bytes: u64,
}

/// The archive the dispatcher appends to.
pub(crate) struct WarcFile {
    /// The archive's name, `warc`: its first file's path.
    base: PathBuf,
    /// The file written now, its absolute path, and its number in the series.
    file: AppendFile,
    path: PathBuf,
    number: u64,
    /// `warc_max_bytes`: past it, the next page goes in a new file.
    max_bytes: u64,
    /// Whether the file holds a page: a file takes one at least, however large.
    holds_pages: bool,
    /// Payloads written, by digest: the URL and date of the first record of each, and
    /// where it lies.
    written: HashMap<String, (String, String, Stored)>,
}

/// The path of file `number` of the archive named `base`: `base` itself first, then
/// `crawl-00001.warc.gz` and on.
pub(crate) fn file_path(base: &Path, number: u64) -> PathBuf {
    if number == 0 {
        return base.to_owned();
    }
    let name = base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".warc.gz").unwrap_or(&name);
    base.with_file_name(format!("{stem}-{number:05}.warc.gz"))
}

impl WarcFile {
    /// A new archive named `base`, its files up to about `max_bytes` each; with
    /// `after_existing` (the HTTP cache keeps its bodies in the files there), its first
    /// file the one after those of the series already there, which are left as they are.
    pub(crate) fn create(base: &Path, max_bytes: u64, after_existing: bool) -> Result<Self, Error> {
        let number = if after_existing {
            series(base).last().map_or(0, |last| last + 1)
        } else {
            // Files of an earlier archive of the name would read as this one's.
            remove_files_after(base, 0)?;
            0
        };
        let path = absolute(&file_path(base, number))?;
        let file = new_file(&path)?;
        Ok(WarcFile {
            base: base.to_owned(),
            file,
            path,
            number,
            max_bytes,
            holds_pages: false,
            written: HashMap::new(),
        })
    }

    /// The archive of a stopped crawl: its last committed file cut back to what the
    /// checkpoint recorded, and any file after it deleted.
    pub(crate) fn resume(base: &Path, committed: Archive, max_bytes: u64) -> Result<Self, Error> {
        remove_files_after(base, committed.file)?;
        let path = absolute(&file_path(base, committed.file))?;
        let file = AppendFile::resume(&path, committed.bytes, None)?;
        Ok(WarcFile {
            base: base.to_owned(),
            file,
            path,
            number: committed.file,
            max_bytes,
            holds_pages: true,
            written: HashMap::new(),
        })
    }

    /// Append a page's records: in full, or as a revisit of the payload written before;
    /// in the next file of the archive when this one is past its size. Where its payload
    /// lies (for a revisit, in the record it refers to); `None` for a `304`, which has none.
    pub(crate) fn write(&mut self, page: &Archived) -> Result<Option<Stored>, Error> {
        if self.holds_pages && self.file.len() >= self.max_bytes {
            self.file.flush()?;
            self.number += 1;
            self.path = absolute(&file_path(&self.base, self.number))?;
            self.file = new_file(&self.path)?;
        }
        self.holds_pages = true;
        self.append(page)
    }

    fn append(&mut self, page: &Archived) -> Result<Option<Stored>, Error> {
        if page.not_modified {
            return self.file.write_all(&page.full).map(|()| None);
        }
        let Some((uri, date, stored)) = self.written.get(&page.digest) else {
            let stored = Stored {
                file: self.path.clone(),
                offset: self.file.len() + page.response.start as u64,
                length: page.response.len() as u64,
            };
            self.file.write_all(&page.full)?;
            // Only once written: a revisit or the cache must never name a record that is not there.
            self.written.insert(page.digest.clone(), (page.uri.clone(), page.date.clone(), stored.clone()));
            return Ok(Some(stored));
        };
        let stored = stored.clone();
        let revisit = record(
            "revisit",
            &page.response_id,
            &page.date,
            &page.uri,
            &[
                ("Content-Type", "application/http;msgtype=response"),
                ("WARC-Profile", REVISIT_PROFILE),
                ("WARC-Refers-To-Target-URI", uri),
                ("WARC-Refers-To-Date", date),
                ("WARC-Payload-Digest", &page.digest),
            ],
            &page.head,
        );
        self.file.write_all(&page.request)?;
        self.file.write_all(&gzip(&revisit)).map(|()| Some(stored))
    }

    pub(crate) fn flush(&mut self) -> Result<Archive, Error> {
        Ok(Archive { file: self.number, bytes: self.file.flush()? })
    }

    pub(crate) fn sync(&mut self) -> Result<(), Error> {
        self.file.sync()
    }

    /// Flush, and write the index of every file beside the first (`crawl.cdxj`).
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.file.flush()?;
        write_index(&self.base, self.number)
    }
}

fn absolute(path: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(path).map_err(|source| Error::Io { path: path.to_owned(), source })
}

/// The room a record's headers and its HTTP head may take beside a body at the cap.
const HEADS: usize = 1 << 20;

/// The payload `stored` holds, read from its response record, and the record's
/// `WARC-Payload-Digest`; at most `max_body` bytes of it.
///
/// # Errors
///
/// What is wrong, in words: the file shorter than said, not a record there, a body over
/// `max_body`.
pub(crate) fn read_payload(stored: &Stored, max_body: usize) -> Result<(Vec<u8>, String), String> {
    let shown = stored.file.display();
    let record =
        read_record(stored, max_body.saturating_add(HEADS), true).map_err(|e| format!("{shown}: {e}"))?;
    let not_a_response = || format!("{shown} at {}: not a response record", stored.offset);
    let (head, block) = split_record(&record).ok_or_else(not_a_response)?;
    if field(&head, "WARC-Type").as_deref() != Some("response") {
        return Err(not_a_response());
    }
    let length: usize =
        field(&head, "Content-Length").and_then(|n| n.parse().ok()).ok_or_else(not_a_response)?;
    let block = block.get(..length).ok_or_else(not_a_response)?;
    let body_start = block.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(not_a_response)? + 4;
    let payload = block.get(body_start..).unwrap_or_default();
    if payload.len() > max_body {
        return Err(format!("body over the cap of {max_body} bytes"));
    }
    Ok((payload.to_vec(), field(&head, "WARC-Payload-Digest").unwrap_or_default()))
}

/// The `WARC-Payload-Digest` of the response record `stored` names, read from its
/// headers alone: `None` when there is no such record there (the file gone, cut back,
/// written over, or not an archive's).
#[cfg_attr(not(feature = "state"), allow(dead_code))]
pub(crate) fn stored_digest(stored: &Stored) -> Option<String> {
    if !stored.file.to_string_lossy().ends_with(".warc.gz") {
        return None;
    }
    // The headers come first, in the member's first few kilobytes.
    let start = Stored { length: stored.length.min(16 * 1024), ..stored.clone() };
    let record = read_record(&start, 64 * 1024, false).ok()?;
    let (head, _) = split_record(&record)?;
    (field(&head, "WARC-Type").as_deref() == Some("response")).then(|| field(&head, "WARC-Payload-Digest"))?
}

/// The gzip member `stored` names, inflated, at most `limit` bytes of it; unless `whole`,
/// `stored` may name only its start, which inflates as far as it goes.
fn read_record(stored: &Stored, limit: usize, whole: bool) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek as _, SeekFrom};
    let mut file = std::fs::File::open(&stored.file)?;
    file.seek(SeekFrom::Start(stored.offset))?;
    let mut member = Vec::new();
    file.take(stored.length).read_to_end(&mut member)?;
    let mut record = Vec::new();
    let inflated = flate2::read::GzDecoder::new(&member[..])
        .take(u64::try_from(limit).unwrap_or(u64::MAX))
        .read_to_end(&mut record);
    match inflated {
        Ok(_) => Ok(record),
        Err(_) if !whole && !record.is_empty() => Ok(record),
        Err(error) => Err(error),
    }
}

/// A record's headers, as text, and what follows them.
fn split_record(record: &[u8]) -> Option<(String, &[u8])> {
    let end = record.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((String::from_utf8_lossy(&record[..end]).into_owned(), record.get(end + 4..)?))
}

/// A header of a record's `head`, by its name in any case.
fn field(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        line.split_once(": ").filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_owned())
    })
}

/// A new file of an archive at `path`, opened by a `warcinfo` record.
fn new_file(path: &Path) -> Result<AppendFile, Error> {
    let mut file = AppendFile::create(path)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let fields =
        format!("software: spiderling/{}\r\nformat: WARC File Format 1.1\r\n", env!("CARGO_PKG_VERSION"));
    let info = record(
        "warcinfo",
        &record_id(),
        &spider_settings::rfc3339(SystemTime::now()),
        "",
        &[("WARC-Filename", &name), ("Content-Type", "application/warc-fields")],
        fields.as_bytes(),
    );
    file.write_all(&gzip(&info))?;
    Ok(file)
}

/// Delete the files of the archive `base` numbered after `last`.
fn remove_files_after(base: &Path, last: u64) -> Result<(), Error> {
    for number in series(base).into_iter().filter(|number| *number > last) {
        let path = file_path(base, number);
        match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Io { path, source: error })
            }
            _ => {}
        }
    }
    Ok(())
}

/// The numbers of the files of the archive `base` there are, in order: read from its
/// folder, so that a gap in the series hides none.
pub(crate) fn series(base: &Path) -> Vec<u64> {
    let folder = match base.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut numbers: Vec<u64> = entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            let name = name.to_str()?;
            let base_name = base.file_name()?.to_str()?;
            if name == base_name {
                return Some(0);
            }
            let stem = base_name.strip_suffix(".warc.gz").unwrap_or(base_name);
            let digits = name.strip_prefix(stem)?.strip_prefix('-')?.strip_suffix(".warc.gz")?;
            (digits.len() == 5).then(|| digits.parse().ok()).flatten().filter(|number| *number > 0)
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// One uncompressed record.
fn record(kind: &str, id: &str, date: &str, uri: &str, fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut out = format!("WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {id}\r\nWARC-Date: {date}\r\n");
    if !uri.is_empty() {
        out.push_str(&format!("WARC-Target-URI: {uri}\r\n"));
    }
    for (name, value) in fields {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("WARC-Block-Digest: {}\r\nContent-Length: {}\r\n\r\n", sha1(block), block.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(block);
    out.extend_from_slice(b"\r\n\r\n");
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder =
        flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 3), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

fn record_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // Version 4 (random), variant 1: the fixed digits of a random UUID.
    let variant = ["8", "9", "a", "b"][usize::from(bytes[8] % 4)];
    format!(
        "<urn:uuid:{}-{}-4{}-{variant}{}-{}>",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// `sha1:` and the digest in base 32, as WARC tools write it.
fn sha1(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes);
    format!("sha1:{}", data_encoding::BASE32.encode(digest.as_ref()))
}

/// The CDXJ index of the archive `base`, files 0 to `last`, written beside the first: a
/// line per response and revisit record (`SURT TIMESTAMP {json}` naming its file),
/// sorted, read back from the files themselves so it always matches what they hold.
fn write_index(base: &Path, last: u64) -> Result<(), Error> {
    let mut lines = Vec::new();
    for number in series(base).into_iter().filter(|number| *number <= last) {
        index_file(&file_path(base, number), &mut lines)?;
    }
    lines.sort();
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    std::fs::write(index_path(base), out).map_err(|source| Error::Io { path: index_path(base), source })
}

/// The index lines of one file of an archive.
fn index_file(path: &Path, lines: &mut Vec<String>) -> Result<(), Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let data = std::fs::read(path).map_err(io)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut at = 0;
    while at < data.len() {
        let mut decoder = flate2::bufread::GzDecoder::new(&data[at..]);
        let mut member = Vec::new();
        if decoder.read_to_end(&mut member).is_err() {
            break;
        }
        let length = data.len() - at - decoder.into_inner().len();
        if let Some(line) = index_line(&member, at, length, &name) {
            lines.push(line);
        }
        at += length.max(1);
    }
    Ok(())
}

/// `crawl.warc.gz` → `crawl.cdxj`.
pub(crate) fn index_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".warc.gz").unwrap_or(&name);
    path.with_file_name(format!("{stem}.cdxj"))
}

fn index_line(record: &[u8], offset: usize, length: usize, file: &str) -> Option<String> {
    let (head, block) = split_record(record)?;
    let field = |name: &str| field(&head, name);
    let kind = field("WARC-Type")?;
    if kind != "response" && kind != "revisit" {
        return None;
    }
    let uri = field("WARC-Target-URI")?;
    let date = field("WARC-Date")?;
    let block = String::from_utf8_lossy(block);
    let status = block.split_whitespace().nth(1).unwrap_or("-").to_owned();
    let mime = block
        .lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| line.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-type")))
        .map(|(_, v)| v.split(';').next().unwrap_or("").trim().to_owned())
        .unwrap_or_default();
    let timestamp: String = date.chars().filter(char::is_ascii_digit).take(14).collect();
    let mut entry = serde_json::json!({
        "url": uri, "mime": mime, "status": status,
        "digest": field("WARC-Payload-Digest").unwrap_or_default(),
        "length": length.to_string(), "offset": offset.to_string(), "filename": file,
    });
    if kind == "revisit" {
        entry["mime"] = serde_json::Value::from("warc/revisit");
    }
    Some(format!("{} {timestamp} {entry}", surt(&uri)))
}

/// The URL's Sort-friendly URI Reordering Transform: `com,example)/path?query`.
fn surt(uri: &str) -> String {
    let Ok(url) = url::Url::parse(uri) else { return uri.to_owned() };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let host = if url.host().is_some_and(|h| !matches!(h, url::Host::Domain(_))) {
        host
    } else {
        let labels: Vec<&str> = host.split('.').rev().collect();
        let labels = if labels.last() == Some(&"www") { &labels[..labels.len() - 1] } else { &labels[..] };
        labels.join(",")
    };
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
    format!("{host}{port}){}{query}", url.path().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha1_in_base32_and_urls_sort_by_their_host_reversed() {
        assert_eq!(sha1(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        assert_eq!(surt("https://www.Example.com/A?b=1"), "com,example)/a?b=1");
        assert_eq!(surt("http://127.0.0.1:8765/x"), "127.0.0.1:8765)/x");
        assert_eq!(index_path(Path::new("/tmp/crawl.warc.gz")), Path::new("/tmp/crawl.cdxj"));
        let id = record_id();
        assert_eq!((id.len(), &id[24..25]), (47, "4"), "{id}");
        assert!("89ab".contains(&id[29..30]), "{id}");
    }

    /// A 200 to a GET of `url` with `body`, as a task archives it.
    fn answer(url: &str, body: &[u8]) -> Archived {
        let url = url::Url::parse(url).unwrap_or_else(|e| panic!("{e}"));
        Archived::new(&url, "GET", "ua", StatusCode::OK, Version::HTTP_11, &HeaderMap::new(), body)
    }

    #[test]
    fn a_payload_written_before_is_a_revisit_and_each_is_read_back_where_it_first_lies() -> Result<(), Error>
    {
        let dir = std::env::temp_dir().join(format!("spiderling-warc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let path = dir.join("t.warc.gz");
        let mut file = WarcFile::create(&path, u64::MAX, false)?;
        let page = |url: &str| answer(url, b"same body");
        let first = file.write(&page("http://a.example/1"))?;
        let again = file.write(&page("http://a.example/2"))?;
        assert_eq!(first, again, "the revisit's payload is where the first record has it");
        file.finish()?;
        let index = std::fs::read_to_string(dir.join("t.cdxj")).unwrap_or_default();
        let lines: Vec<&str> = index.lines().collect();
        assert_eq!(lines.len(), 2, "{index}");
        assert!(lines[0].starts_with("example,a)/1 ") && lines[0].contains("\"status\":\"200\""), "{index}");
        assert!(lines[1].starts_with("example,a)/2 ") && lines[1].contains("warc/revisit"), "{index}");
        let stored = first.unwrap_or_else(|| panic!("a 200 has a payload"));
        let (payload, digest) = read_payload(&stored, 100).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (payload.as_slice(), digest.as_str()),
            (&b"same body"[..], page("http://a.example/3").digest())
        );
        assert!(read_payload(&stored, 4).is_err_and(|e| e.contains("over the cap")));
        let shifted = Stored { offset: stored.offset + 1, ..stored.clone() };
        assert!(read_payload(&shifted, 100).is_err(), "not a record there");
        assert_eq!(stored_digest(&stored).as_deref(), Some(digest.as_str()), "read from the headers alone");
        assert_eq!(stored_digest(&shifted), None);
        // A new archive that goes on after the files there, for the cache's sake.
        let mut next = WarcFile::create(&path, u64::MAX, true)?;
        let moved = next.write(&page("http://a.example/4"))?.unwrap_or_else(|| panic!("a payload"));
        assert_eq!(moved.file, file_path(&path, 1));
        next.finish()?;
        assert!(read_payload(&stored, 100).is_ok(), "the first file is left as it was");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn past_its_size_the_archive_goes_on_in_a_new_file_and_a_resume_drops_what_came_after(
    ) -> Result<(), Error> {
        let dir = std::env::temp_dir().join(format!("spiderling-warc-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let base = dir.join("r.warc.gz");
        let page = |n: usize| {
            let body = format!("page {n} {}", "x".repeat(n * 97));
            answer(&format!("http://a.example/{n}"), body.as_bytes())
        };
        let mut file = WarcFile::create(&base, 1, false)?;
        file.write(&page(1))?;
        file.write(&page(2))?;
        let committed = file.flush()?;
        assert_eq!(committed.file, 1, "the second page opened the second file");
        file.write(&page(3))?;
        file.flush()?;
        assert!(file_path(&base, 2).exists());
        drop(file);
        // Killed after the third page: its file was never committed.
        let mut file = WarcFile::resume(&base, committed, 1)?;
        assert!(!file_path(&base, 2).exists(), "the file after the checkpoint's is deleted");
        file.write(&page(4))?;
        file.finish()?;
        let index = std::fs::read_to_string(dir.join("r.cdxj")).unwrap_or_default();
        let files: Vec<String> = index
            .lines()
            .map(|line| {
                line.split("\"filename\":\"")
                    .nth(1)
                    .unwrap_or_default()
                    .split('"')
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        assert_eq!(files, ["r.warc.gz", "r-00001.warc.gz", "r-00002.warc.gz"], "{index}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
