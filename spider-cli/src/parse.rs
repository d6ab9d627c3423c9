//! `spiderling parse URL --spider NAME`: in a crate of spiders (one `spiderling new`
//! made), its binary's `parse NAME URL`, built and run with cargo: one page through the
//! crawl's stack and what the spider makes of it.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The page to fetch and parse.
    url: String,
    /// The spider's name, as `cargo run -- list` prints it.
    #[arg(long, value_name = "NAME")]
    spider: String,
    /// The crate of spiders.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Change a setting, as `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    if !args.dir.join("Cargo.toml").exists() {
        eprintln!(
            "error: no Cargo.toml in {}; run parse inside a crate of spiders (`spiderling new`), or give \
                --dir",
            args.dir.display()
        );
        return ExitCode::from(2);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(&args.dir).args(["run", "--quiet", "--", "parse", &args.spider, &args.url]);
    for setting in &args.set {
        command.arg("--set").arg(setting);
    }
    match command.status() {
        Ok(status) => ExitCode::from(status.code().and_then(|code| u8::try_from(code).ok()).unwrap_or(1)),
        Err(error) => {
            eprintln!("error: cannot run cargo in {}: {error}", args.dir.display());
            ExitCode::FAILURE
        }
    }
}
