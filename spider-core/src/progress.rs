//! Live progress: a status line under the logs when stderr is a terminal, a compact log
//! line every few seconds when it is not (CI, files), both from the engine's [`Live`]
//! snapshots.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::gauge::Live;

/// How often the log line is written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// Show the progress of the crawl until the returned task is aborted or the snapshots end.
pub(crate) fn show(mut live: watch::Receiver<Live>) -> JoinHandle<()> {
    let terminal = std::io::stderr().is_terminal();
    tokio::spawn(async move {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        let mut last_log = tokio::time::Instant::now();
        while live.changed().await.is_ok() {
            let line = line(&live.borrow());
            match &bar {
                Some(bar) => bar.set_message(line),
                None if last_log.elapsed() >= LOG_EVERY => {
                    last_log = tokio::time::Instant::now();
                    tracing::info!(target: "spiderling::progress", "{line}");
                }
                None => {}
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    })
}

/// The figures a person watches, on one line.
fn line(live: &Live) -> String {
    let mut line = format!(
        "{} pages · {:.0}/s · block rate {:.1}% · in flight {}/{} · queued {} · p50 {:.0} ms · items {} · failures {}",
        live.pages,
        live.pages_per_sec,
        live.block_rate * 100.0,
        live.in_flight,
        live.concurrency_limit,
        live.queued,
        live.latency_p50_ms,
        live.items,
        live.failures,
    );
    if live.proxy_bytes > 0 {
        line.push_str(&format!(
            " · proxy {:.1} MB, spend {:.4}",
            live.proxy_bytes as f64 / 1e6,
            live.proxy_spend
        ));
    }
    let paced: Vec<String> = live
        .hosts
        .iter()
        .take(3)
        .filter_map(|h| h.rate_per_sec.map(|rate| format!("{} {}×{rate:.1}/s", h.host, h.limit)))
        .collect();
    if !paced.is_empty() {
        line.push_str(&format!(" · adaptive {}", paced.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_with_the_block_rate() {
        let live = Live { pages: 120, pages_per_sec: 40.2, block_rate: 0.015, items: 100, ..Live::default() };
        let line = line(&live);
        assert!(line.starts_with("120 pages · 40/s · block rate 1.5% · in flight 0/0"), "{line}");
        assert!(!line.contains("proxy"));
    }
}
