//! The real-pages bench (`spiderling bench --real-pages DIR`): the 130 shared real pages
//! (news, blogs, docs, as their sites served them), each `--copies` times under a name of
//! its own, served gzipped by a real nginx, crawled by the articles spider users write
//! (title, headings, description, canonical URL, JSON-LD headline, links) with the
//! streaming engine, with the DOM, and with the main content as Markdown besides
//! (`#[page(markdown)]`), and by the bare loop doing the same with tokio,
//! reqwest and scraper. What the sandbox's shop cannot show: what a crawl costs on the
//! markup and the compression of the real web.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::LazyLock;

use scraper::{Html, Selector};
use spider_sandbox::{NginxServer, NginxSite};
use url::Url;

use super::measure::Run;
use super::work::Scraped;

/// The contenders, as `--contender` names them.
const CONTENDERS: [&str; 4] = ["articles", "articles-dom", "articles-markdown", "articles-bare"];

/// Serve the pages, run each contender against them in turn, print the results.
pub(super) fn run(pages: &Path, copies: usize, concurrency: usize, json: bool) -> ExitCode {
    // Absolute: the site links to the pages from a folder of its own.
    let pages = match pages.canonicalize() {
        Ok(pages) => pages,
        Err(error) => {
            eprintln!("error: --real-pages {}: {error}", pages.display());
            return ExitCode::from(2);
        }
    };
    match measure_all(&pages, copies, concurrency) {
        Ok(rows) => {
            let report = Report { copies, concurrency, rows };
            crate::print_report(json, &report, || report.table())
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One contender's run.
#[derive(Debug, serde::Serialize)]
struct Row {
    name: &'static str,
    #[serde(flatten)]
    run: Run,
}

#[derive(Debug, serde::Serialize)]
struct Report {
    copies: usize,
    concurrency: usize,
    rows: Vec<Row>,
}

impl Report {
    fn table(&self) -> String {
        let pages = self.rows.first().map_or(0, |row| row.run.pages);
        let mut out = format!(
            "the shared real pages, {} copies each, gzipped by nginx: {pages} pages; C = {}\n\n",
            self.copies, self.concurrency
        );
        let _ = writeln!(
            out,
            "{:<18} {:>6} {:>6} {:>9} {:>8} {:>9} {:>13} {:>9}",
            "contender", "pages", "items", "streamed", "seconds", "pages/s", "CPU ms/page", "peak MB"
        );
        for Row { name, run } in &self.rows {
            let per_page = if run.pages == 0 { 0.0 } else { run.cpu_secs * 1000.0 / run.pages as f64 };
            let rate = if run.elapsed_secs > 0.0 { run.pages as f64 / run.elapsed_secs } else { 0.0 };
            let _ = writeln!(
                out,
                "{name:<18} {:>6} {:>6} {:>9} {:>8.2} {rate:>9.0} {per_page:>13.3} {:>9.1}",
                run.pages,
                run.items,
                run.streamed_pages,
                run.elapsed_secs,
                run.peak_rss_kb as f64 / 1024.0
            );
        }
        let cpu = |name: &str| {
            self.rows
                .iter()
                .find(|row| row.name == name)
                .filter(|row| row.run.pages > 0)
                .map(|row| row.run.cpu_secs / row.run.pages as f64)
        };
        if let (Some(stream), Some(dom), Some(bare)) =
            (cpu("articles"), cpu("articles-dom"), cpu("articles-bare"))
        {
            let _ = writeln!(
                out,
                "\nCPU per page against the bare loop's: streaming {:.2}, DOM {:.2}",
                stream / bare,
                dom / bare
            );
        }
        let rate = |name: &str| {
            self.rows
                .iter()
                .find(|row| row.name == name)
                .filter(|row| row.run.elapsed_secs > 0.0)
                .map(|row| row.run.pages as f64 / row.run.elapsed_secs)
        };
        if let (Some(markdown), Some(plain)) = (rate("articles-markdown"), rate("articles")) {
            let _ = writeln!(
                out,
                "pages/s with the main content as Markdown against without: {:.2}",
                markdown / plain
            );
        }
        out
    }
}

fn measure_all(pages: &Path, copies: usize, concurrency: usize) -> Result<Vec<Row>, String> {
    let dir = std::env::temp_dir().join(format!("spiderling-bench-real-{}", std::process::id()));
    let result = (|| {
        let root = dir.join("site");
        let served =
            site(pages, copies, &root).map_err(|error| format!("cannot lay out the site: {error}"))?;
        if served == 0 {
            return Err(format!("{} holds no page (NAME/source.html)", pages.display()));
        }
        let nginx = NginxServer::start(NginxSite { root: root.clone(), gzip: true, limit: None })
            .map_err(|error| format!("cannot start nginx: {error}"))?;
        let url = format!("{}/", nginx.url());
        CONTENDERS.iter().map(|name| measure(name, &url, &dir, concurrency)).collect()
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Lay out the site in `root`: `/` links every page of `pages` `copies` times, as
/// `/p/NAME-K.html`, each a link to its `source.html`. How many pages it links.
fn site(pages: &Path, copies: usize, root: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(root.join("p"))?;
    let mut names: Vec<String> = std::fs::read_dir(pages)?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("source.html").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut index = String::from("<!doctype html><html><body><h1>Real pages</h1><ul>\n");
    for copy in 0..copies {
        for name in &names {
            let file = format!("{name}-{copy}.html");
            std::os::unix::fs::symlink(pages.join(name).join("source.html"), root.join("p").join(&file))?;
            let _ = writeln!(index, "<li><a href=\"/p/{file}\">{name}</a></li>");
        }
    }
    index.push_str("</ul></body></html>\n");
    std::fs::write(root.join("index.html"), index)?;
    Ok(names.len() * copies)
}

/// Run contender `name` in a child process against `url`: its run.
fn measure(name: &'static str, url: &str, dir: &Path, concurrency: usize) -> Result<Row, String> {
    let exe = std::env::current_exe().map_err(|error| format!("cannot find this binary: {error}"))?;
    let output: PathBuf = dir.join(format!("{name}.jsonl"));
    let child = Command::new(exe)
        .args(["bench", "--contender", name, "--url", url, "--output"])
        .arg(&output)
        .args(["--concurrency", &concurrency.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot start the {name} contender: {error}"))?;
    let stdout = String::from_utf8_lossy(&child.stdout);
    let run = stdout.lines().last().and_then(|line| serde_json::from_str::<Run>(line).ok());
    match run.filter(|_| child.status.success()) {
        Some(run) => Ok(Row { name, run }),
        None => Err(format!(
            "the {name} contender failed ({}):\n{}",
            child.status,
            String::from_utf8_lossy(&child.stderr)
        )),
    }
}

/// The bare loop on the real pages: the articles spider's work by hand.
pub(super) async fn bare(start: Url, concurrency: usize, output: &Path) -> std::io::Result<Run> {
    super::bare::crawl_reading(start, concurrency, output, article).await
}

/// What the articles spider reads off a page, by hand: on `/p/` pages the article, on
/// every page the links its rules follow (`/p/` pages and the index).
fn article(html: &str, url: &Url) -> Scraped {
    static SELECTORS: LazyLock<Option<[Selector; 7]>> = LazyLock::new(|| {
        let parse = |css: &str| Selector::parse(css).ok();
        Some([
            parse("title")?,
            parse("h1")?,
            parse("h2")?,
            parse("meta[name=description]")?,
            parse("link[rel=canonical]")?,
            parse("script[type='application/ld+json']")?,
            parse("a[href]")?,
        ])
    });
    let Some([title, h1, h2, description, canonical, json_ld, links]) = SELECTORS.as_ref() else {
        return Scraped { item: None, links: Vec::new() };
    };
    let document = Html::parse_document(html);
    let texts = |selector: &Selector| -> Vec<String> {
        document
            .select(selector)
            .map(|element| element.text().collect::<String>().trim().to_owned())
            .collect()
    };
    let attr = |selector: &Selector, name: &str| {
        document.select(selector).find_map(|element| element.value().attr(name).map(|v| v.trim().to_owned()))
    };
    let item = url.path().starts_with("/p/").then(|| {
        let headline = document.select(json_ld).find_map(|script| {
            let json: serde_json::Value = serde_json::from_str(&script.text().collect::<String>()).ok()?;
            json.get("headline").and_then(|headline| headline.as_str()).map(str::to_owned)
        });
        serde_json::json!({
            "url": url.as_str(),
            "title": texts(title).into_iter().next(),
            "headings": texts(h1),
            "subheadings": texts(h2),
            "description": attr(description, "content"),
            "canonical": attr(canonical, "href").and_then(|href| url.join(&href).ok()).map(String::from),
            "headline": headline,
        })
        .to_string()
    });
    let links = document
        .select(links)
        .filter_map(|a| a.value().attr("href"))
        .filter_map(|href| url.join(href.trim()).ok())
        .filter(|link| link.path().starts_with("/p/") || link.path() == "/")
        .collect();
    Scraped { item, links }
}
