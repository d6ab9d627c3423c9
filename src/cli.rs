//! The standard command line of a spider binary: `fn main() -> ExitCode { spiderling::cli::main::<MySpider>() }`,
//! or, for a crate of many spiders, [`Spiders`].
//!
//! ```text
//! my-spider [-o FILE | -O FILE] [--set KEY=VALUE]... [--metrics ADDR] [--dashboard ADDR] [--report FILE] [--fresh [--force]] [--cache FILE] [--log-level LEVEL]
//! my-spider settings [--set KEY=VALUE]...
//! my-spider parse URL [--set KEY=VALUE]...
//! my-spider probe [--for 60s] [--max-requests N] [--start-rps R] [--step 3s] [--set KEY=VALUE]...
//! my-spiders list
//! my-spiders crawl NAME [-o FILE | -O FILE] [--set KEY=VALUE]... [--metrics ADDR] [--dashboard ADDR] [--report FILE] [--fresh [--force]] [--cache FILE] [--log-level LEVEL]
//! my-spiders settings NAME [--set KEY=VALUE]...
//! my-spiders parse NAME URL [--set KEY=VALUE]...
//! my-spiders probe NAME [--for 60s] [--max-requests N] [--start-rps R] [--step 3s] [--set KEY=VALUE]...
//! ```
//!
//! Settings are layered, later wins: the defaults, the `profile`, the `#[spider(...)]`
//! keys, `SPIDERLING_<KEY>` environment variables (`SPIDERLING_RPM=300`), then `--set`
//! flags and `-o` (which appends) or `-O` (which overwrites). The final settings are
//! printed to stderr before the crawl starts.
//! The exit code is the crawl's (see [`Summary::exit_code`](crate::Summary::exit_code)).
//!
//! `probe` sends the spider's start URLs on its route (proxy, headers, block markers),
//! ramping the rate until the site pushes back, and prints the ramp and the
//! `#[spider(concurrency = .., rpm = ..)]` line to paste (see [`probe`](crate::probe)).
//! It exits 0 when it found that line.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use spider_core::{Config, Crawler, Error, ProbePlan, Spider};
/// The parts of a crawl the keys configure, for [`layer`].
pub use spider_settings::Stage;

mod parse;

const SETTINGS_HELP: &str = "Settings: defaults < profile < #[spider(...)] < SPIDERLING_<KEY> < --set; \
                             `settings` lists them all.\n\
                             Example: --set rps=5 --set delay=1s..3s -o items.csv";

const PROBE_HELP: &str = "Settings: defaults < profile < #[spider(...)] < SPIDERLING_<KEY> < --set; \
                          concurrency caps the slots tried.\n\
                          Example: probe --for 2m --step 5s --set proxy=env:SPIDERLING_PROXY";

/// Write a command's output to standard output. When its reader has gone (`| head` read
/// enough, `| true` read nothing) the command has nothing left to do: the process ends
/// quietly with exit code 0, where `println!` would panic with "Broken pipe". Other write
/// errors are said on standard error and end it with exit code 1. [`outln!`](crate::outln)
/// is the `println!` of it.
///
/// # Examples
///
/// ```
/// spiderling::cli::out(format_args!("{} pages\n", 1051));
/// spiderling::outln!("{} items", 1000);
/// ```
pub fn out(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to standard output: {error}");
        std::process::exit(1);
    }
}

/// Why a command that fetches one page (`spiderling fetch`, a spider's `parse URL`) got
/// none, as it says on standard error: the statuses, a block verdict, robots.txt, a
/// redirect off the web, and each failure reason with its first message, down to its
/// root cause.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(summary: spiderling::Summary) {
/// eprint!("{}", spiderling::cli::no_page("https://shop.example/", &summary));
/// # }
/// ```
pub fn no_page(url: &str, summary: &spider_core::Summary) -> String {
    use std::fmt::Write;
    let counts = &summary.counts;
    let statuses: Vec<String> = counts.statuses.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
    let mut said = format!("error: no page from {}\n", crate::redact_url(url));
    let statuses = if statuses.is_empty() { "none".to_owned() } else { statuses.join(", ") };
    let _ = writeln!(said, "  statuses: {statuses}");
    if counts.blocked > 0 {
        let _ = writeln!(said, "  block verdict: blocked ({} answers judged blocked)", counts.blocked);
    }
    if counts.robots_disallowed > 0 {
        let _ = writeln!(said, "  robots.txt disallows it");
    }
    if counts.redirects > 0 && counts.out_of_scope > 0 {
        let _ = writeln!(
            said,
            "  it redirects to a URL that is not http(s) (file:, ftp:, javascript:, ...), which is not \
                followed"
        );
    }
    for (reason, n) in &counts.failures_by_reason {
        let _ = writeln!(said, "  failed: {reason} ×{n} (after {} retries)", counts.retries);
        if let Some(message) = summary.failure_examples.get(reason) {
            let _ = writeln!(said, "    {message}");
        }
    }
    said
}

/// `println!` for a command's output, through [`cli::out`](crate::cli::out): a reader that
/// has gone ends the command quietly instead of panicking.
///
/// # Examples
///
/// ```
/// spiderling::outln!("{} pages", 1051);
/// ```
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// One spider's binary: a crawl with the flags alone, or a subcommand.
#[derive(Debug, Parser)]
#[command(about = "Run this spider", after_help = SETTINGS_HELP, args_conflicts_with_subcommands = true)]
struct Single {
    #[command(subcommand)]
    command: Option<SingleCommand>,
    #[command(flatten)]
    flags: Flags,
}

#[derive(Debug, Subcommand)]
enum SingleCommand {
    /// Find how fast the site takes requests, and print the `#[spider(...)]` line to paste.
    ///
    /// Ramps the rate against the start URLs, on the spider's route and settings, until
    /// the site pushes back, then narrows in on the limit; prints the ramp as evidence.
    ///
    /// Example: probe --for 30s --start-rps 2
    Probe(ProbeCommand),
    /// List every setting: the value in force, where it came from (default, the spider's
    /// attribute, SPIDERLING_<KEY>, --set), its shape and its default.
    ///
    /// Example: settings --set rps=5
    Settings(SettingsCommand),
    /// Fetch one page through the crawl's stack and show what the spider makes of it: the
    /// rule that takes it, its items as JSON, the links each rule would follow, and the
    /// links dropped and why. Nothing is followed, nothing written.
    ///
    /// Example: parse https://shop.example/product/1 --set impersonate=chrome
    Parse(ParseCommand),
}

/// `parse`'s arguments: the page, and settings as a crawl would be given them.
#[derive(Debug, clap::Args)]
struct ParseCommand {
    /// The page to fetch and parse.
    url: String,
    /// Change a setting, as `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Log level: error, warn, info, debug, trace (or a RUST_LOG filter).
    #[arg(long, value_name = "LEVEL", default_value = DEFAULT_LOG)]
    log_level: String,
}

/// `settings`' flags: the `--set`s whose effect to show.
#[derive(Debug, clap::Args)]
struct SettingsCommand {
    /// A setting as a crawl would be given it, as `key=value` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// `probe`'s flags: the plan, and the settings a crawl would use.
#[derive(Debug, clap::Args)]
#[command(after_help = PROBE_HELP)]
struct ProbeCommand {
    #[command(flatten)]
    plan: ProbeFlags,
    /// Change a setting, as `key=value` (repeatable): proxy, headers, block_markers, concurrency, ...
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Log level: error, warn, info (one line a step), debug, trace (or a RUST_LOG filter).
    #[arg(long, value_name = "LEVEL", default_value = DEFAULT_LOG)]
    log_level: String,
}

/// The flags that bound a probe, shared by a spider's `probe` and `spiderling probe`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     probe: spiderling::cli::ProbeFlags,
/// }
///
/// let cli = Cli::try_parse_from(["probe", "--for", "30s", "--start-rps", "2"]).unwrap();
/// let plan = cli.probe.plan();
/// assert_eq!((plan.max_duration, plan.start_rps), (Duration::from_secs(30), 2.0));
/// assert_eq!(plan.max_requests, 3000, "the default");
/// ```
#[derive(Debug, Clone, clap::Args)]
pub struct ProbeFlags {
    /// Stop after this long, cool-downs included (default 60s), such as --for 2m.
    #[arg(long = "for", value_name = "DURATION", value_parser = spider_settings::parse_duration)]
    duration: Option<Duration>,
    /// Stop after this many requests, robots.txt included (default 3000).
    #[arg(long, value_name = "N")]
    max_requests: Option<u64>,
    /// The first rate tried, in requests per second (default 1).
    #[arg(long, value_name = "RPS")]
    start_rps: Option<f64>,
    /// How long each rate is held (default 3s); at least the window the site counts
    /// requests over.
    #[arg(long, value_name = "DURATION", value_parser = spider_settings::parse_duration)]
    step: Option<Duration>,
}

impl ProbeFlags {
    /// The plan these flags ask for: [`ProbePlan::default`] with each flag given.
    pub fn plan(&self) -> ProbePlan {
        let mut plan = ProbePlan::default();
        if let Some(limit) = self.duration {
            plan = plan.max_duration(limit);
        }
        if let Some(limit) = self.max_requests {
            plan = plan.max_requests(limit);
        }
        if let Some(rps) = self.start_rps {
            plan = plan.start_rps(rps);
        }
        if let Some(length) = self.step {
            plan = plan.step(length);
        }
        plan
    }
}

/// Warnings, the progress line when stderr is not a terminal, and adaptive mode's changes;
/// html5ever's own warnings (one for each page it foster-parents) only as errors.
const DEFAULT_LOG: &str = "warn,spiderling::progress=info,spiderling::adaptive=info,html5ever=error";

/// The flags every spider understands.
#[derive(Debug, clap::Args)]
struct Flags {
    /// Append items to this file; .jsonl or .csv picks the format (a .json array is
    /// written anew only, with -O). Repeat it for more files, and with a table's or a
    /// bucket's URI (sqlite://PATH?table=T, postgres://USER:PASSWORD@HOST/DB?table=T,
    /// s3://BUCKET/PREFIX) to write there too; FILE?type=NAME (&type=NAME in a URI) takes
    /// the items of that type only.
    #[arg(short, long, value_name = "FILE|URI", conflicts_with = "overwrite_output")]
    output: Vec<std::path::PathBuf>,
    /// Write items to this file anew, emptying what it held; .jsonl, .csv or .json.
    /// Repeatable with more files and tables' URIs, as -o.
    #[arg(short = 'O', long, value_name = "FILE|URI")]
    overwrite_output: Vec<std::path::PathBuf>,
    /// Change a setting, as `key=value` (repeatable): concurrency, rpm, delay, ...
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Serve the crawl's gauges (block rate, pages/s, latency, limits) in the Prometheus
    /// text format here while it runs, such as --metrics 127.0.0.1:9898.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Serve a live dashboard of the crawl here, such as --dashboard 127.0.0.1:9898 (the
    /// same address as --metrics serves both). No authentication: keep it on loopback.
    #[arg(long, value_name = "ADDR")]
    dashboard: Option<String>,
    /// Write a self-contained HTML report of the crawl here when it ends, however it
    /// ends, such as --report crawl.html.
    #[arg(long, value_name = "FILE")]
    report: Option<std::path::PathBuf>,
    /// With a state file (--set state=FILE), discard what it holds and start the crawl
    /// over, instead of going on where it stopped.
    #[arg(long)]
    fresh: bool,
    /// With --fresh, discard the state file even when it is another spider's or not a
    /// state file at all (--fresh alone refuses such a file).
    #[arg(long, requires = "fresh")]
    force: bool,
    /// Keep every answer in this cache file and answer later runs from it, without the
    /// network (the `cache` setting), such as --cache .spiderling/cache.
    #[arg(long, value_name = "FILE")]
    cache: Option<std::path::PathBuf>,
    /// Also start from the URLs in this file, one per line (`-` for standard input), read
    /// while the crawl runs; a line that is not a URL is logged with its number and skipped.
    #[arg(long, value_name = "FILE")]
    start_urls: Option<std::path::PathBuf>,
    /// Log level: error, warn, info, debug, trace (or a RUST_LOG filter).
    #[arg(long, value_name = "LEVEL", default_value = DEFAULT_LOG)]
    log_level: String,
}

/// Run `S` with the standard flags and environment, and return its exit code.
///
/// # Examples
///
/// ```no_run
/// use spiderling::prelude::*;
///
/// #[derive(Spider, Default)]
/// #[spider(start_urls = ["http://127.0.0.1:8000/"], follow = "a.next")]
/// struct Pages;
///
/// fn main() -> std::process::ExitCode {
///     spiderling::cli::main::<Pages>()
/// }
/// ```
pub fn main<S: Spider + Default>() -> ExitCode {
    run(S::default(), std::env::args_os())
}

/// As [`main`], for a spider value and arguments of your own (the first is the program
/// name).
pub fn run<S: Spider>(spider: S, args: impl IntoIterator<Item = OsString>) -> ExitCode {
    match Single::try_parse_from(args) {
        Ok(Single { command: None, flags }) => crawl(spider, flags),
        Ok(Single { command: Some(SingleCommand::Probe(command)), .. }) => probe(spider.config(), command),
        Ok(Single { command: Some(SingleCommand::Settings(command)), .. }) => {
            print_settings(spider.config(), &command.set)
        }
        Ok(Single { command: Some(SingleCommand::Parse(command)), .. }) => parse_one(spider, command),
        Err(error) => usage_error(&error),
    }
}

fn usage_error(error: &clap::Error) -> ExitCode {
    let _ = error.print();
    ExitCode::from(if error.use_stderr() { 2 } else { 0 })
}

/// The spiders of a crate, run by name: `list`, `crawl NAME` with the standard flags, and
/// `probe NAME` to find the rate to declare.
///
/// # Examples
///
/// ```no_run
/// use spiderling::prelude::*;
///
/// #[derive(Spider, Default)]
/// #[spider(name = "news", start_urls = ["http://127.0.0.1:8000/news"], follow = "a.next")]
/// struct News;
///
/// #[derive(Spider, Default)]
/// #[spider(name = "shop", start_urls = ["http://127.0.0.1:8000/shop"], follow = "a.next")]
/// struct Shop;
///
/// fn main() -> std::process::ExitCode {
///     spiderling::cli::Spiders::new().add::<News>().add::<Shop>().main()
/// }
/// ```
#[derive(Default)]
pub struct Spiders {
    entries: Vec<Entry>,
}

/// One registered spider: its name, and its crawl and probe with the flags given.
struct Entry {
    name: String,
    crawl: fn(Flags) -> ExitCode,
    probe: fn(ProbeCommand) -> ExitCode,
    settings: fn(SettingsCommand) -> ExitCode,
    parse: fn(ParseCommand) -> ExitCode,
}

#[derive(Debug, Parser)]
#[command(
    about = "Run one of this crate's spiders",
    after_help = "crawl NAME takes the standard spider flags (crawl --help):\n  \
                  -o, --output FILE    append items to this file (.jsonl or .csv); repeatable, \
                  FILE?type=NAME for one type\n  -O, --overwrite-output FILE   write items to this file anew \
                  (.jsonl, .csv or .json); repeatable\n  --set KEY=VALUE      change a setting, such as \
                  --set rps=5\n  --metrics ADDR       serve Prometheus metrics, such as 127.0.0.1:9898\n  \
                  --dashboard ADDR     serve a live dashboard, such as 127.0.0.1:9898\n  \
                  --report FILE        write an HTML report when the crawl ends\n  \
                  --fresh              with --set state=FILE, start over instead of going on\n  \
                  --force              with --fresh, discard a file that is not this spider's state\n  \
                  --cache FILE         keep answers and answer later runs from them\n  \
                  --log-level LEVEL    error, warn, info, debug, trace\n\n\
                  probe NAME finds the rate to declare (probe --help):\n  \
                  --for 60s --max-requests 3000 --start-rps 1 --step 3s --set KEY=VALUE\n\n\
                  settings NAME lists every setting, its value and where it came from.\n\
                  parse NAME URL shows what the spider makes of one page.\n\n\
                  Settings: defaults < profile < #[spider(...)] < SPIDERLING_<KEY> < --set."
)]
struct Many {
    #[command(subcommand)]
    command: ManyCommand,
}

#[derive(Debug, Subcommand)]
enum ManyCommand {
    /// Crawl with the spider called NAME (see `list`).
    ///
    /// Example: crawl books -o books.jsonl --set rps=5
    Crawl {
        /// The spider's name.
        name: String,
        #[command(flatten)]
        flags: Flags,
    },
    /// Find how fast the site of the spider called NAME takes requests, and print the
    /// `#[spider(...)]` line to paste.
    ///
    /// Ramps the rate against its start URLs, on its route and settings, until the site
    /// pushes back, then narrows in on the limit; prints the ramp as evidence.
    ///
    /// Example: probe books --for 30s --start-rps 2
    Probe {
        /// The spider's name.
        name: String,
        #[command(flatten)]
        command: ProbeCommand,
    },
    /// List every setting of the spider called NAME: the value in force, where it came
    /// from (default, its attribute, SPIDERLING_<KEY>, --set), its shape and its default.
    ///
    /// Example: settings books --set rps=5
    Settings {
        /// The spider's name.
        name: String,
        #[command(flatten)]
        command: SettingsCommand,
    },
    /// Fetch one page through the crawl's stack and show what the spider called NAME
    /// makes of it: the rule that takes it, its items as JSON, the links each rule would
    /// follow, and the links dropped and why. Nothing is followed, nothing written.
    ///
    /// Example: parse books https://books.example/catalogue/book_1.html
    Parse {
        /// The spider's name.
        name: String,
        #[command(flatten)]
        command: ParseCommand,
    },
    /// List the spiders, one name a line.
    List,
}

impl Spiders {
    /// No spiders yet.
    pub fn new() -> Self {
        Spiders::default()
    }

    /// Add a spider, known by its config's name.
    #[must_use]
    pub fn add<S: Spider + Default>(mut self) -> Self {
        let name = S::default().config().name().to_owned();
        self.entries.push(Entry {
            name,
            crawl: crawl_default::<S>,
            probe: probe_default::<S>,
            settings: settings_default::<S>,
            parse: parse_default::<S>,
        });
        self
    }

    /// Run the command the process's arguments name, and return its exit code.
    pub fn main(self) -> ExitCode {
        self.run(std::env::args_os())
    }

    /// As [`main`](Self::main), with arguments of your own (the first is the program name).
    pub fn run(self, args: impl IntoIterator<Item = OsString>) -> ExitCode {
        match Many::try_parse_from(args) {
            Ok(Many { command: ManyCommand::List }) => {
                for entry in &self.entries {
                    crate::outln!("{}", entry.name);
                }
                ExitCode::SUCCESS
            }
            Ok(Many { command: ManyCommand::Crawl { name, flags } }) => {
                self.with(&name, |entry| (entry.crawl)(flags))
            }
            Ok(Many { command: ManyCommand::Probe { name, command } }) => {
                self.with(&name, |entry| (entry.probe)(command))
            }
            Ok(Many { command: ManyCommand::Settings { name, command } }) => {
                self.with(&name, |entry| (entry.settings)(command))
            }
            Ok(Many { command: ManyCommand::Parse { name, command } }) => {
                self.with(&name, |entry| (entry.parse)(command))
            }
            Err(error) => usage_error(&error),
        }
    }

    /// `run` on the spider called `name`, or the usage error of [`find`](Self::find).
    fn with(&self, name: &str, run: impl FnOnce(&Entry) -> ExitCode) -> ExitCode {
        self.find(name).map_or_else(|code| code, run)
    }

    /// The spider called `name`, or a usage error naming the ones there are.
    fn find(&self, name: &str) -> Result<&Entry, ExitCode> {
        self.entries.iter().find(|entry| entry.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.entries.iter().map(|entry| entry.name.as_str()).collect();
            eprintln!("error: no spider called {name:?}; the spiders are: {}", names.join(", "));
            ExitCode::from(2)
        })
    }
}

fn crawl_default<S: Spider + Default>(flags: Flags) -> ExitCode {
    crawl(S::default(), flags)
}

fn probe_default<S: Spider + Default>(command: ProbeCommand) -> ExitCode {
    probe(S::default().config(), command)
}

fn settings_default<S: Spider + Default>(command: SettingsCommand) -> ExitCode {
    print_settings(S::default().config(), &command.set)
}

fn parse_default<S: Spider + Default>(command: ParseCommand) -> ExitCode {
    parse_one(S::default(), command)
}

/// `parse URL`: logging as a crawl's, then the page.
fn parse_one<S: Spider>(spider: S, command: ParseCommand) -> ExitCode {
    if let Err(code) = start_logging(&command.log_level) {
        return code;
    }
    parse::run(spider, &command.url, &command.set)
}

/// Crawl with `spider`, its settings layered under the environment and `flags`.
fn crawl<S: Spider>(spider: S, flags: Flags) -> ExitCode {
    let Flags {
        output,
        overwrite_output,
        set,
        metrics,
        dashboard,
        report,
        fresh,
        force,
        cache,
        start_urls,
        log_level,
    } = flags;
    let output = match (output.is_empty(), overwrite_output.is_empty()) {
        (false, _) => Some(Output { paths: output, overwrite: false }),
        (true, false) => Some(Output { paths: overwrite_output, overwrite: true }),
        (true, true) => None,
    };
    let with_flags = |config: Config| {
        let config = match metrics {
            Some(addr) => config.metrics(addr),
            None => config,
        };
        let config = match dashboard {
            Some(addr) => config.dashboard(addr),
            None => config,
        };
        let config = match report {
            Some(path) => config.report(path),
            None => config,
        };
        let config = match cache {
            Some(path) => config.cache(path),
            None => config,
        };
        let config = match start_urls {
            Some(path) => config.start_list(path),
            None => config,
        };
        // Absent, the flags leave `fresh` and `force` as `--set` or the environment put them.
        let config = if fresh { config.fresh(true) } else { config };
        if force {
            config.force(true)
        } else {
            config
        }
    };
    let (config, runtime) = match prepare(spider.config(), &log_level, &set, output.as_ref(), with_flags) {
        Ok(prepared) => prepared,
        Err(code) => return code,
    };
    match runtime.block_on(Crawler::with_config(spider, config).run()) {
        Ok(summary) => {
            crate::outln!("{summary}");
            summary.exit_code()
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}

/// Probe the target of `config`, its settings layered as a crawl's, and print the report.
fn probe(config: Config, command: ProbeCommand) -> ExitCode {
    let (config, runtime) = match prepare(config, &command.log_level, &command.set, None, |config| config) {
        Ok(prepared) => prepared,
        Err(code) => return code,
    };
    let plan = command.plan.plan();
    eprintln!("probing {}: {plan}", config.name());
    match runtime.block_on(spider_core::probe(&config, &plan)) {
        Ok(report) => {
            crate::outln!("{report}");
            report.exit_code()
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}

/// What a crawl and a probe do first: start logging, layer the settings (then the
/// command's own flags, `with_flags`) and print them, start the runtime. A failure is
/// printed and becomes the exit code.
fn prepare(
    config: Config,
    log_level: &str,
    set: &[String],
    output: Option<&Output>,
    with_flags: impl FnOnce(Config) -> Config,
) -> Result<(Config, tokio::runtime::Runtime), ExitCode> {
    start_logging(log_level)?;
    let config = settings(config, environment(), set, output, None).map(with_flags).map_err(|error| {
        eprintln!("error: {error}");
        error.exit_code()
    })?;
    eprintln!("{config}");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|error| {
        eprintln!("error: cannot start the async runtime: {error}");
        ExitCode::FAILURE
    })?;
    Ok((config, runtime))
}

/// Log at `log_level` (a level or a `RUST_LOG` filter) to standard error, above the
/// status line. A filter that does not parse is refused with exit code 2: a typo would
/// otherwise hide the very lines it asked for.
fn start_logging(log_level: &str) -> Result<(), ExitCode> {
    let checked = check_filter(log_level).map(|()| log_level);
    let filter =
        checked.and_then(|text| tracing_subscriber::EnvFilter::try_new(text).map_err(|e| e.to_string()));
    let filter = filter.map_err(|error| {
        eprintln!(
            "error: --log-level {log_level:?} is not a level or a RUST_LOG filter ({error}); write error, \
                warn, info, debug or trace, or a filter such as spiderling=debug"
        );
        ExitCode::from(2)
    })?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(spider_core::log_in_colour())
        .with_writer(|| spider_core::LogWriter)
        .try_init();
    Ok(())
}

/// What `EnvFilter` would take as a target of any name, checked to be one: each
/// directive a level, or a module path (letters, digits, `_`, `:`, `-`, `.`; a span's
/// `[...]` after it) with `=LEVEL` or alone.
fn check_filter(text: &str) -> Result<(), String> {
    for directive in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let (target, level) = match directive.rsplit_once('=') {
            Some((target, level)) if !target.contains(']') || target.ends_with(']') => (target, Some(level)),
            _ => (directive, None),
        };
        if let Some(level) = level {
            level
                .parse::<tracing_subscriber::filter::LevelFilter>()
                .map_err(|_| format!("{level:?} is not a level"))?;
        }
        let path = target.split('[').next().unwrap_or(target);
        let named = path.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'));
        if path.is_empty() && level.is_some() || !named {
            return Err(format!("{directive:?} names no module"));
        }
    }
    Ok(())
}

/// `config` under the `SPIDERLING_<KEY>` environment variables, then under `set`, each
/// `KEY=VALUE` as `--set` gives it: the layering of a spider binary, for a command of your
/// own that sends requests without crawling (as `spiderling fetch` and `spiderling probe`
/// use it). Only the keys of `stages` apply: a variable of another key is left for the
/// crawls it was exported for, and `--set` of one is refused.
///
/// # Errors
///
/// [`Error::Config`] naming the variable or the flag and the key, and what is wrong.
///
/// # Examples
///
/// ```
/// use spiderling::cli::{layer, Stage};
/// let wire = [Stage::Fetch, Stage::Identity, Stage::Proxy];
/// let config = layer(spiderling::Config::new("shop"), &["timeout=5s".to_owned()], &wire)?;
/// assert!(config.to_string().contains("timeout = 5s"));
/// let error = layer(spiderling::Config::new("shop"), &["timout=5s".to_owned()], &wire).unwrap_err();
/// assert!(error.to_string().contains("--set timout: unknown setting `timout`; did you mean `timeout`?"), "{error}");
/// let error = layer(spiderling::Config::new("shop"), &["output=a.jsonl".to_owned()], &wire).unwrap_err();
/// assert!(error.to_string().contains("this command takes only the fetch, identity and proxy keys"), "{error}");
/// # Ok::<(), spiderling::Error>(())
/// ```
pub fn layer(config: Config, set: &[String], stages: &[Stage]) -> Result<Config, Error> {
    settings(config, environment(), set, None, Some(stages))
}

/// The process's environment; variables that are not Unicode cannot be ours and are
/// skipped instead of panicking.
fn environment() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// Layer the environment and the `--set` flags (then `-o`) over the spider's own settings;
/// with `stages`, only their keys.
fn settings(
    config: Config,
    env: impl IntoIterator<Item = (String, String)>,
    set: &[String],
    output: Option<&Output>,
    stages: Option<&[Stage]>,
) -> Result<Config, Error> {
    layered(config, env, set, output, stages).map(|(config, _)| config)
}

/// Where each key set at run time came from.
type Origins = std::collections::BTreeMap<String, String>;

/// [`settings`], and which layer set each key it set.
fn layered(
    mut config: Config,
    env: impl IntoIterator<Item = (String, String)>,
    set: &[String],
    output: Option<&Output>,
    stages: Option<&[Stage]>,
) -> Result<(Config, Origins), Error> {
    let mut origins = Origins::new();
    let applies = |key: &str| match (stages, spider_settings::find(key)) {
        (Some(stages), Some(known)) => stages.contains(&known.stage),
        _ => true,
    };
    let mut from_env: Vec<(String, String)> = env
        .into_iter()
        .filter_map(|(name, value)| Some((name.strip_prefix("SPIDERLING_")?.to_ascii_lowercase(), value)))
        .filter(|(key, _)| applies(key))
        .collect();
    from_env.sort();
    for (key, value) in from_env {
        let source = format!("environment variable SPIDERLING_{}", key.to_uppercase());
        config = config.set(&key, &value).map_err(|e| from(&source, e))?;
        origins.insert(key.clone(), format!("env SPIDERLING_{}", key.to_uppercase()));
    }
    for setting in set {
        if setting.trim() == "help" {
            return Err(Error::Config(
                "--set KEY=VALUE changes a setting, such as --set rpm=300; the `settings` command lists \
                 every key with its default, the value in force and where it came from"
                    .to_owned(),
            ));
        }
        let Some((key, value)) = setting.split_once('=') else {
            // The text may be a secret typed without its key: not repeated.
            return Err(Error::Config(
                "--set takes key=value, such as --set rpm=300 (`settings` lists the keys)".to_owned(),
            ));
        };
        let key = key.trim();
        if let Some(stages) = stages.filter(|_| !applies(key)) {
            let names: Vec<&str> = stages.iter().map(|stage| stage.word()).collect();
            let names = match names.split_last() {
                Some((last, [])) => (*last).to_owned(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                None => "no".to_owned(),
            };
            return Err(Error::Config(format!(
                "--set {key}: a crawl's setting; this command takes only the {names} keys"
            )));
        }
        config = config.set(key, value.trim()).map_err(|e| from(&format!("--set {key}"), e))?;
        origins.insert(key.to_owned(), "--set".to_owned());
    }
    if let Some(Output { paths, overwrite }) = output {
        let flag = if *overwrite { "-O" } else { "-o" };
        // The flags name every output of this run: the spider's own are replaced.
        config.outputs.clear();
        config.stores.clear();
        config = paths.iter().fold(config, |config, path| config.output(path)).overwrite(*overwrite);
        origins.insert("output".to_owned(), flag.to_owned());
        origins.insert("overwrite".to_owned(), flag.to_owned());
    }
    Ok((config, origins))
}

/// Every key of `config` under the environment and `set` (each `KEY=VALUE` as `--set`
/// gives it), a line each: the value in force, where it came from (the default, the
/// spider's attribute or profile, an environment variable, `--set`), its shape and its
/// default. What a spider binary's `settings` command and `spiderling settings` print.
///
/// # Errors
///
/// [`Error::Config`] for a bad variable or `--set`, as a crawl would refuse it.
///
/// # Examples
///
/// ```
/// let config = spiderling::Config::new("books").rpm(600);
/// let table = spiderling::cli::explain(config, &["concurrency=4".to_owned()])?;
/// assert!(table.lines().any(|line| line.starts_with("concurrency ") && line.contains("--set")));
/// assert!(table.lines().any(|line| line.starts_with("rpm ") && line.contains("the spider")));
/// # Ok::<(), spiderling::Error>(())
/// ```
pub fn explain(config: Config, set: &[String]) -> Result<String, Error> {
    let defaults = Config::new(config.name());
    let (config, origins) = layered(config, environment(), set, None, None)?;
    Ok(spider_settings::explain(&config, &defaults, |key| origins.get(key).cloned()))
}

/// Print [`explain`]'s table, or why it cannot be made.
fn print_settings(config: Config, set: &[String]) -> ExitCode {
    match explain(config, set) {
        Ok(table) => {
            crate::outln!("{table}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}

/// The outputs the flags name: `-o` appends to the file, `-O` writes it anew.
#[derive(Debug)]
struct Output {
    paths: Vec<std::path::PathBuf>,
    overwrite: bool,
}

/// Say where a bad setting came from.
fn from(source: &str, error: spider_core::ConfigError) -> Error {
    Error::Config(format!("{source}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Single, clap::Error> {
        Single::try_parse_from(std::iter::once("spider").chain(args.iter().copied()))
    }

    /// The attribute's settings under `env` and the crawl flags `args`.
    fn layered(env: Vec<(String, String)>, args: &[&str]) -> Result<Config, Error> {
        let flags = parse(args).unwrap().flags;
        let output = (!flags.output.is_empty()).then_some(Output { paths: flags.output, overwrite: false });
        settings(attribute(), env, &flags.set, output.as_ref(), None)
    }

    #[test]
    fn a_log_filter_is_levels_and_module_paths_and_nothing_else() {
        for good in
            [DEFAULT_LOG, "debug", "spiderling=trace", "spiderling::engine[task]=debug", "my_crate", "OFF"]
        {
            assert_eq!(check_filter(good), Ok(()), "{good}");
        }
        for bad in ["garbage(((", "spiderling=loud", "=debug", "a b"] {
            assert!(check_filter(bad).is_err(), "{bad}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn attribute() -> Config {
        Config::new("books").profile("polite").rpm(600)
    }

    #[test]
    fn environment_beats_the_attribute_and_a_flag_beats_both() {
        let from_env = layered(env(&[("SPIDERLING_RPM", "300")]), &[]).unwrap();
        assert!(from_env.to_string().contains("rpm = 300"), "{from_env}");
        let from_flag = layered(env(&[("SPIDERLING_RPM", "300")]), &["--set", "rpm=100"]).unwrap();
        assert!(from_flag.to_string().contains("rpm = 100"), "{from_flag}");
        let untouched = layered(env(&[("OTHER", "1")]), &[]).unwrap();
        assert!(untouched.to_string().contains("rpm = 600"), "{untouched}");
        assert!(untouched.to_string().contains("concurrency = 4"), "the profile: {untouched}");
    }

    #[test]
    fn a_bad_setting_names_its_source() {
        let error = layered(env(&[("SPIDERLING_RMP", "300")]), &[]).unwrap_err();
        assert!(
            error.to_string().contains("SPIDERLING_RMP") && error.to_string().contains("`rpm`"),
            "{error}"
        );
        let error = layered(env(&[]), &["--set", "delay=3s..1s"]).unwrap_err();
        assert!(error.to_string().contains("reversed"), "{error}");
        let error = layered(env(&[]), &["--set", "rpm"]).unwrap_err();
        assert!(error.to_string().contains("--set takes key=value"), "{error}");
    }

    #[test]
    fn probe_is_a_subcommand_and_the_bare_flags_still_crawl() {
        let crawl = parse(&["-o", "items.csv", "--set", "rpm=5"]).unwrap();
        assert!(crawl.command.is_none());
        assert_eq!(crawl.flags.set, ["rpm=5"]);
        let probe =
            parse(&["probe", "--for", "30s", "--max-requests", "500", "--step", "1500ms", "--set", "rps=2"]);
        let Some(SingleCommand::Probe(command)) = probe.unwrap().command else { panic!("not a probe") };
        let plan = command.plan.plan();
        assert_eq!(plan.max_duration, Duration::from_secs(30));
        assert_eq!((plan.max_requests, plan.step), (500, Duration::from_millis(1500)));
        assert_eq!(plan.start_rps, ProbePlan::default().start_rps);
        assert_eq!(command.set, ["rps=2"]);
        assert!(parse(&["probe", "--for", "soon"]).unwrap_err().to_string().contains("not a duration"));
        assert!(parse(&["-o", "items.csv", "probe"]).is_err(), "crawl flags do not go with probe");
    }

    #[test]
    fn force_goes_only_with_fresh() {
        assert!(parse(&["--fresh", "--force"]).unwrap().flags.force);
        let error = parse(&["--force"]).unwrap_err().to_string();
        assert!(error.contains("--fresh"), "{error}");
    }

    #[test]
    fn spiders_probe_by_name_and_an_unknown_name_is_a_usage_error() {
        let many =
            Many::try_parse_from(["spiders", "probe", "books", "--for", "10s", "--set", "rpm=5"]).unwrap();
        let ManyCommand::Probe { name, command } = many.command else { panic!("not a probe") };
        assert_eq!((name.as_str(), command.plan.plan().max_duration), ("books", Duration::from_secs(10)));
        let code = Spiders::new().run(["spiders", "probe", "nobody"].map(OsString::from));
        assert_eq!(code, ExitCode::from(2));
    }
}
