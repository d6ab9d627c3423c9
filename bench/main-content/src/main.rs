//! Main-content extractors on the real pages: for each page, each extractor's text against
//! the reference extraction (`expected.html`, Readability's), as word-shingle F1, and the
//! time each took. Prints one line per extractor, and with `--pages` one per page too.
//!
//! Word shingles: the text lowercased and cut into words (runs of letters and digits),
//! every run of four consecutive words a shingle, counted as a multiset; precision is the
//! shared shingles over the extractor's, recall over the reference's. A text of fewer than
//! four words is one shingle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SHINGLE: usize = 4;

/// The URL the pages are read as: Readability's test suite reads them at this one.
const PAGE_URL: &str = "http://fakehost/test/page.html";

type Extract = fn(&str) -> Option<String>;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: main-content-bench PAGES_DIR [--pages] [--only NAME] [--dump NAME] [--texts DIR]");
        std::process::exit(2);
    };
    let rest: Vec<String> = args.collect();
    let per_page = rest.iter().any(|a| a == "--pages");
    let only = rest.iter().position(|a| a == "--only").and_then(|i| rest.get(i + 1)).cloned();
    let dump = rest.iter().position(|a| a == "--dump").and_then(|i| rest.get(i + 1)).cloned();
    let texts = rest.iter().position(|a| a == "--texts").and_then(|i| rest.get(i + 1)).map(PathBuf::from);
    let pages = read_pages(&dir);
    let extractors: [(&str, Extract); 6] = [
        ("dom_smoothie", dom_smoothie_text),
        ("dom_smoothie markdown", dom_smoothie_markdown),
        ("dom_smoothie + htmd", dom_smoothie_htmd),
        ("trafilatura (crate)", trafilatura_text),
        ("rs-trafilatura", rs_trafilatura_text),
        ("htmd, whole page", htmd_whole),
    ];
    println!("{} pages from {}", pages.len(), dir.display());
    println!("{:<24} {:>8} {:>8} {:>8} {:>7} {:>10}", "extractor", "mean F1", "median", "min", "empty", "CPU ms/page");
    if let Some(texts) = texts {
        // Texts another extractor wrote, NAME.txt for each page: scored, not timed.
        let scores: Vec<f64> = pages
            .iter()
            .map(|page| {
                let text = std::fs::read_to_string(texts.join(format!("{}.txt", page.name))).unwrap_or_default();
                let score = f1(&text, &page.reference);
                if per_page {
                    println!("  {:<22} {:<40} {score:.3}", "texts", page.name);
                }
                score
            })
            .collect();
        let empty = pages
            .iter()
            .filter(|page| {
                let text = std::fs::read_to_string(texts.join(format!("{}.txt", page.name))).unwrap_or_default();
                words(&text).is_empty() && !words(&page.reference).is_empty()
            })
            .count();
        report(&texts.display().to_string(), &scores, empty, None, pages.len());
        return;
    }
    for (name, extract) in extractors {
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let mut scores = Vec::new();
        let mut empty = 0;
        let mut spent = Duration::ZERO;
        for page in &pages {
            let started = thread_cpu();
            let text = extract(&page.source).unwrap_or_default();
            spent += thread_cpu().saturating_sub(started);
            if dump.as_deref() == Some(page.name.as_str()) {
                println!("---- {name} on {}\n{text}\n----", page.name);
            }
            // Markdown is scored on what it says: a link's or an image's URL is not text.
            let text = if name.contains("markdown") || name.contains("htmd") { without_urls(&text) } else { text };
            let score = f1(&text, &page.reference);
            if words(&text).is_empty() && !words(&page.reference).is_empty() {
                empty += 1;
            }
            if per_page {
                println!("  {name:<22} {:<40} {score:.3}", page.name);
            }
            scores.push(score);
        }
        report(name, &scores, empty, Some(spent), pages.len());
    }
}

fn report(name: &str, scores: &[f64], empty: usize, spent: Option<Duration>, pages: usize) {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
    let per_page = spent.map_or("-".to_owned(), |spent| format!("{:.2}", spent.as_secs_f64() * 1000.0 / pages.max(1) as f64));
    println!(
        "{name:<24} {mean:>8.3} {:>8.3} {:>8.3} {empty:>7} {per_page:>10}",
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0),
        sorted.first().copied().unwrap_or(0.0),
    );
}

/// The CPU time this thread has run, from `/proc/thread-self/schedstat`: what an
/// extraction costs, whatever else the machine does meanwhile.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let nanos = stat.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    Duration::from_nanos(nanos)
}

struct Page {
    name: String,
    source: String,
    reference: String,
}

fn read_pages(dir: &Path) -> Vec<Page> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("source.html").exists() && path.join("expected.html").exists())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|path| {
            let read = |file: &str| {
                let bytes = std::fs::read(path.join(file)).unwrap_or_default();
                String::from_utf8_lossy(&bytes).into_owned()
            };
            Page {
                name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                source: read("source.html"),
                reference: html_text(&read("expected.html")),
            }
        })
        .collect()
}

/// The text of an HTML fragment, its text nodes joined by spaces.
fn html_text(html: &str) -> String {
    let fragment = scraper::Html::parse_fragment(html);
    fragment.root_element().text().collect::<Vec<_>>().join(" ")
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn shingles(text: &str) -> HashMap<Vec<String>, usize> {
    let words = words(text);
    let mut counted = HashMap::new();
    if words.is_empty() {
        return counted;
    }
    if words.len() < SHINGLE {
        counted.insert(words, 1);
        return counted;
    }
    for window in words.windows(SHINGLE) {
        *counted.entry(window.to_vec()).or_insert(0) += 1;
    }
    counted
}

fn f1(got: &str, reference: &str) -> f64 {
    let (got, reference) = (shingles(got), shingles(reference));
    let total = |set: &HashMap<Vec<String>, usize>| set.values().sum::<usize>();
    let (got_total, reference_total) = (total(&got), total(&reference));
    if got_total == 0 && reference_total == 0 {
        return 1.0;
    }
    if got_total == 0 || reference_total == 0 {
        return 0.0;
    }
    let shared: usize = got.iter().map(|(s, n)| (*n).min(reference.get(s).copied().unwrap_or(0))).sum();
    let precision = shared as f64 / got_total as f64;
    let recall = shared as f64 / reference_total as f64;
    if shared == 0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

fn dom_smoothie_with(html: &str, mode: dom_smoothie::TextMode) -> Option<String> {
    let config = dom_smoothie::Config { text_mode: mode, ..Default::default() };
    let mut readability = dom_smoothie::Readability::new(html, Some(PAGE_URL), Some(config)).ok()?;
    readability.parse().ok().map(|article| article.text_content.to_string())
}

fn dom_smoothie_text(html: &str) -> Option<String> {
    dom_smoothie_with(html, dom_smoothie::TextMode::Raw)
}

fn dom_smoothie_markdown(html: &str) -> Option<String> {
    dom_smoothie_with(html, dom_smoothie::TextMode::Markdown)
}

fn dom_smoothie_htmd(html: &str) -> Option<String> {
    let mut readability = dom_smoothie::Readability::new(html, Some(PAGE_URL), None).ok()?;
    let article = readability.parse().ok()?;
    htmd::convert(&article.content).ok()
}

/// Markdown with the targets of its links and images left out (`[text](url)` → `text`).
fn without_urls(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let mut depth = 1;
        let end = after
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(after.len(), |(i, _)| i + 1);
        out.push(' ');
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn trafilatura_text(html: &str) -> Option<String> {
    trafilatura::extract(html, &trafilatura::Options::default()).ok().map(|result| result.content_text)
}

fn rs_trafilatura_text(html: &str) -> Option<String> {
    rs_trafilatura::extract(html).ok().map(|result| result.content_text)
}

/// The whole page as Markdown, no main-content extraction: what a converter alone gives.
fn htmd_whole(html: &str) -> Option<String> {
    htmd::convert(html).ok()
}
