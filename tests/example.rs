//! The README's main job: the books example ends with every book of the catalogue in its
//! output exactly once, and exits 0.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn the_books_example_writes_every_book_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("books.jsonl");
    let run = Command::new(support::example("books")).arg("-o").arg(&output).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let books = support::read_json_lines(&output);
    let titles: BTreeSet<&str> = books.iter().map(|b| b["title"].as_str().unwrap()).collect();
    let catalogue = spider_sandbox::catalogue(1000);
    assert_eq!(books.len(), catalogue.len(), "no duplicates");
    assert_eq!(titles, catalogue.iter().map(|b| b.title.as_str()).collect(), "no book missing");
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(printed.contains("books: 1051 pages, 1000 items"), "{printed}");
}
