//! The workers' output files as the fleet committed them: how much of each holds the
//! items of requests the fleet counts as that worker's, and the one file with every item
//! once that the committed parts make (`spiderling fleet --merge OUT`).
//!
//! Each worker's checkpoint sends its output's length with the ends of the requests whose
//! items it holds, in one round (`round.lua`, `P:outputs`). Past that length lie the items
//! of requests the fleet did not hear the end of: a worker killed there leaves them, and
//! another worker fetches those requests again and writes them too. A worker started again
//! on the same file cuts it back; a file left as it was has a tail the merge leaves out.
//!
//! A round that reaches Redis only after one of its requests was given to another worker
//! (the worker was cut off past its lease) is void (`round.lua`): its requests are fetched
//! again, and its stretch of the output is not committed, the worker cutting it out of its
//! file (`Sink::cut`) before it commits more; a stretch it cannot cut (at the file's start,
//! or the worker stopped first) is a gap, left out of the count and the merge.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::Error;
use crate::sinks::{Committed, Format};

/// One worker's output file in a fleet's crawl.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FleetOutput {
    /// The machine it was written on (its hostname).
    pub host: String,
    /// Its path there.
    pub path: String,
    /// Bytes committed with the ends of its worker's requests, gaps included.
    pub bytes: u64,
    /// Items in those bytes, less those of the gaps: the file's share of the crawl.
    pub items: u64,
    /// Stretches of those bytes left out, `[from, to)`: the items of void rounds, which
    /// other workers wrote too.
    pub gaps: Vec<(u64, u64)>,
    /// Bytes beyond them in the file, when it is on this machine: items of requests the
    /// fleet may have had fetched again elsewhere.
    pub tail: Option<u64>,
}

impl FleetOutput {
    /// From the `P:outputs` field `HOST:PATH` and its value, with its gaps from `P:gaps`
    /// (`[from, to, items]` each).
    pub(crate) fn read(file: &str, json: &str, gaps: &[(u64, u64, u64)], here: &str) -> Option<FleetOutput> {
        let (host, path) = file.split_once(':')?;
        let recorded = read_committed(json).ok()?;
        let tail = (host == here)
            .then(|| std::fs::metadata(path).ok())
            .flatten()
            .map(|meta| meta.len().saturating_sub(recorded.bytes));
        let left_out: u64 = gaps.iter().map(|gap| gap.2).sum();
        let mut ranges: Vec<(u64, u64)> = gaps.iter().map(|gap| (gap.0, gap.1)).collect();
        ranges.sort_unstable();
        Some(FleetOutput {
            host: host.to_owned(),
            path: path.to_owned(),
            bytes: recorded.bytes,
            items: recorded.items.saturating_sub(left_out),
            gaps: ranges,
            tail,
        })
    }
}

/// The gaps of a file as `round.lua` records them in `P:gaps`: `[[from, to, items], ...]`.
pub(crate) fn read_gaps(json: &str) -> Vec<(u64, u64, u64)> {
    serde_json::from_str(json).unwrap_or_default()
}

/// A file's committed length and items as `round.lua` records them.
pub(crate) fn read_committed(json: &str) -> Result<Committed, String> {
    #[derive(serde::Deserialize)]
    struct Recorded {
        bytes: u64,
        items: u64,
    }
    let recorded: Recorded = serde_json::from_str(json).map_err(|e| e.to_string())?;
    Ok(Committed { bytes: recorded.bytes, items: recorded.items, tail: None })
}

/// Write the committed part of every output in `outputs` to `out`, in the format its name
/// says, each item once; returns how many items. Every output must be on this machine
/// (`here`) and in the format of `out`.
pub(crate) fn merge(outputs: &[FleetOutput], here: &str, out: &Path) -> Result<u64, Error> {
    let format = Format::of(out)?;
    let mut parts = Vec::with_capacity(outputs.len());
    for output in outputs {
        if output.host != here {
            return Err(Error::Config(format!(
                "{}:{} was written on {}, not on this machine: merge where every output is (copy it here, to \
                    the same path)",
                output.host, output.path, output.host
            )));
        }
        let path = Path::new(&output.path);
        if Format::of(path)? != format {
            return Err(Error::Config(format!("{} is not in the format of {}", output.path, out.display())));
        }
        let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let committed = usize::try_from(output.bytes).unwrap_or(usize::MAX);
        let Some(part) = bytes.get(..committed) else {
            return Err(Error::Config(format!(
                "{} is {} bytes, shorter than the {} the fleet committed: it was changed outside the crawl",
                output.path,
                bytes.len(),
                output.bytes
            )));
        };
        parts.push(without_gaps(format, part, &output.gaps));
    }
    let merged = join(format, &parts);
    let mut file = std::fs::File::create(out).map_err(|source| Error::Io { path: out.to_owned(), source })?;
    file.write_all(&merged).map_err(|source| Error::Io { path: out.to_owned(), source })?;
    Ok(outputs.iter().map(|output| output.items).sum())
}

/// `part`, a committed stretch of an output in `format`, without its `gaps` (sorted
/// `[from, to)` byte ranges, each starting and ending between items). A gap at the
/// start keeps what opens the file: a CSV header, a JSON array's `[`, after which the
/// separator that led to the next item goes too.
fn without_gaps(format: Format, part: &[u8], gaps: &[(u64, u64)]) -> Vec<u8> {
    let opening = match format {
        Format::Csv => part.iter().position(|&b| b == b'\n').map_or(part.len(), |end| end + 1),
        Format::Json => part.len().min(2),
        Format::JsonLines => 0,
    };
    let mut kept = Vec::with_capacity(part.len());
    let mut at = 0;
    for &(from, to) in gaps {
        let from = usize::try_from(from).unwrap_or(usize::MAX).clamp(at.max(opening), part.len());
        let mut to = usize::try_from(to).unwrap_or(usize::MAX).clamp(from, part.len());
        kept.extend_from_slice(&part[at..from]);
        if format == Format::Json && kept.len() == opening && part[to..].starts_with(b",\n") {
            to += 2;
        }
        at = to;
    }
    kept.extend_from_slice(&part[at.min(part.len())..]);
    kept
}

/// The committed parts as one file: lines one after the other; a CSV header once; one
/// JSON array.
fn join(format: Format, parts: &[Vec<u8>]) -> Vec<u8> {
    let mut merged = Vec::new();
    match format {
        Format::Json => {
            let items: Vec<&[u8]> = parts
                .iter()
                .filter_map(|part| part.strip_prefix(b"[\n"))
                .filter(|items| !items.is_empty())
                .collect();
            merged.extend_from_slice(b"[\n");
            for (i, items) in items.iter().enumerate() {
                if i > 0 {
                    merged.extend_from_slice(b",\n");
                }
                merged.extend_from_slice(items);
            }
            if items.is_empty() {
                merged.truncate(1);
                merged.extend_from_slice(b"]\n");
            } else {
                merged.extend_from_slice(b"\n]\n");
            }
        }
        Format::Csv => {
            for part in parts.iter().filter(|part| !part.is_empty()) {
                let rows = match merged.is_empty() {
                    true => &part[..],
                    false => part.iter().position(|&b| b == b'\n').map_or(&[][..], |end| &part[end + 1..]),
                };
                merged.extend_from_slice(rows);
            }
        }
        Format::JsonLines => parts.iter().for_each(|part| merged.extend_from_slice(part)),
    }
    merged
}

/// This machine's name, to tell workers apart in `spiderling fleet`.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "worker".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_parts_join_into_one_file_of_their_format() {
        let lines = join(Format::JsonLines, &[b"{\"a\":1}\n".to_vec(), b"{\"b\":2}\n".to_vec()]);
        assert_eq!(lines, b"{\"a\":1}\n{\"b\":2}\n");
        let csv = join(Format::Csv, &[b"t,p\nx,1\n".to_vec(), b"t,p\ny,2\n".to_vec(), Vec::new()]);
        assert_eq!(csv, b"t,p\nx,1\ny,2\n");
        let json =
            join(Format::Json, &[b"[\n{\"a\":1},\n{\"c\":3}".to_vec(), b"[\n{\"b\":2}".to_vec(), Vec::new()]);
        assert_eq!(json, b"[\n{\"a\":1},\n{\"c\":3},\n{\"b\":2}\n]\n");
        assert_eq!(join(Format::Json, &[Vec::new()]), b"[]\n");
    }

    #[test]
    fn gaps_leave_their_items_out_and_the_file_whole() {
        let lines = b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n";
        assert_eq!(without_gaps(Format::JsonLines, lines, &[(8, 16)]), b"{\"a\":1}\n{\"c\":3}\n");
        assert_eq!(without_gaps(Format::JsonLines, lines, &[(0, 8), (16, 24)]), b"{\"b\":2}\n");
        let csv = b"t,p\nx,1\ny,2\n";
        assert_eq!(without_gaps(Format::Csv, csv, &[(0, 8)]), b"t,p\ny,2\n");
        assert_eq!(without_gaps(Format::Csv, csv, &[(8, 12)]), b"t,p\nx,1\n");
        let json = b"[\n{\"a\":1},\n{\"b\":2},\n{\"c\":3}";
        assert_eq!(without_gaps(Format::Json, json, &[(0, 9)]), b"[\n{\"b\":2},\n{\"c\":3}");
        assert_eq!(without_gaps(Format::Json, json, &[(9, 18)]), b"[\n{\"a\":1},\n{\"c\":3}");
        assert_eq!(without_gaps(Format::Json, json, &[(0, 9), (9, 18)]), b"[\n{\"c\":3}");
        assert_eq!(without_gaps(Format::Json, json, &[]), json);
    }
}
