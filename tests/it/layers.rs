//! The crate's top-level modules depend one way (ARCHITECTURE.md, "Layers"): no module
//! reaches, through `crate::` paths (grouped `use crate::{a, b}` too) or a top-level
//! file's `super::`, a module that reaches back to it. Read from the source text, so
//! a cycle is named with the files that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → the top-level modules it names, with a file naming each.
type Edges = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn rust_files(folder: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// The code of a file without its comments (line comments, doc comments included).
fn code(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The module names right after each `prefix` in `text`: `crate::a::b` gives `a`, and
/// `crate::{a, b::c, d::{e}}` gives `a`, `b` and `d`.
fn named_after(text: &str, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let ident =
        |rest: &str| -> String { rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    for (at, _) in text.match_indices(prefix) {
        if text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: those at depth 0, before `::`, `,` or `}`.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && depth == 0 && (c.is_ascii_alphabetic() || c == '_') => {
                        names.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names
}

fn edges(src: &Path) -> (BTreeSet<String>, Edges) {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() || (path.extension().is_some_and(|ext| ext == "rs") && stem != "lib" && stem != "main") {
            modules.insert(stem);
        }
    }
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = Edges::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap();
        let top_level_file = relative.components().count() == 1;
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        let module = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        if !modules.contains(&module) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let mut named = named_after(&text, "crate::");
        if top_level_file {
            named.extend(named_after(&text, "super::"));
        }
        for other in named {
            if other != module && modules.contains(&other) {
                edges
                    .entry(module.clone())
                    .or_default()
                    .entry(other)
                    .or_insert_with(|| Path::new("src").join(relative));
            }
        }
    }
    (modules, edges)
}

/// Every cycle's modules, found by a depth-first walk (a back edge closes one).
fn cycles(modules: &BTreeSet<String>, edges: &Edges) -> Vec<Vec<String>> {
    fn walk(
        module: &str,
        edges: &Edges,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|m| m == module) {
            found.push(path[at..].to_vec());
            return;
        }
        if done.contains(module) {
            return;
        }
        path.push(module.to_string());
        for next in edges.get(module).into_iter().flat_map(BTreeMap::keys) {
            walk(next, edges, path, done, found);
        }
        path.pop();
        done.insert(module.to_string());
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for module in modules {
        walk(module, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (modules, edges) = edges(&src);
    assert!(modules.len() > 10 && modules.contains("runtime"), "the modules are read: {modules:?}");
    assert!(edges["runtime"].contains_key("discovery"), "the edges are read");
    let found: Vec<String> = cycles(&modules, &edges)
        .into_iter()
        .map(|cycle| {
            let ties: Vec<String> = cycle
                .iter()
                .zip(cycle.iter().cycle().skip(1))
                .map(|(from, to)| format!("{from} → {to} ({})", edges[from][to].display()))
                .collect();
            ties.join(", ")
        })
        .collect();
    assert!(found.is_empty(), "import cycles between top-level modules:\n{}", found.join("\n"));
}

/// The layers' folders, bottom up (ARCHITECTURE.md, "Layers"); every other top-level
/// module is beneath them all.
const LAYERS: [&[&str]; 6] = [&["discovery"], &["host"], &["export", "runtime"], &["mcp"], &["cli"], &["pymodule"]];

#[test]
fn each_layer_names_only_the_layers_beneath_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (modules, edges) = edges(&src);
    let rank = |module: &str| LAYERS.iter().position(|layer| layer.contains(&module)).map_or(0, |at| at + 1);
    for layer in LAYERS.iter().flat_map(|layer| layer.iter()) {
        assert!(modules.contains(*layer), "src/{layer} is a top-level module: {modules:?}");
    }
    let upward: Vec<String> = edges
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |(to, file)| (from, to, file)))
        .filter(|(from, to, _)| rank(to) > 0 && rank(to) >= rank(from))
        .map(|(from, to, file)| format!("{from} → {to} ({})", file.display()))
        .collect();
    assert!(upward.is_empty(), "a module names a layer not beneath it:\n{}", upward.join("\n"));
}

#[test]
fn grouped_and_nested_paths_are_read() {
    let names =
        named_after("use crate::{shown, sync::{self, lock}}; x = crate::config::Config; my_crate::no", "crate::");
    assert_eq!(names, ["shown", "sync", "config"]);
}
