//! What an HTTP/2 client says before its first request: the SETTINGS it sends and their
//! order, its connection WINDOW_UPDATE, PRIORITY frames, and the order of the pseudo-headers
//! in its first HEADERS frame. hyper answers the connection and keeps none of that, so the
//! bytes it reads pass through a tap (`tap.rs`) that keeps the first of them.
//!
//! Written as Akamai's HTTP/2 fingerprint is: `1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p`.

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a client's HTTP/2 preface said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct H2Preface {
    /// SETTINGS of its first SETTINGS frame, as `(identifier, value)` in order.
    pub settings: Vec<(u16, u32)>,
    /// The increment of its first connection-level WINDOW_UPDATE, if any.
    pub window_update: Option<u32>,
    /// PRIORITY frames before the first request: `(stream, exclusive, depends on, weight)`.
    pub priorities: Vec<(u32, bool, u32, u8)>,
    /// The pseudo-headers of the first HEADERS frame in order, by first letter after the
    /// colon: `m`ethod, `a`uthority, `s`cheme, `p`ath.
    pub pseudo_order: String,
}

impl H2Preface {
    /// Read the preface from the first bytes of a connection; `None` until its first
    /// HEADERS frame has arrived, or when the bytes are not HTTP/2.
    pub fn parse(bytes: &[u8]) -> Option<H2Preface> {
        let mut frames = bytes.strip_prefix(PREFACE)?;
        let mut preface = H2Preface::default();
        let mut seen_settings = false;
        while frames.len() >= 9 {
            let len = usize::from(frames[0]) << 16 | usize::from(frames[1]) << 8 | usize::from(frames[2]);
            let (kind, flags) = (frames[3], frames[4]);
            let stream = u32::from_be_bytes([frames[5], frames[6], frames[7], frames[8]]) & 0x7fff_ffff;
            let payload = frames.get(9..9 + len)?;
            frames = &frames[9 + len..];
            match kind {
                // SETTINGS, not its acknowledgement.
                4 if flags & 1 == 0 && !seen_settings => {
                    seen_settings = true;
                    preface.settings = payload
                        .chunks_exact(6)
                        .map(|s| {
                            (u16::from_be_bytes([s[0], s[1]]), u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
                        })
                        .collect();
                }
                8 if stream == 0 && preface.window_update.is_none() && payload.len() == 4 => {
                    let increment = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                    preface.window_update = Some(increment & 0x7fff_ffff);
                }
                2 if payload.len() == 5 => {
                    let dependency = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                    preface.priorities.push((
                        stream,
                        dependency >> 31 == 1,
                        dependency & 0x7fff_ffff,
                        payload[4],
                    ));
                }
                1 => {
                    let mut block = payload;
                    if flags & 0x8 != 0 {
                        let pad = usize::from(*block.first()?);
                        block = block.get(1..block.len().checked_sub(pad)?)?;
                    }
                    if flags & 0x20 != 0 {
                        block = block.get(5..)?;
                    }
                    preface.pseudo_order = pseudo_order(block);
                    return Some(preface);
                }
                _ => {}
            }
        }
        None
    }

    /// Akamai's text: settings, window update, priorities, pseudo-header order.
    pub fn fingerprint(&self) -> String {
        let settings: Vec<String> = self.settings.iter().map(|(id, value)| format!("{id}:{value}")).collect();
        let priorities: Vec<String> = self
            .priorities
            .iter()
            .map(|(stream, exclusive, on, weight)| format!("{stream}:{}:{on}:{weight}", u8::from(*exclusive)))
            .collect();
        format!(
            "{}|{}|{}|{}",
            settings.join(";"),
            self.window_update.map_or_else(|| "00".to_owned(), |w| w.to_string()),
            if priorities.is_empty() { "0".to_owned() } else { priorities.join(",") },
            self.pseudo_order.chars().map(String::from).collect::<Vec<_>>().join(",")
        )
    }
}

/// The pseudo-headers at the start of an HPACK block, in order. Every pseudo-header name
/// is in HPACK's static table (indices 1 to 7), so the walk reads indices and string
/// lengths only, and stops at the first field that is not one: no Huffman decoding.
fn pseudo_order(mut block: &[u8]) -> String {
    let mut order = String::new();
    while let Some(&first) = block.first() {
        let (index, literal) = if first & 0x80 != 0 {
            (integer(&mut block, 7), false)
        } else if first & 0xc0 == 0x40 {
            (integer(&mut block, 6), true)
        } else if first & 0xe0 == 0x20 {
            // A dynamic table size update: no field.
            integer(&mut block, 5);
            continue;
        } else {
            (integer(&mut block, 4), true)
        };
        let letter = match index {
            Some(1) => 'a',
            Some(2 | 3) => 'm',
            Some(4 | 5) => 'p',
            Some(6 | 7) => 's',
            _ => break,
        };
        order.push(letter);
        if literal && skip_string(&mut block).is_none() {
            break;
        }
    }
    order
}

/// An HPACK integer with a `prefix`-bit prefix (RFC 7541 §5.1), taken off `block`.
fn integer(block: &mut &[u8], prefix: u32) -> Option<usize> {
    let mask = (1usize << prefix) - 1;
    let (&first, mut rest) = block.split_first()?;
    let mut value = usize::from(first) & mask;
    if value == mask {
        let mut shift = 0;
        loop {
            let (&byte, tail) = rest.split_first()?;
            rest = tail;
            value = value.checked_add(usize::from(byte & 0x7f).checked_shl(shift)?)?;
            shift += 7;
            if byte & 0x80 == 0 || shift > 28 {
                break;
            }
        }
    }
    *block = rest;
    Some(value)
}

fn skip_string(block: &mut &[u8]) -> Option<()> {
    let len = integer(block, 7)?;
    *block = block.get(len..)?;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend(stream.to_be_bytes());
        f.extend(payload);
        f
    }

    #[test]
    fn a_chrome_like_preface_reads_as_akamais_fingerprint() {
        let mut bytes = PREFACE.to_vec();
        let settings: Vec<u8> = [(1u16, 65536u32), (2, 0), (4, 6_291_456), (6, 262_144)]
            .iter()
            .flat_map(|(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
            .collect();
        bytes.extend(frame(4, 0, 0, &settings));
        bytes.extend(frame(8, 0, 0, &15_663_105u32.to_be_bytes()));
        // :method GET (2), :authority literal "localhost" (name 1, indexed), :scheme https (7),
        // :path / (4), then a header with a new name.
        let mut block = vec![0x82, 0x41, 9];
        block.extend(b"localhost");
        block.extend([0x87, 0x84, 0x40, 3]);
        block.extend(b"foo");
        let mut headers = vec![0x80, 0, 0, 0, 255];
        headers.extend(block);
        bytes.extend(frame(1, 0x24, 1, &headers));
        assert_eq!(H2Preface::parse(&bytes[..bytes.len() - 3]), None, "the HEADERS frame is not whole");
        let preface = H2Preface::parse(&bytes).unwrap();
        assert_eq!(preface.fingerprint(), "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p");
        assert_eq!(H2Preface::parse(b"GET / HTTP/1.1\r\n\r\n"), None);
    }
}
