//! Discovery: which Python files are tool libraries, in which order (SPEC §1).
//!
//! Owns the folder walk, the `X/X.py`-then-siblings rule, byte-wise sorted order,
//! skipping of `__init__.py`, dot entries and `__pycache__`, symbolic-link loops and
//! repeated files. It reads directory entries only: it never opens a file's contents
//! and never runs Python. A bad entry is a diagnostic; the walk always goes on.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::diag::{Diagnostic, Level};

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
    found: Vec<SourceFile>,
    diagnostics: Vec<Diagnostic>,
    /// Canonical paths already listed: a file reached twice (a link, a folder given
    /// twice) is read once.
    seen: HashSet<PathBuf>,
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
                self.library_folder(&entry.path, &root);
            } else if is_python_file(&entry.path) {
                self.add(&entry.path, None);
            }
        }
    }

    /// A sub-folder `X/`: `X/X.py` first when it exists, then every other `*.py`.
    fn library_folder(&mut self, dir: &Path, root: &Path) {
        match fs::canonicalize(dir) {
            Ok(target) if root.starts_with(&target) => {
                return self.warning(dir, &format!("symbolic link loop: points back to {}", target.display()));
            }
            Ok(_) => {}
            Err(err) => return self.error(dir, &format!("cannot open folder: {err}")),
        }
        let Some(name) = dir.file_name() else { return };
        let primary_name = format!("{}.py", name.to_string_lossy());
        let files: Vec<PathBuf> = self
            .entries(dir)
            .into_iter()
            .filter(|entry| !entry.is_dir && is_python_file(&entry.path))
            .map(|entry| entry.path)
            .collect();
        let (primary, siblings): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|path| path.file_name().is_some_and(|n| *n == *primary_name));
        for path in primary.iter().chain(&siblings) {
            self.add(path, Some(dir.to_path_buf()));
        }
    }

    fn explicit_file(&mut self, file: &Path) {
        match fs::metadata(file) {
            Ok(meta) if meta.is_file() => {
                // A file of a library folder `X/` (one holding `X/X.py`) belongs to it.
                let is_library_folder = |dir: &&Path| {
                    dir.file_name().is_some_and(|name| dir.join(format!("{}.py", name.to_string_lossy())).is_file())
                };
                let package = file.parent().filter(is_library_folder).map(Path::to_path_buf);
                self.add(file, package);
            }
            Ok(_) => self.error(file, "not a file"),
            Err(err) => self.error(file, &format!("cannot open file: {err}")),
        }
    }

    /// The visible entries of a folder, sorted byte-wise by name, links followed.
    fn entries(&mut self, dir: &Path) -> Vec<Entry> {
        let mut entries = Vec::new();
        let walker = WalkDir::new(dir).min_depth(1).max_depth(1).follow_links(true).sort_by_file_name();
        for result in walker {
            match result {
                Ok(entry) => {
                    let name = entry.file_name().to_string_lossy();
                    if name.starts_with('.') || name == "__pycache__" {
                        continue;
                    }
                    entries.push(Entry { is_dir: entry.file_type().is_dir(), path: entry.into_path() });
                }
                Err(err) => {
                    let path = err.path().unwrap_or(dir).to_path_buf();
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    if name.as_deref().is_some_and(|n| n.starts_with('.')) {
                        continue;
                    }
                    let reason = err.io_error().map_or_else(|| err.to_string(), |e| e.to_string());
                    self.warning(&path, &format!("skipped: {reason}"));
                }
            }
        }
        entries
    }

    fn add(&mut self, path: &Path, package: Option<PathBuf>) {
        let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.seen.insert(canonical.clone()) {
            return self.warning(path, &format!("skipped: {} is already listed", canonical.display()));
        }
        self.found.push(SourceFile { path: path.to_path_buf(), package });
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
}

fn is_python_file(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "py") && path.file_name().is_some_and(|name| name != "__init__.py")
}
