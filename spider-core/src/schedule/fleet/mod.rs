//! The fleet: one crawl shared by many worker processes through Redis (`frontier =
//! "redis://…"`), with its limits held for the whole fleet.
//!
//! A worker is the same engine with a third frontier, [`FleetFrontier`], which answers
//! the dispatcher from memory and leaves every trip to Redis to a task of its own, the
//! syncer (`syncer.rs`). Each round of the syncer is one call of `round.lua`, which
//! applies what the worker did since its last round (requests finished, retries deferred,
//! links found, robots.txt answers, failures, counts) and leases it new requests, all in
//! one atomic step. Leasing is admission: a request is leased only when its host has a
//! free slot for the fleet (`per_host`, each slot resting for its politeness pause after
//! its request) and with a start time from the crawl's GCRA bucket (`rpm`/`rps`) and the
//! host's (a 429's pause), so the limits hold across every worker however many there are.
//!
//! A lease runs out after `lease` unless renewed (every quarter of it): a worker killed
//! mid-crawl loses its leases to the others, nothing else. A worker that stops cleanly
//! gives back what it holds. Redis out of reach: the worker starts nothing, keeps its
//! changes, retries with backoff, and goes on when Redis answers with the crawl's data.
//!
//! Exactly once, as with a state file: a worker's changes reach Redis only from a
//! checkpoint, after its output is flushed, with the output's length (`outputs.rs`), so a
//! request is finished in Redis only once its items are in a file. A paused or cut-off
//! worker does not write pages done after its leases are surely its own (the syncer's
//! reckoning); Redis has the last word, making void a round whose requests are no longer
//! all the worker's (`round.lua`), whose stretch of output the worker then cuts out of
//! its file. Redis itself going back in time (a restart from an
//! older snapshot, or empty) is seen by the count of rounds (`P:epoch`), and every worker
//! stops.
//!
//! `inspect/fleet.rs` reads what the crawls of a Redis are doing, for `spiderling fleet`,
//! without writing anything.

mod clock;
pub(crate) mod connection;
mod fill;
mod frontier;
mod item_keys;
mod messages;
pub(crate) mod outputs;
pub(crate) mod parts;
mod rate;
mod scripts;
mod starts;
mod syncer;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use fill::{fill, Drained, FillStep};
pub(crate) use frontier::FleetFrontier;
pub(crate) use item_keys::FleetKeys;
pub use outputs::FleetOutput;
pub use parts::prefix;
pub(crate) use parts::CRAWLS;
pub(crate) use starts::SpareStarts;

use self::clock::RedisClock;
use self::connection::refusal;
use self::connection::Redis;
use self::frontier::Link;
use self::messages::Round;
use self::outputs::hostname;
use self::parts::Parts;
use self::rate::spacing_ms;
use self::syncer::Syncer;
use crate::error::Error;
use crate::sinks::Committed;
use spider_settings::Config;
use spider_settings::RedisAddress as Address;

/// A worker's membership of the fleet, to end when its crawl ends. Dropped without
/// leaving (the crawl failed to start), it stops its syncer: the leases it took run out.
pub(crate) struct Membership {
    syncer: tokio::task::JoinHandle<()>,
    address: Address,
    /// Under a rate ceiling, its bucket, for starts taken one at a time.
    spare_starts: Option<Arc<SpareStarts>>,
}

impl Membership {
    /// Under a rate ceiling, the starts the browsers' requests and the late leased ones
    /// wait for.
    pub(crate) fn spare_starts(&self) -> Option<Arc<SpareStarts>> {
        self.spare_starts.clone()
    }

    /// Wait, up to `within`, for the last round: it gives back what this worker held.
    pub(crate) async fn leave(mut self, within: Duration) {
        if tokio::time::timeout(within, &mut self.syncer).await.is_err() {
            tracing::warn!(target: "spiderling", redis = %self.address, "could not give back this worker's \
                requests in time; the fleet takes them back when their leases run out");
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.syncer.abort();
    }
}

/// Join the crawl `config` names in the fleet's Redis (creating it if this is the first
/// worker), before anything is fetched.
///
/// # Errors
///
/// [`Error::Config`] when Redis cannot be reached, refuses the password, or holds a crawl
/// of that name made by another spider.
pub(crate) async fn join(
    config: &Config,
    address: &str,
) -> Result<(FleetFrontier, Membership, Committed, FleetKeys), Error> {
    let address = Address::parse(address).map_err(Error::Config)?;
    let refused = |error: redis::RedisError| {
        let problem = refusal(&address, &error).unwrap_or_else(|| {
            let problem = address.hide(&error.to_string());
            format!("{problem}; start it (redis-server), or fix frontier")
        });
        Error::Config(format!("cannot use the fleet's Redis at {address}: {problem}"))
    };
    let redis = Redis::open(&address).map_err(refused)?;
    let mut connection = redis.connect().await.map_err(refused)?;
    let crawl = config.fleet_crawl();
    let prefix = prefix(crawl);
    let meta = format!("{prefix}:meta");
    // A crawl begun before crawls had parts has rounds and no parts: it stays one.
    let (begun, named): (bool, bool) = redis::pipe()
        .atomic()
        .exists(format!("{prefix}:epoch"))
        .hexists(&meta, "parts")
        .query_async(&mut connection)
        .await
        .map_err(refused)?;
    let plan = if begun && !named {
        Vec::new()
    } else {
        parts::plan(&mut connection, crawl, config.partitions).await.map_err(refused)?
    };
    type Record = (String, String, bool, Option<String>, Vec<String>, String, i64);
    let (spider, tags, done, broken, refusing, made, created_ms): Record = redis::pipe()
        .atomic()
        .hset_nx(&meta, "spider", config.name())
        .ignore()
        .hset_nx(&meta, "parts", serde_json::to_string(&plan).unwrap_or_default())
        .ignore()
        .hset_nx(&meta, "created_ms", crate::observe::tables::unix_ms(std::time::SystemTime::now()))
        .ignore()
        .hset_nx(&meta, "made", format!("{:016x}", rand::random::<u64>()))
        .ignore()
        .hset(&meta, "limits", config.fleet_limits())
        .ignore()
        .hget(&meta, "spider")
        .hget(&meta, "parts")
        .exists(format!("{prefix}:done"))
        .hget(&meta, "broken")
        .smembers(format!("{prefix}:refusing"))
        .hget(&meta, "made")
        .hget(&meta, "created_ms")
        .query_async(&mut connection)
        .await
        .map_err(refused)?;
    // Apart from the crawl's keys: on a cluster, the list of crawls is in a slot of its own.
    redis::cmd("SADD").arg(CRAWLS).arg(crawl).query_async::<()>(&mut connection).await.map_err(refused)?;
    let old_layout: bool = redis::cmd("EXISTS")
        .arg(format!("spiderling:{crawl}:meta"))
        .query_async(&mut connection)
        .await
        .map_err(refused)?;
    if let Some(why) = broken {
        return Err(Error::Fleet { address: address.to_string(), message: why });
    }
    if old_layout {
        return Err(Error::Config(format!(
            "the crawl {crawl:?} in {address} was made by an earlier Spiderling, whose seen-set and queued \
             requests this one keeps otherwise; finish it with that version, or give this one another \
                 crawl_id"
        )));
    }
    if spider != config.name() {
        return Err(Error::Config(format!(
            "the crawl {crawl:?} in {address} belongs to the spider {spider:?}; give this one another \
                crawl_id"
        )));
    }
    let tags: Vec<String> = serde_json::from_str(&tags).map_err(|e| Error::Fleet {
        address: address.to_string(),
        message: format!("the crawl's list of parts does not read ({e})"),
    })?;
    let parts = Parts::new(crawl, &tags);
    if parts.split() {
        // Each part's record: the rounds there are routed by it, and a worker reconnecting
        // finds its part's data by it.
        for prefix in parts.prefixes() {
            redis::cmd("HSETNX")
                .arg(format!("{prefix}:meta"))
                .arg("crawl")
                .arg(crawl)
                .query_async::<()>(&mut connection)
                .await
                .map_err(refused)?;
        }
    }
    if done {
        tracing::warn!(target: "spiderling", redis = %address, crawl, "this crawl is done: its seen-set \
            turns away every page it crawled; give another crawl_id to crawl the site again");
    }
    let worker = format!("{}:{}:{:08x}", hostname(), std::process::id(), rand::random::<u32>());
    let round = Round {
        lease_ms: u64::try_from(config.lease.as_millis()).unwrap_or(u64::MAX),
        dead_ms: u64::try_from(syncer::DEAD_AFTER.as_millis()).unwrap_or(u64::MAX),
        spacing_ms: config.rate.map_or(0.0, spacing_ms),
        per_host: config.per_host,
        horizon_ms: u64::try_from(syncer::HORIZON.as_millis()).unwrap_or(u64::MAX),
        obey_robots: config.obey_robots,
        window_s: crate::observe::gauge::WINDOW.as_secs().max(1),
        adapt_hold_ms: u64::try_from(crate::schedule::throttle::adaptive::HOLD.as_millis())
            .unwrap_or(u64::MAX),
        ..Round::default()
    };
    let output = output_file(config)?;
    // A worker's output is committed in the part it leased from at the time: the
    // longest commit is the latest, and holds every earlier one.
    let mut committed: Option<Committed> = None;
    if let Some(file) = &output {
        for prefix in parts.prefixes() {
            let recorded: Option<String> = redis::cmd("HGET")
                .arg(format!("{prefix}:outputs"))
                .arg(file)
                .query_async(&mut connection)
                .await
                .map_err(refused)?;
            let Some(recorded) = recorded else { continue };
            let read = outputs::read_committed(&recorded).map_err(|problem| Error::Fleet {
                address: address.to_string(),
                message: format!("the committed length of {file} does not read ({problem})"),
            })?;
            if committed.as_ref().is_none_or(|longest| read.bytes > longest.bytes) {
                committed = Some(read);
            }
        }
    }
    let link = Arc::new(Link::new(round));
    // A crawl just made is not ended before its workers of a crawl of that name that
    // Redis lost, still retrying, could have come back and said so (`Syncer::reconnect`).
    let age = crate::observe::tables::unix_ms(std::time::SystemTime::now()).saturating_sub(created_ms);
    let young_for = syncer::SETTLING.saturating_sub(Duration::from_millis(u64::try_from(age).unwrap_or(0)));
    link.lock().young_until = Some(Instant::now() + young_for);
    // Known before the first request: a host another worker found refusing the plain
    // client gets a browser's wire from this worker's first request to it.
    link.lock().refusing = refusing;
    let committed = committed.unwrap_or_default();
    let frontier = FleetFrontier::new(config, link.clone(), output, committed);
    tracing::info!(target: "spiderling", redis = %address, crawl, %worker, "joined the fleet");
    let keys = FleetKeys::new(redis.clone(), connection.clone(), address.clone(), &prefix);
    let spacing = config.rate.map_or(0.0, spacing_ms);
    let spare_starts = (spacing > 0.0).then(|| {
        Arc::new(SpareStarts::new(connection.clone(), parts.crawl(), spacing, config.render_timeout))
    });
    let syncer = Syncer {
        link,
        redis,
        connection,
        address: address.clone(),
        home: parts.of(&worker),
        epochs: vec![0; parts.len()],
        parts,
        worker,
        made,
        lease: config.lease,
        clock: RedisClock::default(),
        number: 0,
        unused: None,
        last_count: None,
        draining: None,
    };
    let membership = Membership { syncer: tokio::spawn(syncer.run()), address, spare_starts };
    Ok((frontier, membership, committed, keys))
}

/// This worker's items file (one in a fleet, `Config::validate` says) as the fleet names
/// it, `HOST:PATH` (the path absolute), so that workers on two machines writing the same
/// path are told apart.
fn output_file(config: &Config) -> Result<Option<String>, Error> {
    config
        .outputs
        .first()
        .map(|file| {
            let path = &file.path;
            std::path::absolute(path)
                .map(|path| format!("{}:{}", hostname(), path.display()))
                .map_err(|source| Error::Io { path: path.to_owned(), source })
        })
        .transpose()
}
