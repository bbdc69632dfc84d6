//! A registry that changes while the host runs (SPEC §6).
//!
//! Adds to [`Registry`] (which already rescans incrementally) what a host changes at
//! run time: libraries mounted by name, tools registered from code (written to a
//! private folder, so that to everything else they are ordinary tool files) and
//! prefixes unregistered. Nothing here runs Python; every file whose module may be
//! out of date (changed, removed, re-read) is handed to the catalog's runtime, which
//! drops the module before its next call in every process that loaded it (its own,
//! each worker). Modules of unchanged files stay loaded.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Runtime;
use crate::discovery::registry::{Changes, Options, Registry, Sources};
use crate::discovery::scan;

/// A [`Registry`] a host changes while it runs: libraries mounted, tools registered
/// from code or unregistered. Calls take [`Catalog::registry`]; the runtime the
/// catalog was made with forgets the modules its changes make stale.
///
/// ```
/// use lcp::discovery::registry::{Options, Sources};
/// use lcp::runtime::catalog::Catalog;
/// use lcp::runtime::{CallOptions, Runtime, RuntimeConfig};
/// use serde_json::json;
///
/// let runtime = Runtime::new(RuntimeConfig::default())?;
/// let mut catalog = Catalog::load(&runtime, Sources::default(), Options::default());
/// catalog.allow_dynamic_tools(true);
/// let code = "def tool_demo_greet(name: str) -> str:\n    \"\"\"Greets.\"\"\"\n    return 'hello ' + name\n";
/// assert_eq!(catalog.register_tool_from_code("tool_demo", code)?, ["tool_demo_greet"]);
///
/// let result = runtime.call(catalog.registry(), "tool_demo_greet", &json!({"name": "lcp"}), &CallOptions::default());
/// assert_eq!(result.output, json!("hello lcp"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Catalog<'r> {
    runtime: &'r Runtime,
    sources: Sources,
    options: Options,
    /// Everything read from the sources.
    loaded: Registry,
    /// `loaded` without the unregistered tools: what hosts see.
    view: Registry,
    /// Files written by [`Catalog::register_tool_from_code`].
    dynamic: Vec<PathBuf>,
    dynamic_dir: Option<PathBuf>,
    dynamic_allowed: bool,
    /// Prefixes whose file tools stay unregistered across rescans.
    hidden: Vec<String>,
}

impl<'r> Catalog<'r> {
    /// Reads every file of `sources` ([`Registry::load`]) for calls through `runtime`.
    pub fn load(runtime: &'r Runtime, sources: Sources, options: Options) -> Catalog<'r> {
        let loaded = Registry::load(&sources, &options);
        Catalog {
            runtime,
            view: loaded.clone(),
            loaded,
            sources,
            options,
            dynamic: Vec::new(),
            dynamic_dir: None,
            dynamic_allowed: false,
            hidden: Vec::new(),
        }
    }

    /// The tools as they are now.
    pub fn registry(&self) -> &Registry {
        &self.view
    }

    /// Whether [`Catalog::register_tool_from_code`] may add tools. Default: no.
    pub fn allow_dynamic_tools(&mut self, allowed: bool) {
        self.dynamic_allowed = allowed;
    }

    /// Re-reads only the files whose size or modification time changed.
    pub fn rescan(&mut self) -> Changes {
        let changes = self.loaded.rescan();
        self.stale(changes.changed.iter().chain(&changes.removed));
        self.refresh();
        changes
    }

    /// Mounts a library by name: a folder `NAME/` (or a file `NAME.py`) of the
    /// built-in tools, or the path of a library folder or file. Returns the names of
    /// its tools; mounting it again changes nothing.
    pub fn mount_tool_library(&mut self, name: &str) -> Result<Vec<String>, CatalogError> {
        let path = resolve_library(name)?;
        let files = library_files(&path);
        if files.is_empty() {
            return Err(CatalogError::NoToolFiles { path });
        }
        let new: Vec<PathBuf> = files.iter().filter(|f| !self.sources.files.contains(f)).cloned().collect();
        if !new.is_empty() {
            self.sources.files.extend(new);
            self.reload();
        }
        Ok(self.tools_of(&files))
    }

    /// Adds the `tool_*` functions of `code` as tools, when the host allowed dynamic
    /// tools. Every name must start with `prefix` and be new. The code is read like
    /// any tool file and runs only when one of its tools is called.
    pub fn register_tool_from_code(&mut self, prefix: &str, code: &str) -> Result<Vec<String>, CatalogError> {
        if !self.dynamic_allowed {
            return Err(CatalogError::DynamicToolsDisabled);
        }
        if prefix.is_empty() {
            return Err(CatalogError::EmptyPrefix);
        }
        let path = self.dynamic_file()?;
        fs::write(&path, code).map_err(|err| CatalogError::io(&path, format!("cannot write the code: {err}")))?;
        let alone = Registry::load(&Sources { folders: Vec::new(), files: vec![path.clone()] }, &self.options);
        if let Err(refusal) = check_dynamic(&alone, prefix, &self.view) {
            let _ = fs::remove_file(&path);
            return Err(refusal);
        }
        self.dynamic.push(path.clone());
        self.sources.files.push(path.clone());
        self.reload();
        Ok(self.tools_of(&[path]))
    }

    /// Removes every tool whose name starts with `prefix`: tools registered from code
    /// are forgotten, tools of files stay hidden across rescans. Returns the names.
    pub fn unregister_tools_by_prefix(&mut self, prefix: &str) -> Vec<String> {
        let removed: Vec<String> =
            self.view.tools().map(|(_, t)| t.name.clone()).filter(|n| n.starts_with(prefix)).collect();
        let gone: Vec<PathBuf> = self
            .loaded
            .libraries()
            .iter()
            .filter(|library| self.dynamic.contains(&library.path))
            .filter(|library| library.tools.iter().all(|t| t.name.starts_with(prefix)))
            .map(|library| library.path.clone())
            .collect();
        if !gone.is_empty() {
            for path in &gone {
                let _ = fs::remove_file(path);
            }
            self.dynamic.retain(|p| !gone.contains(p));
            self.sources.files.retain(|p| !gone.contains(p));
            self.stale(&gone);
            self.reload();
        }
        if !prefix.is_empty() && !self.hidden.iter().any(|h| h == prefix) {
            self.hidden.push(prefix.to_string());
            self.refresh();
        }
        removed
    }

    /// Reads the sources again after they changed, re-reading only new and edited
    /// files; modules of edited or removed files are dropped.
    fn reload(&mut self) {
        self.loaded.set_sources(self.sources.clone());
        let changes = self.loaded.rescan();
        self.stale(changes.changed.iter().chain(&changes.removed));
        self.refresh();
    }

    fn refresh(&mut self) {
        let hidden = |name: &str| self.hidden.iter().any(|prefix| name.starts_with(prefix.as_str()));
        self.view = self.loaded.retaining(|library, tool| self.dynamic.contains(&library.path) || !hidden(&tool.name));
    }

    fn stale<'p>(&self, paths: impl IntoIterator<Item = &'p PathBuf>) {
        let paths: Vec<PathBuf> = paths.into_iter().cloned().collect();
        if !paths.is_empty() {
            self.runtime.forget(&paths);
        }
    }

    /// Tools of the libraries read from `files` (compared as canonical paths).
    fn tools_of(&self, files: &[PathBuf]) -> Vec<String> {
        let wanted: Vec<PathBuf> = files.iter().filter_map(|f| fs::canonicalize(f).ok()).collect();
        self.view
            .libraries()
            .iter()
            .filter(|l| fs::canonicalize(&l.path).is_ok_and(|p| wanted.contains(&p)))
            .flat_map(|l| &l.tools)
            .map(|t| t.name.clone())
            .collect()
    }

    fn dynamic_file(&mut self) -> Result<PathBuf, CatalogError> {
        // Process-wide, as the names it numbers are: they hold the process id.
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = match &self.dynamic_dir {
            Some(dir) => dir.clone(),
            None => {
                let n = COUNTER.fetch_add(1, Ordering::Relaxed);
                let dir = std::env::temp_dir().join(format!("lcp-dynamic-{}-{n}", std::process::id()));
                fs::create_dir_all(&dir).map_err(|err| {
                    CatalogError::io(&dir, format!("cannot create the folder for dynamic tools: {err}"))
                })?;
                self.dynamic_dir = Some(dir.clone());
                dir
            }
        };
        Ok(dir.join(format!("dynamic_{}.py", COUNTER.fetch_add(1, Ordering::Relaxed))))
    }
}

impl Drop for Catalog<'_> {
    fn drop(&mut self) {
        if let Some(dir) = &self.dynamic_dir {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// Why code cannot become dynamic tools under `prefix`, if it cannot.
fn check_dynamic(alone: &Registry, prefix: &str, current: &Registry) -> Result<(), CatalogError> {
    let errors: Vec<String> = alone
        .diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("line {}: {}", d.line, d.message))
        .collect();
    if !errors.is_empty() {
        return Err(CatalogError::Unreadable { errors });
    }
    let tools: Vec<&str> = alone.tools().map(|(_, t)| t.name.as_str()).collect();
    if tools.is_empty() {
        return Err(CatalogError::NoTools);
    }
    for name in tools {
        if !name.starts_with(prefix) {
            return Err(CatalogError::OutsidePrefix { tool: name.to_string(), prefix: prefix.to_string() });
        }
        if let Some((library, _)) = current.tool(name) {
            return Err(CatalogError::Taken { tool: name.to_string(), path: library.path.clone() });
        }
    }
    Ok(())
}

/// A library name of the built-in tools, or a path.
fn resolve_library(name: &str) -> Result<PathBuf, CatalogError> {
    let given = Path::new(name);
    if given.exists() {
        return std::path::absolute(given).map_err(|err| CatalogError::io(given, err.to_string()));
    }
    if given.components().count() > 1 {
        return Err(CatalogError::NoSuchPath { path: given.to_path_buf() });
    }
    let builtin = crate::discovery::default_tools::folder().map_err(CatalogError::BuiltinTools)?;
    for candidate in [builtin.join(name), builtin.join(format!("{name}.py"))] {
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    let mut known: Vec<String> = fs::read_dir(&builtin)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().trim_end_matches(".py").to_string())
        .filter(|n| !n.starts_with(['.', '_']))
        .collect();
    known.sort();
    Err(CatalogError::UnknownLibrary { name: name.to_string(), known })
}

/// Why a [`Catalog`] refused to mount a library or to register tools from code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogError {
    /// A name that is no path and no library of the built-in tools.
    UnknownLibrary {
        /// The name asked for.
        name: String,
        /// The built-in libraries there are.
        known: Vec<String>,
    },
    /// A path (it names a folder) that does not exist.
    NoSuchPath {
        /// The path asked for.
        path: PathBuf,
    },
    /// A library with no tool file.
    NoToolFiles {
        /// The library's folder or file.
        path: PathBuf,
    },
    /// The built-in tools cannot be found (see [`crate::discovery::default_tools::folder`]).
    BuiltinTools(crate::discovery::default_tools::DefaultToolsError),
    /// The host has not allowed dynamic tools ([`Catalog::allow_dynamic_tools`]).
    DynamicToolsDisabled,
    /// The prefix of dynamic tools is empty.
    EmptyPrefix,
    /// The code has syntax errors (or cannot be read at all).
    Unreadable {
        /// Each error, as `line N: message`.
        errors: Vec<String>,
    },
    /// The code defines no `tool_*` function.
    NoTools,
    /// A tool of the code whose name does not start with the prefix.
    OutsidePrefix {
        /// The tool.
        tool: String,
        /// The prefix given.
        prefix: String,
    },
    /// A tool of the code that is already a tool.
    Taken {
        /// The tool.
        tool: String,
        /// The file it comes from.
        path: PathBuf,
    },
    /// A file or folder that could not be read or written.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl CatalogError {
    fn io(path: &Path, message: String) -> CatalogError {
        CatalogError::Io { path: path.to_path_buf(), message }
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::UnknownLibrary { name, known } => {
                write!(f, "no library `{name}` among the built-in tools ({})", known.join(", "))
            }
            CatalogError::NoSuchPath { path } => write!(f, "{}: no such library folder or file", path.display()),
            CatalogError::NoToolFiles { path } => write!(f, "{}: no tool files in this library", path.display()),
            CatalogError::BuiltinTools(err) => err.fmt(f),
            CatalogError::DynamicToolsDisabled => {
                f.write_str("registering tools from code is disabled; the host has to allow dynamic tools")
            }
            CatalogError::EmptyPrefix => f.write_str("the prefix of dynamic tools cannot be empty"),
            CatalogError::Unreadable { errors } => write!(f, "the code cannot be read: {}", errors.join("; ")),
            CatalogError::NoTools => f.write_str("the code defines no `tool_*` function"),
            CatalogError::OutsidePrefix { tool, prefix } => {
                write!(f, "`{tool}` does not start with the prefix `{prefix}`")
            }
            CatalogError::Taken { tool, path } => write!(f, "`{tool}` is already a tool of {}", path.display()),
            CatalogError::Io { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for CatalogError {}

/// The tool files of one library, in discovery order, found by the scanner itself.
fn library_files(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    let parent = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let (files, _) = scan::discover(&[parent], &[]);
    files.into_iter().filter(|f| f.package.as_deref() == Some(path)).map(|f| f.path).collect()
}
