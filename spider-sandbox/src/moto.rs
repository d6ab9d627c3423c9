//! A real S3-compatible server on a free loopback port: moto's server mode (PyPI's
//! `moto[server]`), for the tests of buckets as output.
//!
//! moto keeps its buckets in memory, so a restart empties them; the tests that need a
//! bucket to come back stop the crawl, not the server.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NOT_FOUND: &str = "moto_server not found: install it into a virtual environment (python3 -m venv \
     .ci/venv && .ci/venv/bin/pip install 'moto[server]'), or run `bash .ci/run`, which does; MOTO_SERVER \
         may name the program";

/// A moto server on `127.0.0.1`, on a port of its own; killed when dropped.
///
/// # Examples
///
/// ```no_run
/// let moto = spider_sandbox::MotoServer::start()?;
/// moto.create_bucket("books")?;
/// assert!(moto.keys("books", "")?.is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct MotoServer {
    port: u16,
    child: Child,
}

impl MotoServer {
    /// Start the server; returns once it answers.
    ///
    /// # Errors
    ///
    /// `NotFound` when `moto_server` is neither named by `MOTO_SERVER`, on `PATH`, nor in
    /// the checkout's `.ci/venv`; otherwise when it does not answer within 30 s.
    pub fn start() -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let child = Command::new(program()?)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut server = MotoServer { port, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.request("GET", "/", b"").is_err() {
            if let Some(status) = server.child.try_wait()? {
                return Err(io::Error::other(format!("moto_server exited at start with {status}")));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(ErrorKind::TimedOut, "moto_server did not answer within 30 s"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`, the endpoint for a client.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Make a bucket.
    ///
    /// # Errors
    ///
    /// When the server refuses or cannot be reached.
    pub fn create_bucket(&self, bucket: &str) -> io::Result<()> {
        self.request("PUT", &format!("/{bucket}"), b"").map(|_| ())
    }

    /// The keys of the objects under `prefix`, in order.
    ///
    /// # Errors
    ///
    /// When the server refuses or cannot be reached.
    pub fn keys(&self, bucket: &str, prefix: &str) -> io::Result<Vec<String>> {
        let listing =
            self.request("GET", &format!("/{bucket}?list-type=2&max-keys=1000&prefix={prefix}"), b"")?;
        let text = String::from_utf8_lossy(&listing);
        Ok(text
            .split("<Key>")
            .skip(1)
            .filter_map(|part| part.split_once("</Key>").map(|(key, _)| key.to_owned()))
            .collect())
    }

    /// An object's bytes.
    ///
    /// # Errors
    ///
    /// When there is no such object, or the server cannot be reached.
    pub fn get(&self, bucket: &str, key: &str) -> io::Result<Vec<u8>> {
        self.request("GET", &format!("/{bucket}/{key}"), b"")
    }

    /// One request, the connection closed after it; the body of a 2xx answer.
    fn request(&self, method: &str, target: &str, body: &[u8]) -> io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: \
                close\r\n\r\n",
            self.port,
            body.len()
        )?;
        stream.write_all(body)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let end =
            answer.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| io::Error::other("no head"))?;
        let head = String::from_utf8_lossy(&answer[..end]).into_owned();
        let status = head.split_whitespace().nth(1).unwrap_or("");
        if !status.starts_with('2') {
            return Err(io::Error::other(format!("{method} {target}: {head}")));
        }
        let body = answer[end + 4..].to_vec();
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            return Ok(dechunk(&body));
        }
        Ok(body)
    }
}

/// A chunked body's data.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    while let Some(line) = body.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&body[..line]).trim(), 16).unwrap_or(0);
        if size == 0 || body.len() < line + 2 + size {
            break;
        }
        data.extend_from_slice(&body[line + 2..line + 2 + size]);
        body = &body[(line + 4 + size).min(body.len())..];
    }
    data
}

fn program() -> io::Result<PathBuf> {
    if let Some(program) = std::env::var_os("MOTO_SERVER") {
        return Ok(PathBuf::from(program));
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|dir| dir.join("moto_server")).find(|p| p.is_file())
    });
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/moto_server");
    on_path
        .or_else(|| venv.is_file().then_some(venv))
        .ok_or_else(|| io::Error::new(ErrorKind::NotFound, NOT_FOUND))
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
