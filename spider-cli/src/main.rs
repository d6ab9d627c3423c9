//! The `spiderling` binary.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    spider_cli::run(spider_cli::Cli::parse())
}
