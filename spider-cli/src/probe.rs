//! `spiderling probe URL`: how fast a site takes requests before it pushes back, found by
//! ramping the rate against one URL, and the `#[spider(...)]` line to declare for it.
//! The same probe as a spider binary's `probe`, for a site that has no spider yet.

use std::process::ExitCode;

use spiderling::cli::{ProbeFlags, Stage};
use spiderling::url::Url;
use spiderling::Config;

/// The keys this command takes: how its requests are sent. A crawl's own (its start
/// URLs, its output, its state file or fleet) do not apply to it.
const WIRE: [Stage; 4] = [Stage::Admission, Stage::Fetch, Stage::Identity, Stage::Proxy];

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The URL to send again and again; a page a crawl of the site would fetch.
    url: String,
    #[command(flatten)]
    plan: ProbeFlags,
    /// The most requests in flight at once (default 16).
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Go through a proxy: `env:VAR` to read the gateway URL and its credentials from the
    /// environment (keeps the password out of `ps` and shell history), e.g.
    /// `--proxy env:SPIDERLING_PROXY`; or a gateway URL. The limit found is the route's.
    #[arg(long, value_name = "URL|env:VAR")]
    proxy: Option<String>,
    /// A header to send, as `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Text that marks an answer as a block even with 200, such as `g-recaptcha`
    /// (repeatable).
    #[arg(long = "block-marker", value_name = "TEXT")]
    block_markers: Vec<String>,
    /// Probe even if robots.txt disallows the URL, and above its Crawl-delay.
    #[arg(long)]
    ignore_robots: bool,
    /// Trust this PEM certificate too, e.g. the one `spiderling sandbox --tls` writes.
    #[arg(long, value_name = "PATH")]
    ca_cert: Option<String>,
    /// Change a setting of how requests are sent, as `key=value` (repeatable), as a spider
    /// binary's `--set` does: the admission, fetch, identity and proxy keys; `SPIDERLING_<KEY>` variables of
    /// those keys are read too (the others are a crawl's). The flags above are shortcuts
    /// for the keys they name, and win.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let config = match config_of(&args) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let plan = args.plan.plan();
    eprintln!("probing {}: {plan}", args.url);
    match super::block_on(spiderling::probe(&config, &plan)) {
        Ok(report) => {
            spiderling::outln!("{report}");
            report.exit_code()
        }
        Err(code) => code,
    }
}

/// The config the flags describe, or what is wrong with them.
fn config_of(args: &Args) -> Result<Config, String> {
    match Url::parse(&args.url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => {}
        _ => {
            return Err(format!(
                "{:?} is not an absolute http(s) URL; write one such as https://example.com/",
                args.url
            ))
        }
    }
    let config = Config::new("probe").start_url(args.url.as_str());
    let mut config = spiderling::cli::layer(config, &args.set, &WIRE).map_err(|error| error.to_string())?;
    if args.ignore_robots {
        config = config.obey_robots(false);
    }
    if let Some(slots) = args.concurrency {
        config = config.concurrency(slots);
    }
    for (key, value) in [("proxy", &args.proxy), ("ca_cert", &args.ca_cert)] {
        if let Some(value) = value {
            config =
                config.set(key, value).map_err(|error| format!("--{}: {error}", key.replace('_', "-")))?;
        }
    }
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!("--header {header:?}: write it as \"Name: value\""));
        };
        config = config.header(name.trim(), value.trim());
    }
    for marker in &args.block_markers {
        config = config.block_marker(marker.as_str());
    }
    Ok(config)
}
