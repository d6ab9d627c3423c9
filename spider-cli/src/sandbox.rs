//! `spiderling sandbox`: serve the local sites until Ctrl-C.

use std::process::ExitCode;
use std::time::Duration;

use spider_sandbox::{DemoSite, HostileSite, IdentityLimit, Sandbox};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Books in the demo catalogue.
    #[arg(long, default_value_t = 1000)]
    books: usize,
    /// Serve the hostile site instead: 10 requests/s per client, then 429 with
    /// Retry-After and 403 bans; flaky 5xx, slow pages, resets, a non-UTF-8 page, a
    /// huge body, a gzip bomb and redirect traps.
    #[arg(long)]
    hostile: bool,
}

pub(crate) fn run(Args { port, books, hostile }: Args) -> ExitCode {
    let (site, what) = if hostile {
        let limit = IdentityLimit {
            requests: 10,
            per: Duration::from_secs(1),
            ban_after: 5,
            ban_for: Duration::from_secs(60),
        };
        let site = HostileSite { limit: Some(limit), ..HostileSite::default() };
        (Sandbox::hostile_on(site, port), "hostile site")
    } else {
        (Sandbox::demo_on(DemoSite { books, ..DemoSite::default() }, port), "demo bookshop")
    };
    let site = match site {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve on 127.0.0.1:{port}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let waited = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|runtime| {
        runtime.block_on(async {
            // Listen before saying where we are, so an early Ctrl-C is not fatal.
            let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            println!("{what} at {}", site.url());
            println!("press Ctrl-C to stop");
            interrupt.recv().await;
            Ok::<(), std::io::Error>(())
        })
    });
    let received = site.observed().hits.len();
    drop(site);
    match waited {
        Ok(Ok(())) => {
            println!("stopped after {received} requests");
            ExitCode::SUCCESS
        }
        Ok(Err(error)) | Err(error) => {
            eprintln!("error: cannot wait for Ctrl-C: {error}");
            ExitCode::FAILURE
        }
    }
}
