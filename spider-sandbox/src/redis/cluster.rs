//! A real Redis Cluster on loopback: several `redis-server` nodes in cluster mode,
//! joined by `redis-cli --cluster create`, for the tests of code that talks to a cluster.
//!
//! Real nodes rather than a mock, because what those tests check is how a client lives
//! through what only a cluster does: keys spread over masters by hash slot, `MOVED`
//! replies, and a replica taking over a master that died. Each node is a
//! [`RedisServer`] with its own directory (its `nodes.conf` and `redis.log`), so the
//! start, the kill and the clean-up are the standalone server's.

use std::fs::File;
use std::io::{self, ErrorKind};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{file_tail, resp, RedisServer, IO_TIMEOUT, POLL, PROGRAM};

/// The program that joins the nodes, found on `PATH`.
const CLI: &str = "redis-cli";

/// Said when `redis-cli` is not on `PATH`: it comes in a package of its own on Debian.
const CLI_NOT_FOUND: &str = "redis-cli not found: install it (Debian/Ubuntu: apt-get install -y \
     redis-tools; macOS: brew install redis; or run the redis:7 container image) or run \
     `bash .ci/run`, which installs it";

/// The hash slots a cluster divides its keys into.
const SLOTS: usize = 16384;

/// How long creating the cluster and waiting for it to be whole may take: about a
/// second in practice (`redis-cli` waits for the nodes to meet, then the replicas
/// sync), so this only bounds a cluster that will never form.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// How long a check at start waits for the replicas to acknowledge a write: they do at
/// once when the master streams to them, and a check that fails is tried again.
const STREAMING_WITHIN: &str = "100";

/// How often a forming or failing-over cluster is checked: each check asks every node,
/// so less often than a single server's [`POLL`].
const CLUSTER_POLL: Duration = Duration::from_millis(100);

/// The file `redis-cli --cluster create` writes its output to, in the first node's
/// directory, for error messages.
const CREATE_LOG: &str = "cluster-create.log";

/// The arguments that make a [`RedisServer`] a cluster node, given after its `--dir` (so
/// the relative paths are in the node's own directory).
///
/// A node timeout of one second, so that a killed master is failed over in a couple of
/// seconds rather than the default fifteen. The bus port is chosen free like the port
/// rather than left at port + 10000, which may be taken or past 65535. No delay before a
/// diskless sync (the default waits 5 s for more replicas to share it), so replicas are
/// in sync, and the cluster ready, within about a second.
pub(super) fn node_args(bus_port: u16) -> Vec<String> {
    [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "1000",
        "--cluster-port",
        &bus_port.to_string(),
        "--repl-diskless-sync-delay",
        "0",
        "--logfile",
        "redis.log",
    ]
    .map(String::from)
    .into()
}

/// A Redis Cluster of `redis-server` nodes on `127.0.0.1`, each on ports and in a
/// directory of its own; every node is killed, and its directory removed, when dropped.
///
/// Nodes run like a [`RedisServer`] (`--save "" --appendonly no`: a killed node loses
/// its data, and its replica's copy is what survives), with a node timeout of one
/// second: a master that is [`kill`](Self::kill)ed is failed over by its replica
/// within a few seconds, by the cluster itself;
/// [`wait_for_failover`](Self::wait_for_failover) only watches for it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use spider_sandbox::RedisCluster;
///
/// let mut cluster = RedisCluster::start(3, 1)?;
/// assert!(cluster.url().starts_with("redis+cluster://127.0.0.1:"));
///
/// let master = cluster.master_of("queue:len")?;
/// // On one connection, so that `WAIT` waits for this write to reach the replica.
/// let replies = cluster.pipeline(master, &[&["SET", "queue:len", "3"], &["WAIT", "1", "1000"]])?;
/// assert_eq!(replies, ["+OK", ":1"]);
///
/// cluster.kill(master);
/// let new = cluster.wait_for_failover("queue:len", master, Duration::from_secs(20))?;
/// assert_ne!(new, master);
/// assert_eq!(cluster.command(new, &["GET", "queue:len"])?, "3");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisCluster {
    /// In the order given to `redis-cli`, which made the first ones masters.
    nodes: Vec<RedisServer>,
    /// The ports of the masters at start, in node order, for [`url`](Self::url): a
    /// client's seeds, which stay valid as long as one of them is alive. On a cluster
    /// over TLS, the TLS ports, which the nodes give clients.
    seeds: Vec<u16>,
    /// Clients and nodes talk TLS, with certificates of one CA.
    tls: bool,
}

impl RedisCluster {
    /// Starts `masters` masters (at least 3, the fewest that can elect a replica in
    /// place of a dead master) each with `replicas` replicas, all on `127.0.0.1` on free
    /// ports; returns once every node reports `cluster_state:ok` with all 16384 slots
    /// assigned and knows every other node, the masters and replicas are as asked in
    /// every node's view, every replica's link to its master is up, and every master
    /// streams its writes to its replicas (a write made now is not held back; see
    /// [`pipeline`](Self::pipeline) to wait for it to reach them).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for fewer than 3 masters; `NotFound` when `redis-server` or
    /// `redis-cli` is not on `PATH` (the message says how to install it); otherwise when
    /// a node does not start (see [`RedisServer::start`]), `redis-cli` fails, or the
    /// cluster is not ready within 30 s (the message says what was missing, with the
    /// end of the log of the node concerned).
    pub fn start(masters: usize, replicas: usize) -> io::Result<Self> {
        Self::start_with(CLI, masters, replicas, false)
    }

    /// As [`start`](Self::start), each node with a TLS port beside its plain one, as
    /// managed Redis Clusters serve: the nodes talk TLS to each other (`tls-cluster`,
    /// `tls-replication`) and give clients their TLS ports, each node's certificate for
    /// `127.0.0.1` and `localhost` signed by one CA ([`ca_file`](Self::ca_file)), and a
    /// client without a certificate that CA signed ([`client_files`](Self::client_files))
    /// is refused.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start), and when the certificates cannot be made or written.
    pub fn start_tls(masters: usize, replicas: usize) -> io::Result<Self> {
        Self::start_with(CLI, masters, replicas, true)
    }

    /// With [`start_tls`](Self::start_tls): the CA that signed the nodes' certificates.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.nodes.first().filter(|_| self.tls).map(|node| node.dir().join("ca.pem"))
    }

    /// With [`start_tls`](Self::start_tls): a client certificate and its key the nodes
    /// take.
    pub fn client_files(&self) -> Option<(PathBuf, PathBuf)> {
        self.nodes.first().and_then(RedisServer::client_files).filter(|_| self.tls)
    }

    fn start_with(cli: &str, masters: usize, replicas: usize, tls: bool) -> io::Result<Self> {
        if masters < 3 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("a Redis Cluster needs at least 3 masters to fail one over, not {masters}"),
            ));
        }
        let count = replicas
            .checked_add(1)
            .and_then(|per_master| per_master.checked_mul(masters))
            .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "too many nodes"))?;
        let deadline = Instant::now() + READY_WITHIN;
        let mut cluster = Self { nodes: Vec::with_capacity(count), seeds: Vec::new(), tls };
        let authority = if tls { Some(crate::authority::Authority::new()?) } else { None };
        for _ in 0..count {
            // On an error, dropping `cluster` kills the nodes already started.
            let node = RedisServer::start_program(PROGRAM, true, authority.as_ref().map(|a| (a, true)))?;
            cluster.nodes.push(node);
        }
        cluster.create(cli, replicas, deadline)?;
        cluster.seeds = cluster.wait_until_whole(masters, replicas, deadline)?;
        Ok(cluster)
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...`: the ports of the nodes that were
    /// masters at start, for a client to discover the cluster from.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.seeds.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        let scheme = if self.tls { "rediss+cluster" } else { "redis+cluster" };
        format!("{scheme}://{}", seeds.join(","))
    }

    /// Sends one command to the node on `port` and returns its reply, as
    /// [`RedisServer::command`] does: the first line, or a bulk string's content (so
    /// `CLUSTER NODES` and `INFO` come back whole). The node answers for its own slots
    /// only: a key another master serves is `Ok("-MOVED ...")`.
    ///
    /// A connection per command: a `WAIT` sent this way waits for nothing (see
    /// [`pipeline`](Self::pipeline)).
    ///
    /// # Errors
    ///
    /// `InvalidInput` when no node of this cluster has that port; otherwise when the
    /// node cannot be reached (it was killed) or its reply is cut short.
    pub fn command(&self, port: u16, args: &[&str]) -> io::Result<String> {
        self.node(port).ok_or_else(|| unknown_port(port))?.command(args)
    }

    /// Sends `commands` in order on one connection to the node on `port` and returns
    /// their replies, one each, as [`command`](Self::command) returns one.
    ///
    /// For what only means something on one connection: `WAIT` counts the replicas that
    /// have the connection's last write, so after a `SET` sent with
    /// [`command`](Self::command), on a connection of its own, a `WAIT` has nothing to
    /// wait for and answers at once with every replica connected, whether the write
    /// reached them or not. `MULTI` ... `EXEC` too.
    ///
    /// # Errors
    ///
    /// As [`command`](Self::command)'s.
    pub fn pipeline(&self, port: u16, commands: &[&[&str]]) -> io::Result<Vec<String>> {
        let node = self.node(port).ok_or_else(|| unknown_port(port))?;
        resp::pipeline(node.port(), commands, IO_TIMEOUT)
    }

    /// The port of the master that serves `key`'s hash slot now, in the slot map of the
    /// first running node that answers. Between a master's death and its failover, that
    /// is still the dead master.
    ///
    /// # Errors
    ///
    /// When no running node answers, or the map gives the slot no master.
    pub fn master_of(&self, key: &str) -> io::Result<u16> {
        let slot = self.keyslot(key)?;
        self.first_answer(|port| {
            let nodes = cluster_nodes(port)?;
            owner(&nodes, slot).ok_or_else(|| io::Error::other(format!("no master serves slot {slot}")))
        })
    }

    /// The ports of the masters now, ascending: the nodes that serve slots in the map of
    /// the first running node that answers, less those it flags as failing and those
    /// [`kill`](Self::kill)ed (which the map may not know yet).
    ///
    /// # Errors
    ///
    /// When no running node answers.
    pub fn masters(&self) -> io::Result<Vec<u16>> {
        let nodes = self.first_answer(cluster_nodes)?;
        let mut masters: Vec<u16> = nodes
            .iter()
            .filter(|n| n.is_master() && !n.slots.is_empty() && !n.is_failing() && self.is_running(n.port))
            .map(|n| n.port)
            .collect();
        masters.sort_unstable();
        Ok(masters)
    }

    /// SIGKILLs the node on `port` and waits for its process to go, as
    /// [`RedisServer::kill`] does: a crash, nothing saved. Does nothing when no node
    /// has that port or it is not running.
    pub fn kill(&mut self, port: u16) {
        if let Some(node) = self.nodes.iter_mut().find(|n| n.answers_on(port)) {
            node.kill();
        }
    }

    /// Waits until `key`'s slot is served by a running master other than `old`, in the
    /// slot map of every running node, and every running node reports
    /// `cluster_state:ok`; returns that master's port. The failover itself is the
    /// cluster's: a replica takes over about two seconds after its master dies.
    ///
    /// # Errors
    ///
    /// `TimedOut` when that does not happen `within` the time given (the message says
    /// what was last seen); otherwise when no running node answers `CLUSTER KEYSLOT`.
    pub fn wait_for_failover(&self, key: &str, old: u16, within: Duration) -> io::Result<u16> {
        let deadline = Instant::now() + within;
        let slot = self.keyslot(key)?;
        loop {
            let seen = match self.served_by_new_master(slot, old) {
                Ok(new) => return Ok(new),
                Err(seen) => seen,
            };
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "slot {slot} (key {key:?}) was not failed over from port {old} within {within:?}: \
                            {seen}"
                    ),
                ));
            }
            thread::sleep(CLUSTER_POLL);
        }
    }

    /// Runs `redis-cli --cluster create` over every node, in order, so that the first
    /// ones become the masters; bounded by `deadline`, as `redis-cli` waits for the
    /// nodes to meet without one.
    fn create(&self, cli: &str, replicas: usize, deadline: Instant) -> io::Result<()> {
        let first = self.nodes.first().ok_or_else(|| io::Error::other("a cluster without nodes"))?;
        let output_path = first.dir().join(CREATE_LOG);
        let output = File::create(&output_path)?;
        let tls_files = |name: &str| first.dir().join(name).display().to_string();
        let tls_args = match self.tls {
            true => vec![
                "--tls".to_owned(),
                "--cacert".to_owned(),
                tls_files("ca.pem"),
                "--cert".to_owned(),
                tls_files("client.crt"),
                "--key".to_owned(),
                tls_files("client.key"),
            ],
            false => Vec::new(),
        };
        let mut child = Command::new(cli)
            .args(tls_args)
            .args(["--cluster", "create"])
            .args(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.client_port())))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            // No colour codes in the output kept for error messages.
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => io::Error::new(ErrorKind::NotFound, CLI_NOT_FOUND),
                _ => e,
            })?;
        let status: ExitStatus = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() >= deadline {
                // An error here means it has just exited; `wait` reaps it either way.
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "redis-cli --cluster create did not finish within {READY_WITHIN:?}; killed: {}",
                        file_tail(&output_path)
                    ),
                ));
            }
            thread::sleep(POLL);
        };
        if !status.success() {
            return Err(io::Error::other(format!(
                "redis-cli --cluster create exited with {status}: {}",
                file_tail(&output_path)
            )));
        }
        Ok(())
    }

    /// Polls [`whole`](Self::whole) until it holds or `deadline` passes; returns the
    /// masters' ports.
    fn wait_until_whole(&self, masters: usize, replicas: usize, deadline: Instant) -> io::Result<Vec<u16>> {
        loop {
            let missing = match self.whole(masters, replicas) {
                Ok(ports) => return Ok(ports),
                Err(missing) => missing,
            };
            if Instant::now() >= deadline {
                let log = self.node(missing.port).map(RedisServer::log_tail).unwrap_or_default();
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "the Redis Cluster was not ready within {READY_WITHIN:?}: {} (node on port {} logs: \
                            {log})",
                        missing.what, missing.port
                    ),
                ));
            }
            thread::sleep(CLUSTER_POLL);
        }
    }

    /// Whether the new cluster is whole: every node `cluster_state:ok` with every slot
    /// assigned and every node known; in every node's map, `masters` masters serving
    /// slots and every other node a replica, `replicas` to each master; every replica's
    /// link to its master up, and every master streaming its writes to its replicas.
    /// Returns the masters' ports in node order, or the first thing missing.
    ///
    /// Every node's map, not one: just after `redis-cli` is done, some nodes still see
    /// the replicas-to-be as empty masters, and a replica is only failed over to if the
    /// masters that vote know it as one.
    fn whole(&self, masters: usize, replicas: usize) -> Result<Vec<u16>, Missing> {
        let mut master_ports: Option<Vec<u16>> = None;
        for node in &self.nodes {
            let port = node.port();
            let missing = |what: String| Missing { port, what };
            let info =
                node.command(&["CLUSTER", "INFO"]).map_err(|e| missing(format!("CLUSTER INFO: {e}")))?;
            for (field, want) in [
                ("cluster_state", "ok".to_string()),
                ("cluster_slots_assigned", SLOTS.to_string()),
                ("cluster_known_nodes", self.nodes.len().to_string()),
            ] {
                let value = info_field(&info, field);
                if value != Some(want.as_str()) {
                    return Err(missing(format!("{field} is {value:?}, not {want}")));
                }
            }
            let map = cluster_nodes(port).map_err(|e| missing(format!("CLUSTER NODES: {e}")))?;
            let ports = roles(&map, masters, replicas).map_err(missing)?;
            match &master_ports {
                Some(seen) if *seen != ports => {
                    return Err(missing(format!("sees masters {ports:?}, where others see {seen:?}")));
                }
                Some(_) => {}
                None => master_ports = Some(ports),
            }
        }
        let master_ports = master_ports.unwrap_or_default();
        for node in self.nodes.iter().filter(|n| !master_ports.iter().any(|&p| n.answers_on(p))) {
            let port = node.port();
            let info = node
                .command(&["INFO", "replication"])
                .map_err(|e| Missing { port, what: format!("INFO replication: {e}") })?;
            let link = info_field(&info, "master_link_status");
            if link != Some("up") {
                return Err(Missing { port, what: format!("master_link_status is {link:?}, not up") });
            }
        }
        if replicas > 0 {
            for &port in &master_ports {
                let plain = self.node(port).map_or(port, RedisServer::port);
                self.streaming(plain, replicas).map_err(|what| Missing { port, what })?;
            }
        }
        // In node order, as `redis-cli` was given them.
        Ok(self
            .nodes
            .iter()
            .filter(|n| master_ports.iter().any(|&p| n.answers_on(p)))
            .map(RedisServer::client_port)
            .collect())
    }

    /// Whether the master on `port` streams its writes to its `replicas`: a write on it,
    /// then `WAIT` for them to acknowledge it, on the same connection.
    ///
    /// `master_link_status:up` is not enough: after a sync, the master holds its
    /// writes back until the replica's next acknowledgement, up to a second later (when
    /// the first one came before the master saw the sync end), so a write made and a
    /// master killed in that second is lost. The write is `FLUSHALL`, as a new cluster
    /// holds no data: it changes nothing.
    fn streaming(&self, port: u16, replicas: usize) -> Result<(), String> {
        let count = replicas.to_string();
        let replies = resp::pipeline(port, &[&["FLUSHALL"], &["WAIT", &count, STREAMING_WITHIN]], IO_TIMEOUT)
            .map_err(|e| format!("FLUSHALL then WAIT: {e}"))?;
        let want = format!(":{replicas}");
        match replies.as_slice() {
            [flushed, acked] if flushed == "+OK" && *acked == want => Ok(()),
            _ => Err(format!(
                "the replicas do not acknowledge writes yet: FLUSHALL then WAIT replied {replies:?}"
            )),
        }
    }

    /// The new master of `slot` if the failover from `old` is done as every running
    /// node sees it; otherwise what was seen instead.
    fn served_by_new_master(&self, slot: u16, old: u16) -> Result<u16, String> {
        let mut agreed = None;
        for node in self.nodes.iter().filter(|n| n.is_running()) {
            let port = node.port();
            let info =
                node.command(&["CLUSTER", "INFO"]).map_err(|e| format!("CLUSTER INFO on {port}: {e}"))?;
            let state = info_field(&info, "cluster_state");
            if state != Some("ok") {
                return Err(format!("cluster_state is {state:?} on {port}"));
            }
            let map = cluster_nodes(port).map_err(|e| format!("CLUSTER NODES on {port}: {e}"))?;
            let owner = owner(&map, slot).ok_or_else(|| format!("no master of slot {slot} on {port}"))?;
            if owner == old {
                return Err(format!("{port} still has slot {slot} on {old}"));
            }
            if *agreed.get_or_insert(owner) != owner {
                return Err(format!("{port} has slot {slot} on {owner}, others on {agreed:?}"));
            }
        }
        let new = agreed.ok_or_else(|| "no node is running".to_string())?;
        if !self.is_running(new) {
            return Err(format!("slot {slot} is on {new}, which is not running"));
        }
        Ok(new)
    }

    /// `key`'s hash slot, as a running node computes it.
    fn keyslot(&self, key: &str) -> io::Result<u16> {
        self.first_answer(|port| {
            let reply = resp::command(port, &["CLUSTER", "KEYSLOT", key], IO_TIMEOUT)?;
            reply.strip_prefix(':').and_then(|n| n.parse().ok()).ok_or_else(|| {
                io::Error::new(ErrorKind::InvalidData, format!("CLUSTER KEYSLOT replied {reply:?}"))
            })
        })
    }

    /// The first success of `ask` over the running nodes, in order; the last error if
    /// none succeeds. After a kill, a node may be gone before the cluster knows it.
    fn first_answer<T>(&self, ask: impl Fn(u16) -> io::Result<T>) -> io::Result<T> {
        let mut last = io::Error::new(ErrorKind::NotConnected, "no node of the cluster is running");
        for node in self.nodes.iter().filter(|n| n.is_running()) {
            match ask(node.port()) {
                Ok(answer) => return Ok(answer),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn node(&self, port: u16) -> Option<&RedisServer> {
        self.nodes.iter().find(|n| n.answers_on(port))
    }

    fn is_running(&self, port: u16) -> bool {
        self.node(port).is_some_and(RedisServer::is_running)
    }
}

fn unknown_port(port: u16) -> io::Error {
    io::Error::new(ErrorKind::InvalidInput, format!("no node of this cluster is on port {port}"))
}

/// What a forming cluster still lacks, and on which node, for the error if it never
/// comes.
struct Missing {
    port: u16,
    what: String,
}

/// One line of `CLUSTER NODES`: `<id> <ip:port@bus[,hostname]> <flags> <master id or ->
/// <ping sent> <pong received> <epoch> <link state> <slot or range>...`.
#[derive(Debug, PartialEq)]
struct NodeLine {
    id: String,
    port: u16,
    flags: Vec<String>,
    /// The id of the master a replica replicates; `None` for a master.
    master: Option<String>,
    /// Inclusive slot ranges served; migrations (`[slot->-id]`) left out.
    slots: Vec<(u16, u16)>,
}

impl NodeLine {
    fn is_master(&self) -> bool {
        self.flags.iter().any(|f| f == "master")
    }

    fn is_replica(&self) -> bool {
        self.flags.iter().any(|f| f == "slave")
    }

    /// Flagged failing: `fail?` by the node asked, or `fail` by the cluster.
    fn is_failing(&self) -> bool {
        self.flags.iter().any(|f| f == "fail" || f == "fail?")
    }

    fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(from, to)| (from..=to).contains(&slot))
    }
}

/// `CLUSTER NODES` from the node on `port`, parsed.
fn cluster_nodes(port: u16) -> io::Result<Vec<NodeLine>> {
    parse_nodes(&resp::command(port, &["CLUSTER", "NODES"], IO_TIMEOUT)?)
}

fn parse_nodes(text: &str) -> io::Result<Vec<NodeLine>> {
    text.lines().filter(|line| !line.trim().is_empty()).map(parse_node).collect()
}

fn parse_node(line: &str) -> io::Result<NodeLine> {
    let bad = || io::Error::new(ErrorKind::InvalidData, format!("unexpected CLUSTER NODES line: {line:?}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [id, address, flags, master, _ping, _pong, _epoch, _link, slots @ ..] = fields.as_slice() else {
        return Err(bad());
    };
    // `127.0.0.1:7000@17000`, or `:0@0` for a node whose address is not known yet.
    let host_port = address.split(['@', ',']).next().unwrap_or_default();
    let port = host_port.rsplit(':').next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let slots = slots
        .iter()
        .filter(|s| !s.starts_with('['))
        .map(|s| {
            let (from, to) = s.split_once('-').unwrap_or((s, s));
            Some((from.parse().ok()?, to.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(bad)?;
    Ok(NodeLine {
        id: (*id).to_string(),
        port,
        flags: flags.split(',').map(String::from).collect(),
        master: (*master != "-").then(|| (*master).to_string()),
        slots,
    })
}

/// The port of the master serving `slot` in a map.
fn owner(nodes: &[NodeLine], slot: u16) -> Option<u16> {
    nodes.iter().find(|n| n.is_master() && n.serves(slot)).map(|n| n.port)
}

/// Whether a map has `masters` masters serving slots, each with `replicas` replicas,
/// and no other node; the masters' ports, ascending (each node lists them in an order of
/// its own), or what is wrong.
fn roles(nodes: &[NodeLine], masters: usize, replicas: usize) -> Result<Vec<u16>, String> {
    let serving: Vec<&NodeLine> = nodes.iter().filter(|n| n.is_master() && !n.slots.is_empty()).collect();
    if serving.len() != masters {
        return Err(format!("{} masters serve slots, not {masters}", serving.len()));
    }
    for master in &serving {
        let count = nodes.iter().filter(|n| n.is_replica() && n.master.as_ref() == Some(&master.id)).count();
        if count != replicas {
            return Err(format!("the master on {} has {count} replicas, not {replicas}", master.port));
        }
    }
    if nodes.len() != masters * (replicas + 1) {
        return Err(format!("{} nodes, not {}", nodes.len(), masters * (replicas + 1)));
    }
    let mut ports: Vec<u16> = serving.iter().map(|n| n.port).collect();
    ports.sort_unstable();
    Ok(ports)
}

/// The value of `field` in an `INFO`-style reply (`name:value` lines).
fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "\
397d 127.0.0.1:7405@8405 master - 0 1796379203725 7 connected 5461-10922
baec 127.0.0.1:7402@8402 master,fail - 1796379201609 1796379201106 2 disconnected
b1cc 127.0.0.1:7404@8404,node-4 slave f94c 0 1796379203625 1 connected
92a9 127.0.0.1:7406@8406 slave 85bf 0 1796379203524 3 connected
85bf 127.0.0.1:7403@8403 master - 0 1796379203323 3 connected 10923-16383
f94c 127.0.0.1:7401@8401 myself,master - 0 1796379203000 1 connected 0-5459 5460 [5461->-baec]
";

    #[test]
    fn the_slot_map_is_read_from_cluster_nodes() {
        let nodes = parse_nodes(NODES).unwrap();
        assert_eq!(nodes.len(), 6);
        assert_eq!(nodes[5].port, 7401);
        assert_eq!(nodes[5].slots, [(0, 5459), (5460, 5460)]);
        assert_eq!(nodes[2].port, 7404);
        assert_eq!(nodes[2].master.as_deref(), Some("f94c"));
        assert!(nodes[1].is_failing() && nodes[1].is_master() && nodes[1].slots.is_empty());

        assert_eq!(owner(&nodes, 0), Some(7401));
        assert_eq!(owner(&nodes, 5460), Some(7401));
        assert_eq!(owner(&nodes, 5461), Some(7405));
        assert_eq!(owner(&nodes, 16383), Some(7403));
        assert_eq!(owner(&nodes, 16384), None);
    }

    #[test]
    fn roles_want_every_master_with_its_replicas() {
        let nodes = parse_nodes(NODES).unwrap();
        // 7405 took over from the failed 7402 and has no replica.
        assert!(roles(&nodes, 3, 1).unwrap_err().contains("on 7405 has 0 replicas"));
        let whole: Vec<NodeLine> = nodes.into_iter().filter(|n| n.port != 7402 && n.port != 7405).collect();
        assert_eq!(roles(&whole, 2, 1), Ok(vec![7401, 7403]));
        assert!(roles(&whole, 3, 1).is_err());
    }

    #[test]
    fn a_bad_line_is_an_error() {
        assert!(parse_nodes("f94c 127.0.0.1:7401@8401 master").is_err());
        assert!(parse_nodes("f94c 127.0.0.1:x@8401 master - 0 0 1 connected").is_err());
        assert!(parse_nodes("f94c 127.0.0.1:7401@8401 master - 0 0 1 connected 1-z").is_err());
        assert_eq!(parse_nodes("f94c :0@0 master,noaddr - 0 0 1 connected").unwrap()[0].port, 0);
    }

    #[test]
    fn info_fields_are_found_by_name() {
        let info = "# Cluster\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\n";
        assert_eq!(info_field(info, "cluster_state"), Some("ok"));
        assert_eq!(info_field(info, "cluster_slots_assigned"), Some("16384"));
        assert_eq!(info_field(info, "cluster_slots"), None);
    }

    #[test]
    fn fewer_than_three_masters_are_refused() {
        let error = RedisCluster::start(2, 1).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn a_missing_redis_cli_says_how_to_install_it() {
        let error = RedisCluster::start_with("spider-sandbox-no-such-redis-cli", 3, 0, false).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(error.to_string().contains("apt-get install -y redis-tools"), "{error}");
    }
}
