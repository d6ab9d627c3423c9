//! `spiderling sandbox`: serve the local sites, and optionally a mock gateway, until Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use spider_sandbox::{
    DemoSite, FingerprintSite, GatewayConfig, HostileSite, IdentityLimit, MockGateway, RenderedSite, Sandbox,
};

use crate::bench;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Books in the demo catalogue.
    #[arg(long, default_value_t = 1000)]
    books: usize,
    /// Size the demo catalogue by pages in all (home, listings and books) instead of
    /// books, as `bench --pages` does: with the same --page-kb and --latency-ms, the
    /// site `bench` crawls, for measuring another crawler on it.
    ///
    /// Example: spiderling sandbox --pages 20000 --page-kb 15
    #[arg(long, conflicts_with_all = ["books", "hostile"])]
    pages: Option<usize>,
    /// Pad every demo page to this many KiB with filler paragraphs that hold no links
    /// (0: no filler).
    #[arg(long, default_value_t = 0, conflicts_with = "hostile")]
    page_kb: usize,
    /// Time the demo site waits before answering each page, in milliseconds.
    #[arg(long, default_value_t = 0, conflicts_with = "hostile")]
    latency_ms: u64,
    /// Serve the hostile site instead: 10 requests/s per client IP, then 429 with
    /// Retry-After and 403 bans; flaky 5xx, slow pages, resets, a non-UTF-8 page, a
    /// huge body, a gzip bomb and redirect traps.
    ///
    /// Example: spiderling sandbox --hostile --port 8000
    #[arg(long)]
    hostile: bool,
    /// Also start a mock rotating proxy gateway on a free port: a new exit IP
    /// (127.0.1.N) per client connection, one per `-session-ID` in the username, the
    /// country from `-country-XX`; it only ever connects to 127.0.0.0/8, and resolves
    /// every host name to 127.0.0.1 (so http://shop.de:PORT/ reaches the site).
    ///
    /// Example: spiderling sandbox --hostile --gateway, then
    /// `--set proxy=env:SPIDERLING_PROXY` with the printed export
    #[arg(long)]
    gateway: bool,
    /// Serve the site over HTTPS as https://localhost:PORT/, with a self-signed
    /// certificate made now and written to a PEM file for the crawler to trust.
    ///
    /// Example: spiderling sandbox --tls, then `--set ca_cert=PATH` with the printed path
    #[arg(long)]
    tls: bool,
    /// Serve the fingerprint site instead, over HTTPS: the demo bookshop behind a check
    /// of each client's TLS ClientHello (JA4), HTTP/2 preface and headers against real
    /// browsers'; anything else gets 403 and the reason. /wire echoes what it saw.
    ///
    /// Example: spiderling sandbox --fingerprint, then
    /// `spiderling fetch --wire https://localhost:PORT/wire --set ca_cert=PATH`
    #[arg(long, conflicts_with_all = ["hostile", "tls"])]
    fingerprint: bool,
    /// Serve the client-rendered shop instead: listings and products a script builds from
    /// a JSON API ("load more" included), beside pages served whole; --pages products,
    /// half of each (default 20 and 20).
    ///
    /// Example: spiderling sandbox --rendered, then a spider with `render = "auto"`
    #[arg(long, conflicts_with_all = ["hostile", "tls", "fingerprint", "gateway"])]
    rendered: bool,
}

pub(crate) fn run(
    Args { port, books, pages, page_kb, latency_ms, hostile, gateway, tls, fingerprint, rendered }: Args,
) -> ExitCode {
    if rendered {
        return serve_rendered(port, pages);
    }
    let demo = bench::demo_site(pages.map_or(books, bench::books_for), page_kb, latency_ms);
    let size = format!(
        "site: {} pages ({} books), {page_kb} KiB each, {latency_ms} ms latency",
        demo.expected_pages(),
        demo.books
    );
    let (site, what) = match serve(port, demo, hostile, tls, fingerprint) {
        Ok(served) => served,
        Err(error) => {
            eprintln!("error: cannot serve on 127.0.0.1:{port}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let gateway = match gateway.then(|| MockGateway::start(GatewayConfig::default())).transpose() {
        Ok(gateway) => gateway,
        Err(error) => {
            eprintln!("error: cannot start the gateway on 127.0.0.1: {error}");
            return ExitCode::FAILURE;
        }
    };
    let certificate = match site.certificate_pem().map(|pem| write_certificate(pem, site.addr().port())) {
        None => None,
        Some(Ok(path)) => Some(path),
        Some(Err(error)) => {
            eprintln!("error: cannot write the certificate to {}: {error}", std::env::temp_dir().display());
            return ExitCode::FAILURE;
        }
    };
    let waited = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|runtime| {
        runtime.block_on(async {
            // Listen before saying where we are, so an early Ctrl-C is not fatal.
            let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            spiderling::outln!("{what} at {}", site.url());
            if !hostile {
                spiderling::outln!("{size}");
            }
            if let Some(path) = &certificate {
                spiderling::outln!(
                    "certificate at {}: trust it with --set ca_cert={}",
                    path.display(),
                    path.display()
                );
            }
            if let Some(gateway) = &gateway {
                let user = GatewayConfig::default().user;
                spiderling::outln!(
                    "gateway at {} (user {user}; add -country-XX and -session-ID to it)",
                    gateway.url()
                );
                spiderling::outln!("the sandbox's own credentials, for --set proxy=env:SPIDERLING_PROXY:");
                spiderling::outln!("export SPIDERLING_PROXY={}", gateway.url_with_credentials());
            }
            spiderling::outln!("press Ctrl-C to stop");
            interrupt.recv().await;
            Ok::<(), std::io::Error>(())
        })
    });
    let received = site.observed().hits.len();
    drop(site);
    let relayed = gateway.map(|gateway| gateway.observed());
    if let Some(path) = certificate {
        // The certificate is only good while this site runs.
        let _ = std::fs::remove_file(path);
    }
    match waited {
        Ok(Ok(())) => {
            spiderling::outln!("stopped after {received} requests");
            if let Some(log) = relayed {
                spiderling::outln!(
                    "the gateway relayed {} requests on {} connections and refused {} for their credentials",
                    log.requests.len(),
                    log.connections,
                    log.rejected
                );
            }
            ExitCode::SUCCESS
        }
        Ok(Err(error)) | Err(error) => {
            eprintln!("error: cannot wait for Ctrl-C: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Serve the client-rendered shop until Ctrl-C.
fn serve_rendered(port: u16, pages: Option<usize>) -> ExitCode {
    let half = pages.map(|pages| (pages / 2).max(1));
    let shop = half.map_or_else(RenderedSite::new, |half| RenderedSite::new().products(half).plain(half));
    let (products, plain) = (shop.product_count(), shop.plain_count());
    let site = match Sandbox::rendered_on(shop, port) {
        Ok(site) => site,
        Err(error) => {
            eprintln!("error: cannot serve on 127.0.0.1:{port}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let waited = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|runtime| {
        runtime.block_on(async {
            let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            spiderling::outln!("client-rendered shop at {}", site.url());
            spiderling::outln!(
                "{products} products built by script under /list/, {plain} served whole under /plain/"
            );
            spiderling::outln!("press Ctrl-C to stop");
            interrupt.recv().await;
            Ok::<(), std::io::Error>(())
        })
    });
    match waited {
        Ok(Ok(())) => {
            spiderling::outln!("stopped after {} requests", site.observed().hits.len());
            ExitCode::SUCCESS
        }
        Ok(Err(error)) | Err(error) => {
            eprintln!("error: cannot wait for Ctrl-C: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Start the site the flags ask for, with what to call it.
fn serve(
    port: u16,
    demo: DemoSite,
    hostile: bool,
    tls: bool,
    fingerprint: bool,
) -> std::io::Result<(Sandbox, &'static str)> {
    if fingerprint {
        Ok((Sandbox::fingerprint_on(FingerprintSite { demo, http1_only: false }, port)?, "fingerprint site"))
    } else if hostile {
        let limit = IdentityLimit {
            requests: 10,
            per: Duration::from_secs(1),
            ban_after: 5,
            ban_for: Duration::from_secs(60),
        };
        let site = HostileSite { limit: Some(limit), ..HostileSite::default() };
        let served = if tls { Sandbox::hostile_tls_on(site, port) } else { Sandbox::hostile_on(site, port) };
        Ok((served?, "hostile site"))
    } else {
        let served = if tls { Sandbox::demo_tls_on(demo, port) } else { Sandbox::demo_on(demo, port) };
        Ok((served?, "demo bookshop"))
    }
}

/// Write the certificate where a crawler can read it; named by port, so two sandboxes
/// do not overwrite each other's.
fn write_certificate(pem: &str, port: u16) -> std::io::Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("spiderling-sandbox-{port}.pem"));
    std::fs::write(&path, pem)?;
    Ok(path)
}
