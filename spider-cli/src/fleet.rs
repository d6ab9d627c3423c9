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
    /// Write every item of the crawl once to OUT: the part of each worker's output the
    /// fleet committed, leaving out what a killed worker wrote past it. The outputs must
    /// be on this machine; the crawl is `--crawl`'s, or the only one.
    #[arg(long, value_name = "OUT")]
    merge: Option<std::path::PathBuf>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let report = match super::block_on(FleetReport::read(&args.redis, args.crawl.as_deref())) {
        Ok(report) => report,
        Err(code) => return code,
    };
    let Some(out) = &args.merge else {
        return crate::print_report(args.json, &report, || format!("{report}\n"));
    };
    let [crawl] = &report.crawls[..] else {
        eprintln!(
            "error: --merge takes one crawl, and {} holds {}: name it with --crawl",
            report.address,
            report.crawls.len()
        );
        return ExitCode::from(2);
    };
    match crawl.merge(out) {
        Ok(items) => {
            spiderling::outln!(
                "{}: {items} items from {} outputs written once",
                out.display(),
                crawl.outputs.len()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}
