//! `spiderling state FILE`: what a crawl's state file holds (the crawl, its runs, its
//! frontier per host, its failures), read without touching it, even while the crawl runs.

use std::path::PathBuf;
use std::process::ExitCode;

use spiderling::StateReport;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The state file, as given to `--set state=FILE`.
    file: PathBuf,
    /// Print the report as JSON, with every host (times in unix milliseconds).
    #[arg(long)]
    json: bool,
    /// How many hosts to show, those with the most queued first.
    #[arg(long, value_name = "N", default_value_t = StateReport::HOSTS_SHOWN)]
    hosts: usize,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let report = match spiderling::StateReport::read(&args.file) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {error}");
            return error.exit_code();
        }
    };
    crate::print_report(args.json, &report, || format!("{}\n", report.display_hosts(args.hosts)))
}
