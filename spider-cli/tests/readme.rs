//! Every `spiderling ...` command the README shows is one the command takes: its
//! subcommand, flags and values parse, so a reader who pastes one meets no usage error.

#![allow(clippy::unwrap_used)]

use clap::Parser;

/// A shell line's words: double and single quotes group, a `#` after a space starts a
/// comment, and a trailing `&` is the shell's.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.last().is_some_and(|last| last == "&") {
        words.pop();
    }
    words
}

#[test]
fn every_spiderling_command_in_the_readme_parses() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let mut in_shell = false;
    let mut checked = 0;
    for (number, line) in readme.lines().enumerate() {
        match line.trim() {
            "```sh" => in_shell = true,
            "```" => in_shell = false,
            command if in_shell && command.starts_with("spiderling ") => {
                let args = words(command);
                if let Err(error) = spider_cli::Cli::try_parse_from(&args) {
                    panic!("README.md line {}: `{command}` does not parse:\n{error}", number + 1);
                }
                checked += 1;
            }
            _ => {}
        }
    }
    assert!(checked >= 20, "the README's commands were found: {checked}");
}

#[test]
fn words_split_as_the_shell_does() {
    assert_eq!(
        words(r#"spiderling fetch URL --css "h3 > a" --attr href   # a comment"#),
        ["spiderling", "fetch", "URL", "--css", "h3 > a", "--attr", "href"]
    );
    assert_eq!(words("spiderling sandbox --port 8000 &"), ["spiderling", "sandbox", "--port", "8000"]);
}
