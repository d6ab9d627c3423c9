//! A real `redis-server` on a free loopback port, for the tests and benchmarks of the
//! fleet's workers.
//!
//! A real server rather than a mock, because what those tests check is how workers
//! behave against Redis's own semantics: its replies, its persistence, a restart under
//! them. Each [`RedisServer`] is a child process with a temporary directory of its own,
//! so tests running in parallel never share data.
//!
//! A [`RedisCluster`] is several of them, started in cluster mode and joined by
//! `redis-cli`, for the code that talks to a cluster and must live through a failover.

mod cluster;
mod resp;

pub use cluster::RedisCluster;

use std::fs::{self, OpenOptions};
use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The program started, found on `PATH`.
const PROGRAM: &str = "redis-server";

/// Said when `redis-server` is not on `PATH`, so whoever runs the tests knows what to do.
const NOT_FOUND: &str = "redis-server not found: install it (Debian/Ubuntu: apt-get install -y \
     redis-server; macOS: brew install redis; or run the redis:7 container image) or run \
     `bash .ci/run`, which installs it";

/// How long a start may take before we give up: a cold start is a few milliseconds, so
/// this only bounds a server that will never answer.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// How long `SHUTDOWN SAVE` may take to write the data and exit.
const EXIT_WITHIN: Duration = Duration::from_secs(10);

/// How often readiness and exit are checked.
const POLL: Duration = Duration::from_millis(20);

/// The connect, read and write timeout of one command.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How many free ports a start tries: another process may take the port between our
/// probe releasing it and the server binding it.
const PORT_ATTEMPTS: usize = 5;

/// A `redis-server` on `127.0.0.1`, on a port of its own; killed, and its directory
/// removed, when dropped.
///
/// It runs with `--save "" --appendonly no`: nothing reaches the disk unless asked,
/// so a [`kill`](Self::kill) loses what was written since the last save, like a crash
/// without persistence, while a [`restart`](Self::restart) saves it first (`SHUTDOWN SAVE`
/// writes `dump.rdb` whatever `--save` says) and the server loads it back at start, on
/// the same port. Every start loads the last `dump.rdb`, if there is one.
///
/// # Examples
///
/// ```
/// use spider_sandbox::RedisServer;
///
/// let mut redis = RedisServer::start()?;
/// assert!(redis.url().starts_with("redis://127.0.0.1:"));
/// assert_eq!(redis.command(&["SET", "queue:len", "3"])?, "+OK");
///
/// redis.restart()?; // saved, stopped, started again on the same port
/// assert_eq!(redis.command(&["GET", "queue:len"])?, "3");
///
/// redis.command(&["SET", "queue:len", "4"])?;
/// redis.kill(); // no save: a crash
/// redis.start_again()?; // back with what the last restart saved
/// assert_eq!(redis.command(&["GET", "queue:len"])?, "3");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisServer {
    program: &'static str,
    port: u16,
    /// The cluster bus port of a [`RedisCluster`] node, `None` for a standalone server:
    /// the one thing that makes a node, so the start logic is shared.
    bus_port: Option<u16>,
    dir: TempDir,
    /// With [`start_tls`](Self::start_tls): the TLS port, and whether it asks clients
    /// for a certificate.
    tls: Option<(u16, bool)>,
    /// `None` between a stop or kill and the next start.
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port with a fresh directory, and returns once it
    /// answers `PING`.
    ///
    /// # Errors
    ///
    /// `NotFound` when `redis-server` is not on `PATH` (the message says how to install
    /// it); otherwise when the server exits at start or does not answer within 10 s.
    pub fn start() -> io::Result<Self> {
        Self::start_program(PROGRAM, false, None)
    }

    /// As [`start`](Self::start), with a TLS port too (`--tls-port`, as managed Redis
    /// serves): its certificate, for `127.0.0.1` and `localhost`, signed by a CA of its
    /// own ([`ca_file`](Self::ca_file)); with `client_certificates`, it refuses a client
    /// without a certificate that CA signed ([`client_files`](Self::client_files)). The
    /// plain port stays, for [`command`](Self::command).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start), and when the certificates cannot be made or written.
    pub fn start_tls(client_certificates: bool) -> io::Result<Self> {
        let authority = crate::authority::Authority::new()?;
        Self::start_program(PROGRAM, false, Some((&authority, client_certificates)))
    }

    /// With [`start_tls`](Self::start_tls): `rediss://127.0.0.1:PORT/0` on the TLS port.
    pub fn tls_url(&self) -> Option<String> {
        self.tls.map(|(port, _)| format!("rediss://127.0.0.1:{port}/0"))
    }

    /// With [`start_tls`](Self::start_tls): the CA that signed the server's certificate.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.tls.map(|_| self.dir.path().join("ca.pem"))
    }

    /// With [`start_tls`](Self::start_tls): a client certificate and its key that the
    /// server takes.
    pub fn client_files(&self) -> Option<(PathBuf, PathBuf)> {
        self.tls.map(|_| (self.dir.path().join("client.crt"), self.dir.path().join("client.key")))
    }

    /// Starts `program` on free ports, as a standalone server or, with `cluster`, as a
    /// cluster node with a bus port of its own (see [`cluster::node_args`]); with `tls`, a
    /// TLS port too, its certificates signed by that authority, asking clients for one
    /// when told to.
    fn start_program(
        program: &'static str,
        cluster: bool,
        tls: Option<(&crate::authority::Authority, bool)>,
    ) -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("spider-redis-").tempdir()?;
        if let Some((authority, _)) = tls {
            write_certificates(dir.path(), authority)?;
        }
        let mut server = Self { program, port: 0, bus_port: None, dir, tls: None, child: None };
        let mut taken = None;
        for _ in 0..PORT_ATTEMPTS {
            let mut ports = free_ports(3)?.into_iter();
            server.port = ports.next().unwrap_or_default();
            server.bus_port = ports.next().filter(|_| cluster);
            server.tls = tls.and_then(|(_, clients)| Some((ports.next()?, clients)));
            match server.start_again() {
                Ok(()) => return Ok(server),
                Err(e) if e.kind() == ErrorKind::AddrInUse => taken = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(taken.unwrap_or_else(|| io::Error::other("no free port")))
    }

    /// The port a client of a cluster node connects to: its TLS port when it has one.
    fn client_port(&self) -> u16 {
        self.tls.map_or(self.port, |(tls, _)| tls)
    }

    /// Whether this server takes connections on `port`, plain or TLS.
    fn answers_on(&self, port: u16) -> bool {
        self.port == port || self.tls.is_some_and(|(tls, _)| tls == port)
    }

    /// `redis://127.0.0.1:PORT/0`, for a client.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The port, the same for the server's whole life, restarts included.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's directory: `dump.rdb` after a restart, and `redis.log`, its output
    /// across every start.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Sends one command and returns the reply's first line (`+OK`, `:12`, `-ERR ...`,
    /// `$-1` for a missing value), or a bulk string's content (what `GET` returns).
    ///
    /// A connection per command: slow for loading data, which is what `MSET` is for.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or its reply is cut short; an error reply
    /// from Redis is a reply, returned as `Ok("-ERR ...")`.
    pub fn command(&self, args: &[&str]) -> io::Result<String> {
        resp::command(self.port, args, IO_TIMEOUT)
    }

    /// Stops the server without saving (the same signal as [`kill`](Self::kill)), for
    /// a test that is done with it before the end of its scope.
    pub fn stop(&mut self) {
        self.kill();
    }

    /// SIGKILLs the server and waits for it to go: nothing is saved, as in a crash.
    /// Does nothing when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // An error here means it had already exited; `wait` reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Saves the data, stops the server, and starts it again on the same port, where it
    /// loads what it saved; returns once it answers `PING` with the data loaded.
    ///
    /// # Errors
    ///
    /// When the server is not running, refuses `SHUTDOWN SAVE` (a failed save), does
    /// not exit within 10 s (it is then killed), or does not come back (see
    /// [`start_again`](Self::start_again)).
    pub fn restart(&mut self) -> io::Result<()> {
        if self.child.is_none() {
            return Err(io::Error::other("redis-server is not running; use start_again"));
        }
        match self.command(&["SHUTDOWN", "SAVE"]) {
            Ok(reply) if reply.starts_with('-') => {
                return Err(io::Error::other(format!("SHUTDOWN SAVE refused: {reply}")));
            }
            // On success the server closes the connection without a reply.
            Ok(_) => {}
            Err(e) if closed(&e) => {}
            Err(e) => return Err(e),
        }
        let status = self.wait_for_exit()?;
        if !status.success() {
            return Err(io::Error::other(format!(
                "redis-server exited with {status} on SHUTDOWN SAVE: {}",
                self.log_tail()
            )));
        }
        self.start_again()
    }

    /// Starts the server again after a [`stop`](Self::stop), [`kill`](Self::kill) or
    /// failed restart, on the same port and directory (so with whatever `dump.rdb` the
    /// last save left); returns once it answers `PING`.
    ///
    /// # Errors
    ///
    /// When it is already running, when `redis-server` is not on `PATH`, when the server
    /// exits at start (`AddrInUse` if another process has taken the port), or when it
    /// does not answer within 10 s.
    pub fn start_again(&mut self) -> io::Result<()> {
        if self.child.is_some() {
            return Err(io::Error::other("redis-server is already running"));
        }
        let log = OpenOptions::new().create(true).append(true).open(self.log_path())?;
        let child = Command::new(self.program)
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"])
            .arg(self.dir.path())
            // After `--dir`, which the server changes into: a node's relative paths
            // (`nodes.conf`, `redis.log`) are in its own directory.
            .args(self.bus_port.map(cluster::node_args).unwrap_or_default())
            .args(self.tls.map(|(port, clients)| tls_args(port, clients)).unwrap_or_default())
            // A node over TLS talks TLS to the others too, on the bus and to its master.
            .args(match (self.bus_port, self.tls) {
                (Some(_), Some(_)) => ["--tls-cluster", "yes", "--tls-replication", "yes"].as_slice(),
                _ => &[],
            })
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => io::Error::new(ErrorKind::NotFound, NOT_FOUND),
                _ => e,
            })?;
        self.child = Some(child);
        self.wait_until_ready().inspect_err(|_| self.kill())
    }

    /// Polls with `PING` until `+PONG`: a server still loading its data answers
    /// `-LOADING`, so `+PONG` also means the data is back.
    fn wait_until_ready(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = self.child_mut()?.try_wait()? {
                return Err(self.exited_at_start(status));
            }
            if matches!(resp::command(self.port, &["PING"], POLL * 10).as_deref(), Ok("+PONG")) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "redis-server on port {} did not answer PING within {READY_WITHIN:?}: {}",
                        self.port,
                        self.log_tail()
                    ),
                ));
            }
            thread::sleep(POLL);
        }
    }

    /// Waits for the exit `SHUTDOWN` asked for; kills the server if it does not come.
    fn wait_for_exit(&mut self) -> io::Result<ExitStatus> {
        let deadline = Instant::now() + EXIT_WITHIN;
        loop {
            if let Some(status) = self.child_mut()?.try_wait()? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!("redis-server did not exit within {EXIT_WITHIN:?} of SHUTDOWN SAVE; killed"),
                ));
            }
            thread::sleep(POLL);
        }
    }

    /// Whether the server is running: started, and not stopped or killed since.
    fn is_running(&self) -> bool {
        self.child.is_some()
    }

    fn child_mut(&mut self) -> io::Result<&mut Child> {
        self.child.as_mut().ok_or_else(|| io::Error::other("redis-server is not running"))
    }

    fn exited_at_start(&self, status: ExitStatus) -> io::Error {
        let log = self.log_tail();
        // The only start failure worth another port: one taken since we probed it.
        let kind =
            if log.contains("Address already in use") { ErrorKind::AddrInUse } else { ErrorKind::Other };
        io::Error::new(kind, format!("redis-server exited at start ({status}) on port {}: {log}", self.port))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    /// The last lines of the server's output, for error messages.
    fn log_tail(&self) -> String {
        file_tail(&self.log_path())
    }
}

impl Drop for RedisServer {
    /// Kills the server; the directory goes with the `TempDir` after this.
    fn drop(&mut self) {
        self.kill();
    }
}

/// A CA's certificate, a server certificate for `127.0.0.1` and `localhost` and a client
/// certificate, each signed by `authority`, with their keys, in `dir`.
fn write_certificates(dir: &Path, authority: &crate::authority::Authority) -> io::Result<()> {
    let (server, server_key) = authority.issue(&["127.0.0.1", "localhost"])?;
    let (client, client_key) = authority.issue(&["spiderling-client"])?;
    for (name, pem) in [
        ("ca.pem", authority.pem()),
        ("server.crt", server),
        ("server.key", server_key),
        ("client.crt", client),
        ("client.key", client_key),
    ] {
        fs::write(dir.join(name), pem)?;
    }
    Ok(())
}

/// The arguments of a TLS port, its files in the server's directory (after `--dir`).
fn tls_args(port: u16, client_certificates: bool) -> Vec<String> {
    let clients = if client_certificates { "yes" } else { "no" };
    [
        "--tls-port",
        &port.to_string(),
        "--tls-cert-file",
        "server.crt",
        "--tls-key-file",
        "server.key",
        "--tls-ca-cert-file",
        "ca.pem",
        "--tls-auth-clients",
        clients,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The last lines of a log file, joined on one line for an error message; empty when
/// it cannot be read (the error being reported matters more than the log's).
fn file_tail(path: &Path) -> String {
    let log = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// `count` distinct ports nothing listens on right now: bind port 0 that many times,
/// holding each listener until all are bound (so no port comes back twice), then let go.
fn free_ports(count: usize) -> io::Result<Vec<u16>> {
    let listeners =
        (0..count).map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0))).collect::<io::Result<Vec<_>>>()?;
    listeners.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

/// Whether an error is the server closing the connection, as `SHUTDOWN` does.
fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_redis_server_says_how_to_install_it() {
        let error =
            RedisServer::start_program("spider-sandbox-no-such-redis-server", false, None).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(error.to_string().contains("apt-get install -y redis-server"), "{error}");
        assert!(error.to_string().contains("bash .ci/run"), "{error}");
    }

    #[test]
    fn a_closed_connection_is_told_from_other_errors() {
        assert!(closed(&io::Error::from(ErrorKind::UnexpectedEof)));
        assert!(closed(&io::Error::from(ErrorKind::ConnectionReset)));
        assert!(!closed(&io::Error::from(ErrorKind::ConnectionRefused)));
    }
}
