//! Filling a crawl of the fleet's Redis with made-up requests, through the round script
//! the workers run, to measure what a crawl's shared state costs Redis: memory per seen
//! URL and per queued request, the rate of enqueueing, and then of leasing and finishing
//! them as a worker does (`spiderling bench --fleet-memory`). On a Redis Cluster the crawl
//! is split in parts as a worker would split it (`parts.rs`), and each part's rounds go
//! to its master at once.

use std::time::Instant;

use redis::Script;
use spider_settings::RedisAddress as Address;

use super::connection::{Connection, Redis};
use super::messages::{self, Reply, Round};
use super::parts::prefix;
use super::parts::{self, Parts};
use super::scripts::{round_call, ROUND};
use crate::error::Error;
use crate::request::host::host_key;
use crate::request::Request;

/// Requests a round enqueues.
const PER_ROUND: u64 = 2_000;

/// The seen-set's buckets (`round.lua`, `P:seen:B`).
const SEEN_BUCKETS: u32 = 1 << 16;

/// What Redis held once a crawl had `urls` requests queued.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct FillStep {
    /// Requests enqueued, each a URL not seen before.
    pub urls: u64,
    /// Hosts they spread over.
    pub hosts: u64,
    /// Requests enqueued since the last step.
    pub added: u64,
    /// Seconds spent enqueueing them.
    pub secs: f64,
    /// Requests enqueued a second since the last step.
    pub per_sec: f64,
    /// `used_memory` of `INFO memory` over what Redis held before the crawl.
    pub memory: u64,
    /// `MEMORY USAGE` of the seen-set's buckets, summed.
    pub seen_memory: u64,
}

impl FillStep {
    /// Redis memory per seen URL.
    pub fn per_seen(&self) -> f64 {
        self.seen_memory as f64 / self.urls.max(1) as f64
    }

    /// Redis memory per queued request: all the crawl took but its seen-set.
    pub fn per_queued(&self) -> f64 {
        self.memory.saturating_sub(self.seen_memory) as f64 / self.urls.max(1) as f64
    }
}

/// Requests leased and finished, after the crawl was filled.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Drained {
    /// Requests leased, each finished in the next round.
    pub leased: u64,
    /// Seconds it took.
    pub secs: f64,
}

/// Slots per host when leasing: each round takes up to 64 hosts' requests.
const PER_HOST: usize = 2;

/// Enqueue `http://hN.example/p/I` for I up to the last of `steps`, over `hosts` hosts,
/// into the crawl `crawl` of the Redis at `address`, which must not hold it yet, split in
/// `partitions` parts as workers would (0: one per master); call
/// `step` at each of `steps` (Redis's counters read there count the rounds since the last
/// step, and its reads of memory). Then lease up to `lease` of them as one worker with two
/// slots a host, finishing each in the round after it was leased, and answer what that
/// took. Leaves the crawl in Redis.
///
/// # Errors
///
/// [`Error::Config`] when Redis cannot be reached or already holds the crawl;
/// [`Error::Fleet`] when a round fails.
#[doc(hidden)]
pub async fn fill(
    address: &str,
    crawl: &str,
    partitions: usize,
    hosts: u64,
    steps: &[u64],
    lease: u64,
    mut step: impl FnMut(&FillStep),
) -> Result<Drained, Error> {
    let address = Address::parse(address).map_err(Error::Config)?;
    let failed = |error: redis::RedisError| Error::Fleet {
        address: address.to_string(),
        message: address.hide(&error.to_string()),
    };
    let mut connection = Redis::open(&address).map_err(failed)?.connect().await.map_err(failed)?;
    let prefix = prefix(crawl);
    let held: bool = redis::cmd("EXISTS")
        .arg(format!("{prefix}:epoch"))
        .query_async(&mut connection)
        .await
        .map_err(failed)?;
    if held {
        return Err(Error::Config(format!("{address} holds the crawl {crawl:?} already; give another")));
    }
    let tags = parts::plan(&mut connection, crawl, partitions).await.map_err(failed)?;
    let parts = Parts::new(crawl, &tags);
    let meta = format!("{prefix}:meta");
    redis::cmd("HSET")
        .arg(&meta)
        .arg("parts")
        .arg(serde_json::to_string(&tags).unwrap_or_default())
        .query_async::<()>(&mut connection)
        .await
        .map_err(failed)?;
    let base = used_memory(&mut connection, &parts).await.map_err(failed)?;
    let script = Script::new(ROUND);
    let mut number = 0;
    let mut next = 0_u64;
    let mut previous = 0_u64;
    let mut since = Instant::now();
    for &target in steps {
        while next < target {
            // A round for each part, sent to the parts at once.
            let end = (next + PER_ROUND * parts.len() as u64).min(target);
            number += 1;
            let mut rounds: Vec<Round> = (0..parts.len())
                .map(|_| Round { number, lease_ms: 60_000, dead_ms: 60_000, ..Round::default() })
                .collect();
            for i in next..end {
                let request = Request::get(&format!("http://h{}.example/p/{i}", i % hosts.max(1)))?;
                let Some(host) = host_key(request.url()) else { continue };
                let (change, stored) = messages::enqueued(&request, &host);
                let round = &mut rounds[parts.of(&host)];
                round.enqueue.push(change);
                round.requests.push(stored);
            }
            let sends = rounds.into_iter().enumerate().map(|(part, round)| {
                let script = script.clone();
                let prefix = parts.prefix(part).to_owned();
                let mut connection = connection.clone();
                async move {
                    let json = serde_json::to_string(&round).unwrap_or_default();
                    round_call(&script, &prefix, "fill", &json, &round.requests)
                        .invoke_async::<String>(&mut connection)
                        .await
                }
            });
            for sent in futures_util::future::join_all(sends).await {
                sent.map_err(failed)?;
            }
            next = end;
        }
        let secs = since.elapsed().as_secs_f64();
        let filled = FillStep {
            urls: next,
            hosts: hosts.min(next),
            secs,
            added: next - previous,
            per_sec: (next - previous) as f64 / secs.max(1e-9),
            memory: used_memory(&mut connection, &parts).await.map_err(failed)?.saturating_sub(base),
            seen_memory: seen_memory(&mut connection, &parts).await.map_err(failed)?,
        };
        step(&filled);
        previous = next;
        since = Instant::now();
    }
    // Each part drained by a worker of its own, at once.
    let mut drained = Drained { leased: 0, secs: 0.0 };
    let share = lease.div_ceil(parts.len() as u64);
    let drains = (0..parts.len()).map(|part| {
        let script = script.clone();
        let prefix = parts.prefix(part).to_owned();
        let mut connection = connection.clone();
        async move {
            let mut leased = 0_u64;
            let mut finish = Vec::new();
            let mut number = number;
            while leased < share {
                number += 1;
                let want = usize::try_from(share - leased).unwrap_or(usize::MAX).min(PER_ROUND as usize);
                let round = Round {
                    number,
                    lease_ms: 60_000,
                    dead_ms: 60_000,
                    want,
                    per_host: PER_HOST,
                    finish: std::mem::take(&mut finish),
                    ..Round::default()
                };
                let json = serde_json::to_string(&round).unwrap_or_default();
                let text: String = round_call(&script, &prefix, "fill", &json, &[])
                    .invoke_async(&mut connection)
                    .await
                    .map_err(|e| e.to_string())?;
                let reply = Reply::read(&text)?;
                if reply.leased.is_empty() && round.finish.is_empty() {
                    break;
                }
                leased += reply.leased.len() as u64;
                finish = reply.leased.into_iter().map(|(host, _, id)| (id, 0, host)).collect();
            }
            Ok::<u64, String>(leased)
        }
    });
    for part in futures_util::future::join_all(drains).await {
        drained.leased += part.map_err(|message| Error::Fleet { address: address.to_string(), message })?;
    }
    drained.secs = since.elapsed().as_secs_f64();
    Ok(drained)
}

/// `used_memory` of the servers holding the crawl's parts (on a cluster, the masters of
/// their slots), each server once.
async fn used_memory(connection: &mut Connection, parts: &Parts) -> redis::RedisResult<u64> {
    let mut servers = std::collections::HashMap::new();
    for prefix in parts.prefixes() {
        let info: String = connection
            .on_server_of(
                &format!("{prefix}:meta"),
                redis::cmd("INFO").arg("server").arg("memory").to_owned(),
            )
            .await?;
        let field = |name: &str| {
            info.lines().find_map(|line| line.strip_prefix(name)).map(|value| value.trim().to_owned())
        };
        let used = field("used_memory:").and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        servers.insert(field("run_id:").unwrap_or_default(), used);
    }
    Ok(servers.values().sum())
}

/// `MEMORY USAGE` of every bucket of every part's seen-set, summed.
async fn seen_memory(connection: &mut Connection, parts: &Parts) -> redis::RedisResult<u64> {
    let mut total = 0;
    for prefix in parts.prefixes() {
        for start in (0..SEEN_BUCKETS).step_by(4096) {
            let mut pipe = redis::pipe();
            for bucket in start..start + 4096 {
                pipe.cmd("MEMORY")
                    .arg("USAGE")
                    .arg(format!("{prefix}:seen:{bucket:04x}"))
                    .arg("SAMPLES")
                    .arg(0);
            }
            let sizes: Vec<Option<u64>> = pipe.query_async(connection).await?;
            total += sizes.into_iter().flatten().sum::<u64>();
        }
    }
    Ok(total)
}
