//! What a TLS client looked like on the wire: its ClientHello (JA3, JA4), the protocol
//! ALPN settled on, and for HTTP/2 its preface (SETTINGS, WINDOW_UPDATE, pseudo-header
//! order). Every TLS sandbox reads them off each connection and records them with each
//! request ([`Hit::wire`](crate::Hit::wire)); the fingerprint site judges by them.

mod h2;
mod hello;
mod tap;

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

pub use h2::H2Preface;
pub use hello::{is_grease, ClientHello};
pub(crate) use tap::Tap;

/// The largest ClientHello read; a real one is under 2 KiB, a post-quantum one under 3.
const MAX_HELLO: usize = 16 * 1024;

/// A connection's wire fingerprint, as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    /// The ClientHello as sent.
    pub hello: ClientHello,
    /// Its JA3 text.
    pub ja3: String,
    /// The MD5 of its JA3 text, as JA3 lists give it.
    pub ja3_hash: String,
    /// Its JA4.
    pub ja4: String,
    /// The protocol ALPN settled on (`h2`, `http/1.1`), if any.
    pub alpn: Option<String>,
    /// The HTTP/2 preface, on an `h2` connection.
    pub h2: Option<H2Preface>,
    /// On an HTTP/1.1 connection, the header names of its first request as written, case
    /// and all (HTTP/2 has no case: its names are lower case by rule).
    pub http1_names: Option<Vec<String>>,
}

impl Wire {
    /// The HTTP/2 fingerprint in Akamai's form, on an `h2` connection.
    pub fn h2_fingerprint(&self) -> Option<String> {
        self.h2.as_ref().map(H2Preface::fingerprint)
    }
}

/// A TLS connection being served: its hello, read before the handshake, and after it
/// the first bytes of the protocol, read when its first request arrives.
pub(crate) struct Connection {
    hello: ClientHello,
    alpn: OnceLock<Option<String>>,
    kept: OnceLock<Arc<Mutex<Vec<u8>>>>,
    seen: OnceLock<Arc<Wire>>,
}

impl Connection {
    /// Read `stream`'s ClientHello; the stream returned gives the bytes read again, so the
    /// TLS server sees the connection whole. `None` for a hello that cannot be read:
    /// the connection is not TLS, or it ended.
    pub(crate) async fn read(mut stream: TcpStream) -> Option<(Connection, Tap<TcpStream>)> {
        let mut bytes = Vec::with_capacity(2048);
        let len = loop {
            match hello::hello_len(&bytes) {
                Ok(Some(len)) => break len,
                Ok(None) if bytes.len() < MAX_HELLO => {}
                _ => return None,
            }
            if stream.read_buf(&mut bytes).await.ok()? == 0 {
                return None;
            }
        };
        let hello = ClientHello::parse(&bytes[..len])?;
        let connection =
            Connection { hello, alpn: OnceLock::new(), kept: OnceLock::new(), seen: OnceLock::new() };
        Some((connection, Tap::replaying(Bytes::from(bytes), stream)))
    }

    /// After the handshake: the protocol agreed, and the tap of an `h2` connection.
    pub(crate) fn negotiated(&self, alpn: Option<&[u8]>, kept: Arc<Mutex<Vec<u8>>>) {
        let _ = self.alpn.set(alpn.map(|p| String::from_utf8_lossy(p).into_owned()));
        let _ = self.kept.set(kept);
    }

    /// The fingerprint, once the first request has been read.
    pub(crate) fn wire(&self) -> Arc<Wire> {
        self.seen
            .get_or_init(|| {
                let alpn = self.alpn.get().cloned().flatten();
                let kept = self.kept.get().map(|kept| kept.lock().unwrap_or_else(|e| e.into_inner()).clone());
                let (h2, http1_names) = match (alpn.as_deref(), kept) {
                    (Some("h2"), Some(kept)) => (H2Preface::parse(&kept), None),
                    (_, Some(kept)) => (None, Some(http1_names(&kept))),
                    _ => (None, None),
                };
                Arc::new(Wire {
                    ja3: self.hello.ja3(),
                    ja3_hash: self.hello.ja3_hash(),
                    ja4: self.hello.ja4(),
                    hello: self.hello.clone(),
                    alpn,
                    h2,
                    http1_names,
                })
            })
            .clone()
    }
}

/// The header names of the first HTTP/1.1 request in `bytes`, as written.
fn http1_names(bytes: &[u8]) -> Vec<String> {
    let head = bytes.split(|&b| b == b'\n').skip(1);
    head.map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .take_while(|line| !line.is_empty())
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            Some(String::from_utf8_lossy(&line[..colon]).into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_heads_names_are_read_as_written() {
        let bytes =
            b"GET / HTTP/1.1\r\nHost: a\r\nsec-ch-ua: x\r\nUser-Agent: b\r\n\r\nGET /2 HTTP/1.1\r\nX: y\r\n";
        assert_eq!(http1_names(bytes), ["Host", "sec-ch-ua", "User-Agent"]);
    }
}
