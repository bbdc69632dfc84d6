//! Discovery: which Python files are tool libraries, in which order (SPEC §1).
//!
//! Owns the folder walk, the `X/X.py`-then-siblings rule, byte-wise sorted order,
//! skipping of `__init__.py`, dot entries and `__pycache__`, symbolic-link loops and
//! repeated files. It reads directory entries only: it never opens a file's contents
//! and never runs Python. A bad entry is a diagnostic; the walk always goes on.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use walkdir::{DirEntry, WalkDir};

use crate::diag::{Diagnostic, Level};

/// What a file or folder that disappears between being listed and being read is
/// told: a warning (the walk, and the reading of files, go on).
pub const REMOVED_DURING_THE_SCAN: &str = "skipped: removed during the scan";

/// One file to read, in discovery order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The file, as reached from the folder or as given.
    pub path: PathBuf,
    /// The library folder `X/` this file belongs to, when it was found inside one.
    /// The runtime imports such files as members of a private package.
    pub package: Option<PathBuf>,
}

/// Lists the tool files of `folders` (in the order given), then `files`.
pub fn discover(folders: &[PathBuf], files: &[PathBuf]) -> (Vec<SourceFile>, Vec<Diagnostic>) {
    let discovered = discover_with(folders, files, false);
    (discovered.found.into_iter().map(|(file, _)| file).collect(), discovered.diagnostics)
}

/// What [`discover_with`] found: each file with its metadata (links followed) as the
/// walk saw it, so that a caller needs no second `stat` per file, and, when asked
/// for, the [`Listings`] of the folders it listed.
pub(crate) struct Discovered {
    pub(crate) found: Vec<(SourceFile, Option<Metadata>)>,
    pub(crate) listings: Option<Listings>,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// Each folder the walk listed, with its `*.py` files (its `__init__.py` too, never a
/// dot file) sorted: the modules a package of that folder can import, as the walk
/// saw them, so that no one lists the folder again.
pub(crate) type Listings = HashMap<PathBuf, Vec<PathBuf>>;

/// [`discover`], with each file's metadata and, with `listings`, each folder's
/// [`Listings`].
pub(crate) fn discover_with(folders: &[PathBuf], files: &[PathBuf], listings: bool) -> Discovered {
    let mut walk = Walk { listings: listings.then(Listings::new), ..Walk::default() };
    for folder in folders {
        walk.folder(folder);
    }
    for file in files {
        walk.explicit_file(file);
    }
    let mut listings = walk.listings;
    for files in listings.iter_mut().flat_map(HashMap::values_mut) {
        files.sort();
    }
    Discovered { found: walk.found, listings, diagnostics: walk.diagnostics }
}

#[derive(Default)]
struct Walk {
    found: Vec<(SourceFile, Option<Metadata>)>,
    listings: Option<Listings>,
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
    /// The files of `folder` (depth 1) and of its library folders (depth 2), in
    /// [`discovery_order`], links followed; deeper folders are never listed. walkdir
    /// reports a link to the folder or to any folder above it as a loop.
    fn folder(&mut self, folder: &Path) {
        let root = match fs::canonicalize(folder) {
            Ok(root) if root.is_dir() => root,
            Ok(_) => return self.error(folder, "not a folder"),
            Err(err) => return self.error(folder, &format!("cannot open folder: {err}")),
        };
        // A library folder given itself (`lcp serve mylib/` with `mylib/mylib.py`) is
        // that one library, as it is when found inside a folder.
        if let Some(name) = root.file_name()
            && root.join(python_file_name(name)).is_file()
        {
            let folder = if folder.file_name().is_some() { folder } else { root.as_path() };
            return self.library_folder(folder);
        }
        let walk = WalkDir::new(folder)
            .min_depth(1)
            .max_depth(2)
            .follow_links(true)
            .sort_by(discovery_order)
            .into_iter()
            .filter_entry(|entry| is_visible(entry.file_name()));
        for item in walk {
            if let Ok(entry) = &item {
                self.list(entry);
            }
            match item {
                Ok(entry) if entry.file_type().is_dir() || !is_python_file(entry.path()) => {}
                // A file of a library folder `X/` belongs to its package.
                Ok(entry) if entry.depth() == 2 => self.add(entry.path(), entry.path().parent().map(Path::to_path_buf)),
                Ok(entry) => self.add(entry.path(), None),
                Err(err) => self.walk_error(folder, &err),
            }
        }
    }

    /// The files of the library folder `folder`, given itself: each a member of its
    /// package (so relative imports find their siblings), in byte-wise order as the
    /// entries of any folder given; its folders are not listed.
    fn library_folder(&mut self, folder: &Path) {
        let walk = WalkDir::new(folder)
            .min_depth(1)
            .max_depth(1)
            .follow_links(true)
            .sort_by(|a, b| a.file_name().cmp(b.file_name()))
            .into_iter()
            .filter_entry(|entry| is_visible(entry.file_name()));
        for item in walk {
            if let Ok(entry) = &item {
                self.list(entry);
            }
            match item {
                Ok(entry) if entry.file_type().is_dir() || !is_python_file(entry.path()) => {}
                Ok(entry) => self.add(entry.path(), Some(folder.to_path_buf())),
                Err(err) => self.walk_error(folder, &err),
            }
        }
    }

    /// Keeps `entry` in its folder's listing, when listings are asked for.
    fn list(&mut self, entry: &DirEntry) {
        let Some(listings) = &mut self.listings else { return };
        if entry.file_type().is_file()
            && entry.path().extension().is_some_and(|ext| ext == "py")
            && let Some(folder) = entry.path().parent()
        {
            listings.entry(folder.to_path_buf()).or_default().push(entry.path().to_path_buf());
        }
    }

    fn walk_error(&mut self, folder: &Path, err: &walkdir::Error) {
        let path = err.path().unwrap_or(folder);
        if path.file_name().is_some_and(|name| !is_visible(name)) {
            return;
        }
        if let Some(ancestor) = err.loop_ancestor() {
            // A link in a library folder leads to a folder, which is never listed.
            if err.depth() == 1 {
                let target = fs::canonicalize(ancestor).unwrap_or_else(|_| ancestor.to_path_buf());
                self.warning(path, &format!("symbolic link loop: points back to {}", target.display()));
            }
            return;
        }
        let Some(io) = err.io_error() else { return };
        // A folder gone between being listed and being read; a broken link still exists.
        if io.kind() == ErrorKind::NotFound && fs::symlink_metadata(path).is_err() {
            self.warning(path, REMOVED_DURING_THE_SCAN);
        } else {
            self.warning(path, &format!("skipped: {io}"));
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

/// Byte-wise by name, except that a library folder `X/` lists `X/X.py` first.
fn discovery_order(a: &DirEntry, b: &DirEntry) -> Ordering {
    let is_primary = |entry: &DirEntry| {
        entry.depth() == 2
            && entry.path().parent().and_then(Path::file_name).map(python_file_name).as_deref()
                == Some(entry.file_name())
    };
    is_primary(b).cmp(&is_primary(a)).then_with(|| a.file_name().cmp(b.file_name()))
}

/// Dot entries and `__pycache__` are never listed.
pub(crate) fn is_visible(name: &OsStr) -> bool {
    !name.as_encoded_bytes().starts_with(b".") && name != "__pycache__"
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
