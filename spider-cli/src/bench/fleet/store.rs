//! The fleet bench's Redis: one it starts (and stops after), or the one `--frontier`
//! names; what it spent over a run, read from `INFO`, and the bench's crawls removed
//! from it afterwards.
//!
//! The cost is read from Redis's own counters rather than from `/proc` so that it means
//! the same for a Redis the bench did not start (a remote one has no `/proc` here).

use std::time::Duration;

use spider_sandbox::RedisServer;
use spiderling::fleet_prefix as prefix;

/// Connect, read and write timeout of the bench's own connection.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The most `SCAN` calls one removal makes: a bench crawl holds a few dozen keys, so this
/// only bounds a Redis that keeps answering with more.
const SCAN_CALLS: usize = 10_000;

/// The Redis the workers share.
pub(super) struct Fleet {
    /// What the workers are given as `frontier`.
    url: String,
    client: redis::Client,
    /// The server this bench started; stopped when dropped.
    started: Option<RedisServer>,
}

impl Fleet {
    /// The Redis `frontier` names (`redis://…` or `env:VAR`), or a `redis-server` of the
    /// bench's own when there is none.
    pub(super) fn open(frontier: Option<&str>) -> Result<Fleet, String> {
        let (url, started) = match frontier {
            Some(url) => (url.to_owned(), None),
            None => {
                let server = RedisServer::start().map_err(|e| format!("cannot start redis-server: {e}"))?;
                (server.url(), Some(server))
            }
        };
        let resolved = match url.strip_prefix("env:") {
            Some(var) => std::env::var(var).map_err(|_| format!("frontier: ${var} is not set"))?,
            None => url.clone(),
        };
        let client = redis::Client::open(resolved.as_str())
            .map_err(|e| format!("frontier is not a Redis URL ({e}); give redis://HOST:PORT/DB"))?;
        let fleet = Fleet { url, client, started };
        fleet.connection()?;
        Ok(fleet)
    }

    /// What the workers are given as `frontier`.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// Where the Redis comes from, for the report: never the URL, which may hold a password.
    pub(super) fn origin(&self) -> String {
        match &self.started {
            Some(server) => format!("started by the bench on 127.0.0.1:{}", server.port()),
            None => "given by --frontier (its CPU counts every client's)".to_owned(),
        }
    }

    fn connection(&self) -> Result<redis::Connection, String> {
        let connection = self
            .client
            .get_connection_with_timeout(TIMEOUT)
            .map_err(|e| format!("cannot reach Redis: {e}"))?;
        let timeouts = connection
            .set_read_timeout(Some(TIMEOUT))
            .and_then(|()| connection.set_write_timeout(Some(TIMEOUT)));
        timeouts.map_err(|e| format!("cannot set timeouts on the Redis connection: {e}"))?;
        Ok(connection)
    }

    /// Redis's counters now.
    pub(super) fn counters(&self) -> Result<Counters, String> {
        let mut connection = self.connection()?;
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .arg("commandstats")
            .query(&mut connection)
            .map_err(|e| format!("Redis refused INFO: {e}"))?;
        Ok(Counters::parse(&info))
    }

    /// Whether Redis holds anything of the crawl `crawl_id` already: a bench run must
    /// start a fresh crawl, or it would measure the end of an old one.
    pub(super) fn holds(&self, crawl_id: &str) -> Result<bool, String> {
        let mut connection = self.connection()?;
        redis::cmd("EXISTS")
            .arg(format!("{}:meta", prefix(crawl_id)))
            .query(&mut connection)
            .map_err(|e| format!("Redis refused EXISTS: {e}"))
    }

    /// Remove the crawl `crawl_id` from Redis: every key under its prefix (the layout
    /// `round.lua` documents) and its name in the set of crawls. Only for the bench's
    /// own crawls, whose ids no one else uses.
    pub(super) fn forget(&self, crawl_id: &str) -> Result<(), String> {
        let mut connection = self.connection()?;
        let refused = |e: redis::RedisError| format!("cannot remove the crawl {crawl_id} from Redis: {e}");
        let pattern = format!("{}:*", prefix(crawl_id));
        let mut cursor = 0_u64;
        for _ in 0..SCAN_CALLS {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut connection)
                .map_err(refused)?;
            if !keys.is_empty() {
                redis::cmd("UNLINK").arg(&keys).query::<u64>(&mut connection).map_err(refused)?;
            }
            if next == 0 {
                return redis::cmd("SREM")
                    .arg(CRAWLS)
                    .arg(crawl_id)
                    .query::<u64>(&mut connection)
                    .map(drop)
                    .map_err(refused);
            }
            cursor = next;
        }
        Err(format!("the crawl {crawl_id} still had keys after {SCAN_CALLS} SCAN calls"))
    }
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
