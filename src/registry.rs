//! The registry: every library and tool of a set of sources, in discovery order.
//!
//! Owns the pipeline scan → read → extract (files are read and parsed in parallel,
//! each on a thread with a stack large enough for deep syntax trees) and the
//! first-wins rule for tool names across files. It never runs Python.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

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
    /// One library per readable file, in discovery order.
    pub libraries: Vec<Arc<Library>>,
    pub diagnostics: Vec<Diagnostic>,
    sources: Sources,
    options: Options,
    /// What each file contributed, with the size and modification time it had then.
    files: HashMap<PathBuf, CachedFile>,
    scan_diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone)]
struct CachedFile {
    stamp: Option<Stamp>,
    library: Option<Arc<Library>>,
    diagnostics: Vec<Diagnostic>,
}

/// A file is re-read when its size or modification time changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = fs::metadata(path).ok()?;
        Some(Stamp { len: meta.len(), modified: meta.modified().ok() })
    }
}

/// Files whose contribution changed in a rescan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<PathBuf>,
    pub changed: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// Stack for each reading thread: deep but valid code must never overflow it.
const READER_STACK: usize = 256 * 1024 * 1024;

impl Registry {
    pub fn load(sources: &Sources, options: &Options) -> Registry {
        let mut registry = Registry { sources: sources.clone(), options: options.clone(), ..Registry::default() };
        registry.rescan();
        registry
    }

    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// Changes where tools come from; the next [`Registry::rescan`] reads the new
    /// sources and reuses what it already read of the files they share.
    pub fn set_sources(&mut self, sources: Sources) {
        self.sources = sources;
    }

    /// Walks the sources again and re-reads only files that are new or whose size or
    /// modification time changed; everything else is reused as it is.
    pub fn rescan(&mut self) -> Changes {
        let (files, scan_diagnostics) = scan::discover(&self.sources.folders, &self.sources.files);
        let stamps: Vec<Option<Stamp>> = files.iter().map(|file| Stamp::of(&file.path)).collect();
        let stale: Vec<usize> = (0..files.len())
            .filter(|&i| match (&self.files.get(&files[i].path), stamps[i]) {
                (Some(cached), Some(stamp)) => cached.stamp != Some(stamp),
                _ => true,
            })
            .collect();
        let stale_files: Vec<SourceFile> = stale.iter().map(|&i| files[i].clone()).collect();
        let mut changes = Changes::default();
        for ((library, diagnostics), &i) in read_all(&stale_files, &self.options.injected).into_iter().zip(&stale) {
            let path = files[i].path.clone();
            let cached = CachedFile { stamp: stamps[i], library: library.map(Arc::new), diagnostics };
            match self.files.insert(path.clone(), cached) {
                None => changes.added.push(path),
                Some(_) => changes.changed.push(path),
            }
        }
        let listed: HashSet<&PathBuf> = files.iter().map(|f| &f.path).collect();
        let gone: Vec<PathBuf> = self.files.keys().filter(|p| !listed.contains(p)).cloned().collect();
        for path in gone {
            self.files.remove(&path);
            changes.removed.push(path);
        }
        let unchanged = changes.is_empty() && scan_diagnostics == self.scan_diagnostics;
        if !unchanged {
            self.scan_diagnostics = scan_diagnostics;
            self.rebuild(&files);
        }
        changes
    }

    /// Lays out libraries and diagnostics in discovery order from the per-file cache.
    fn rebuild(&mut self, files: &[SourceFile]) {
        self.diagnostics = self.scan_diagnostics.clone();
        self.libraries.clear();
        for file in files {
            let Some(cached) = self.files.get(&file.path) else { continue };
            self.diagnostics.extend(cached.diagnostics.iter().cloned());
            self.libraries.extend(cached.library.clone());
        }
        inherit_folder_metadata(&mut self.libraries);
        self.drop_duplicate_tools();
    }

    /// Every tool in discovery order, with its library.
    pub fn tools(&self) -> impl Iterator<Item = (&Library, &Tool)> {
        self.libraries.iter().flat_map(|library| library.tools.iter().map(move |tool| (&**library, tool)))
    }

    pub fn tool(&self, name: &str) -> Option<(&Library, &Tool)> {
        self.tools().find(|(_, tool)| tool.name == name)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Tool names are unique: the first discovery wins (SPEC §1).
    fn drop_duplicate_tools(&mut self) {
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        let mut dropped: Vec<(usize, String)> = Vec::new();
        for (index, library) in self.libraries.iter().enumerate() {
            for tool in &library.tools {
                match first_seen.get(tool.name.as_str()) {
                    Some(&first) => {
                        let message = format!(
                            "tool `{}` is already defined in {}; this one is ignored",
                            tool.name,
                            self.libraries[first].path.display()
                        );
                        self.diagnostics.push(Diagnostic::new(&library.path, tool.line, 1, Level::Warning, message));
                        dropped.push((index, tool.name.clone()));
                    }
                    None => {
                        first_seen.insert(&tool.name, index);
                    }
                }
            }
        }
        for (index, name) in dropped {
            Arc::make_mut(&mut self.libraries[index]).tools.retain(|tool| tool.name != name);
        }
    }
}

/// A sibling file of a folder library `X/` shows the name, description and icon of
/// `X/X.py` unless it sets its own: to a user they are one library.
fn inherit_folder_metadata(libraries: &mut [Arc<Library>]) {
    for i in 0..libraries.len() {
        let sibling = &libraries[i];
        let Some(dir) = sibling.package.clone() else { continue };
        if sibling.name.is_some() || sibling.description.is_some() || sibling.icon.is_some() {
            continue;
        }
        let primary =
            libraries.iter().position(|l| l.package.as_ref() == Some(&dir) && dir.file_name() == Some(l.stem.as_ref()));
        let Some(primary) = primary.filter(|&p| p != i) else { continue };
        let (name, description, icon) =
            (libraries[primary].name.clone(), libraries[primary].description.clone(), libraries[primary].icon.clone());
        let sibling = Arc::make_mut(&mut libraries[i]);
        (sibling.name, sibling.description, sibling.icon) = (name, description, icon);
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
