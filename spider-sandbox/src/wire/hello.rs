//! The TLS ClientHello as it came off the socket, and the JA3 and JA4 fingerprints of it.
//!
//! rustls parses the hello too, but keeps neither the extensions' order nor the GREASE
//! values, which are what tell one TLS library from another; so the first record is read
//! here, byte by byte, before rustls gets it.
//!
//! JA4 (FoxIO's spec): `t13d1516h2_<ciphers>_<extensions>`: transport, highest version,
//! SNI present (`d`) or not (`i`), cipher and extension counts, first and last character
//! of the first ALPN value; then the first 12 hex digits of the SHA-256 of the ciphers
//! sorted, and of the extensions sorted (SNI and ALPN left out) with the signature
//! algorithms in their order. Sorting makes it stable across Chrome's shuffled extension
//! order, which changes JA3 on every connection.

use std::fmt::Write as _;

/// What a ClientHello said, as fingerprints read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// The legacy version field (`0x0303` for TLS 1.2 and 1.3).
    pub legacy_version: u16,
    /// Cipher suites in order, GREASE values kept.
    pub ciphers: Vec<u16>,
    /// Extension types in order, GREASE values kept.
    pub extensions: Vec<u16>,
    /// The server name asked for, if any.
    pub server_name: Option<String>,
    /// ALPN protocols offered, in order.
    pub alpn: Vec<String>,
    /// Supported groups (elliptic curves), in order.
    pub groups: Vec<u16>,
    /// EC point formats.
    pub point_formats: Vec<u8>,
    /// Signature algorithms, in order.
    pub signature_algorithms: Vec<u16>,
    /// Versions of the `supported_versions` extension.
    pub versions: Vec<u16>,
}

/// GREASE values (RFC 8701): `0x?a?a`, sent to keep servers honest, ignored by fingerprints.
pub fn is_grease(value: u16) -> bool {
    value & 0x0f0f == 0x0a0a && value >> 8 == value & 0xff
}

/// How many bytes of a stream's start hold the whole first handshake message, once
/// `bytes` holds enough to tell: `Ok(None)` to read more, `Err` when it is no TLS
/// ClientHello at all.
pub(crate) fn hello_len(bytes: &[u8]) -> Result<Option<usize>, &'static str> {
    // Handshake messages may span records; the hello is gathered across them.
    let mut message = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = bytes.get(at..at + 5) else { return Ok(None) };
        if header[0] != 22 {
            return Err("not a TLS handshake");
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let Some(body) = bytes.get(at + 5..at + 5 + len) else { return Ok(None) };
        message.extend_from_slice(body);
        at += 5 + len;
        if message.len() >= 4 {
            if message[0] != 1 {
                return Err("not a ClientHello");
            }
            let want =
                4 + (usize::from(message[1]) << 16 | usize::from(message[2]) << 8 | usize::from(message[3]));
            if message.len() >= want {
                return Ok(Some(at));
            }
        }
    }
}

impl ClientHello {
    /// Parse the records `bytes` holds (as [`hello_len`] measured them).
    pub(crate) fn parse(bytes: &[u8]) -> Option<ClientHello> {
        let mut message = Vec::new();
        let mut at = 0;
        while let Some(header) = bytes.get(at..at + 5) {
            let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
            message.extend_from_slice(bytes.get(at + 5..at + 5 + len)?);
            at += 5 + len;
        }
        let mut r = Reader(message.get(4..)?);
        let mut hello = ClientHello { legacy_version: r.u16()?, ..ClientHello::default() };
        r.take(32)?; // random
        let session = usize::from(r.u8()?);
        r.take(session)?;
        let mut ciphers = Reader(r.vec16()?);
        while let Some(cipher) = ciphers.u16() {
            hello.ciphers.push(cipher);
        }
        let compression = usize::from(r.u8()?);
        r.take(compression)?;
        let Some(mut extensions) = r.vec16().map(Reader) else { return Some(hello) };
        while let Some(kind) = extensions.u16() {
            let mut data = Reader(extensions.vec16()?);
            hello.extensions.push(kind);
            match kind {
                0x0000 => {
                    let mut list = Reader(data.vec16()?);
                    if list.u8()? == 0 {
                        hello.server_name = Some(String::from_utf8_lossy(list.vec16()?).into_owned());
                    }
                }
                0x0010 => {
                    let mut list = Reader(data.vec16()?);
                    while let Some(name) = list.vec8() {
                        hello.alpn.push(String::from_utf8_lossy(name).into_owned());
                    }
                }
                0x000a => hello.groups = Reader(data.vec16()?).u16s(),
                0x000b => hello.point_formats = data.vec8()?.to_vec(),
                0x000d => hello.signature_algorithms = Reader(data.vec16()?).u16s(),
                0x002b => hello.versions = Reader(data.vec8()?).u16s(),
                _ => {}
            }
        }
        Some(hello)
    }

    /// The JA3 text: version, ciphers, extensions, groups, point formats, GREASE left out.
    pub fn ja3(&self) -> String {
        let list = |values: &[u16]| {
            values.iter().filter(|v| !is_grease(**v)).map(u16::to_string).collect::<Vec<_>>().join("-")
        };
        let formats = self.point_formats.iter().map(u8::to_string).collect::<Vec<_>>().join("-");
        format!(
            "{},{},{},{},{formats}",
            self.legacy_version,
            list(&self.ciphers),
            list(&self.extensions),
            list(&self.groups)
        )
    }

    /// The MD5 of [`ja3`](Self::ja3), as JA3 databases list it.
    pub fn ja3_hash(&self) -> String {
        use md5::Digest as _;
        hex(&md5::Md5::digest(self.ja3().as_bytes()))
    }

    /// The JA4 of the hello as a first handshake would send it: a resumed session adds
    /// `pre_shared_key` (and may add `early_data`), which a browser sends on every
    /// connection after its first to a host, so a check that knows a browser's first
    /// hello knows its later ones by this.
    pub fn ja4_unresumed(&self) -> String {
        let mut first = self.clone();
        first.extensions.retain(|kind| !matches!(kind, 0x0029 | 0x002a));
        first.ja4()
    }

    /// The JA4 fingerprint (see the module's doc).
    pub fn ja4(&self) -> String {
        let versions =
            if self.versions.is_empty() { vec![self.legacy_version] } else { self.versions.clone() };
        let version = match versions.into_iter().filter(|v| !is_grease(*v)).max().unwrap_or(0) {
            0x0304 => "13",
            0x0303 => "12",
            0x0302 => "11",
            0x0301 => "10",
            0x0300 => "s3",
            _ => "00",
        };
        let sni = if self.extensions.contains(&0x0000) { 'd' } else { 'i' };
        let ciphers: Vec<u16> = self.ciphers.iter().copied().filter(|c| !is_grease(*c)).collect();
        let extensions: Vec<u16> = self.extensions.iter().copied().filter(|e| !is_grease(*e)).collect();
        let alpn = match self.alpn.first().map(String::as_bytes) {
            Some([one]) => format!("{}{}", char::from(*one), char::from(*one)),
            Some([first, .., last]) => format!("{}{}", char::from(*first), char::from(*last)),
            _ => "00".to_owned(),
        };
        let hex_list =
            |values: &[u16]| values.iter().map(|v| format!("{v:04x}")).collect::<Vec<_>>().join(",");
        let mut sorted_ciphers = ciphers.clone();
        sorted_ciphers.sort_unstable();
        let mut sorted_extensions: Vec<u16> =
            extensions.iter().copied().filter(|e| *e != 0x0000 && *e != 0x0010).collect();
        sorted_extensions.sort_unstable();
        let mut c = hex_list(&sorted_extensions);
        let algorithms: Vec<u16> =
            self.signature_algorithms.iter().copied().filter(|a| !is_grease(*a)).collect();
        if !algorithms.is_empty() {
            c.push('_');
            c.push_str(&hex_list(&algorithms));
        }
        let truncated = |text: &str| {
            if text.is_empty() {
                "000000000000".to_owned()
            } else {
                hex(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())[..12].to_owned()
            }
        };
        format!(
            "t{version}{sni}{:02}{:02}{alpn}_{}_{}",
            ciphers.len().min(99),
            extensions.len().min(99),
            truncated(&hex_list(&sorted_ciphers)),
            truncated(&c)
        )
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// A cursor over a hello's bytes; every read checks the length, so a short or lying
/// hello parses to `None`, never a panic.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    fn vec8(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(self.u8()?);
        self.take(len)
    }

    fn vec16(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(self.u16()?);
        self.take(len)
    }

    fn u16s(mut self) -> Vec<u16> {
        std::iter::from_fn(|| self.u16()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hello as a record: TLS 1.3 through `supported_versions`, one GREASE cipher and
    /// extension, SNI, ALPN `h2`, two signature algorithms.
    fn record() -> Vec<u8> {
        let ext = |kind: u16, data: &[u8]| {
            let mut e = kind.to_be_bytes().to_vec();
            e.extend_from_slice(&(data.len() as u16).to_be_bytes());
            e.extend_from_slice(data);
            e
        };
        let mut extensions = Vec::new();
        extensions.extend(ext(0x1a1a, &[]));
        extensions
            .extend(ext(0x0000, &[0, 12, 0, 0, 9, b'l', b'o', b'c', b'a', b'l', b'h', b'o', b's', b't']));
        extensions.extend(ext(0x0010, &[0, 3, 2, b'h', b'2']));
        extensions.extend(ext(0x000d, &[0, 4, 0x04, 0x03, 0x08, 0x04]));
        extensions.extend(ext(0x002b, &[4, 0x03, 0x04, 0x03, 0x03]));
        let mut body = vec![0x03, 0x03];
        body.extend([0; 32]);
        body.push(0);
        body.extend([0, 6, 0x2a, 0x2a, 0x13, 0x01, 0x13, 0x02]);
        body.extend([1, 0]);
        body.extend((extensions.len() as u16).to_be_bytes());
        body.extend(extensions);
        let mut message = vec![1, 0, (body.len() >> 8) as u8, body.len() as u8];
        message.extend(body);
        let mut record = vec![22, 3, 1, (message.len() >> 8) as u8, message.len() as u8];
        record.extend(message);
        record
    }

    #[test]
    fn a_hello_is_read_whole_and_fingerprinted_without_grease() {
        let bytes = record();
        assert_eq!(hello_len(&bytes[..bytes.len() - 1]), Ok(None));
        assert_eq!(hello_len(&bytes), Ok(Some(bytes.len())));
        assert_eq!(hello_len(b"GET / HTTP/1.1\r\n"), Err("not a TLS handshake"));
        let hello = ClientHello::parse(&bytes).unwrap();
        assert_eq!(hello.server_name.as_deref(), Some("localhost"));
        assert_eq!(hello.alpn, ["h2"]);
        assert_eq!(hello.ja3(), "771,4865-4866,0-16-13-43,,");
        let ja4 = hello.ja4();
        assert!(ja4.starts_with("t13d0204h2_"), "{ja4}");
        // The second part is the SHA-256 of "1301,1302".
        assert_eq!(
            &ja4[11..23],
            &hex(ring::digest::digest(&ring::digest::SHA256, b"1301,1302").as_ref())[..12]
        );
        assert!(is_grease(0xdada) && !is_grease(0x0a1a));
    }

    #[test]
    fn a_cut_or_lying_hello_parses_to_nothing() {
        let bytes = record();
        for end in 5..bytes.len() {
            let mut cut = bytes[..end].to_vec();
            // The record claims only what is there, the message more.
            let len = (end - 5) as u16;
            cut[3..5].copy_from_slice(&len.to_be_bytes());
            let _ = ClientHello::parse(&cut);
        }
    }
}
