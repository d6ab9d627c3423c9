//! Starts under the fleet's rate ceiling taken one at a time, for the requests no lease
//! admits: a rendered page's own (its scripts, style sheets, API calls), and a leased
//! request that leaves later than the start its lease reserved (it waited for one of the
//! worker's slots), whose start is spent. Each reserves one start in the crawl's GCRA
//! bucket (`reserve.lua`, on the bucket `round.lua` leases from) and waits for it, so the
//! fleet's `rpm`/`rps` holds over every request that leaves, whenever it leaves.

use std::time::Duration;

use redis::Script;

use super::connection::Connection;
use super::scripts::RESERVE;
use super::syncer::bounded;

/// The crawl's rate bucket, for starts taken one at a time.
pub(crate) struct SpareStarts {
    connection: Connection,
    script: Script,
    /// The bucket's key, in the crawl's own slot.
    key: String,
    spacing_us: i64,
    /// How far ahead a start may be reserved: a request that would wait longer is not sent.
    horizon_us: u64,
}

impl SpareStarts {
    pub(super) fn new(connection: Connection, crawl: &str, spacing_ms: f64, horizon: Duration) -> Self {
        SpareStarts {
            connection,
            script: Script::new(RESERVE),
            key: format!("{crawl}:tat"),
            spacing_us: (spacing_ms * 1000.0).ceil() as i64,
            horizon_us: u64::try_from(horizon.as_micros()).unwrap_or(u64::MAX),
        }
    }

    /// Wait for one start; `false` when none is free within the horizon or Redis did not
    /// answer, and the request is not to be sent.
    pub(crate) async fn wait_turn(&self) -> bool {
        let mut call = self.script.key(&self.key);
        call.arg(self.spacing_us).arg(self.horizon_us).arg(1).arg(0).arg(0);
        let mut connection = self.connection.clone();
        let reply: Vec<i64> = match bounded(call.invoke_async(&mut connection)).await {
            Ok(reply) => reply,
            Err(error) => {
                tracing::debug!(target: "spiderling", %error, "no start under the fleet's rate: Redis did \
                    not answer");
                return false;
            }
        };
        // Redis's clock, the bucket's end, then the start, in µs from that clock.
        let Some(&from_now) = reply.get(2) else { return false };
        tokio::time::sleep(Duration::from_micros(u64::try_from(from_now).unwrap_or(0))).await;
        true
    }
}
