//! The registry: every library and tool of a set of sources, in discovery order.
//!
//! Owns the pipeline scan → read → extract (files are read and parsed in parallel,
//! each on a thread with a stack large enough for deep syntax trees; the files of a
//! library folder are extracted together, so that relative imports between them
//! resolve) and the first-wins rule for tool names across files. Its libraries are
//! laid out by a rescan and never edited after: other modules read them, and what a
//! host shows differently (aliases, dynamic descriptions) is a registry or an overlay
//! of its own. With `Registry::load_reading` the reader threads also hand each
//! group's trees to a `TreeReader` (the audit's reading of code), so that a command
//! that audits parses each file once; the registry keeps what it read without knowing
//! what it is. It never runs Python.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::{self, Metadata};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use rustc_hash::FxBuildHasher;

use crate::diag::{Diagnostic, Level};
use crate::discovery::extract::{self, Library, Origin, ParsedFile, Resource, Tool};
use crate::discovery::scan::{self, SourceFile};
use crate::discovery::source::{MAX_FILE_BYTES, SourceError};
use crate::policy::{Enforcement, Found};

/// Where tools come from (SPEC §1). Both empty means the built-in default tools.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Tool folders, walked by [`crate::discovery::scan`].
    pub folders: Vec<PathBuf>,
    /// Single tool files, read as given.
    pub files: Vec<PathBuf>,
}

/// How files are read.
#[derive(Debug, Clone)]
pub struct Options {
    /// Parameter names the host injects; they are left out of every schema.
    pub injected: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { injected: extract::default_injected() }
    }
}

/// Every library and tool of a set of [`Sources`], with the problems found; [`Registry::rescan`] brings it up to date.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// One library per readable file, in discovery order.
    libraries: Vec<Arc<Library>>,
    /// The problems of the walk and of every file, in discovery order.
    diagnostics: Vec<Diagnostic>,
    sources: Sources,
    options: Options,
    /// What each file contributed, with the size and modification time it had then.
    files: FastMap<PathBuf, CachedFile>,
    scan_diagnostics: Vec<Diagnostic>,
    /// The files of the last walk, in discovery order.
    listed: Vec<SourceFile>,
    /// The config's `[[tools]]` (SPEC §14), laid out before the files, and their problems.
    defined: Vec<Arc<Library>>,
    defined_diagnostics: Vec<Diagnostic>,
    /// The tools of the config's MCP servers (SPEC §14), laid out after the files.
    served: Vec<Arc<Library>>,
    served_diagnostics: Vec<Diagnostic>,
    /// Tool name → (library index, tool index), built on the first lookup after the
    /// libraries were laid out: a call finds its tool in O(1), and a rescan pays
    /// nothing for it.
    index: OnceLock<FastMap<String, (usize, usize)>>,
    /// What the reader of [`Registry::load_reading`] read, from the trees discovery parsed. Only a load makes it;
    /// a later rescan drops it.
    read: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// What else a load reads from the trees discovery parses, on the thread that parsed
/// them, so that a command that needs more of the code than its tools (the audit's
/// call graphs, `audit::Reading`) parses each file once. The registry keeps what it
/// read without knowing what it is ([`Registry::read`]).
pub(crate) trait TreeReader: Send + Sync {
    /// The folders the walk listed, before any group is read.
    fn listed(&self, listings: scan::Listings);
    /// A group of files parsed together: a library folder's (`package`), or a loose
    /// file alone, each file with the library extracted from it; the files that could
    /// not be parsed are not in it.
    fn group(&self, package: Option<&Path>, parsed: &[(&SourceFile, &ParsedFile, &Library)]);
    /// What was read, once every group was.
    fn finish(self: Box<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

#[derive(Debug, Clone)]
struct CachedFile {
    stamp: Option<Stamp>,
    /// Shared with `Registry::libraries`; a sibling's copy shows its folder's metadata.
    library: Option<Arc<Library>>,
    /// A file of a library folder that sets no name, description or icon of its own:
    /// it shows those of the folder's `X/X.py`.
    inherits: bool,
    /// The file imports from its siblings: a change of any file of its folder may
    /// change its schemas.
    relative_imports: bool,
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

/// What a host lays over its registry's tools when it shows them: the descriptions
/// prompt providers gave (SPEC §2), the declarations its workers have the kernel
/// keep (SPEC §18), and what each tool's code was found able to do (SPEC §20). The
/// host computes them once; exports and listings read them from here and never ask
/// the machine or run Python themselves. The registry's tools keep their own
/// descriptions. The default lays nothing over and vouches for nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Descriptions {
    texts: FastMap<String, String>,
    enforcement: Enforcement,
    found: FastMap<String, Found>,
}

impl Descriptions {
    /// Lays `description` over the static description of the tool named `tool`; a
    /// tool given two keeps the first.
    pub fn insert(&mut self, tool: String, description: String) {
        self.texts.entry(tool).or_insert(description);
    }

    /// The description laid over the tool named `tool`, if there is one.
    pub fn get(&self, tool: &str) -> Option<&str> {
        self.texts.get(tool).map(String::as_str)
    }

    /// The description `tool` is shown with: the one laid over it, else its own.
    pub fn of<'t>(&'t self, tool: &'t Tool) -> &'t str {
        self.get(&tool.name).unwrap_or(&tool.description)
    }

    /// Says which declarations the host's workers keep.
    pub fn set_enforcement(&mut self, enforcement: Enforcement) {
        self.enforcement = enforcement;
    }

    /// Which declarations the host's workers keep.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Says what the code of each tool can do, by the name it is shown as.
    pub fn set_found(&mut self, found: impl IntoIterator<Item = (String, Found)>) {
        // `extend` makes room for all of them at once.
        self.found.extend(found);
    }

    /// What the code of the tool shown as `tool` was found able to do, if it was read.
    pub fn found(&self, tool: &str) -> Option<&Found> {
        self.found.get(tool)
    }

    /// The declarations the kernel keeps for `tool` of `library` ([`Enforcement::of`]):
    /// none for a tool lcp's workers do not run (an MCP server's tool runs in that
    /// server, a virtual one in the host, and lcp vouches for neither).
    pub fn enforced(&self, library: &Library, tool: &Tool) -> Vec<&'static str> {
        self.enforced_with(library, tool, self.found(&tool.name))
    }

    /// [`Descriptions::enforced`], given what was found of `tool` (its
    /// [`Descriptions::found`]), for a caller that has it already.
    pub(crate) fn enforced_with(&self, library: &Library, tool: &Tool, found: Option<&Found>) -> Vec<&'static str> {
        if !matches!(library.origin, Origin::File | Origin::Config { .. }) {
            return Vec::new();
        }
        let inferred = found.map_or(&[][..], |found| &found.inferred[..]);
        self.enforcement.of(&tool.policy, inferred)
    }
}

/// Files whose contribution changed in a rescan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files read for the first time.
    pub added: Vec<PathBuf>,
    /// Files read again because they changed.
    pub changed: Vec<PathBuf>,
    /// Files no longer found.
    pub removed: Vec<PathBuf>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

impl Registry {
    /// Reads every tool file of `sources`.
    pub fn load(sources: &Sources, options: &Options) -> Registry {
        let mut registry = Registry { sources: sources.clone(), options: options.clone(), ..Registry::default() };
        registry.rescan();
        registry
    }

    /// [`Registry::load`], handing each group of parsed trees to `reader` too, on the
    /// thread that parsed it: what it read is [`Registry::read`]. For a command that
    /// reads more of the code than its tools (`lcp audit`, SPEC §20).
    pub(crate) fn load_reading(sources: &Sources, options: &Options, reader: Box<dyn TreeReader>) -> Registry {
        let mut registry = Registry { sources: sources.clone(), options: options.clone(), ..Registry::default() };
        registry.rescan_reading(Some(reader));
        registry
    }

    /// What the reader of [`Registry::load_reading`] read, if there was one.
    pub(crate) fn read(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        self.read.as_deref()
    }

    /// Lets go of what the reader of [`Registry::load_reading`] read, once nothing
    /// more is asked of it, so that its memory serves what comes next.
    pub(crate) fn forget_read(&mut self) {
        self.read = None;
    }

    /// This registry with what `other`'s reader read (a view of `other`'s libraries).
    pub(crate) fn with_read_of(mut self, other: &Registry) -> Registry {
        self.read = other.read.clone();
        self
    }

    /// A registry of libraries already laid out, as a host shows another registry's
    /// tools ([`crate::host::view`]): it has no sources, so a rescan finds nothing to change.
    pub(crate) fn from_libraries(libraries: Vec<Arc<Library>>, diagnostics: Vec<Diagnostic>) -> Registry {
        Registry { libraries, diagnostics, ..Registry::default() }
    }

    /// This registry without the virtual tools (`[[virtual_tools]]`, SPEC §14) that
    /// `supplies` says the host cannot supply now: what its listings and exports show.
    pub fn resolved(&self, supplies: impl Fn(&str) -> bool) -> Registry {
        let libraries = self
            .libraries
            .iter()
            .filter(|library| {
                library.origin != Origin::Virtual || library.tools.iter().all(|tool| supplies(&tool.name))
            })
            .cloned()
            .collect();
        Registry { libraries, index: OnceLock::new(), ..self.clone() }
    }

    /// This registry with only the tools `keep` accepts; a library that keeps all of
    /// its tools is shared, not copied.
    #[cfg(feature = "python")]
    pub(crate) fn retaining(&self, keep: impl Fn(&Library, &Tool) -> bool) -> Registry {
        let libraries = self
            .libraries
            .iter()
            .map(|library| {
                if library.tools.iter().all(|tool| keep(library, tool)) {
                    return Arc::clone(library);
                }
                let tools = library.tools.iter().filter(|tool| keep(library, tool)).cloned().collect();
                Arc::new(Library { tools, ..(**library).clone() })
            })
            .collect();
        Registry { libraries, index: OnceLock::new(), ..self.clone() }
    }

    /// One library per readable file, in discovery order.
    pub fn libraries(&self) -> &[Arc<Library>] {
        &self.libraries
    }

    /// The problems of the walk and of every file, in discovery order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether some tool has a prompt provider (SPEC §2): showing this registry as the
    /// host shows it then needs Python.
    pub fn has_prompt_providers(&self) -> bool {
        self.tools().any(|(_, tool)| tool.prompt_provider.is_some())
    }

    /// Where the tools come from.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// Changes where tools come from; the next [`Registry::rescan`] reads the new
    /// sources and reuses what it already read of the files they share.
    pub fn set_sources(&mut self, sources: Sources) {
        self.sources = sources;
    }

    /// Whether `library`'s tools are as this registry read them, for checking before a
    /// call: a file's library when the file still has the size and modification time it
    /// had then (one `stat`; a file it never read is not current); a library of the
    /// config, an MCP server or the host always (its source tells of its own changes).
    pub fn is_current(&self, library: &Library) -> bool {
        if !matches!(library.origin, Origin::File) {
            return true;
        }
        let Some(cached) = self.files.get(&library.path) else { return false };
        std::fs::metadata(&library.path).is_ok_and(|meta| cached.stamp == Some(Stamp::of(&meta)))
    }

    /// Walks the sources again and re-reads only files that are new or whose size or
    /// modification time changed; everything else is reused as it is.
    pub fn rescan(&mut self) -> Changes {
        self.rescan_reading(None)
    }

    /// [`Registry::rescan`], handing the groups it parses to `reader` too.
    fn rescan_reading(&mut self, reader: Option<Box<dyn TreeReader>>) -> Changes {
        let discovered = scan::discover_with(&self.sources.folders, &self.sources.files, reader.is_some());
        let scan_diagnostics = discovered.diagnostics;
        if let (Some(reader), Some(listings)) = (&reader, discovered.listings) {
            reader.listed(listings);
        }
        let (files, metadata): (Vec<SourceFile>, Vec<Option<Metadata>>) = discovered.found.into_iter().unzip();
        let stamps: Vec<Option<Stamp>> = metadata.iter().map(|meta| meta.as_ref().map(Stamp::of)).collect();
        let mut cached_listed = 0;
        let stale: Vec<bool> = (0..files.len())
            .map(|i| match (&self.files.get(&files[i].path), stamps[i]) {
                (Some(cached), Some(stamp)) => {
                    cached_listed += 1;
                    cached.stamp != Some(stamp)
                }
                (Some(_), None) => {
                    cached_listed += 1;
                    true
                }
                (None, _) => true,
            })
            .collect();
        let mut changes = Changes::default();
        // Listed paths are distinct: more cached entries than listed cached paths means
        // some files are gone.
        if self.files.len() > cached_listed {
            let listed: FastSet<&PathBuf> = files.iter().map(|f| &f.path).collect();
            let gone: Vec<PathBuf> = self.files.keys().filter(|p| !listed.contains(p)).cloned().collect();
            for path in gone {
                self.files.remove(&path);
                changes.removed.push(path);
            }
        }
        let groups = self.groups(&files, &stale, &changes.removed);
        // Only a load reads more: what a later rescan changed (a file a package reads
        // that discovery does not list among them) would leave it stale.
        let read = read_all(&files, &metadata, &groups, &self.options.injected, reader.as_deref());
        self.read = reader.map(TreeReader::finish);
        for (i, result) in read {
            let path = files[i].path.clone();
            let library = result.library;
            let inherits = library.as_ref().is_some_and(|l| {
                l.package.is_some() && l.name.is_none() && l.description.is_none() && l.icon.is_none()
            });
            let cached = CachedFile {
                stamp: stamps[i],
                library: library.map(Arc::new),
                inherits,
                relative_imports: result.relative_imports,
                diagnostics: result.diagnostics,
            };
            match self.files.insert(path.clone(), cached) {
                None => changes.added.push(path),
                Some(_) if stale[i] => changes.changed.push(path),
                // Read again for its siblings: a change only if what it contributes changed.
                Some(before) => {
                    let now = &self.files[&path];
                    // Siblings change schemas only (a library's name may be inherited).
                    let same_library = match (&before.library, &now.library) {
                        (Some(a), Some(b)) => a.tools == b.tools,
                        (None, None) => true,
                        _ => false,
                    };
                    if !same_library || before.diagnostics != now.diagnostics {
                        changes.changed.push(path);
                    }
                }
            }
        }
        let unchanged = changes.is_empty() && scan_diagnostics == self.scan_diagnostics;
        if !unchanged {
            self.scan_diagnostics = scan_diagnostics;
            self.listed = files;
            self.rebuild();
        }
        changes
    }

    /// How its files are read.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Adds the tools a config file defines (`[[tools]]`, SPEC §14; one library each,
    /// made by `Config::defined_libraries`) with their problems, in place of any it
    /// had: they come first, so their bare names win over the files'.
    pub fn define(&mut self, libraries: Vec<Library>, diagnostics: Vec<Diagnostic>) {
        self.defined = libraries.into_iter().map(Arc::new).collect();
        self.defined_diagnostics = diagnostics;
        self.rebuild();
    }

    /// The files to read, grouped by library folder (a loose file is a group of its
    /// own). A folder whose files import from each other is read whole when any of
    /// its files changed, appeared or went; otherwise only its changed files are read,
    /// and its other files join them only if a changed file turns out to import
    /// relatively (see [`Group`]).
    fn groups(&self, files: &[SourceFile], stale: &[bool], removed: &[PathBuf]) -> Vec<Group> {
        // Members of each library folder, wherever they are listed (explicit files of
        // one folder need not be given together); a loose file alone.
        let mut members: Vec<(Option<&Path>, Vec<usize>)> = Vec::new();
        let mut folders: FastMap<&Path, usize> = FastMap::default();
        for (i, file) in files.iter().enumerate() {
            match file.package.as_deref() {
                Some(dir) => match folders.entry(dir) {
                    Entry::Occupied(slot) => members[*slot.get()].1.push(i),
                    Entry::Vacant(slot) => {
                        slot.insert(members.len());
                        members.push((Some(dir), vec![i]));
                    }
                },
                None => members.push((None, vec![i])),
            }
        }
        let mut groups = Vec::new();
        for (package, indices) in members {
            let touched = indices.iter().any(|&i| stale[i])
                || package.is_some_and(|dir| removed.iter().any(|p| p.parent() == Some(dir)));
            if !touched {
                continue;
            }
            let related =
                indices.iter().any(|&i| self.files.get(&files[i].path).is_some_and(|cached| cached.relative_imports));
            groups.push(Group { files: indices.into_iter().map(|i| (i, stale[i] || related)).collect() });
        }
        groups
    }

    /// Adds the tools MCP servers listed (one library per server, made by
    /// `mcp::upstream`) with the problems of the servers that did not, in place of any
    /// it had: they come after the files, so a file's tool wins a name they share.
    pub fn set_server_tools(&mut self, libraries: Vec<Library>, diagnostics: Vec<Diagnostic>) {
        self.served = libraries.into_iter().map(Arc::new).collect();
        self.served_diagnostics = diagnostics;
        self.rebuild();
    }

    /// Lays out libraries and diagnostics from the config's tools, then the per-file
    /// cache in discovery order.
    fn rebuild(&mut self) {
        // Released first, so that the cached libraries are unshared and a sibling's
        // folder metadata is written in place instead of into a copy.
        self.libraries.clear();
        let files = std::mem::take(&mut self.listed);
        self.inherit_folder_metadata(&files);
        self.libraries.extend(self.defined.iter().cloned());
        self.diagnostics = self.defined_diagnostics.clone();
        self.diagnostics.extend(self.scan_diagnostics.iter().cloned());
        for file in &files {
            let Some(cached) = self.files.get(&file.path) else { continue };
            self.diagnostics.extend(cached.diagnostics.iter().cloned());
            self.libraries.extend(cached.library.clone());
        }
        self.listed = files;
        self.libraries.extend(self.served.iter().cloned());
        self.diagnostics.extend(self.served_diagnostics.iter().cloned());
        self.drop_duplicate_tools();
        self.drop_duplicate_members();
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

    /// `unknown tool `x``, with the closest tool names when there are any.
    pub fn unknown_tool(&self, name: &str) -> String {
        format!("unknown tool `{name}`{}", crate::suggest::did_you_mean(&self.closest_names(name)))
    }

    /// Up to three tool names near `name` (edit distance, or one containing the other).
    pub fn closest_names(&self, name: &str) -> Vec<String> {
        let bare = |candidate: &str| candidate.strip_prefix("tool_").map(str::to_string);
        crate::suggest::closest(name, self.tools().map(|(_, tool)| tool.name.as_str()), bare)
    }

    /// The tool named `name` (the first of that name, in discovery order).
    pub fn tool(&self, name: &str) -> Option<(&Library, &Tool)> {
        let (library, t) = self.tool_entry(name)?;
        Some((&**library, &library.tools[t]))
    }

    /// Where the tool named `name` is: its library, as the registry holds it, and its
    /// place among the library's tools (so a call can keep what it was admitted for).
    pub(crate) fn tool_entry(&self, name: &str) -> Option<(&Arc<Library>, usize)> {
        let index = self.index.get_or_init(|| {
            let mut index = FastMap::default();
            for (l, library) in self.libraries.iter().enumerate() {
                for (t, tool) in library.tools.iter().enumerate() {
                    index.entry(tool.name.clone()).or_insert((l, t));
                }
            }
            index
        });
        let &(l, t) = index.get(name)?;
        Some((&self.libraries[l], t))
    }

    /// Every prompt (SPEC §15) in discovery order, with its library.
    pub fn prompts(&self) -> impl Iterator<Item = (&Library, &Tool)> {
        self.libraries.iter().flat_map(|library| library.prompts.iter().map(move |prompt| (&**library, prompt)))
    }

    /// Every resource and resource template (SPEC §15) in discovery order, with its library.
    pub fn resources(&self) -> impl Iterator<Item = (&Library, &Resource)> {
        self.libraries.iter().flat_map(|library| library.resources.iter().map(move |resource| (&**library, resource)))
    }

    /// The prompt named `name`.
    pub fn prompt(&self, name: &str) -> Option<(&Library, &Tool)> {
        let (library, p) = self.prompt_entry(name)?;
        Some((&**library, &library.prompts[p]))
    }

    /// [`Registry::tool_entry`] for the prompt named `name`.
    pub(crate) fn prompt_entry(&self, name: &str) -> Option<(&Arc<Library>, usize)> {
        self.libraries.iter().find_map(|library| Some((library, library.prompts.iter().position(|p| p.name == name)?)))
    }

    /// The resource whose function is named `name`.
    pub fn resource(&self, name: &str) -> Option<(&Library, &Resource)> {
        let (library, r) = self.resource_entry(name)?;
        Some((&**library, &library.resources[r]))
    }

    /// [`Registry::tool_entry`] for the resource whose function is named `name`.
    pub(crate) fn resource_entry(&self, name: &str) -> Option<(&Arc<Library>, usize)> {
        self.libraries
            .iter()
            .find_map(|library| Some((library, library.resources.iter().position(|r| r.function.name == name)?)))
    }

    /// Whether `name` is a tool, a prompt or a resource: what a profile may name.
    pub fn has_member(&self, name: &str) -> bool {
        self.tool(name).is_some() || self.prompt(name).is_some() || self.resource(name).is_some()
    }

    /// Prompt names and resource URIs are unique, as tool names are: the first
    /// discovery wins (SPEC §14's precedence: the config's tools, the files, then the
    /// MCP servers), and a member of another source than its winner's is named with
    /// both sources.
    fn drop_duplicate_members(&mut self) {
        let (mut prompts, mut uris) = (FastMap::default(), FastMap::default());
        for index in 0..self.libraries.len() {
            let library = &self.libraries[index];
            let mut problems = Vec::new();
            let path = &library.path;
            let source = library.origin.source().into_owned();
            let keep_prompt = first_wins(
                &library.prompts,
                &mut prompts,
                (path, &source),
                |p| &p.name,
                |prompt, (first, first_source)| {
                    let message = if source == "file" && first_source == "file" {
                        format!(
                            "prompt `{}` is already defined in {}; this one is ignored",
                            prompt.name,
                            first.display()
                        )
                    } else {
                        format!(
                            "prompt `{}` ({source} source) is shadowed by `{}` of the {first_source} source at {}; \
                             this one is ignored",
                            prompt.name,
                            prompt.name,
                            first.display()
                        )
                    };
                    problems.push(Diagnostic::new(path, prompt.line, 1, Level::Warning, message));
                },
            );
            let keep_resource = first_wins(
                &library.resources,
                &mut uris,
                (path, &source),
                |r| &r.uri,
                |resource, (first, first_source)| {
                    let (name, uri) = (&resource.function.name, &resource.uri);
                    let message = if source == "file" && first_source == "file" {
                        format!(
                            "resource `{name}` has the URI `{uri}` of a resource of {}; this one is ignored",
                            first.display()
                        )
                    } else {
                        format!(
                            "resource `{name}` ({source} source) has the URI `{uri}` of a resource of the \
                             {first_source} source at {}; this one is ignored",
                            first.display()
                        )
                    };
                    problems.push(Diagnostic::new(path, resource.function.line, 1, Level::Warning, message));
                },
            );
            if problems.is_empty() {
                continue;
            }
            self.diagnostics.extend(problems);
            let library = Arc::make_mut(&mut self.libraries[index]);
            let mut keep = keep_prompt.into_iter();
            library.prompts.retain(|_| keep.next().unwrap_or(true));
            let mut keep = keep_resource.into_iter();
            library.resources.retain(|_| keep.next().unwrap_or(true));
        }
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
                        let winner = &self.libraries[first];
                        let message = match (&winner.origin, &library.origin) {
                            (Origin::File, Origin::File) => format!(
                                "tool `{}` is already defined in {}; this one is ignored",
                                tool.name,
                                winner.path.display()
                            ),
                            _ => format!(
                                "tool `{}` ({} source) is shadowed by `{}` of the {} source at {}:{}; this one is ignored",
                                tool.name,
                                library.origin.source(),
                                tool.name,
                                winner.origin.source(),
                                winner.path.display(),
                                winner.tools.iter().find(|t| t.name == tool.name).map_or(1, |t| t.line),
                            ),
                        };
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

/// For each of `items`, whether it is the first of its `key`: `seen` holds the keys
/// met so far with the file and source each came from (`from` for those met now);
/// `repeated` is told of an item whose key was met before, with that file and source.
fn first_wins<T>(
    items: &[T],
    seen: &mut FastMap<String, (PathBuf, String)>,
    from: (&Path, &str),
    key: impl Fn(&T) -> &str,
    mut repeated: impl FnMut(&T, (&Path, &str)),
) -> Vec<bool> {
    let mut keep = Vec::with_capacity(items.len());
    for item in items {
        match seen.get(key(item)) {
            Some((first, source)) => {
                repeated(item, (first, source));
                keep.push(false);
            }
            None => {
                seen.insert(key(item).to_string(), (from.0.to_path_buf(), from.1.to_string()));
                keep.push(true);
            }
        }
    }
    keep
}

/// Maps and sets keyed by paths and names, hashed with rustc's FxHash (`rustc-hash`):
/// a few operations per word, against SipHash's rounds. The keys (paths found on
/// disk, tool names) are hashed several times per rescan, and a path hashes one
/// component at a time, so the hasher's fixed cost dominates.
pub(crate) type FastMap<K, V> = HashMap<K, V, FxBuildHasher>;
pub(crate) type FastSet<K> = HashSet<K, FxBuildHasher>;

/// Files of one library folder (or one loose file) to read together, in discovery
/// order, each marked whether it must be read. The others are read only when a file
/// that must be read imports relatively: then the whole folder is extracted together.
struct Group {
    files: Vec<(usize, bool)>,
}

/// What reading one file gave.
struct FileResult {
    library: Option<Library>,
    diagnostics: Vec<Diagnostic>,
    relative_imports: bool,
}

impl FileResult {
    fn failed(diagnostic: Diagnostic) -> FileResult {
        FileResult { library: None, diagnostics: vec![diagnostic], relative_imports: false }
    }
}

/// Reads and extracts the groups, in parallel, each file's result with its index
/// into `files`, in discovery order.
fn read_all(
    files: &[SourceFile],
    metadata: &[Option<Metadata>],
    groups: &[Group],
    injected: &[String],
    code: Option<&dyn TreeReader>,
) -> Vec<(usize, FileResult)> {
    let read = crate::ordered::all(groups.len(), |g| read_group(files, metadata, &groups[g], injected, code));
    let mut out: Vec<(usize, FileResult)> = match read {
        Ok(read) => read.into_iter().flatten().collect(),
        Err(err) => groups
            .iter()
            .flat_map(|group| &group.files)
            .filter(|(_, must)| *must)
            .map(|&(i, _)| {
                let message = format!("could not be read: {err}");
                (i, FileResult::failed(Diagnostic::at_file(&files[i].path, Level::Error, message)))
            })
            .collect(),
    };
    // Groups of explicit files need not be contiguous.
    out.sort_by_key(|(i, _)| *i);
    out
}

/// Reads one group. A file that imports nothing relatively needs no sibling: it is
/// parsed, extracted and its tree freed before the next file is parsed. When one of
/// them imports relatively, the folder is read again as a whole ([`read_folder`]);
/// the files before it are parsed twice, which only folders that use relative
/// imports pay. With `code`, a library folder is read whole, and each file's code is
/// read for the audit from the same trees.
fn read_group(
    files: &[SourceFile],
    metadata: &[Option<Metadata>],
    group: &Group,
    injected: &[String],
    code: Option<&dyn TreeReader>,
) -> Vec<(usize, FileResult)> {
    let folder = group.files.first().and_then(|&(i, _)| files[i].package.as_ref());
    if code.is_some() && folder.is_some() {
        return read_folder(files, metadata, group, injected, code);
    }
    let mut out = Vec::with_capacity(group.files.len());
    for &(i, must) in &group.files {
        if !must {
            continue;
        }
        let result = match read_one(&files[i], metadata[i].as_ref()) {
            Err(diagnostic) => FileResult::failed(diagnostic),
            Ok(parsed) if parsed.imports_relatively() => return read_folder(files, metadata, group, injected, code),
            Ok(parsed) => {
                let (library, diagnostics) = extract::extract_folder(&[(&files[i], &parsed)], injected).remove(0);
                if let Some(code) = code {
                    code.group(None, &[(&files[i], &parsed, &library)]);
                }
                FileResult { library: Some(library), diagnostics, relative_imports: false }
            }
        };
        out.push((i, result));
    }
    out
}

/// Reads a group one of whose files imports relatively: every file of the folder is
/// parsed, then they are extracted together, so that a relative import finds its
/// sibling's definitions.
fn read_folder(
    files: &[SourceFile],
    metadata: &[Option<Metadata>],
    group: &Group,
    injected: &[String],
    code: Option<&dyn TreeReader>,
) -> Vec<(usize, FileResult)> {
    let parsed: Vec<(usize, Result<ParsedFile, Diagnostic>)> =
        group.files.iter().map(|&(i, _)| (i, read_one(&files[i], metadata[i].as_ref()))).collect();
    let readable: Vec<(&SourceFile, &ParsedFile)> =
        parsed.iter().filter_map(|(i, file)| Some((&files[*i], file.as_ref().ok()?))).collect();
    let extracted = extract::extract_folder(&readable, injected);
    if let Some(code) = code {
        let folder = group.files.first().and_then(|&(i, _)| files[i].package.as_deref());
        let read: Vec<(&SourceFile, &ParsedFile, &Library)> =
            readable.iter().zip(&extracted).map(|(&(file, parsed), (library, _))| (file, parsed, library)).collect();
        code.group(folder, &read);
    }
    let mut extracted = extracted.into_iter();
    let mut out = Vec::with_capacity(parsed.len());
    for (i, file) in parsed {
        let result = match file {
            Err(diagnostic) => FileResult::failed(diagnostic),
            Ok(file) => {
                let (library, diagnostics) = extracted.next().expect("one extraction per readable file");
                FileResult { library: Some(library), diagnostics, relative_imports: file.imports_relatively() }
            }
        };
        out.push((i, result));
    }
    out
}

/// `meta` is the file's metadata as discovery saw it, if it could. A file that is gone
/// by the time it is read was removed during the scan: a warning, as in [`scan`].
fn read_one(file: &SourceFile, meta: Option<&Metadata>) -> Result<ParsedFile, Diagnostic> {
    let path = &file.path;
    let removed = || Diagnostic::at_file(path, Level::Warning, scan::REMOVED_DURING_THE_SCAN);
    // Refuse a huge file before reading it into memory, and never open a FIFO or a
    // device (reading one could block forever or never end).
    let meta = match meta {
        Some(meta) => Ok(meta.clone()),
        None => fs::metadata(path),
    };
    match meta {
        Err(err) if err.kind() == ErrorKind::NotFound => return Err(removed()),
        Ok(meta) if !meta.is_file() => {
            return Err(Diagnostic::at_file(path, Level::Error, "not a regular file"));
        }
        Ok(meta) if meta.len() > MAX_FILE_BYTES as u64 => {
            let err = SourceError::TooLarge { bytes: meta.len() as usize };
            return Err(Diagnostic::at_file(path, Level::Error, err.to_string()));
        }
        _ => {}
    }
    match fs::read(path) {
        Ok(bytes) => extract::parse(file, bytes),
        Err(err) if err.kind() == ErrorKind::NotFound => Err(removed()),
        Err(err) => Err(Diagnostic::at_file(path, Level::Error, format!("cannot read file: {err}"))),
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
            let Err(diagnostic) = read_one(&gone, meta) else { panic!("a removed file was read") };
            assert_eq!(diagnostic.to_string(), "no/such/dir/removed.py:1:1: warning: skipped: removed during the scan");
        }
    }
}
