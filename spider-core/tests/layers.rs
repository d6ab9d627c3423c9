//! The layers of spider-core, kept: every path a file names inside the crate (`crate::…`,
//! `super::…`, `self::…`, in `use` lines and in code) must lead to its own layer or one
//! below it, and no two modules may import each other in a loop, a parent and its child
//! included (`mod child; use child::Item` in the parent, `use super::Thing` in the child),
//! tests apart (a `mod tests` may take what it needs from a sibling). A folder's `mod.rs`
//! declares and re-exports its files; what they share lives in a file of its own.
//! ARCHITECTURE.md draws the same layers.
//!
//! The source is read as text: comments and literals are skipped, and a path is resolved
//! against the crate's module tree, as far as its segments name modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first; ARCHITECTURE.md says what each holds. A module may use its
/// own layer and those before it.
const LAYERS: &[&str] = &[
    "error", "request", "wire", "sinks", "extract", "spider", "observe", "schedule", "inspect", "engine",
    "probe",
];

/// Files at the crate's root that only re-export or help tests: they may use any layer,
/// and no layer may use them.
const FACE: &[&str] = &["lib", "__private", "testing"];

#[test]
fn no_layer_imports_one_above_it_and_no_modules_import_each_other_in_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<Source> = rust_files(&src)
        .into_iter()
        .map(|file| Source {
            module: module_of(&src, &file),
            shown: file.strip_prefix(&src).unwrap_or(&file).display().to_string(),
            text: std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
        })
        .collect();
    let (mut problems, arrows) = check(&files);
    problems
        .extend(loops(&arrows).into_iter().map(|cycle| format!("modules in a loop: {}", cycle.join(" -> "))));
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The check of the check: a parent that imports its child, whose child imports from the
/// parent, is a loop; the same child importing a sibling instead is none.
#[test]
fn a_parent_and_its_child_importing_each_other_are_a_loop() {
    let source = |module: &[&str], text: &str| Source {
        module: module.iter().map(|s| (*s).to_owned()).collect(),
        shown: module.join("/"),
        text: text.to_owned(),
    };
    let parent =
        source(&["engine"], "mod dispatch;\nmod shared;\nuse dispatch::Dispatcher;\npub struct Shared;\n");
    let child = source(&["engine", "dispatch"], "use super::Shared;\npub struct Dispatcher;\n");
    let sibling = source(&["engine", "shared"], "pub struct Shared;\n");
    let (problems, arrows) = check(&[parent.clone(), child, sibling.clone()]);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(loops(&arrows), vec![vec!["engine".to_owned(), "engine::dispatch".to_owned()]]);
    let apart = source(&["engine", "dispatch"], "use super::shared::Shared;\npub struct Dispatcher;\n");
    let (_, arrows) = check(&[parent, apart, sibling]);
    assert_eq!(loops(&arrows), Vec::<Vec<String>>::new(), "the child takes Shared from its sibling");
}

/// One file of the crate: its module, its path as shown, its text.
#[derive(Clone)]
struct Source {
    module: Vec<String>,
    shown: String,
    text: String,
}

/// The problems of `files` (imports upwards or through the crate's face) and the arrows
/// between their modules: each module to those it imports from.
fn check(files: &[Source]) -> (Vec<String>, BTreeMap<String, BTreeSet<String>>) {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| file.module.clone()).collect();
    let rank = |module: &[String]| -> Option<usize> {
        let first = module.first()?;
        LAYERS.iter().position(|name| name == first)
    };
    let mut problems = Vec::new();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for Source { module: here, shown, text } in files {
        let is_face = here.len() == 1 && FACE.contains(&here[0].as_str()) || here.is_empty();
        if !is_face && rank(here).is_none() {
            problems.push(format!("{shown}: module `{}` is in no layer of LAYERS", here.join("::")));
            continue;
        }
        for (path, within) in paths(&code_only(text)) {
            let inside: Vec<String> = here.iter().chain(&within).cloned().collect();
            let Some(target) = resolve(&inside, &path, &modules) else { continue };
            let named = path.join("::");
            if target.is_empty() || (target.len() == 1 && FACE.contains(&target[0].as_str())) {
                if !is_face {
                    problems.push(format!(
                        "{shown}: `{named}` goes through the crate's face; name the layer's module instead"
                    ));
                }
                continue;
            }
            if is_face {
                continue;
            }
            let (from, to) = (rank(here), rank(&target));
            if from != to && to > from {
                problems.push(format!(
                    "{shown}: `{named}` imports from layer `{}`, above `{}`",
                    target[0], here[0]
                ));
            }
            // A unit test may build its subject through a sibling (the state file's
            // frontier through the module that opens a file): a loop is the code's own.
            let (a, b) = (here.join("::"), target.join("::"));
            if a != b && !within.iter().any(|inline| inline == "tests") {
                arrows.entry(a).or_default().insert(b);
            }
        }
    }
    (problems, arrows)
}

#[test]
fn every_layer_is_drawn_in_architecture_md() {
    let map = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
        .unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    for name in LAYERS {
        assert!(map.contains(&format!("`{name}/`")), "ARCHITECTURE.md does not draw the layer `{name}/`");
    }
}

/// The module a file is: `src/wire/route/mod.rs` is `wire::route`, `src/lib.rs` the root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        match last.trim_end_matches(".rs") {
            "mod" | "lib" => {}
            name => parts.push(name.to_owned()),
        }
    }
    parts
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The text with comments, string, byte-string and character literals blanked out.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i)
            || c == 'b' && next == Some('r') && !ident_before(&chars, i)
        {
            // A raw string: r"…", r#"…"#, br"…", br#"…"#.
            let r = if c == 'b' { i + 1 } else { i };
            let mut j = r + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(_) => j += 1,
                }
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            let close = if next == Some('\\') {
                // Past the escaped character, which may be a quote itself: '\''.
                (i + 3..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
            } else {
                Some(i + 2).filter(|&j| chars.get(j) == Some(&'\''))
            };
            match close {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Every path that starts with `crate`, `super` or `self`, with the inline modules
/// (`mod tests { … }`) it stands in; a `use` tree's groups spread out: `use crate::{a::b, c}`
/// gives `crate::a::b` and `crate::c`.
fn paths(code: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let tokens = tokenize(code);
    // The modules declared here in files of their own: `mod name;`.
    let children: BTreeSet<String> =
        tokens.windows(3).filter(|w| w[0] == "mod" && w[2] == ";").map(|w| w[1].clone()).collect();
    let mut found = Vec::new();
    // The inline modules open here, each with the brace depth it opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "mod" if tokens.get(i + 2).map(String::as_str) == Some("{") => {
                inline.push((tokens[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        // `pub(in crate::engine)` names a module to be seen from, not one to import.
        let head = tokens.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || (tokens[i - 1] != "::" && tokens[i - 1] != "in"));
        // A path from a module this file declares (`mod child;` … `use child::Item`) is
        // `self::child::Item`: a parent importing its child is an arrow like any other.
        let child = head && children.contains(&tokens[i]);
        if head && (child || matches!(tokens[i].as_str(), "crate" | "super" | "self")) {
            let mut prefix =
                if child { vec!["self".to_owned(), tokens[i].clone()] } else { vec![tokens[i].clone()] };
            let mut here = Vec::new();
            i = tree(&tokens, i + 1, &mut prefix, &mut here);
            let within: Vec<String> = inline.iter().map(|(name, _)| name.clone()).collect();
            found.extend(here.into_iter().map(|path| (path, within.clone())));
        } else {
            i += 1;
        }
    }
    found
}

/// Read a path's continuation after `prefix` from `tokens[i]` (at a `::`); returns where
/// it ends.
fn tree(tokens: &[String], mut i: usize, prefix: &mut Vec<String>, found: &mut Vec<Vec<String>>) -> usize {
    let depth = prefix.len();
    while tokens.get(i).map(String::as_str) == Some("::") {
        match tokens.get(i + 1).map(String::as_str) {
            Some("{") => {
                i += 2;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        None => return i,
                        Some("}") => {
                            prefix.truncate(depth);
                            return i + 1;
                        }
                        Some(",") => i += 1,
                        Some(word) if is_ident(word) => {
                            let mut inner = prefix.clone();
                            inner.push(word.to_owned());
                            i = tree(tokens, i + 1, &mut inner, found);
                            // `as name` after an item of the group.
                            if tokens.get(i).map(String::as_str) == Some("as") {
                                i += 2;
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            Some(word) if is_ident(word) || word == "*" => {
                prefix.push(word.to_owned());
                i += 2;
            }
            _ => break,
        }
    }
    found.push(prefix.clone());
    prefix.truncate(depth);
    i
}

fn is_ident(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn tokenize(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_owned());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// The module `path`, named in module `here`, leads to: its start resolved, then as many
/// segments as name modules of the crate's tree.
fn resolve(here: &[String], path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut segments = path.iter().peekable();
    let mut at: Vec<String> = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here.split_last()?.1.to_vec(),
        _ => return None,
    };
    while segments.peek().map(|s| s.as_str()) == Some("super") {
        segments.next();
        at.pop()?;
    }
    // An inline module (`tests`) is no file: what it names is found from the file's module.
    while !at.is_empty() && !modules.contains(&at) {
        at.pop();
    }
    for segment in segments {
        let mut deeper = at.clone();
        deeper.push(segment.clone());
        if modules.contains(&deeper) {
            at = deeper;
        } else {
            break;
        }
    }
    Some(at)
}

/// The loops among modules: each strongly connected set of more than one, sorted.
fn loops(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.keys().chain(edges.values().flatten()).collect();
    let reaches = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut cycles = Vec::new();
    for node in nodes {
        if done.contains(node) {
            continue;
        }
        let from = reaches(node);
        if !from.contains(node) {
            continue;
        }
        let mut cycle: Vec<String> = from.into_iter().filter(|other| reaches(other).contains(node)).collect();
        cycle.sort();
        done.extend(cycle.iter().cloned());
        cycles.push(cycle);
    }
    cycles
}
