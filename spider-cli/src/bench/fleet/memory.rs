//! `spiderling bench --fleet-memory N,N,…`: what a fleet crawl's shared state costs Redis.
//! Requests for URLs never seen are enqueued through the workers' round script into a
//! fresh crawl, over `--hosts` hosts, and at each count Redis's memory is read: per seen
//! URL (the seen-set's buckets, `MEMORY USAGE`) and per queued request (the rest of what
//! the crawl took), with the enqueue rate and the Redis commands per request; then
//! `--lease` of them are leased and finished as one worker would, for the lease rate.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use super::store::Fleet;
use crate::bench::Args;

/// The most requests one run enqueues: 100,000,000 take about 14 GB of Redis.
const MAX_URLS: u64 = 100_000_000;

pub(in crate::bench) fn run(args: &Args) -> ExitCode {
    let steps = &args.fleet_memory;
    if steps.windows(2).any(|pair| pair[0] >= pair[1]) || steps.iter().any(|&n| n == 0 || n > MAX_URLS) {
        eprintln!("error: --fleet-memory takes rising counts of requests, each from 1 to {MAX_URLS}");
        return ExitCode::from(2);
    }
    let fleet = match args.cluster {
        Some(masters) => Fleet::start_cluster(masters, args.replicas),
        None => Fleet::open(args.frontier.as_deref()),
    };
    let fleet = match fleet {
        Ok(fleet) => fleet,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut before = match fleet.counters() {
        Ok(counters) => counters,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
    let crawl = format!("bench-memory-{stamp}");
    println!("Redis {}; {} hosts", fleet.origin(), args.hosts);
    println!(
        "{:>12} {:>10} {:>12} {:>14} {:>16} {:>14} {:>12}",
        "requests", "secs", "enqueued/s", "B/seen URL", "B/queued req", "commands/req", "rounds"
    );
    let filled = runtime.block_on(spiderling::fill_fleet(
        fleet.url(),
        &crawl,
        0,
        args.hosts,
        steps,
        args.lease,
        |step| {
            // Unread, the counters count nothing: the rows then show 0 commands.
            let now = fleet.counters().unwrap_or(before);
            let spent = now.since(&before);
            before = now;
            println!(
                "{:>12} {:>10.1} {:>12.0} {:>14.1} {:>16.1} {:>14.2} {:>12}",
                step.urls,
                step.secs,
                step.per_sec,
                step.per_seen(),
                step.per_queued(),
                spent.commands as f64 / step.added.max(1) as f64,
                spent.script_calls,
            );
        },
    ));
    let spent = fleet.counters().map(|now| now.since(&before));
    let forgotten = fleet.forget(&crawl);
    let drained = match filled {
        Ok(drained) => drained,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let (true, Ok(spent)) = (drained.leased > 0, spent) {
        println!(
            "leased and finished {} in {:.1} s: {:.0}/s, {:.2} commands a request, {} rounds",
            drained.leased,
            drained.secs,
            drained.leased as f64 / drained.secs.max(1e-9),
            spent.commands as f64 / drained.leased as f64,
            spent.script_calls
        );
    }
    if let Err(error) = forgotten {
        eprintln!("warning: {error}");
    }
    ExitCode::SUCCESS
}
