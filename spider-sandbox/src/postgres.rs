//! A real PostgreSQL server on a free loopback port, for the tests and benchmarks of the
//! tables items go to.
//!
//! Its own cluster, made by `initdb` in a temporary directory and served by `postgres`
//! as a child process, so tests in parallel never share a database. Run as root (as CI
//! does), the cluster belongs to the `postgres` user, which Debian's package creates:
//! PostgreSQL refuses to run as root.

use std::io::{self, ErrorKind};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

const NOT_FOUND: &str = "PostgreSQL's initdb not found: install it (Debian/Ubuntu: apt-get install -y \
     postgresql; macOS: brew install postgresql) or run `bash .ci/run`, which installs it; \
     PG_BIN may name the directory of its programs";

/// How long a start or a stop may take.
const WITHIN: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

/// A PostgreSQL server on `127.0.0.1` with a cluster of its own, user `spider` trusted
/// (any password passes); stopped, and its directory removed, when dropped.
///
/// # Examples
///
/// ```no_run
/// use spider_sandbox::PostgresServer;
///
/// let mut pg = PostgresServer::start()?;
/// assert_eq!(pg.query("SELECT 1 + 1")?, "2");
/// pg.restart()?; // stopped as an operator would (`-m fast`), then started on the same port
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct PostgresServer {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
    /// The `postgres` user's ids when the tests run as root.
    owner: Option<(u32, u32)>,
    /// With `ssl = on`: the CA's certificate, as a PEM file a client may trust.
    ca: Option<PathBuf>,
    /// Every connection over TCP must be TLS with a client certificate of that CA.
    client_certificates: bool,
    child: Option<Child>,
}

impl PostgresServer {
    /// Make a cluster and start its server; returns once it answers a query.
    ///
    /// # Errors
    ///
    /// `NotFound` when PostgreSQL is not installed (the message says how), or when run as
    /// root with no `postgres` user; otherwise when `initdb` fails or the server does not
    /// answer within 30 s.
    pub fn start() -> io::Result<Self> {
        Self::start_with(false, false)
    }

    /// As [`start`](Self::start), with `ssl = on` as a stock Debian cluster has it: the
    /// server's certificate names `localhost` alone and is signed by a CA of its own
    /// ([`ca_file`](Self::ca_file)), so a client that checks it against the web's roots
    /// refuses it, one that checks the chain against the CA takes it, and one that also
    /// checks the name takes it for `localhost` and refuses it for `127.0.0.1`. Clients
    /// may still connect without TLS.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start), and when the certificates cannot be made or written.
    pub fn start_tls() -> io::Result<Self> {
        Self::start_with(true, false)
    }

    /// As [`start_tls`](Self::start_tls), and every connection over TCP must be TLS with
    /// a client certificate signed by the same CA and naming the user (`CN=spider`, as
    /// `pg_hba.conf`'s `cert` method asks): [`client_files`](Self::client_files).
    ///
    /// # Errors
    ///
    /// As [`start_tls`](Self::start_tls).
    pub fn start_tls_with_client_certificates() -> io::Result<Self> {
        Self::start_with(true, true)
    }

    fn start_with(tls: bool, client_certificates: bool) -> io::Result<Self> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new().prefix("spider-postgres-").tempdir()?;
        let owner = owner()?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        let mut server =
            PostgresServer { bin, dir, port: 0, owner, ca: None, client_certificates, child: None };
        let initdb = server
            .command("initdb")
            .args(["-U", "spider", "--auth=trust", "-E", "UTF8", "--no-sync", "-D"])
            .arg(server.data())
            .output()?;
        if !initdb.status.success() {
            return Err(io::Error::other(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&initdb.stderr)
            )));
        }
        if tls {
            server.ca = Some(server.write_certificates()?);
        }
        if client_certificates {
            std::fs::write(
                server.data().join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 cert\nhostssl all all ::1/128 cert\n",
            )?;
        }
        server.port = free_port()?;
        server.start_again()?;
        Ok(server)
    }

    /// With [`start_tls`](Self::start_tls), the CA's certificate (PEM) that signed the
    /// server's.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca.as_deref()
    }

    /// With [`start_tls_with_client_certificates`](Self::start_tls_with_client_certificates),
    /// the client's certificate and key (PEM) the server takes for the user `spider`.
    pub fn client_files(&self) -> Option<(PathBuf, PathBuf)> {
        self.client_certificates
            .then(|| (self.dir.path().join("client.crt"), self.dir.path().join("client.key")))
    }

    /// A CA, and the server's certificate for `localhost` signed by it, in the server's
    /// directory (its key readable by the cluster's owner alone, as PostgreSQL demands);
    /// returns the CA's file.
    fn write_certificates(&self) -> io::Result<PathBuf> {
        let authority = crate::authority::Authority::new()?;
        let (server, server_key) = authority.issue(&["localhost"])?;
        let (client, client_key) = authority.issue(&["spider"])?;
        std::fs::write(self.dir.path().join("client.crt"), client)?;
        std::fs::write(self.dir.path().join("client.key"), client_key)?;
        let (crt, key, ca_file) = (
            self.dir.path().join("server.crt"),
            self.dir.path().join("server.key"),
            self.dir.path().join("ca.pem"),
        );
        std::fs::write(&crt, server)?;
        std::fs::write(&key, server_key)?;
        std::fs::write(&ca_file, authority.pem())?;
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        if let Some((uid, gid)) = self.owner {
            for file in [&crt, &key] {
                std::os::unix::fs::chown(file, Some(uid), Some(gid))?;
            }
        }
        Ok(ca_file)
    }

    /// `postgres://spider:secret@127.0.0.1:PORT/postgres`: the password is ignored (the
    /// cluster trusts its user), there to show it is never printed.
    pub fn url(&self) -> String {
        format!("postgres://spider:secret@127.0.0.1:{}/postgres", self.port)
    }

    /// The server's port, the same across restarts.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Run `sql` with `psql` and return what it printed, unaligned, without headers.
    ///
    /// # Errors
    ///
    /// When `psql` fails, with its message.
    pub fn query(&self, sql: &str) -> io::Result<String> {
        let out = Command::new(self.bin.join("psql"))
            // By the server's socket: a server that asks TCP clients for a certificate
            // trusts its local ones.
            .arg("-h")
            .arg(self.dir.path())
            .args(["-U", "spider", "-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1", "-p"])
            .arg(self.port.to_string())
            .args(["-c", sql])
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!("psql: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Stop the server as an operator does (`pg_ctl stop -m fast`: clients are cut off,
    /// what was committed is kept). Does nothing when it is not running.
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn stop(&mut self) -> io::Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        let stopped =
            self.command("pg_ctl").args(["stop", "-m", "fast", "-w", "-D"]).arg(self.data()).output();
        let _ = child.wait();
        match stopped {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => {
                Err(io::Error::other(format!("pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr))))
            }
            Err(error) => Err(error),
        }
    }

    /// Stop and start again on the same port.
    ///
    /// # Errors
    ///
    /// As [`stop`](Self::stop) and [`start_again`](Self::start_again).
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop()?;
        self.start_again()
    }

    /// Start the server after a [`stop`](Self::stop); returns once it answers a query.
    ///
    /// # Errors
    ///
    /// When it is running already, or does not answer within 30 s.
    pub fn start_again(&mut self) -> io::Result<()> {
        if self.child.is_some() {
            return Err(io::Error::other("postgres is already running"));
        }
        let log = std::fs::File::create(self.dir.path().join("postgres.log"))?;
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::chown(self.dir.path().join("postgres.log"), Some(uid), Some(gid))?;
        }
        let mut postgres = self.command("postgres");
        postgres
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-k"])
            .arg(self.dir.path());
        if self.ca.is_some() {
            let file = |name: &str| self.dir.path().join(name).display().to_string();
            postgres.args(["-c", "ssl=on", "-c", &format!("ssl_cert_file={}", file("server.crt"))]);
            postgres.args(["-c", &format!("ssl_key_file={}", file("server.key"))]);
            if self.client_certificates {
                postgres.args(["-c", &format!("ssl_ca_file={}", file("ca.pem"))]);
            }
        }
        let child = postgres.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + WITHIN;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                let log = std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default();
                return Err(io::Error::other(format!("postgres exited at start with {status}: {log}")));
            }
            if self.query("SELECT 1").is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(ErrorKind::TimedOut, "postgres did not answer within 30 s"));
            }
            thread::sleep(POLL);
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// One of PostgreSQL's programs, as the cluster's owner.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid).env("HOME", self.dir.path());
        }
        command.current_dir(self.dir.path());
        command
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Immediate shutdown: nothing is worth keeping of a test's cluster.
            let _ = self
                .command("pg_ctl")
                .args(["stop", "-m", "immediate", "-w", "-D"])
                .arg(self.data())
                .output();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where PostgreSQL's programs are: `PG_BIN`, `pg_config --bindir`, the newest of
/// Debian's `/usr/lib/postgresql/*/bin`, or the directory on `PATH` that holds `initdb`.
fn bin_dir() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let has_initdb = |dir: &Path| dir.join("initdb").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_initdb(&dir) {
            return Ok(dir);
        }
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, dir)| has_initdb(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Ok(dir);
    }
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| has_initdb(dir)))
        .ok_or_else(|| io::Error::new(ErrorKind::NotFound, NOT_FOUND))
}

/// As root, the `postgres` user's uid and gid, from `/etc/passwd`.
fn owner() -> io::Result<Option<(u32, u32)>> {
    let out = Command::new("id").arg("-u").output()?;
    if String::from_utf8_lossy(&out.stdout).trim() != "0" {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres"))
                .then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))?
        })
        .map(Some)
        .ok_or_else(|| {
            io::Error::new(
                ErrorKind::NotFound,
                "PostgreSQL will not run as root, and there is no `postgres` \
                user to run it as: install Debian's postgresql package, or run the tests as another user",
            )
        })
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}
