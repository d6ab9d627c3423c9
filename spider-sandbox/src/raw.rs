//! A server that writes whatever bytes a test gives it, for the answers a well-behaved
//! HTTP server will not send: a redirect to `javascript:` or to another host, a status
//! line of its own.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections a [`RawSite`] answers before it stops by itself.
const MOST_CONNECTIONS: usize = 50;

/// A server on one loopback address answering each request with the bytes `answer` gives
/// for its path, one request a connection, counting them; it stops after 50 connections.
///
/// # Examples
///
/// ```
/// use spider_sandbox::RawSite;
///
/// let site = RawSite::start("127.0.0.1", |_path| {
///     "HTTP/1.1 302 Found\r\nLocation: javascript:alert(1)\r\nContent-Length: 0\r\n\r\n".to_owned()
/// })?;
/// assert!(site.url().starts_with("http://127.0.0.1:"));
/// assert_eq!(site.received(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RawSite {
    url: String,
    received: Arc<AtomicUsize>,
}

impl RawSite {
    /// Listen on a free port of `ip` (any loopback address: `127.0.0.2` is another host).
    ///
    /// # Errors
    ///
    /// When the address cannot be bound.
    pub fn start(ip: &str, answer: impl Fn(&str) -> String + Send + 'static) -> std::io::Result<RawSite> {
        let listener = TcpListener::bind((ip, 0))?;
        let address = listener.local_addr()?;
        let received = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(MOST_CONNECTIONS) {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let _ = stream.write_all(answer(&path).as_bytes());
            }
        });
        Ok(RawSite { url: format!("http://{address}/"), received })
    }

    /// The site's root URL, with a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many requests it has answered.
    pub fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }
}
