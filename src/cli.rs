//! The standard command line of a spider binary: `fn main() -> ExitCode { spiderling::cli::main::<MySpider>() }`,
//! or, for a crate of many spiders, [`Spiders`].
//!
//! ```text
//! my-spider [-o FILE] [--set KEY=VALUE]... [--log-level LEVEL]
//! my-spiders list
//! my-spiders crawl NAME [-o FILE] [--set KEY=VALUE]... [--log-level LEVEL]
//! ```
//!
//! Settings are layered, later wins: the defaults, the `profile`, the `#[spider(...)]`
//! keys, `SPIDERLING_<KEY>` environment variables (`SPIDERLING_RPM=300`), then `--set`
//! flags and `-o`. The final settings are printed to stderr before the crawl starts.
//! The exit code is the crawl's (see [`Summary::exit_code`](crate::Summary::exit_code)).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spider_core::{Config, Crawler, Error, Spider};

const SETTINGS_HELP: &str = "Settings: defaults < profile < #[spider(...)] < SPIDERLING_<KEY> < --set.\n\
                             Example: --set rps=5 --set delay=1s..3s -o items.csv";

/// One spider's binary.
#[derive(Debug, Parser)]
#[command(about = "Run this spider", after_help = SETTINGS_HELP)]
struct Single {
    #[command(flatten)]
    flags: Flags,
}

/// The flags every spider understands.
#[derive(Debug, clap::Args)]
struct Flags {
    /// Write items here; .jsonl, .csv or .json picks the format.
    #[arg(short, long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Change a setting, as `key=value` (repeatable): concurrency, rpm, delay, ...
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Log level: error, warn, info, debug, trace (or a RUST_LOG filter).
    #[arg(long, value_name = "LEVEL", default_value = "warn")]
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
        Ok(Single { flags }) => crawl(spider, flags),
        Err(error) => usage_error(&error),
    }
}

fn usage_error(error: &clap::Error) -> ExitCode {
    let _ = error.print();
    ExitCode::from(if error.use_stderr() { 2 } else { 0 })
}

/// The spiders of a crate, run by name: `list`, and `crawl NAME` with the standard flags.
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
    entries: Vec<(String, CrawlFn)>,
}

/// Crawl with one registered spider.
type CrawlFn = fn(Flags) -> ExitCode;

#[derive(Debug, Parser)]
#[command(
    about = "Run one of this crate's spiders",
    after_help = "crawl NAME takes the standard spider flags (crawl --help):\n  \
                  -o, --output FILE    write items here (.jsonl, .csv or .json)\n  \
                  --set KEY=VALUE      change a setting, such as --set rps=5\n  \
                  --log-level LEVEL    error, warn, info, debug, trace\n\n\
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
        self.entries.push((S::default().config().name().to_owned(), crawl_default::<S>));
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
                for (name, _) in &self.entries {
                    println!("{name}");
                }
                ExitCode::SUCCESS
            }
            Ok(Many { command: ManyCommand::Crawl { name, flags } }) => {
                match self.entries.iter().find(|(known, _)| *known == name) {
                    Some((_, crawl)) => crawl(flags),
                    None => {
                        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
                        eprintln!("error: no spider called {name:?}; the spiders are: {}", names.join(", "));
                        ExitCode::from(2)
                    }
                }
            }
            Err(error) => usage_error(&error),
        }
    }
}

fn crawl_default<S: Spider + Default>(flags: Flags) -> ExitCode {
    crawl(S::default(), flags)
}

/// Crawl with `spider`, its settings layered under the environment and `flags`.
fn crawl<S: Spider>(spider: S, flags: Flags) -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_new(&flags.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    // Variables that are not Unicode cannot be ours; skip them instead of panicking.
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let config = match settings(spider.config(), env, &flags) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return error.exit_code();
        }
    };
    eprintln!("{config}");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(Crawler::with_config(spider, config).run()) {
        Ok(summary) => {
            println!("{summary}");
            summary.exit_code()
        }
        Err(error) => {
            eprintln!("error: {error}");
            error.exit_code()
        }
    }
}

/// Layer the environment and the flags over the spider's own settings.
fn settings(
    mut config: Config,
    env: impl IntoIterator<Item = (String, String)>,
    flags: &Flags,
) -> Result<Config, Error> {
    let mut from_env: Vec<(String, String)> = env
        .into_iter()
        .filter_map(|(name, value)| Some((name.strip_prefix("SPIDERLING_")?.to_ascii_lowercase(), value)))
        .collect();
    from_env.sort();
    for (key, value) in from_env {
        let source = format!("environment variable SPIDERLING_{}", key.to_uppercase());
        config = config.set(&key, &value).map_err(|e| from(&source, e))?;
    }
    for setting in &flags.set {
        let Some((key, value)) = setting.split_once('=') else {
            // The text may be a secret typed without its key: not repeated.
            return Err(Error::Config("--set takes key=value, such as --set rpm=300".to_owned()));
        };
        config =
            config.set(key.trim(), value.trim()).map_err(|e| from(&format!("--set {}", key.trim()), e))?;
    }
    if let Some(output) = &flags.output {
        config = config.output(output);
    }
    Ok(config)
}

/// Say where a bad setting came from.
fn from(source: &str, error: Error) -> Error {
    match error {
        Error::Config(message) => Error::Config(format!("{source}: {message}")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Flags {
        Single::try_parse_from(std::iter::once("spider").chain(args.iter().copied())).unwrap().flags
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn attribute() -> Config {
        Config::new("books").profile("polite").rpm(600)
    }

    #[test]
    fn environment_beats_the_attribute_and_a_flag_beats_both() {
        let from_env = settings(attribute(), env(&[("SPIDERLING_RPM", "300")]), &flags(&[])).unwrap();
        assert!(from_env.to_string().contains("rpm = 300"), "{from_env}");
        let from_flag =
            settings(attribute(), env(&[("SPIDERLING_RPM", "300")]), &flags(&["--set", "rpm=100"])).unwrap();
        assert!(from_flag.to_string().contains("rpm = 100"), "{from_flag}");
        let untouched = settings(attribute(), env(&[("OTHER", "1")]), &flags(&[])).unwrap();
        assert!(untouched.to_string().contains("rpm = 600"), "{untouched}");
        assert!(untouched.to_string().contains("concurrency = 4"), "the profile: {untouched}");
    }

    #[test]
    fn a_bad_setting_names_its_source() {
        let error = settings(attribute(), env(&[("SPIDERLING_RMP", "300")]), &flags(&[])).unwrap_err();
        assert!(
            error.to_string().contains("SPIDERLING_RMP") && error.to_string().contains("`rpm`"),
            "{error}"
        );
        let error = settings(attribute(), env(&[]), &flags(&["--set", "delay=3s..1s"])).unwrap_err();
        assert!(error.to_string().contains("reversed"), "{error}");
        let error = settings(attribute(), env(&[]), &flags(&["--set", "rpm"])).unwrap_err();
        assert!(error.to_string().contains("--set key=value"), "{error}");
    }
}
