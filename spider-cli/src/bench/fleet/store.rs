//! The fleet bench's Redis: one it starts (and stops after), a Redis Cluster it starts
//! (`--cluster`), or the one `--frontier` names; what it spent over a run, read from
//! `INFO`, and the bench's crawls removed from it afterwards.
//!
//! The cost is read from Redis's own counters rather than from `/proc` so that it means
//! the same for a Redis the bench did not start (a remote one has no `/proc` here). On a
//! cluster it is read from every node: the masters' commands (what the workers sent, and
//! what their scripts ran), and every node's CPU, replicas copying the writes included.

use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo};
use spider_sandbox::{RedisCluster, RedisServer};
use spiderling::{fleet_prefix as prefix, RedisAddress};

/// Connect, read and write timeout of the bench's own connection.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The most `SCAN` calls one removal makes: a bench crawl holds a few dozen keys, so this
/// only bounds a Redis that keeps answering with more.
const SCAN_CALLS: usize = 10_000;

/// The Redis the workers share.
pub(super) struct Fleet {
    /// What the workers are given as `frontier`.
    url: String,
    /// Where the workers' commands go: the one server, or a cluster's masters.
    masters: Vec<redis::Client>,
    /// A cluster's replicas, which spend CPU copying what the masters wrote.
    replicas: Vec<redis::Client>,
    /// The server or cluster this bench started; stopped when dropped.
    started: Started,
}

enum Started {
    Nothing,
    One(RedisServer),
    /// The nodes stop when `_nodes` is dropped.
    Cluster {
        _nodes: RedisCluster,
        masters: usize,
        replicas: usize,
    },
}

impl Fleet {
    /// The Redis `frontier` names (`redis://…`, `redis+cluster://…` or `env:VAR`), or a
    /// `redis-server` of the bench's own when there is none.
    pub(super) fn open(frontier: Option<&str>) -> Result<Fleet, String> {
        match frontier {
            Some(url) => Fleet::reach(url.to_owned(), Started::Nothing),
            None => {
                let server = RedisServer::start().map_err(|e| format!("cannot start redis-server: {e}"))?;
                Fleet::reach(server.url(), Started::One(server))
            }
        }
    }

    /// A Redis Cluster of the bench's own on 127.0.0.1: `masters` masters with `replicas`
    /// replicas each.
    pub(super) fn start_cluster(masters: usize, replicas: usize) -> Result<Fleet, String> {
        let cluster = RedisCluster::start(masters, replicas)
            .map_err(|e| format!("cannot start a Redis Cluster of {masters} masters: {e}"))?;
        Fleet::reach(cluster.url(), Started::Cluster { _nodes: cluster, masters, replicas })
    }

    fn reach(url: String, started: Started) -> Result<Fleet, String> {
        let address = RedisAddress::parse(&url)?;
        let client = |url: &str| {
            redis::Client::open(url)
                .map_err(|e| format!("frontier is not a Redis URL ({e}); give redis://HOST:PORT/DB"))
        };
        let (masters, replicas) = match address.cluster_nodes() {
            None => (vec![client(address.url())?], Vec::new()),
            Some(seeds) => {
                let seed = seeds.first().ok_or("frontier names no node of the cluster")?;
                let nodes = cluster_nodes(&client(seed)?)?;
                // Each node with the seed's password.
                let at = |node: &Node| -> Result<redis::Client, String> {
                    let info = seed.as_str().into_connection_info().map_err(|e| format!("frontier: {e}"))?;
                    redis::Client::open(info.set_addr(ConnectionAddr::Tcp(node.host.clone(), node.port)))
                        .map_err(|e| {
                            format!("cannot reach the cluster's node {}:{}: {e}", node.host, node.port)
                        })
                };
                let masters = nodes.iter().filter(|node| node.master).map(at);
                let replicas = nodes.iter().filter(|node| !node.master).map(at);
                (masters.collect::<Result<_, _>>()?, replicas.collect::<Result<_, _>>()?)
            }
        };
        let fleet = Fleet { url, masters, replicas, started };
        for client in fleet.masters.iter().chain(&fleet.replicas) {
            connection(client)?;
        }
        Ok(fleet)
    }

    /// What the workers are given as `frontier`.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// Where the Redis comes from, for the report: never the URL, which may hold a password.
    pub(super) fn origin(&self) -> String {
        match &self.started {
            Started::One(server) => format!(
                "one redis-server started by the bench on \
                127.0.0.1:{}",
                server.port()
            ),
            Started::Cluster { masters, replicas, .. } => format!(
                "a Redis Cluster of {masters} masters with {replicas} replica(s) each, started by the bench \
                    on 127.0.0.1"
            ),
            Started::Nothing if self.kind() == "one" => {
                "given by --frontier (its CPU counts every client's)".to_owned()
            }
            Started::Nothing => format!(
                "the Redis Cluster given by --frontier, {} masters and {} replicas (their CPU counts every \
                    client's)",
                self.masters.len(),
                self.replicas.len()
            ),
        }
    }

    /// A short name of the kind of Redis, for the rows of a run on several.
    pub(super) fn kind(&self) -> &'static str {
        if self.replicas.is_empty() && self.masters.len() == 1 {
            "one"
        } else {
            "cluster"
        }
    }

    /// Redis's counters now: every master's commands, every node's CPU.
    pub(super) fn counters(&self) -> Result<Counters, String> {
        let mut total = Counters::default();
        for (client, master) in
            self.masters.iter().map(|c| (c, true)).chain(self.replicas.iter().map(|c| (c, false)))
        {
            let info: String = redis::cmd("INFO")
                .arg("cpu")
                .arg("commandstats")
                .query(&mut connection(client)?)
                .map_err(|e| format!("Redis refused INFO: {e}"))?;
            let node = Counters::parse(&info);
            total.cpu_secs += node.cpu_secs;
            if master {
                total.script_calls += node.script_calls;
                total.script_usec += node.script_usec;
                total.commands += node.commands;
            }
        }
        Ok(total)
    }

    /// Whether Redis holds anything of the crawl `crawl_id` already: a bench run must
    /// start a fresh crawl, or it would measure the end of an old one.
    pub(super) fn holds(&self, crawl_id: &str) -> Result<bool, String> {
        let key = format!("{}:meta", prefix(crawl_id));
        for client in &self.masters {
            let exists = redis::cmd("EXISTS").arg(&key).query::<bool>(&mut connection(client)?);
            if let Some(true) = elsewhere(exists).map_err(|e| format!("Redis refused EXISTS: {e}"))? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Remove the crawl `crawl_id` from Redis: every key under its prefix (the layout
    /// `round.lua` documents), on whichever master holds it, and its name in the set of
    /// crawls. Only for the bench's own crawls, whose ids no one else uses.
    pub(super) fn forget(&self, crawl_id: &str) -> Result<(), String> {
        let refused = |e: redis::RedisError| format!("cannot remove the crawl {crawl_id} from Redis: {e}");
        for client in &self.masters {
            let mut connection = connection(client)?;
            // The crawl's own keys, and those of its parts (`spiderling:{CRAWL/N}:…`).
            for pattern in [format!("{}:*", prefix(crawl_id)), format!("spiderling:{{{crawl_id}/*")] {
                if !unlink_matching(&mut connection, &pattern).map_err(refused)? {
                    return Err(format!("the crawl {crawl_id} still had keys after {SCAN_CALLS} SCAN calls"));
                }
            }
            let removed = redis::cmd("SREM").arg(CRAWLS).arg(crawl_id).query::<u64>(&mut connection);
            elsewhere(removed).map_err(refused)?;
        }
        Ok(())
    }
}

fn connection(client: &redis::Client) -> Result<redis::Connection, String> {
    let connection =
        client.get_connection_with_timeout(TIMEOUT).map_err(|e| format!("cannot reach Redis: {e}"))?;
    let timeouts =
        connection.set_read_timeout(Some(TIMEOUT)).and_then(|()| connection.set_write_timeout(Some(TIMEOUT)));
    timeouts.map_err(|e| format!("cannot set timeouts on the Redis connection: {e}"))?;
    Ok(connection)
}

/// A node of a cluster, as `CLUSTER NODES` lists it.
struct Node {
    host: String,
    port: u16,
    master: bool,
}

/// A cluster's nodes, from `CLUSTER NODES` on `seed`; a node marked failed or without an
/// address is left out.
fn cluster_nodes(seed: &redis::Client) -> Result<Vec<Node>, String> {
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut connection(seed)?)
        .map_err(|e| format!("the cluster's seed refused CLUSTER NODES: {e}"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let address = fields.next()?.split(['@', ',']).next()?;
            let flags = fields.next()?;
            if flags.contains("fail") || flags.contains("noaddr") {
                return None;
            }
            let (host, port) = address.rsplit_once(':')?;
            Some(Node { host: host.to_owned(), port: port.parse().ok()?, master: flags.contains("master") })
        })
        .collect())
}

/// A key's command answered by a cluster's other master (`MOVED`) is `None`: asked of
/// every master, one answers.
fn elsewhere<T>(result: redis::RedisResult<T>) -> redis::RedisResult<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(error) if error.code() == Some("MOVED") => Ok(None),
        Err(error) => Err(error),
    }
}

/// Unlink every key matching `pattern` on one server (`SCAN` reads one node's keys
/// only); `false` when it still had some after [`SCAN_CALLS`] calls.
fn unlink_matching(connection: &mut redis::Connection, pattern: &str) -> redis::RedisResult<bool> {
    let mut cursor = 0_u64;
    for _ in 0..SCAN_CALLS {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(connection)?;
        if !keys.is_empty() {
            redis::cmd("UNLINK").arg(&keys).query::<u64>(connection)?;
        }
        if next == 0 {
            return Ok(true);
        }
        cursor = next;
    }
    Ok(false)
}

/// The set of every crawl a Redis holds (what `spiderling fleet` lists).
const CRAWLS: &str = "spiderling:crawls";

/// What Redis has spent since it started: CPU, and the fleet's rounds (each one call of
/// its Lua script, `EVALSHA`, or `EVAL` the first time a connection finds it not loaded).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Counters {
    /// `used_cpu_sys + used_cpu_user`: every thread of the server.
    pub(super) cpu_secs: f64,
    /// Calls of `EVALSHA` and `EVAL`.
    pub(super) script_calls: u64,
    /// Microseconds Redis spent inside those calls.
    pub(super) script_usec: u64,
    /// Calls of every command, those a script ran included, but `INFO` and `MEMORY`.
    pub(super) commands: u64,
}

impl Counters {
    /// The counters in the text of `INFO cpu commandstats`; a line that is missing or
    /// does not read counts 0.
    fn parse(info: &str) -> Counters {
        let mut counters = Counters::default();
        for line in info.lines() {
            let Some((name, value)) = line.trim().split_once(':') else { continue };
            match name {
                "used_cpu_sys" | "used_cpu_user" => counters.cpu_secs += value.parse::<f64>().unwrap_or(0.0),
                "cmdstat_evalsha" | "cmdstat_eval" => {
                    counters.script_calls += stat(value, "calls");
                    counters.script_usec += stat(value, "usec");
                }
                _ => {}
            }
            // The bench's own reads of Redis left out.
            // (`MEMORY USAGE` is counted as `cmdstat_memory|usage`.)
            if name.starts_with("cmdstat_") && name != "cmdstat_info" && !name.starts_with("cmdstat_memory") {
                counters.commands += stat(value, "calls");
            }
        }
        counters
    }

    /// What was spent from `before` to these.
    pub(super) fn since(&self, before: &Counters) -> Counters {
        Counters {
            cpu_secs: (self.cpu_secs - before.cpu_secs).max(0.0),
            script_calls: self.script_calls.saturating_sub(before.script_calls),
            script_usec: self.script_usec.saturating_sub(before.script_usec),
            commands: self.commands.saturating_sub(before.commands),
        }
    }
}

/// The field `name` of a `commandstats` value such as `calls=12,usec=340,…`.
fn stat(value: &str, name: &str) -> u64 {
    value
        .split(',')
        .filter_map(|field| field.split_once('='))
        .find(|(key, _)| *key == name)
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_read_cpu_both_script_commands_and_every_command() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\n\
                    used_cpu_sys_children:9.000000\r\nused_cpu_sys_main_thread:1.400000\r\n\
                    # Commandstats\r\n\
                    cmdstat_evalsha:calls=40,usec=800,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_eval:calls=2,usec=90,usec_per_call=45.00,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_get:calls=7,usec=7,usec_per_call=1.00\r\n\
                    cmdstat_info:calls=3,usec=30,usec_per_call=10.00\r\n\
                    cmdstat_memory|usage:calls=5,usec=5,usec_per_call=1.00\r\n";
        let counters = Counters::parse(info);
        assert_eq!(counters, Counters { cpu_secs: 1.75, script_calls: 42, script_usec: 890, commands: 49 });
        let before = Counters { cpu_secs: 0.75, script_calls: 2, script_usec: 90, commands: 9 };
        assert_eq!(
            counters.since(&before),
            Counters { cpu_secs: 1.0, script_calls: 40, script_usec: 800, commands: 40 }
        );
        assert_eq!(Counters::parse("no such lines"), Counters::default());
    }
}
