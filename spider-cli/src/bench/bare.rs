//! The bare loop: tokio, reqwest and scraper with a semaphore of C, and nothing else.
//! The limit a framework's overhead is measured against.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};
use url::Url;

use super::measure::{Latencies, Run};
use super::work::{self, fetch, scrape, write_item, Fetched, Scraped, Start};

/// What a fetch task hands back to the loop.
type Done = reqwest::Result<(Fetched, Duration, Option<Scraped>)>;

/// Crawl the site at `start` with at most `concurrency` fetches in flight, each page
/// parsed on the task that fetched it; items written to `output`. Ends when nothing is
/// queued or in flight: the site is finite and every URL is fetched at most once.
pub(super) async fn crawl(
    start: Url,
    concurrency: usize,
    cost: Duration,
    output: &Path,
) -> std::io::Result<Run> {
    crawl_reading(start, concurrency, output, move |html, url| scrape(html, url, cost)).await
}

/// [`crawl`], each page read by `read` (its item and the links to follow).
pub(super) async fn crawl_reading(
    start: Url,
    concurrency: usize,
    output: &Path,
    read: impl Fn(&str, &Url) -> Scraped + Send + Sync + 'static,
) -> std::io::Result<Run> {
    let read = Arc::new(read);
    let Start { cpu, started, client, mut frontier, mut out } = work::start(start, output).await?;
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let (mut in_flight, mut pages, mut latencies) = (0usize, 0usize, Latencies::default());
    loop {
        let done = match frontier.next() {
            Some(url) => {
                let permit = permits.clone().acquire_owned().await.map_err(std::io::Error::other)?;
                let (client, done_tx, read) = (client.clone(), done_tx.clone(), read.clone());
                tokio::spawn(async move {
                    let done = fetch(&client, &url).await.map(|(fetched, latency)| {
                        let scraped = match &fetched {
                            Fetched::Page(html) => Some(read(html, &url)),
                            _ => None,
                        };
                        (fetched, latency, scraped)
                    });
                    drop(permit);
                    let _ = done_tx.send(done);
                });
                in_flight += 1;
                match done_rx.try_recv() {
                    Ok(done) => done,
                    Err(_) => continue,
                }
            }
            None if in_flight == 0 => break,
            None => match done_rx.recv().await {
                Some(done) => done,
                None => break,
            },
        };
        in_flight -= 1;
        // A failed fetch is dropped, as a bare loop would; the checks count what was crawled.
        let Ok((fetched, latency, scraped)) = done else { continue };
        latencies.record(latency);
        if let Fetched::Redirect(to) = fetched {
            frontier.offer(to);
        }
        if let Some(Scraped { item, links }) = scraped {
            pages += 1;
            if let Some(item) = item {
                write_item(&mut out, &item)?;
            }
            links.into_iter().for_each(|link| frontier.offer(link));
        }
    }
    out.flush()?;
    drop(out);
    Ok(Run::finished(pages, output, started, cpu, latencies))
}
