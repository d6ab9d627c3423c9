//! The `spiderling` command.
//!
//! `new` and `gen` (a crate of spiders, one more spider), `fetch` (one page through the
//! crawl stack, with what each selector matches), `robots` (what a site's robots.txt
//! allows us), `probe` (how fast a site takes requests, and the `#[spider(...)]` line for
//! it), `sandbox` (the local demo and hostile sites), `bench` (Spiderling against a bare
//! loop and a sequential one, on a local site), `state` (what a crawl's state file
//! holds), `fleet` (what the crawls in a fleet's Redis are doing) , `settings` (every
//! key, its default and the value in force) and `parse` (what a spider of the crate here
//! makes of one page). The binary is a thin `main` over [`run`], so the commands can be tested
//! in-process.
//!
//! Exit codes: 0 success, 1 the command ran but failed (the page could not be fetched,
//! say), 2 a wrong argument.

mod bench;
mod fetch;
mod fleet;
mod parse;
mod probe;
mod robots;
mod sandbox;
mod scaffold;
mod settings;
mod state;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Command-line arguments of `spiderling`.
#[derive(Debug, Parser)]
#[command(name = "spiderling", version, about = "Declarative web spiders for Rust")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a crate of spiders, with a first spider for URL, that builds and tests offline.
    ///
    /// Example: spiderling new shop --url https://shop.example/
    New(scaffold::NewArgs),
    /// Add a spider to a crate made by `new`.
    ///
    /// Example: spiderling gen news https://news.example/
    Gen(scaffold::GenArgs),
    /// Fetch one page through the crawl stack and show what each selector matches.
    ///
    /// Example: spiderling fetch https://books.example/ --css "h3 > a" --attr href
    Fetch(fetch::Args),
    /// Show what a site's robots.txt allows our user agent, and its Crawl-delay.
    ///
    /// Example: spiderling robots https://books.example/ /private/ /catalogue/
    Robots(robots::Args),
    /// Find how fast a site takes requests before it pushes back, and the `#[spider(...)]`
    /// line for it.
    ///
    /// Ramps the rate against URL until the site blocks, narrows in on the limit, and
    /// prints the ramp as evidence and the `#[spider(concurrency = .., rps = ..)]` line.
    ///
    /// Example: spiderling probe https://shop.example/ --for 2m --step 5s --proxy env:SPIDERLING_PROXY
    Probe(probe::Args),
    /// Serve the demo bookshop (or the hostile site) on 127.0.0.1 until Ctrl-C, over
    /// HTTPS with --tls, behind a mock rotating proxy gateway with --gateway.
    ///
    /// Example: spiderling sandbox --port 8000 --gateway --tls
    Sandbox(sandbox::Args),
    /// Crawl a generated local site with Spiderling, a bare tokio + reqwest + scraper loop
    /// and a sequential loop; print pages/s, latency, CPU, peak RSS and the ratios.
    ///
    /// With --workers, measure the fleet instead: for each count, that many workers
    /// sharing one crawl through Redis, against N × one worker's pages/s.
    ///
    /// Example: spiderling bench --pages 20000 --concurrency 64 --page-kb 15 --json
    ///
    /// Example: spiderling bench --workers 1,2,3,4 --latency-ms 50 --concurrency 32
    Bench(bench::Args),
    /// Show what a crawl's state file holds: its status, its runs, the items written, and
    /// per host the requests queued, in flight, deferred, done and failed, and robots.txt.
    ///
    /// Reads the file without touching it, so it works while the crawl runs, and after a
    /// kill. Exit code 2 for a file that is not a Spiderling state file.
    ///
    /// Example: spiderling state shop.state --hosts 50
    State(state::Args),
    /// Show the crawls in a fleet's Redis: per worker its heartbeat, leases, pages, items,
    /// pages/s and block rate; per crawl whether it runs, is done or stalled (no worker
    /// heard from in 10 s), its frontier, seen-set, failures and totals.
    ///
    /// Reads and never writes, so it is safe beside running workers. Every crawl the
    /// Redis holds, or the one --crawl names. Exit code 2 for a Redis that cannot be
    /// reached or refuses the password, and for a crawl it does not hold.
    ///
    /// Example: spiderling fleet redis://127.0.0.1:6379/0 --crawl books --json
    Fleet(fleet::Args),
    /// List every setting a spider takes: its shape, its default, and the value the
    /// environment (SPIDERLING_<KEY>) and --set give it. A spider binary's own `settings`
    /// shows its attribute's values too.
    ///
    /// Example: spiderling settings --set rps=5
    Settings(settings::Args),
    /// Fetch one page through the crawl's stack and show what a spider of this crate makes
    /// of it: the rule that takes it, its items as JSON, the links each rule would follow,
    /// and those dropped and why (the crate's `cargo run -- parse NAME URL`).
    ///
    /// Example: spiderling parse https://shop.example/product/1 --spider shop
    Parse(parse::Args),
}

/// Run the command `cli` names, and return its exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::New(args) => scaffold::new(args),
        Command::Gen(args) => scaffold::generate(args),
        Command::Fetch(args) => fetch::run(args),
        Command::Robots(args) => robots::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Sandbox(args) => sandbox::run(args),
        Command::Bench(args) => bench::run(args),
        Command::State(args) => state::run(args),
        Command::Fleet(args) => fleet::run(args),
        Command::Settings(args) => settings::run(args),
        Command::Parse(args) => parse::run(args),
    }
}

/// Run one command's async work to its end; a failure is printed and becomes the exit code.
fn block_on<T>(work: impl std::future::Future<Output = Result<T, spiderling::Error>>) -> Result<T, ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    match runtime.map(|runtime| runtime.block_on(work)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            Err(error.exit_code())
        }
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Print a command's report: as JSON with `--json`, else as the text `text` makes.
fn print_report(json: bool, report: &impl serde::Serialize, text: impl FnOnce() -> String) -> ExitCode {
    if !json {
        spiderling::cli::out(format_args!("{}", text()));
        return ExitCode::SUCCESS;
    }
    match serde_json::to_string_pretty(report) {
        Ok(json) => {
            spiderling::outln!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: cannot write the report as JSON: {error}");
            ExitCode::FAILURE
        }
    }
}
