//! `report = FILE`: the dashboard's page with the whole crawl's data inside it, written
//! when the crawl ends, whole or not at all (a temporary file beside it, then a rename).

use std::path::Path;

use super::board::{with_data, Board};
use crate::error::Error;
use crate::observe::summary::Summary;

/// Write the report of a crawl that ended with `summary` to `path`.
pub(crate) fn write_report(path: &Path, board: &Board, summary: &Summary) -> Result<(), Error> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let json = board.report_json(summary).map_err(|e| io(e.into()))?;
    let page = with_data(&json);
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::write(&temporary, page).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::counters::Counts;
    use crate::observe::gauge::Live;
    use crate::observe::summary::Ending;
    use crate::observe::timeline::Recorder;
    use spider_settings::Config;

    fn summary(counts: Counts) -> Summary {
        let ending = Ending {
            stopped: None,
            unfinished: 0,
            runs: 1,
            state: None,
            proxy: None,
            bad_start_lines: 0,
            failure_examples: Default::default(),
        };
        Summary::new("shop", counts, ending)
    }

    #[test]
    fn the_report_holds_the_summary_and_no_credentials_and_cannot_end_its_script_early() {
        let config = Config::new("shop")
            .start_url("https://shop.example/")
            .proxy("http://acct:hunter2@gateway.example:7777")
            .report("crawl.html");
        let recorder = Recorder::default();
        let counts = Counts { elapsed_secs: 1.0, pages: 3, ..Counts::default() };
        recorder.lock().record(&Live { counts, ..Live::default() });
        recorder.lock().failure("status", "https://shop.example/</script><b>", "status 404".to_owned());
        let board = Board::new(&config, recorder);
        let counts = Counts {
            pages: 3,
            items: 2,
            failures_by_reason: [("status".to_owned(), 1)].into(),
            ..Counts::default()
        };
        let dir = std::env::temp_dir().join(format!("spiderling-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let path = dir.join("crawl.html");
        write_report(&path, &board, &summary(counts)).unwrap_or_else(|e| panic!("{e}"));
        let html = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!html.contains("hunter2"), "the proxy password is left out");
        assert!(html.contains("gateway.example:7777"), "the proxy is shown");
        assert!(html.contains(r#""pages":3,"items":2"#), "the summary's totals");
        assert!(html.contains("shop: 3 pages, 2 items"), "the summary as printed");
        assert_eq!(
            html.matches("</script>").count(),
            crate::observe::dashboard::board::PAGE.matches("</script>").count()
        );
        assert!(html.contains(r"https://shop.example/\u003c/script>\u003cb>"));
        let left: Vec<_> = std::fs::read_dir(&dir).into_iter().flatten().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary file left beside it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_report_that_cannot_be_written_is_an_error_naming_the_file() {
        let board = Board::new(&Config::new("shop"), Recorder::default());
        let path = Path::new("/nonexistent-dir/crawl.html");
        let error = write_report(path, &board, &summary(Counts::default())).map(|()| "written").unwrap_err();
        assert!(error.to_string().contains("/nonexistent-dir/crawl.html"), "{error}");
    }
}
