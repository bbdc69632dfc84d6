//! The audit's reading of code done while discovery parses the files, so that each
//! file is parsed once. A registry loaded with
//! [`load_with_code`] hands each group it parsed, on the
//! reader thread that parsed it, to [`Reading`]: a library folder is read as a call
//! graph from discovery's trees of its files (parsing only a file discovery did not
//! list, such as its `__init__.py`); a loose file with the loose files beside it that
//! it may import ([`closure`]). [`Code`] keeps those packages by library file for
//! [`super::audit`], which reads every other tool's code itself, as it always did.
//! A registry loaded for a listing ([`load_with_capabilities`]) keeps instead what
//! following each tool found, without evidence ([`super::found`]): each package is
//! dropped on the thread that read it, and the graphs of every library are never
//! held at once.
//!
//! What is read is what [`super::audit`] would read: a folder's package is its
//! folder's `*.py` files in their sorted order; a loose file's holds, in that order,
//! every loose file its import could reach, and only the files it cannot reach are
//! left out, which adds nothing to what it can do.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ruff_python_ast as ast;

use super::Reached;
use super::graph::{self, Package};
use crate::discovery::extract::{Library, ParsedFile};
use crate::discovery::registry::{
    FastMap, FastMap as HashMap, FastSet as HashSet, Options, Registry, Sources, TreeReader,
};
use crate::discovery::scan::{Listings, SourceFile};
use crate::sync;

/// The packages read while discovery parsed their files, by library file, or what
/// following each tool in them found.
#[derive(Debug, Default)]
pub(crate) struct Code {
    /// Each file's package, and whether it is a loose file's (its folder's files it
    /// cannot import are not in it).
    by_file: FastMap<PathBuf, (Arc<Package>, bool)>,
    /// What following each tool of a library file found, by the tool's function,
    /// when only that is kept ([`load_with_capabilities`]).
    reached: FastMap<PathBuf, FastMap<String, Reached>>,
    /// The files discovery parsed: they are code (a file it did not parse may not be).
    parsed: HashSet<PathBuf>,
}

impl Code {
    /// The package of the library file `path`, and whether it is a loose file's.
    pub(super) fn of_file(&self, path: &Path) -> Option<(&Arc<Package>, bool)> {
        self.by_file.get(path).map(|(package, loose)| (package, *loose))
    }

    /// What following each tool of the library file `path` found, by function.
    pub(super) fn reached(&self, path: &Path) -> Option<&FastMap<String, Reached>> {
        self.reached.get(path)
    }

    /// Whether discovery parsed `path`.
    pub(super) fn parsed(&self, path: &Path) -> bool {
        self.parsed.contains(path)
    }
}

/// A folder's `*.py` files, sorted, with the index of each by stem.
struct Listing {
    files: Vec<PathBuf>,
    stems: HashMap<String, usize>,
    /// Bit `n` set when a stem is `n` bytes long (the last bit: 127 or more), so
    /// that most words of a text are told apart from every stem without a lookup.
    lengths: u128,
}

impl Listing {
    /// The listing of a folder's sorted `*.py` files.
    fn of(files: Vec<PathBuf>) -> Listing {
        let stems: HashMap<String, usize> = files
            .iter()
            .enumerate()
            .filter_map(|(i, path)| Some((path.file_stem()?.to_str()?.to_string(), i)))
            .collect();
        let lengths = stems.keys().fold(0u128, |lengths, stem| lengths | 1 << stem.len().min(127));
        Listing { files, stems, lengths }
    }

    /// The file whose stem is `word`.
    fn stem(&self, word: &str) -> Option<usize> {
        if self.lengths & (1 << word.len().min(127)) == 0 {
            return None;
        }
        self.stems.get(word).copied()
    }
}

/// What the reader threads share while they read code.
pub(crate) struct Reading {
    /// Whether the packages are kept whole, for every question an audit may ask; else
    /// each is dropped once its tools are followed, and what listings show of them
    /// ([`super::found`]) is kept.
    whole: bool,
    /// The folders listed so far: the loose files of a folder share its listing.
    listings: Mutex<HashMap<PathBuf, Arc<Listing>>>,
    code: Mutex<Code>,
}

impl TreeReader for Reading {
    fn listed(&self, listings: Listings) {
        // Room for every file listed, so that no reader grows a map while others wait.
        let files: usize = listings.values().map(Vec::len).sum();
        let mut code = sync::lock(&self.code);
        code.parsed.reserve(files);
        if self.whole {
            code.by_file.reserve(files);
        } else {
            code.reached.reserve(files);
        }
        drop(code);
        let mut kept = sync::lock(&self.listings);
        kept.reserve(listings.len());
        for (folder, files) in listings {
            kept.insert(folder, Arc::new(Listing::of(files)));
        }
    }

    /// Reads the files discovery parsed of one group: `package`, the library folder
    /// they are in, or `None` for loose files, each read with what it may import.
    fn group(&self, package: Option<&Path>, parsed: &[(&SourceFile, &ParsedFile, &Library)]) {
        match package {
            Some(folder) => self.folder(folder, parsed),
            None => parsed.iter().for_each(|&(file, tree, library)| self.loose(file, tree, library)),
        }
    }

    fn finish(self: Box<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::new(self.code.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

impl Code {
    /// The code `registry`'s load read ([`load_with_code`]), if it did.
    pub(crate) fn of(registry: &Registry) -> Option<&Code> {
        registry.read()?.downcast_ref::<Code>()
    }
}

/// [`Registry::load`], reading each file's code for the audit from the tree parsed
/// for its tools, on the same threads: what [`Code::of`] gives. For commands that
/// audit the tools they load.
pub(crate) fn load_with_code(sources: &Sources, options: &Options) -> Registry {
    Registry::load_reading(sources, options, Box::new(Reading::new(true)))
}

/// [`load_with_code`] for a listing: each package read is dropped once its tools are
/// followed, keeping only what [`super::found`] shows of each, so that the graphs
/// of every library are never held at once. Every other question goes to the code
/// itself, as for a registry loaded without reading it.
pub(crate) fn load_with_capabilities(sources: &Sources, options: &Options) -> Registry {
    Registry::load_reading(sources, options, Box::new(Reading::new(false)))
}

impl Reading {
    fn new(whole: bool) -> Reading {
        Reading { whole, listings: Mutex::default(), code: Mutex::default() }
    }

    /// Keeps `package`, read for the library files `libraries` (`loose`: a loose
    /// file's), or what following their tools in it finds.
    fn keep(&self, package: Package, libraries: &[(&Path, &Library)], loose: bool) {
        if self.whole {
            let package = Arc::new(package);
            let mut code = sync::lock(&self.code);
            for (path, _) in libraries {
                code.by_file.insert(path.to_path_buf(), (Arc::clone(&package), loose));
            }
            return;
        }
        let reached: Vec<(PathBuf, FastMap<String, Reached>)> = libraries
            .iter()
            .map(|(path, library)| {
                let followed =
                    library.tools.iter().map(|tool| (tool.name.clone(), super::listed(&package, path, &tool.name)));
                (path.to_path_buf(), followed.collect())
            })
            .collect();
        // Freed here, on the thread that read it, before the lock is taken.
        drop(package);
        sync::lock(&self.code).reached.extend(reached);
    }

    fn listing(&self, folder: &Path) -> Arc<Listing> {
        if let Some(listing) = sync::lock(&self.listings).get(folder) {
            return Arc::clone(listing);
        }
        let listing = Arc::new(Listing::of(super::python_files(folder)));
        Arc::clone(sync::lock(&self.listings).entry(folder.to_path_buf()).or_insert(listing))
    }

    /// A library folder: its files as one package, each file discovery parsed
    /// taken from its tree.
    fn folder(&self, folder: &Path, parsed: &[(&SourceFile, &ParsedFile, &Library)]) {
        let listing = self.listing(folder);
        let trees: HashMap<&Path, &ParsedFile> =
            parsed.iter().map(|(file, tree, _)| (file.path.as_path(), *tree)).collect();
        let given = |path: &Path| trees.get(path).map(|tree| (tree.text(), tree.module()));
        let package = graph::analyse_given(&listing.files, given);
        // A file its folder's listing does not name is read by the audit itself.
        let libraries: Vec<(&Path, &Library)> = parsed
            .iter()
            .filter(|(file, _, _)| listing.files.binary_search(&file.path).is_ok())
            .map(|&(file, _, library)| (file.path.as_path(), library))
            .collect();
        self.keep(package, &libraries, false);
        sync::lock(&self.code).parsed.extend(parsed.iter().map(|(file, _, _)| file.path.clone()));
    }

    /// A loose file, with the loose files beside it it may import.
    fn loose(&self, file: &SourceFile, tree: &ParsedFile, library: &Library) {
        let folder = file.path.parent().unwrap_or(Path::new("."));
        let listing = self.listing(folder);
        let Ok(own) = listing.files.binary_search(&file.path) else {
            sync::lock(&self.code).parsed.insert(file.path.clone());
            return;
        };
        let files = closure(&listing, own, tree.text());
        let given = |path: &Path| -> Option<(&str, &ast::ModModule)> {
            (path == file.path).then(|| (tree.text(), tree.module()))
        };
        let package = graph::analyse_given(&files, given);
        self.keep(package, &[(file.path.as_path(), library)], true);
        sync::lock(&self.code).parsed.insert(file.path.clone());
    }
}

/// The files of `listing` the file at `own` (whose text is `text`) may import,
/// transitively, itself included, in the listing's order: those whose stem is a
/// name in the text of one of them (a static import names its module, and so does a
/// literal one), its folder's `__init__.py` (what `from . import x` reads when no
/// file is `x`), and any whose stem is no name (which only a literal string can
/// import, and a word never matches).
fn closure(listing: &Listing, own: usize, text: &str) -> Vec<PathBuf> {
    let mut included = vec![false; listing.files.len()];
    included[own] = true;
    let mut queue = Vec::new();
    for (stem, &i) in &listing.stems {
        let word = stem.chars().all(|c| c.is_alphanumeric() || c == '_');
        if (stem == "__init__" || !word) && !included[i] {
            included[i] = true;
            queue.push(i);
        }
    }
    let mut include = |text: &str, queue: &mut Vec<usize>| {
        for name in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if let Some(i) = listing.stem(name)
                && !included[i]
            {
                included[i] = true;
                queue.push(i);
            }
        }
    };
    include(text, &mut queue);
    while let Some(i) = queue.pop() {
        // A file that cannot be decoded is not read as code either: it imports nothing.
        let bytes = std::fs::read(&listing.files[i]).unwrap_or_default();
        let text = crate::discovery::source::prepare(bytes).map(|prepared| prepared.text).unwrap_or_default();
        include(&text, &mut queue);
    }
    listing.files.iter().zip(&included).filter(|(_, included)| **included).map(|(path, _)| path.clone()).collect()
}
