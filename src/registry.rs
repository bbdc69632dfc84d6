//! The registry: every library and tool of a set of sources, in discovery order.
//!
//! Owns the pipeline scan → read → extract (files are read and parsed in parallel,
//! each on a thread with a stack large enough for deep syntax trees) and the
//! first-wins rule for tool names across files. It never runs Python.

use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::diag::{Diagnostic, Level};
use crate::extract::{self, DEFAULT_INJECTED, Library, Tool};
use crate::scan::{self, SourceFile};
use crate::source::{MAX_FILE_BYTES, SourceError};

/// Where tools come from (SPEC §1). Both empty means the built-in default tools.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub folders: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Parameter names the host injects; they are left out of every schema.
    pub injected: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { injected: DEFAULT_INJECTED.iter().map(|s| s.to_string()).collect() }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub libraries: Vec<Library>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Stack for each reading thread: deep but valid code must never overflow it.
const READER_STACK: usize = 256 * 1024 * 1024;

impl Registry {
    pub fn load(sources: &Sources, options: &Options) -> Registry {
        let (files, mut diagnostics) = scan::discover(&sources.folders, &sources.files);
        let mut libraries = Vec::with_capacity(files.len());
        for (library, file_diagnostics) in read_all(&files, &options.injected) {
            diagnostics.extend(file_diagnostics);
            libraries.extend(library);
        }
        inherit_folder_metadata(&mut libraries);
        let mut registry = Registry { libraries, diagnostics };
        registry.drop_duplicate_tools();
        registry
    }

    /// Every tool in discovery order, with its library.
    pub fn tools(&self) -> impl Iterator<Item = (&Library, &Tool)> {
        self.libraries.iter().flat_map(|library| library.tools.iter().map(move |tool| (library, tool)))
    }

    pub fn tool(&self, name: &str) -> Option<(&Library, &Tool)> {
        self.tools().find(|(_, tool)| tool.name == name)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Tool names are unique: the first discovery wins (SPEC §1).
    fn drop_duplicate_tools(&mut self) {
        let mut first_seen: std::collections::HashMap<String, PathBuf> = Default::default();
        for library in &mut self.libraries {
            let path = library.path.clone();
            let diagnostics = &mut self.diagnostics;
            library.tools.retain(|tool| match first_seen.get(&tool.name) {
                Some(first) => {
                    let message =
                        format!("tool `{}` is already defined in {}; this one is ignored", tool.name, first.display());
                    diagnostics.push(Diagnostic::new(&path, tool.line, 1, Level::Warning, message));
                    false
                }
                None => {
                    first_seen.insert(tool.name.clone(), path.clone());
                    true
                }
            });
        }
    }
}

/// A sibling file of a folder library `X/` shows the name, description and icon of
/// `X/X.py` unless it sets its own: to a user they are one library.
fn inherit_folder_metadata(libraries: &mut [Library]) {
    for i in 0..libraries.len() {
        let Some(dir) = libraries[i].package.clone() else { continue };
        let primary =
            libraries.iter().position(|l| l.package.as_ref() == Some(&dir) && dir.file_name() == Some(l.stem.as_ref()));
        let Some(primary) = primary.filter(|&p| p != i) else { continue };
        let (name, description, icon) =
            (libraries[primary].name.clone(), libraries[primary].description.clone(), libraries[primary].icon.clone());
        let sibling = &mut libraries[i];
        if sibling.name.is_none() && sibling.description.is_none() && sibling.icon.is_none() {
            (sibling.name, sibling.description, sibling.icon) = (name, description, icon);
        }
    }
}

type FileResult = (Option<Library>, Vec<Diagnostic>);

/// Reads and extracts every file, in parallel, keeping discovery order.
fn read_all(files: &[SourceFile], injected: &[String]) -> Vec<FileResult> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len()).max(1);
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<FileResult>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let spawned = std::thread::Builder::new().stack_size(READER_STACK).spawn_scoped(scope, || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let result = read_one(file, injected);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(result);
                    }
                }
            });
            if spawned.is_err() {
                break;
            }
        }
    });
    results
        .into_iter()
        .zip(files)
        .map(|(slot, file)| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                (
                    None,
                    vec![Diagnostic::at_file(
                        &file.path,
                        Level::Error,
                        "could not be read: no reader thread was available",
                    )],
                )
            })
        })
        .collect()
}

fn read_one(file: &SourceFile, injected: &[String]) -> FileResult {
    let path = &file.path;
    // Refuse a huge file before reading it into memory, and never open a FIFO or a
    // device (reading one could block forever or never end).
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return (None, vec![Diagnostic::at_file(path, Level::Error, "not a regular file")]);
        }
        Ok(meta) if meta.len() > MAX_FILE_BYTES as u64 => {
            let err = SourceError::TooLarge { bytes: meta.len() as usize };
            return (None, vec![Diagnostic::at_file(path, Level::Error, err.to_string())]);
        }
        _ => {}
    }
    match fs::read(path) {
        Ok(bytes) => extract::extract(file, &bytes, injected),
        Err(err) => (None, vec![Diagnostic::at_file(path, Level::Error, format!("cannot read file: {err}"))]),
    }
}
