//! How a worker reaches the fleet's Redis: one server, or a Redis Cluster.
//!
//! Every key of a crawl carries the crawl's hash tag (`spiderling:{CRAWL}:…`), so on a
//! cluster a crawl lives in one slot, on one master, and each round stays one atomic
//! script there. What a cluster adds is failover: a master's replica takes over when it
//! dies, with only what reached it. So on a cluster a write the worker acts on (a
//! round's leases and ends, an item key claimed) counts only once a replica has it
//! (`WAIT`); a round not yet copied when its master dies is sent again, to the replica
//! promoted, under its number, and applied there once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{
    AsyncConnectionConfig, Client, ClientTlsConfig, Cmd, Pipeline, RedisFuture, RedisResult, TlsCertificates,
    Value,
};
use spider_settings::RedisAddress as Address;

/// A call that takes longer than this is a lost connection.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write may wait for a replica to copy it before it counts as not made.
const REPLICA_WAIT: Duration = Duration::from_secs(1);

/// How long a master's answer to whether it has a replica is trusted: a replica attached
/// later is waited for from then on.
const ROLE_KEPT: Duration = Duration::from_secs(5);

/// Where the fleet's Redis is, ready to connect (again).
#[derive(Clone)]
pub(crate) enum Redis {
    One(Box<Client>),
    Cluster(Box<ClusterClient>),
}

/// A connection to either; cheap to clone, every clone sharing it.
#[derive(Clone)]
pub(crate) enum Connection {
    One(MultiplexedConnection),
    Cluster(ClusterConnection, Arc<Mutex<HashMap<u16, Role>>>),
}

/// Whether the master of a slot had a replica when last asked, and when it said so. A
/// replica promoted in a failover has none until one is attached to it: waiting for a
/// copy there would hold every round for [`REPLICA_WAIT`].
#[derive(Clone, Copy)]
pub(crate) struct Role {
    replicas: bool,
    asked: Instant,
}

impl Redis {
    pub(crate) fn open(address: &Address) -> RedisResult<Redis> {
        let certificates = address.tls().map(certificates).transpose()?;
        Ok(match address.cluster_nodes() {
            Some(nodes) => {
                let builder = ClusterClient::builder(nodes.iter().map(String::as_str))
                    .connection_timeout(CALL_TIMEOUT)
                    .response_timeout(CALL_TIMEOUT)
                    // A failover takes seconds; the syncer's own backoff rides it out.
                    .retries(2);
                let builder = match certificates {
                    Some(certificates) => builder.certs(certificates),
                    None => builder,
                };
                Redis::Cluster(Box::new(builder.build()?))
            }
            None => match certificates {
                Some(certificates) => {
                    Redis::One(Box::new(Client::build_with_tls(address.url(), certificates)?))
                }
                None => Redis::One(Box::new(Client::open(address.url())?)),
            },
        })
    }

    pub(crate) async fn connect(&self) -> RedisResult<Connection> {
        let mut connection = match self {
            Redis::One(client) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(CALL_TIMEOUT))
                    .set_response_timeout(Some(CALL_TIMEOUT));
                Connection::One(client.get_multiplexed_async_connection_with_config(&config).await?)
            }
            Redis::Cluster(client) => {
                Connection::Cluster(client.get_async_connection().await?, Arc::default())
            }
        };
        // A plain command first, so that a password Redis wants is refused here, as NOAUTH:
        // refused inside a transaction, redis-rs 1.8 miscounts the replies (a subtraction
        // that overflows, a panic in a debug build).
        redis::cmd("PING").query_async::<()>(&mut connection).await?;
        Ok(connection)
    }
}

/// The PEM files a `rediss://` address names, read: its CA (else the system's roots) and
/// its client certificate with the key.
fn certificates(tls: &spider_settings::RedisTls) -> RedisResult<TlsCertificates> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|error| {
            redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "cannot read a TLS file",
                format!("{}: {error}", path.display()),
            ))
        })
    };
    let client_tls = match &tls.client {
        Some((cert, key)) => Some(ClientTlsConfig { client_cert: read(cert)?, client_key: read(key)? }),
        None => None,
    };
    Ok(TlsCertificates { client_tls, root_cert: tls.ca.as_deref().map(read).transpose()? })
}

impl Connection {
    /// Return once what this connection wrote to the master holding `key` is on one of
    /// its replicas, on a cluster whose master has one; at once anywhere else.
    ///
    /// # Errors
    ///
    /// When the master does not answer, or has a replica and no replica copied the
    /// writes within [`REPLICA_WAIT`]: the writes may be lost in a failover, so what
    /// they answered must not be acted on.
    pub(crate) async fn replicated(&mut self, key: &str) -> RedisResult<()> {
        let Connection::Cluster(connection, role) = self else { return Ok(()) };
        // The master of the key's slot, over the connection that made the writes (one
        // per node), which is what `WAIT` counts.
        let route = master_of(key);
        let slot = slot(key);
        let known = role
            .lock()
            .ok()
            .and_then(|roles| roles.get(&slot).copied())
            .filter(|role| role.asked.elapsed() < ROLE_KEPT);
        let replicas = match known {
            Some(known) => known.replicas,
            None => {
                let replicas = has_replicas(connection, route.clone()).await?;
                if let Ok(mut roles) = role.lock() {
                    roles.insert(slot, Role { replicas, asked: Instant::now() });
                }
                replicas
            }
        };
        if !replicas {
            return Ok(());
        }
        let wait = redis::cmd("WAIT")
            .arg(1)
            .arg(u64::try_from(REPLICA_WAIT.as_millis()).unwrap_or(u64::MAX))
            .to_owned();
        let copies: i64 =
            redis::from_redis_value(connection.route_command(wait, RoutingInfo::SingleNode(route)).await?)?;
        if copies >= 1 {
            return Ok(());
        }
        // The master may have changed (a failover) or lost its replica: ask again next time.
        if let Ok(mut roles) = role.lock() {
            roles.remove(&slot);
        }
        Err(redis::RedisError::from((
            redis::ErrorKind::Io,
            "no replica copied the write in time",
            format!("its master has a replica and {REPLICA_WAIT:?} went by"),
        )))
    }

    /// `cmd`'s answer from the server that holds `key`: on a cluster, the master of its
    /// slot, where a command without a key would be sent to every master.
    pub(crate) async fn on_server_of<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        cmd: Cmd,
    ) -> RedisResult<T> {
        match self {
            Connection::One(connection) => cmd.query_async(connection).await,
            Connection::Cluster(connection, _) => {
                let value = connection.route_command(cmd, RoutingInfo::SingleNode(master_of(key))).await?;
                Ok(redis::from_redis_value(value)?)
            }
        }
    }
}

impl Connection {
    /// On a cluster, each master's slot ranges (`CLUSTER SLOTS`), masters in the order of
    /// their first slot; `None` on a single Redis.
    pub(crate) async fn masters(&mut self) -> RedisResult<Option<Vec<Vec<(u16, u16)>>>> {
        let Connection::Cluster(connection, _) = self else { return Ok(None) };
        let slots = connection
            .route_command(
                redis::cmd("CLUSTER").arg("SLOTS").to_owned(),
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
            )
            .await?;
        let mut masters: Vec<(String, Vec<(u16, u16)>)> = Vec::new();
        let Value::Array(ranges) = slots else { return Ok(Some(Vec::new())) };
        for range in ranges {
            let Value::Array(range) = range else { continue };
            let (Some(Value::Int(low)), Some(Value::Int(high)), Some(Value::Array(node))) =
                (range.first(), range.get(1), range.get(2))
            else {
                continue;
            };
            let name = format!("{:?}", node.iter().take(2).collect::<Vec<_>>());
            let range = (u16::try_from(*low).unwrap_or(0), u16::try_from(*high).unwrap_or(0));
            match masters.iter_mut().find(|(known, _)| *known == name) {
                Some((_, ranges)) => ranges.push(range),
                None => masters.push((name, vec![range])),
            }
        }
        masters.sort_by_key(|(_, ranges)| ranges.iter().map(|r| r.0).min());
        Ok(Some(masters.into_iter().map(|(_, ranges)| ranges).collect()))
    }
}

/// The route to the master of `key`'s slot.
fn master_of(key: &str) -> SingleNodeRoutingInfo {
    SingleNodeRoutingInfo::SpecificNode(Route::new(slot(key), SlotAddr::Master))
}

/// The cluster's hash slot of `key`: of its hash tag (what the first `{…}` holds, when
/// not empty), or of the whole key.
pub(super) fn slot(key: &str) -> u16 {
    let tagged = key
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty())
        .unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(tagged.as_bytes()) % 16384
}

/// Whether the master on `route` has a replica attached (`ROLE` lists them): a master
/// without one has nothing to wait for.
async fn has_replicas(connection: &mut ClusterConnection, route: SingleNodeRoutingInfo) -> RedisResult<bool> {
    let role = connection.route_command(redis::cmd("ROLE"), RoutingInfo::SingleNode(route)).await?;
    let replicas = match role {
        Value::Array(parts) => {
            parts.get(2).is_some_and(|list| matches!(list, Value::Array(list) if !list.is_empty()))
        }
        _ => false,
    };
    Ok(replicas)
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::One(connection) => connection.req_packed_command(cmd),
            Connection::Cluster(connection, _) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::One(connection) => connection.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(connection, _) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::One(connection) => connection.get_db(),
            Connection::Cluster(connection, _) => connection.get_db(),
        }
    }
}

/// What to tell the user when Redis could not be reached or refused us, in words of
/// their own: redis-rs reports a password Redis wants inside a transaction as
/// `Transaction aborted: [(Index 18446744073709551615, ...NOAUTH...)]`. `None` for any
/// other error.
pub(crate) fn refusal(address: &Address, error: &redis::RedisError) -> Option<String> {
    let text = error.to_string();
    let password =
        "give it in the URL (redis://:PASSWORD@HOST:PORT/DB, or env:VAR naming a variable that holds it)";
    if error.code() == Some("NOAUTH") || text.contains("NOAUTH") {
        Some(format!("it wants a password, and the address gives none; {password}"))
    } else if error.kind() == redis::ErrorKind::AuthenticationFailed
        || error.code() == Some("WRONGPASS")
        || text.contains("WRONGPASS")
    {
        Some(format!("it refused the password the address gives; {password}"))
    } else if ["certificate", "tls", "fatal alert"].iter().any(|word| text.to_lowercase().contains(word)) {
        let problem = address.hide(&text);
        Some(format!(
            "{problem}; over TLS (rediss://) the server's certificate is checked against cacert=FILE, else \
                the system's roots, and cert=FILE&key=FILE give a client certificate"
        ))
    } else if error.is_io_error() || error.is_connection_refusal() || error.is_timeout() {
        let problem = address.hide(&text);
        Some(format!("{problem}; is redis-server running there? start it, or fix the host, port or database"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::slot;

    #[test]
    fn a_key_goes_to_the_slot_of_its_hash_tag() {
        // Slots Redis's CLUSTER KEYSLOT gives.
        assert_eq!(slot("foo"), 12182);
        assert_eq!(slot("spiderling:{books}:meta"), 15901);
        assert_eq!(slot("spiderling:{books}:q:example.com"), 15901);
        assert_eq!(slot("foo{}{bar}"), 8363, "an empty tag: the whole key");
    }
}
