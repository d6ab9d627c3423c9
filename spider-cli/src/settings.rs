//! `spiderling settings`: every key, its default, the value the environment and `--set`
//! give it, and where that came from; what a spider binary's `settings` shows of its own.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A setting as a crawl would be given it, as `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    match spiderling::cli::explain(spiderling::Config::new("spider"), &args.set) {
        Ok(table) => {
            spiderling::outln!("{table}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}
