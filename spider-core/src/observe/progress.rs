//! Live progress: a status line under the logs when stderr is a terminal (with the
//! `observe` feature, which brings indicatif), a compact log line every few seconds
//! otherwise (CI, files), both from the engine's [`Live`] snapshots. [`LogWriter`] keeps
//! log lines above the status line.

use std::io::{IsTerminal, Write};
#[cfg(feature = "observe")]
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

#[cfg(feature = "observe")]
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::observe::gauge::Live;

/// How often the log line is written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// The status line on screen, if any. Logging is global to the process, so the line it
/// must step around is too.
#[cfg(feature = "observe")]
static STATUS_LINE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Standard error for log lines: while a crawl shows its status line, each line is
/// written above it (the status line is cleared, the log line written, the status line
/// drawn again), so a warning never splits the status line or leaves a stale copy of it.
///
/// A line must reach it in one `write_all`, as `tracing-subscriber`'s formatter does:
/// `tracing_subscriber::fmt().with_writer(|| LogWriter)` is what `spiderling::cli` runs.
///
/// ```
/// use std::io::Write;
///
/// spider_core::LogWriter.write_all(b"a line above the status line, if one is shown\n")?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        #[cfg(feature = "observe")]
        if let Some(bar) = STATUS_LINE.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return bar.suspend(|| std::io::stderr().write_all(buf));
        }
        std::io::stderr().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Whether log lines may carry colour: on a terminal only, and not when `NO_COLOR` is
/// set to anything but the empty string (no-color.org).
pub fn log_in_colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Show the progress of the crawl until the returned task is aborted or the snapshots end.
pub(crate) fn show(mut live: watch::Receiver<Live>) -> JoinHandle<()> {
    tokio::spawn(async move {
        #[cfg(feature = "observe")]
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            *STATUS_LINE.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar.clone());
            bar
        });
        // Without indicatif there is no status line: progress goes to the log.
        #[cfg(not(feature = "observe"))]
        let bar: Option<std::convert::Infallible> = None;
        let mut last_log = tokio::time::Instant::now();
        while live.changed().await.is_ok() {
            let line = line(&live.borrow());
            match &bar {
                #[cfg(feature = "observe")]
                Some(bar) => bar.set_message(line),
                #[cfg(not(feature = "observe"))]
                Some(never) => match *never {},
                None if last_log.elapsed() >= LOG_EVERY => {
                    last_log = tokio::time::Instant::now();
                    tracing::info!(target: "spiderling::progress", "{line}");
                }
                None => {}
            }
        }
        #[cfg(feature = "observe")]
        if let Some(bar) = bar {
            STATUS_LINE.lock().unwrap_or_else(PoisonError::into_inner).take();
            bar.finish_and_clear();
        }
    })
}

/// The figures a person watches, on one line.
fn line(live: &Live) -> String {
    let mut line = format!(
        "{} pages · {:.0}/s · block rate {:.1}% · in flight {}/{} · queued {} · p50 {:.0} ms · items {} · \
            failures {}",
        live.counts.pages,
        live.pages_per_sec,
        live.block_rate * 100.0,
        live.in_flight,
        live.concurrency_limit,
        live.queued,
        live.latency_p50_ms,
        live.counts.items,
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
    use crate::observe::counters::Counts;

    #[test]
    fn one_line_with_the_block_rate() {
        let counts = Counts { pages: 120, items: 100, ..Counts::default() };
        let live = Live { counts, pages_per_sec: 40.2, block_rate: 0.015, ..Live::default() };
        let line = line(&live);
        assert!(line.starts_with("120 pages · 40/s · block rate 1.5% · in flight 0/0"), "{line}");
        assert!(!line.contains("proxy"));
    }
}
