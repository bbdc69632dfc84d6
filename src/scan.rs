//! Discovery: which Python files are tool libraries, in which order (SPEC §1).
//!
//! Owns the folder walk, the `X/X.py`-then-siblings rule, byte-wise sorted order,
//! skipping of `__init__.py`, dot entries and `__pycache__`, symbolic-link loops and
//! repeated files. It reads directory entries only: it never opens a file's contents
//! and never runs Python. A bad entry is a diagnostic; the walk always goes on.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Level};

/// What a file or folder that disappears between being listed and being read is
/// told: a warning (the walk, and the reading of files, go on).
pub const REMOVED_DURING_THE_SCAN: &str = "skipped: removed during the scan";

/// One file to read, in discovery order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    /// The library folder `X/` this file belongs to, when it was found inside one.
    /// The runtime imports such files as members of a private package.
    pub package: Option<PathBuf>,
}

/// Lists the tool files of `folders` (in the order given), then `files`.
pub fn discover(folders: &[PathBuf], files: &[PathBuf]) -> (Vec<SourceFile>, Vec<Diagnostic>) {
    let (found, diagnostics) = discover_with_metadata(folders, files);
    (found.into_iter().map(|(file, _)| file).collect(), diagnostics)
}

/// [`discover`], with each file's metadata (links followed) as the walk saw it, so
/// that a caller needs no second `stat` per file.
pub fn discover_with_metadata(
    folders: &[PathBuf],
    files: &[PathBuf],
) -> (Vec<(SourceFile, Option<Metadata>)>, Vec<Diagnostic>) {
    let mut walk = Walk::default();
    for folder in folders {
        walk.folder(folder);
    }
    for file in files {
        walk.explicit_file(file);
    }
    (walk.found, walk.diagnostics)
}

#[derive(Default)]
struct Walk {
    found: Vec<(SourceFile, Option<Metadata>)>,
    diagnostics: Vec<Diagnostic>,
    /// A file reached twice (a link, a folder given twice) is read once. Files are
    /// told apart by device and inode, and only two paths to one inode are compared
    /// by canonical path (hard links are distinct files), which spares resolving
    /// every path.
    seen_inodes: HashMap<(u64, u64), Vec<PathBuf>>,
    /// Canonical paths of files that could not be `stat`-ed.
    seen_paths: HashSet<PathBuf>,
}

impl Walk {
    fn folder(&mut self, folder: &Path) {
        let root = match fs::canonicalize(folder) {
            Ok(root) if root.is_dir() => root,
            Ok(_) => return self.error(folder, "not a folder"),
            Err(err) => return self.error(folder, &format!("cannot open folder: {err}")),
        };
        for entry in self.entries(folder) {
            if entry.is_dir {
                self.library_folder(&entry.path, entry.is_link, &root);
            } else if is_python_file(&entry.path) {
                self.add(&entry.path, None);
            }
        }
    }

    /// A sub-folder `X/`: `X/X.py` first when it exists, then every other `*.py`.
    fn library_folder(&mut self, dir: &Path, is_link: bool, root: &Path) {
        // Only a link can point back up: a plain sub-folder resolves to `root/X`.
        if is_link {
            match fs::canonicalize(dir) {
                Ok(target) if root.starts_with(&target) => {
                    return self.warning(dir, &format!("symbolic link loop: points back to {}", target.display()));
                }
                Ok(_) => {}
                Err(err) if err.kind() == ErrorKind::NotFound => return self.warning(dir, REMOVED_DURING_THE_SCAN),
                Err(err) => return self.error(dir, &format!("cannot open folder: {err}")),
            }
        }
        let Some(name) = dir.file_name() else { return };
        let primary_name = python_file_name(name);
        let files: Vec<PathBuf> = self
            .entries(dir)
            .into_iter()
            .filter(|entry| !entry.is_dir && is_python_file(&entry.path))
            .map(|entry| entry.path)
            .collect();
        let (primary, siblings): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|path| path.file_name() == Some(primary_name.as_os_str()));
        for path in primary.iter().chain(&siblings) {
            self.add(path, Some(dir.to_path_buf()));
        }
    }

    fn explicit_file(&mut self, file: &Path) {
        match fs::metadata(file) {
            Ok(meta) if meta.is_file() => {
                // A file of a library folder `X/` (one holding `X/X.py`) belongs to it.
                let is_library_folder =
                    |dir: &&Path| dir.file_name().is_some_and(|name| dir.join(python_file_name(name)).is_file());
                let package = file.parent().filter(is_library_folder).map(Path::to_path_buf);
                self.add(file, package);
            }
            Ok(_) => self.error(file, "not a file"),
            Err(err) => self.error(file, &format!("cannot open file: {err}")),
        }
    }

    /// The visible entries of a folder, sorted byte-wise by name, links followed.
    /// The kind of an entry comes from the directory listing; only links are `stat`-ed.
    fn entries(&mut self, dir: &Path) -> Vec<Entry> {
        let listing = match fs::read_dir(dir) {
            Ok(listing) => listing,
            Err(err) if err.kind() == ErrorKind::NotFound => {
                self.warning(dir, REMOVED_DURING_THE_SCAN);
                return Vec::new();
            }
            Err(err) => {
                if !dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                    self.warning(dir, &format!("skipped: {err}"));
                }
                return Vec::new();
            }
        };
        let mut named = Vec::new();
        for result in listing {
            match result {
                Ok(entry) => {
                    let name = entry.file_name();
                    if !name.to_string_lossy().starts_with('.') {
                        named.push((name, entry));
                    }
                }
                Err(err) => self.warning(dir, &format!("skipped: {err}")),
            }
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut entries = Vec::with_capacity(named.len());
        for (name, entry) in named {
            let path = entry.path();
            let is_link = entry.file_type().map_or(true, |t| t.is_symlink());
            let is_dir = if is_link {
                match fs::metadata(&path) {
                    Ok(meta) => meta.is_dir(),
                    Err(err) => {
                        self.warning(&path, &format!("skipped: {err}"));
                        continue;
                    }
                }
            } else {
                entry.file_type().is_ok_and(|t| t.is_dir())
            };
            if name != "__pycache__" {
                entries.push(Entry { path, is_dir, is_link });
            }
        }
        entries
    }

    fn add(&mut self, path: &Path, package: Option<PathBuf>) {
        let meta = fs::metadata(path).ok();
        let canonical = match &meta {
            Some(meta) => match self.seen_inodes.get(&(meta.dev(), meta.ino())) {
                None => None,
                Some(others) => {
                    let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
                    others
                        .iter()
                        .any(|other| fs::canonicalize(other).unwrap_or_else(|_| other.clone()) == canonical)
                        .then_some(canonical)
                }
            },
            None => {
                let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
                (!self.seen_paths.insert(canonical.clone())).then_some(canonical)
            }
        };
        if let Some(canonical) = canonical {
            return self.warning(path, &format!("skipped: {} is already listed", canonical.display()));
        }
        if let Some(meta) = &meta {
            self.seen_inodes.entry((meta.dev(), meta.ino())).or_default().push(path.to_path_buf());
        }
        self.found.push((SourceFile { path: path.to_path_buf(), package }, meta));
    }

    fn error(&mut self, path: &Path, message: &str) {
        self.diagnostics.push(Diagnostic::at_file(path, Level::Error, message));
    }

    fn warning(&mut self, path: &Path, message: &str) {
        self.diagnostics.push(Diagnostic::at_file(path, Level::Warning, message));
    }
}

struct Entry {
    path: PathBuf,
    is_dir: bool,
    is_link: bool,
}

/// `X` → `X.py`, byte for byte (a name need not be UTF-8).
fn python_file_name(stem: &OsStr) -> OsString {
    let mut name = stem.to_os_string();
    name.push(".py");
    name
}

fn is_python_file(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "py") && path.file_name().is_some_and(|name| name != "__init__.py")
}
