//! `spiderling robots URL [PATH]...`: what robots.txt allows us, before crawling.

use std::process::ExitCode;

use spiderling::url::Url;
use spiderling::{Config, Robots};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A URL of the site; its origin's robots.txt is read.
    url: String,
    /// Paths (or URLs) to check; the URL itself when none are given.
    paths: Vec<String>,
    /// The user agent to read the rules for; its first word is the robots.txt token.
    #[arg(long, default_value = spiderling::DEFAULT_USER_AGENT)]
    user_agent: String,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let Ok(url) = Url::parse(&args.url) else {
        eprintln!("error: {:?} is not an absolute URL; write one such as https://example.com/", args.url);
        return ExitCode::from(2);
    };
    let config = Config::new("robots").user_agent(args.user_agent.as_str());
    let robots = match super::block_on(Robots::fetch(&config, &url)) {
        Ok(robots) => robots,
        Err(code) => return code,
    };
    spiderling::outln!("robots.txt: {}", robots.url());
    if let Some(reason) = robots.unavailable() {
        spiderling::outln!("unavailable ({reason}): a crawl fetches nothing from this site");
    }
    match robots.crawl_delay() {
        Some(delay) => spiderling::outln!("crawl-delay: {delay:?}"),
        None => spiderling::outln!("crawl-delay: none"),
    }
    let paths = if args.paths.is_empty() { vec![args.url.clone()] } else { args.paths };
    for path in paths {
        match url.join(&path) {
            Ok(target) => {
                let verdict = if robots.allows(&target) { "allowed" } else { "disallowed" };
                spiderling::outln!("{verdict:<10} {target}");
            }
            Err(error) => eprintln!("error: {path:?} does not resolve against {url}: {error}"),
        }
    }
    ExitCode::SUCCESS
}
