//! `spiderling fleet REDIS_URL`: what the crawls in a fleet's Redis are doing (each
//! worker's heartbeat, leases and rate; the crawl's frontier and totals), read without
//! writing anything, so it can run beside the workers.

use std::process::ExitCode;

use spiderling::FleetReport;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The fleet's Redis, as given to `--set frontier=…`: `redis://[:PASSWORD@]HOST:PORT/DB`,
    /// or `env:VAR` to read it from the environment (keeps the password out of `ps`).
    #[arg(value_name = "REDIS_URL")]
    redis: String,
    /// Show only this crawl (its `crawl_id`, or its spider's name).
    #[arg(long, value_name = "ID")]
    crawl: Option<String>,
    /// Print the report as JSON (times in unix milliseconds).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> ExitCode {
    match super::block_on(FleetReport::read(&args.redis, args.crawl.as_deref())) {
        Ok(report) => crate::print_report(args.json, &report, || format!("{report}\n")),
        Err(code) => code,
    }
}
