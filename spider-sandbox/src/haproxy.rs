//! A real HAProxy on a free loopback port in front of another server, limiting each client
//! address's request rate with a stick table, as sites put it in front of theirs.

use std::fs;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

const NOT_FOUND: &str = "haproxy not found: install it (Debian/Ubuntu: apt-get install -y haproxy; \
     macOS: brew install haproxy), set HAPROXY to its binary, or run `bash .ci/run`, which installs it";
const READY_WITHIN: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// The limit: more than `per_second` requests from one address within a second are
/// answered `status`, without reaching the server behind.
#[derive(Debug, Clone, Copy)]
pub struct HaproxyLimit {
    /// Requests a second an address may send (`sc_http_req_rate(0) gt N` denies past it).
    pub per_second: u32,
    /// The status of a refusal (`deny_status`), such as 429.
    pub status: u16,
}

/// A running HAProxy; stopped, and its directory removed, when dropped.
///
/// # Examples
///
/// ```no_run
/// use spider_sandbox::{HaproxyLimit, HaproxyServer};
///
/// let behind: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
/// let haproxy = HaproxyServer::start(behind, HaproxyLimit { per_second: 20, status: 429 })?;
/// assert!(haproxy.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct HaproxyServer {
    port: u16,
    dir: TempDir,
    child: Child,
}

impl HaproxyServer {
    /// Starts HAProxy on a free port in front of `behind`, limiting each client address
    /// as `limit` says; returns once it accepts connections.
    ///
    /// # Errors
    ///
    /// `NotFound` when HAProxy is not installed; otherwise when it exits at start (its
    /// output is in the message) or does not listen within 10 s.
    pub fn start(behind: SocketAddr, limit: HaproxyLimit) -> io::Result<Self> {
        let program = crate::program::system_program("haproxy", "HAPROXY", NOT_FOUND)?;
        let dir = tempfile::Builder::new().prefix("spider-haproxy-").tempdir()?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let config = dir.path().join("haproxy.cfg");
        fs::write(&config, configuration(port, behind, limit))?;
        let log = fs::File::create(dir.path().join("haproxy.log"))?;
        let child = Command::new(program)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut server = HaproxyServer { port, dir, child };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = server.child.try_wait()? {
                let log = fs::read_to_string(server.dir.path().join("haproxy.log")).unwrap_or_default();
                return Err(io::Error::other(format!("haproxy exited at start ({status}): {log}")));
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(ErrorKind::TimedOut, "haproxy did not listen within 10 s"));
            }
            thread::sleep(POLL);
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The statuses it answered so far, from its log, one per request.
    ///
    /// # Errors
    ///
    /// When its log cannot be read.
    pub fn statuses(&self) -> io::Result<Vec<u16>> {
        let log = fs::read_to_string(self.dir.path().join("haproxy.log"))?;
        Ok(log
            .lines()
            .filter_map(|line| line.strip_prefix("status=")?.split(' ').next()?.parse().ok())
            .collect())
    }
}

impl Drop for HaproxyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One frontend tracking each source address's request rate over a second, refusing past
/// the limit; one backend, the server behind. Each request is logged as `status=N`.
fn configuration(port: u16, behind: SocketAddr, limit: HaproxyLimit) -> String {
    format!(
        "global\n  log stderr format raw local0\n  maxconn 1024\n\
         defaults\n  mode http\n  log global\n  timeout connect 5s\n  timeout client 30s\n  timeout server \
         30s\nfrontend site\n  bind 127.0.0.1:{port}\n  log-format \"status=%ST %r\"\n\
         \x20 stick-table type ip size 100k expire 30s store http_req_rate(1s)\n\
         \x20 http-request track-sc0 src\n\
         \x20 http-request deny deny_status {status} if {{ sc_http_req_rate(0) gt {rate} }}\n\
         \x20 default_backend behind\n\
         backend behind\n  server one {behind}\n",
        status = limit.status,
        rate = limit.per_second,
    )
}
