//! The registry: every library and tool of a set of sources, in discovery order.
//!
//! Owns the pipeline scan → read → extract (files are read and parsed in parallel,
//! each on a thread with a stack large enough for deep syntax trees) and the
//! first-wins rule for tool names across files. It never runs Python.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::{self, Metadata};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
    files: FastMap<PathBuf, CachedFile>,
    scan_diagnostics: Vec<Diagnostic>,
    /// Tool name → (library index, tool index), built on the first lookup after a
    /// rebuild: a call finds its tool in O(1), and a rescan pays nothing for it.
    index: OnceLock<FastMap<String, (usize, usize)>>,
}

#[derive(Debug, Clone)]
struct CachedFile {
    stamp: Option<Stamp>,
    /// Shared with `Registry::libraries`; a sibling's copy shows its folder's metadata.
    library: Option<Arc<Library>>,
    /// A file of a library folder that sets no name, description or icon of its own:
    /// it shows those of the folder's `X/X.py`.
    inherits: bool,
    diagnostics: Vec<Diagnostic>,
}

/// A file is re-read when its size or modification time changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        Stamp { len: meta.len(), modified: meta.modified().ok() }
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

    /// Whether `path` (a file this registry read) still has the size and modification
    /// time it had then: one `stat`, for checking before a call that its tool is as
    /// read. A file it never read is not current.
    pub fn is_current(&self, path: &Path) -> bool {
        let Some(cached) = self.files.get(path) else { return false };
        std::fs::metadata(path).is_ok_and(|meta| cached.stamp == Some(Stamp::of(&meta)))
    }

    /// Walks the sources again and re-reads only files that are new or whose size or
    /// modification time changed; everything else is reused as it is.
    pub fn rescan(&mut self) -> Changes {
        let (listed, scan_diagnostics) = scan::discover_with_metadata(&self.sources.folders, &self.sources.files);
        let (files, metadata): (Vec<SourceFile>, Vec<Option<Metadata>>) = listed.into_iter().unzip();
        let stamps: Vec<Option<Stamp>> = metadata.iter().map(|meta| meta.as_ref().map(Stamp::of)).collect();
        let stale: Vec<usize> = (0..files.len())
            .filter(|&i| match (&self.files.get(&files[i].path), stamps[i]) {
                (Some(cached), Some(stamp)) => cached.stamp != Some(stamp),
                _ => true,
            })
            .collect();
        let stale_files: Vec<(&SourceFile, Option<&Metadata>)> =
            stale.iter().map(|&i| (&files[i], metadata[i].as_ref())).collect();
        let read = read_all(&stale_files, &self.options.injected);
        let mut changes = Changes::default();
        for ((library, diagnostics), &i) in read.into_iter().zip(&stale) {
            let path = files[i].path.clone();
            let inherits = library.as_ref().is_some_and(|l| {
                l.package.is_some() && l.name.is_none() && l.description.is_none() && l.icon.is_none()
            });
            let cached = CachedFile { stamp: stamps[i], library: library.map(Arc::new), inherits, diagnostics };
            match self.files.insert(path.clone(), cached) {
                None => changes.added.push(path),
                Some(_) => changes.changed.push(path),
            }
        }
        // Every listed path (they are distinct) is now cached: more entries means some
        // files are gone.
        if self.files.len() > files.len() {
            let listed: HashSet<&PathBuf, BuildHasherDefault<FxHasher>> = files.iter().map(|f| &f.path).collect();
            let gone: Vec<PathBuf> = self.files.keys().filter(|p| !listed.contains(p)).cloned().collect();
            for path in gone {
                self.files.remove(&path);
                changes.removed.push(path);
            }
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
        // Released first, so that the cached libraries are unshared and a sibling's
        // folder metadata is written in place instead of into a copy.
        self.libraries.clear();
        self.inherit_folder_metadata(files);
        self.diagnostics = self.scan_diagnostics.clone();
        for file in files {
            let Some(cached) = self.files.get(&file.path) else { continue };
            self.diagnostics.extend(cached.diagnostics.iter().cloned());
            self.libraries.extend(cached.library.clone());
        }
        self.drop_duplicate_tools();
        self.index = OnceLock::new();
    }

    /// A sibling file of a folder library `X/` shows the name, description and icon of
    /// `X/X.py` unless it sets its own: to a user they are one library.
    fn inherit_folder_metadata(&mut self, files: &[SourceFile]) {
        // Name, description and icon.
        type Metadata<'l> = (&'l Option<String>, &'l Option<String>, &'l Option<String>);
        type Owned = (Option<String>, Option<String>, Option<String>);
        let libraries: Vec<(&Path, &CachedFile, &Library)> = files
            .iter()
            .filter_map(|file| {
                let cached = self.files.get(&file.path)?;
                Some((file.path.as_path(), cached, cached.library.as_deref()?))
            })
            .collect();
        let mut primaries: FastMap<&Path, (&Path, Metadata)> = FastMap::default();
        for &(path, _, library) in &libraries {
            let Some(dir) = library.package.as_deref() else { continue };
            if dir.file_name() == Some(library.stem.as_ref()) && !primaries.contains_key(dir) {
                primaries.insert(dir, (path, (&library.name, &library.description, &library.icon)));
            }
        }
        let mut updates: Vec<(PathBuf, Owned)> = Vec::new();
        for &(path, cached, library) in &libraries {
            let Some(dir) = library.package.as_deref().filter(|_| cached.inherits) else { continue };
            let wanted = match primaries.get(dir) {
                Some(&(primary, metadata)) if primary != path => metadata,
                _ => (&None, &None, &None),
            };
            if (&library.name, &library.description, &library.icon) != wanted {
                updates.push((path.to_path_buf(), (wanted.0.clone(), wanted.1.clone(), wanted.2.clone())));
            }
        }
        for (path, (name, description, icon)) in updates {
            if let Some(library) = self.files.get_mut(&path).and_then(|c| c.library.as_mut()) {
                let library = Arc::make_mut(library);
                (library.name, library.description, library.icon) = (name, description, icon);
            }
        }
    }

    /// Every tool in discovery order, with its library.
    pub fn tools(&self) -> impl Iterator<Item = (&Library, &Tool)> {
        self.libraries.iter().flat_map(|library| library.tools.iter().map(move |tool| (&**library, tool)))
    }

    /// The tool named `name`. The index is checked against the libraries, which are
    /// public and may have been edited since the last rescan.
    pub fn tool(&self, name: &str) -> Option<(&Library, &Tool)> {
        let index = self.index.get_or_init(|| {
            let names = self.libraries.iter().enumerate().flat_map(|(l, library)| {
                library.tools.iter().enumerate().map(move |(t, tool)| (tool.name.clone(), (l, t)))
            });
            names.collect()
        });
        let indexed = index.get(name).and_then(|&(l, t)| {
            let library = self.libraries.get(l)?;
            library.tools.get(t).filter(|tool| tool.name == name).map(|tool| (&**library, tool))
        });
        indexed.or_else(|| self.tools().find(|(_, tool)| tool.name == name))
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Tool names are unique: the first discovery wins (SPEC §1).
    fn drop_duplicate_tools(&mut self) {
        let count = self.libraries.iter().map(|library| library.tools.len()).sum();
        let mut first_seen: FastMap<&str, usize> = FastMap::with_capacity_and_hasher(count, Default::default());
        let mut dropped: Vec<(usize, String)> = Vec::new();
        for (index, library) in self.libraries.iter().enumerate() {
            for tool in &library.tools {
                match first_seen.entry(tool.name.as_str()) {
                    Entry::Occupied(seen) => {
                        let first = *seen.get();
                        let message = format!(
                            "tool `{}` is already defined in {}; this one is ignored",
                            tool.name,
                            self.libraries[first].path.display()
                        );
                        self.diagnostics.push(Diagnostic::new(&library.path, tool.line, 1, Level::Warning, message));
                        dropped.push((index, tool.name.clone()));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(index);
                    }
                }
            }
        }
        for (index, name) in dropped {
            Arc::make_mut(&mut self.libraries[index]).tools.retain(|tool| tool.name != name);
        }
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// rustc's FxHash: a few operations per word, against SipHash's rounds. The keys
/// (paths found on disk, tool names) are hashed several times per rescan, and a
/// path hashes one component at a time, so the hasher's fixed cost dominates.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FileResult = (Option<Library>, Vec<Diagnostic>);

/// Reads and extracts every file, in parallel, keeping discovery order.
fn read_all(files: &[(&SourceFile, Option<&Metadata>)], injected: &[String]) -> Vec<FileResult> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len()).max(1);
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<FileResult>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let spawned = std::thread::Builder::new().stack_size(READER_STACK).spawn_scoped(scope, || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(file, meta)) = files.get(i) else { break };
                    let result = read_one(file, meta, injected);
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
        .map(|(slot, (file, _))| {
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

/// `meta` is the file's metadata as discovery saw it, if it could. A file that is gone
/// by the time it is read was removed during the scan: a warning, as in [`scan`].
fn read_one(file: &SourceFile, meta: Option<&Metadata>, injected: &[String]) -> FileResult {
    let path = &file.path;
    let removed = || (None, vec![Diagnostic::at_file(path, Level::Warning, scan::REMOVED_DURING_THE_SCAN)]);
    // Refuse a huge file before reading it into memory, and never open a FIFO or a
    // device (reading one could block forever or never end).
    let meta = match meta {
        Some(meta) => Ok(meta.clone()),
        None => fs::metadata(path),
    };
    match meta {
        Err(err) if err.kind() == ErrorKind::NotFound => return removed(),
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
        Ok(bytes) => extract::extract(file, bytes, injected),
        Err(err) if err.kind() == ErrorKind::NotFound => removed(),
        Err(err) => (None, vec![Diagnostic::at_file(path, Level::Error, format!("cannot read file: {err}"))]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways a listed file can be gone when it is read: before its `stat`, and
    /// between the `stat` discovery made and the read.
    #[test]
    fn a_file_removed_during_the_scan_is_a_warning() {
        let gone = SourceFile { path: PathBuf::from("no/such/dir/removed.py"), package: None };
        let seen_meta = fs::metadata(file!()).unwrap();
        for meta in [None, Some(&seen_meta)] {
            let (library, diagnostics) = read_one(&gone, meta, &[]);
            assert!(library.is_none());
            assert_eq!(
                diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
                ["no/such/dir/removed.py:1:1: warning: skipped: removed during the scan"]
            );
        }
    }
}
