//! A real nginx on a free loopback port, for the tests and benchmarks that must meet a
//! web server as people run it: its gzip, its `limit_req`, its own answers.
//!
//! Debian's nginx, started by hand as a child process with a configuration and a
//! directory of its own, so tests in parallel never share one. It counts what it was
//! asked in its access log, which [`NginxServer::requests`] reads back.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Said when nginx is not found, so whoever runs the tests knows what to do.
const NOT_FOUND: &str = "nginx not found: install it (Debian/Ubuntu: apt-get install -y nginx; \
     macOS: brew install nginx), set NGINX to its binary, or run `bash .ci/run`, which installs it";

/// How long a start may take before we give up.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// How long a stop may take before the master is killed.
const EXIT_WITHIN: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);
const PORT_ATTEMPTS: usize = 5;

/// nginx's `limit_req`, keyed by the client's address as most configurations key it:
/// `rate` requests a second, `burst` more held or (with `nodelay`) let through at once,
/// and past them an answer of `status`.
#[derive(Debug, Clone, Copy)]
pub struct NginxLimit {
    /// Requests a second (`rate=Nr/s`).
    pub per_second: u32,
    /// `burst=N`.
    pub burst: u32,
    /// `nodelay`: the burst passes at once instead of being spaced to the rate.
    pub nodelay: bool,
    /// `limit_req_status`: 503 is nginx's default; 429 is what many set.
    pub status: u16,
}

/// What the server serves.
#[derive(Debug, Clone)]
pub struct NginxSite {
    /// The directory served as `/`, on every host name (symbolic links followed).
    pub root: PathBuf,
    /// Answers compressed with gzip when the client accepts it, as real servers send them.
    pub gzip: bool,
    /// A rate limit per client address over every host name, if any.
    pub limit: Option<NginxLimit>,
}

/// One request as the access log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The status answered.
    pub status: u16,
    /// The request's method.
    pub method: String,
    /// The Host header's name.
    pub host: String,
    /// The path and query, as sent.
    pub target: String,
}

/// A running nginx; stopped, and its directory removed, when dropped.
///
/// # Examples
///
/// ```no_run
/// use spider_sandbox::{NginxServer, NginxSite};
///
/// let root = tempfile::tempdir()?;
/// std::fs::write(root.path().join("index.html"), "<h1>Hello</h1>")?;
/// let nginx = NginxServer::start(NginxSite { root: root.path().into(), gzip: true, limit: None })?;
/// assert!(nginx.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct NginxServer {
    port: u16,
    dir: TempDir,
    child: Child,
}

impl NginxServer {
    /// Starts nginx on a free port serving `site`, and returns once it accepts
    /// connections.
    ///
    /// # Errors
    ///
    /// `NotFound` when nginx is not installed (the message says how to install it);
    /// otherwise when it exits at start (its error log is in the message) or does not
    /// listen within 10 s.
    pub fn start(site: NginxSite) -> io::Result<Self> {
        let program = crate::program::system_program("nginx", "NGINX", NOT_FOUND)?;
        let mut dir = tempfile::Builder::new().prefix("spider-nginx-").tempdir()?;
        let mut taken = None;
        for _ in 0..PORT_ATTEMPTS {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
            fs::write(dir.path().join("nginx.conf"), config(&site, port, dir.path(), is_root()?))?;
            let child = Command::new(&program)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            let mut server = NginxServer { port, dir, child };
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(error) => {
                    let log = fs::read_to_string(server.dir.path().join("error.log")).unwrap_or_default();
                    server.stop();
                    if !log.contains("Address already in use") {
                        return Err(io::Error::other(format!(
                            "nginx did not start: {error}; its log: {log}"
                        )));
                    }
                    taken = Some(error);
                    dir = tempfile::Builder::new().prefix("spider-nginx-").tempdir()?;
                }
            }
        }
        Err(taken.unwrap_or_else(|| io::Error::other("no free port")))
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request answered so far, in the order the log has them (robots.txt's too).
    ///
    /// # Errors
    ///
    /// When the access log cannot be read.
    pub fn requests(&self) -> io::Result<Vec<Logged>> {
        let log = fs::read_to_string(self.dir.path().join("access.log"))?;
        Ok(log.lines().filter_map(parse_line).collect())
    }

    fn wait_ready(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Err(io::Error::other(format!("nginx exited at start: {status}")));
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(ErrorKind::TimedOut, "nginx did not listen within 10 s"));
            }
            thread::sleep(POLL);
        }
    }

    /// Ask the master to quit (its workers with it), and kill it past [`EXIT_WITHIN`]:
    /// a master killed outright would leave its workers serving the port.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let asked = Command::new("kill").args(["-QUIT", &pid]).status().is_ok_and(|s| s.success());
        let deadline = Instant::now() + EXIT_WITHIN;
        while asked && Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(POLL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NginxServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn is_root() -> io::Result<bool> {
    let out = Command::new("id").arg("-u").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// The configuration: one worker, everything in `dir`, the site on every host name.
fn config(site: &NginxSite, port: u16, dir: &Path, root: bool) -> String {
    let mut conf = String::new();
    // As root, the workers would run as `nobody`, who cannot read a test's directory.
    if root {
        conf.push_str("user root;\n");
    }
    let dir = dir.display();
    let _ = write!(
        conf,
        "worker_processes 1;\ndaemon off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
         types {{ text/html html htm; text/plain txt; application/json json; application/xml xml; }}\n\
         default_type text/html;\n\
         log_format counted '$status $request_method $host \"$request_uri\"';\n\
         access_log {dir}/access.log counted;\n\
         client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy; fastcgi_temp_path {dir}/fastcgi;\n\
         uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;\n\
         keepalive_timeout 30s;\n"
    );
    if site.gzip {
        conf.push_str(
            "gzip on; gzip_min_length 256; gzip_types text/plain application/json application/xml;\n",
        );
    }
    if let Some(limit) = site.limit {
        let _ = writeln!(
            conf,
            "limit_req_zone $binary_remote_addr zone=per_client:1m rate={}r/s;\nlimit_req_status {};",
            limit.per_second, limit.status
        );
    }
    let _ = write!(
        conf,
        "server {{\n listen 127.0.0.1:{port} default_server;\n server_name _;\n root {};\n",
        site.root.display()
    );
    if let Some(limit) = site.limit {
        let nodelay = if limit.nodelay { " nodelay" } else { "" };
        let _ = writeln!(conf, " limit_req zone=per_client burst={}{nodelay};", limit.burst);
    }
    conf.push_str(" location / { try_files $uri $uri/ =404; }\n}\n}\n");
    conf
}

/// `200 GET host "/path?query"`.
fn parse_line(line: &str) -> Option<Logged> {
    let mut parts = line.splitn(4, ' ');
    let status = parts.next()?.parse().ok()?;
    let method = parts.next()?.to_owned();
    let host = parts.next()?.to_owned();
    let target = parts.next()?.trim_matches('"').to_owned();
    Some(Logged { status, method, host, target })
}
