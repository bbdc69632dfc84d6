//! `lcp audit` (SPEC §20): what each tool's code can do, read from its source and
//! the library's own functions (never run), checked against what it declares.
//!
//! - `graph`: a library folder as a call graph, each node with what its own code
//!   does;
//! - `read`: the graphs read while discovery parses the files, from its trees;
//! - `tables`: what calls into the standard library and common packages do;
//! - `report`: the JSON, SARIF and text forms, drift and baselines.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::discovery::extract::{Library, Origin, Tool};
use crate::discovery::registry::{Descriptions, Registry};
use crate::host::config::Config;
use crate::policy::{Declared, Found};

mod graph;
mod read;
pub(crate) mod report;
mod tables;

pub(crate) use read::{Code, load_with_capabilities, load_with_code};

/// What a tool's code can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Sockets and every client on them.
    Network,
    /// Reading files or folders.
    FsRead,
    /// Writing, creating, deleting or changing files or folders.
    FsWrite,
    /// Starting or signalling processes.
    Subprocess,
    /// Native code or memory: `ctypes`, `cffi`, `mmap`.
    Native,
    /// The environment's variables.
    Env,
    /// Code static reading cannot bound: `eval`, imports by computed name, unpickling.
    Dynamic,
}

impl Capability {
    /// Every capability, in the order reports list them.
    pub const ALL: [Capability; 7] = [
        Capability::Network,
        Capability::FsRead,
        Capability::FsWrite,
        Capability::Subprocess,
        Capability::Native,
        Capability::Env,
        Capability::Dynamic,
    ];

    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Network => "network",
            Capability::FsRead => "fs_read",
            Capability::FsWrite => "fs_write",
            Capability::Subprocess => "subprocess",
            Capability::Native => "native",
            Capability::Env => "env",
            Capability::Dynamic => "dynamic",
        }
    }

    /// The capability of this name.
    pub fn named(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// Where a capability is exercised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The file of the call.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// What was called, as its module names it (`subprocess.run`, `.write_text()`).
    pub via: String,
    /// The functions from the tool down to the one holding the call.
    pub chain: Vec<String>,
    /// Whether it deletes (or truncates) what was there.
    pub deletes: bool,
}

/// A declaration the code does not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// `read_only`, `open_world` or `destructive`.
    pub declaration: &'static str,
    /// The capability that breaks it.
    pub capability: Capability,
    /// Where.
    pub evidence: Evidence,
}

/// One tool's audit.
#[derive(Debug, Clone)]
pub struct ToolAudit {
    /// The tool's name.
    pub name: String,
    /// Its library (`TOOL_LIBRARY_NAME`, else the file's stem).
    pub library: String,
    /// Where it is defined.
    pub file: String,
    /// The line of its `def` (or config entry).
    pub line: u32,
    /// Each capability with its evidence, first the nearest to the tool.
    pub capabilities: BTreeMap<Capability, Vec<Evidence>>,
    /// Calls lcp cannot see into: dotted names of packages without a table,
    /// `mcp:<server>` for a server's tools.
    pub unknown: Vec<String>,
    /// What it declares (the config's `[tool_policies]` laid over its library's).
    pub declared: Declared,
    /// Declarations its code does not keep.
    pub drift: Vec<Drift>,
    /// What it gained since the baseline, when one was given.
    pub gained: Option<BTreeMap<Capability, Vec<Evidence>>>,
}

/// The audit of every tool.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    /// The tools, in the registry's order.
    pub tools: Vec<ToolAudit>,
    /// Files whose code could not be read: `(file, why)`.
    pub unreadable: Vec<(String, String)>,
}

impl Audit {
    /// Whether any tool drifts from its declarations.
    pub fn has_drift(&self) -> bool {
        self.tools.iter().any(|t| !t.drift.is_empty())
    }
}

/// Audits every tool of `registry`, with the declarations `config` gives them. A
/// tool shown under another name is read as the function it stands for: `routes`
/// holds `(name shown, name in the registry)` pairs ([`crate::host::view::View::routes`]).
/// The packages discovery read (`Registry::code`) are taken as they are; the
/// others are read, and tools followed, on every core.
pub fn audit(registry: &Registry, config: &Config, routes: &[(String, String)]) -> Audit {
    let (tools, unreadable) = audit_with(registry, config, routes, Evidenced::Yes, |tool| tool);
    Audit { tools, unreadable }
}

/// Whether an audit keeps the evidence of each capability, or only which ones a
/// tool has (what listings show): then each capability's evidence is empty, and so
/// is the drift.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Evidenced {
    Yes,
    No,
}

/// [`audit`], keeping the evidence or not: each tool's audit made `into` what the
/// caller keeps of it on the thread that followed it (so that the audits of every
/// tool are never held at once), and the files that could not be read.
fn audit_with<T: Send>(
    registry: &Registry,
    config: &Config,
    routes: &[(String, String)],
    evidenced: Evidenced,
    into: impl Fn(ToolAudit) -> T + Sync,
) -> (Vec<T>, Vec<(String, String)>) {
    // Only the aliases: a tool shown under its own name stands for itself.
    let real: HashMap<&str, &str> = routes
        .iter()
        .filter(|(shown, real)| shown != real)
        .map(|(shown, real)| (shown.as_str(), real.as_str()))
        .collect();
    let code = Code::of(registry);
    let mut folders = Folders::default();
    let mut packages = Packages::default();
    // The folders of loose files whose packages discovery read: only the files those
    // can import are in them, so the folder's unreadable files are looked for apart.
    let mut loose_folders: crate::discovery::registry::FastSet<&Path> = Default::default();
    // Each tool with the function it stands for and where its code is.
    type Followed<'r> = (&'r Library, &'r Tool, &'r str, At<'r, usize>);
    let real = &real;
    let tools: Vec<Followed> = registry
        .libraries()
        .iter()
        .filter(|library| !library.tools.is_empty())
        .flat_map(|library| {
            // What discovery found following each of the library's tools, in their
            // order, when it followed every function they stand for: then its package
            // is not needed.
            let reached: Option<Vec<&Reached>> = code
                .and_then(|code| code.reached(&library.path))
                .filter(|_| library.origin == Origin::File)
                .and_then(|reached| library.tools.iter().map(|tool| reached.get(function_of(real, tool))).collect());
            // Else where the library's code is, found once for all its tools.
            let given = code
                .filter(|_| reached.is_none() && library.origin == Origin::File)
                .and_then(|code| code.of_file(&library.path));
            let read = match (&reached, given) {
                (Some(_), _) => None,
                (None, Some((package, loose))) => {
                    if loose {
                        loose_folders.insert(loose_folder(library));
                    }
                    Some((packages.read(package, loose), Cow::Borrowed(library.path.as_path())))
                }
                (None, None) => {
                    code_of(library, &mut folders).map(|(files, file)| (packages.index(files), Cow::Owned(file)))
                }
            };
            library.tools.iter().enumerate().map(move |(index, tool)| {
                let function = function_of(real, tool);
                let at = match (&reached, &read) {
                    (Some(reached), _) => At::Reached(reached[index]),
                    (None, Some((package, file))) => At::Package(*package, file.clone()),
                    (None, None) => At::Unseen,
                };
                (&**library, tool, function, at)
            })
        })
        .collect();
    // The packages discovery did not read are read now, on every core.
    let to_read: Vec<&[PathBuf]> = packages
        .all
        .iter()
        .filter_map(|pending| match pending {
            Pending::Files(files) => Some(files.as_slice()),
            Pending::Read(..) => None,
        })
        .collect();
    let mut analysed = Vec::with_capacity(to_read.len());
    let _ = crate::ordered::run(
        to_read.len(),
        |i| graph::analyse(to_read[i]),
        |package| {
            analysed.push(package);
            Ok(())
        },
    );
    let mut analysed = analysed.into_iter();
    let read: Vec<Arc<graph::Package>> = packages
        .all
        .iter()
        .map(|pending| match pending {
            Pending::Read(package, _) => Arc::clone(package),
            Pending::Files(_) => Arc::new(analysed.next().unwrap_or_default()),
        })
        .collect();
    // Tools are followed in batches: one is too little work to hand to a thread.
    const BATCH: usize = 64;
    let follow = |batch: usize| {
        let end = tools.len().min((batch + 1) * BATCH);
        let follow_one = |(library, tool, function, at): &Followed| {
            let code = match at {
                At::Reached(reached) => At::Reached(reached),
                At::Package(package, file) => At::Package(&*read[*package], Cow::Borrowed(file.as_ref())),
                At::Unseen => At::Unseen,
            };
            into(tool_audit(library, tool, function, config.declared(tool), code, evidenced))
        };
        tools[batch * BATCH..end].iter().map(follow_one).collect::<Vec<_>>()
    };
    let mut audited = Vec::with_capacity(tools.len());
    let _ = crate::ordered::run(tools.len().div_ceil(BATCH), follow, |entries| {
        audited.extend(entries);
        Ok(())
    });
    let mut unreadable: Vec<(String, String)> = read
        .iter()
        .zip(&packages.all)
        .filter(|(_, pending)| !matches!(pending, Pending::Read(_, true)))
        .flat_map(|(p, _)| p.unreadable.iter().map(|(path, why)| (shown(path), why.clone())))
        .collect();
    // What the loose files' folders hold that discovery could not parse, or did not
    // list: a package of the whole folder would have read it.
    for folder in loose_folders {
        for path in folders.files(folder) {
            if code.is_some_and(|code| !code.parsed(path))
                && let Some(why) = graph::unreadable(path)
                && !unreadable.iter().any(|(p, _)| *p == shown(path))
            {
                unreadable.push((shown(path), why));
            }
        }
    }
    unreadable.sort();
    (audited, unreadable)
}

/// The function `tool` stands for: the one a profile's alias routes to, else its own.
fn function_of<'a>(real: &HashMap<&'a str, &'a str>, tool: &'a Tool) -> &'a str {
    real.get(tool.name.as_str()).copied().unwrap_or(&tool.name)
}

/// The folder whose files a loose file's package is read from.
fn loose_folder(library: &Library) -> &Path {
    library.path.parent().unwrap_or(Path::new("."))
}

/// The audit of one tool, `function` of `library` (its name in the registry),
/// declaring `declared`: what [`audit`] says of it, reading only its library's files.
#[cfg(feature = "python")]
pub(crate) fn audit_tool(library: &Library, tool: &Tool, function: &str, declared: Declared) -> ToolAudit {
    let mut code = code_of(library, &mut Folders::default());
    // A loose file is read with the loose files it may import, not its whole folder:
    // what it cannot reach adds nothing to it.
    if library.package.is_none()
        && let (Origin::File, Some((files, file))) = (&library.origin, code.as_mut())
    {
        *files = imported_beside(file, files);
    }
    let package = code.as_ref().map(|(files, _)| graph::analyse(files));
    let at = match code.as_ref().zip(package.as_ref()) {
        Some(((_, file), package)) => At::Package(package, Cow::Borrowed(file.as_path())),
        None => At::Unseen,
    };
    tool_audit(library, tool, function, declared, at, Evidenced::Yes)
}

/// What each tool of `registry` can do, as listings show it (SPEC §20): its
/// capabilities and the calls lcp cannot see into, and with `[sandbox] infer` the
/// declarations its sandbox takes from them ([`inferred`]), by the tool's name.
/// `routes` as [`audit`] takes them.
pub(crate) fn found(registry: &Registry, config: &Config, routes: &[(String, String)]) -> Vec<(String, Found)> {
    let infer = config.runtime.sandbox.infer;
    let keep = |entry: ToolAudit| {
        let found = Found {
            capabilities: entry.capabilities.keys().map(|capability| capability.as_str()).collect(),
            inferred: if infer { inferred(&entry) } else { Vec::new() },
            unknown: entry.unknown,
        };
        (entry.name, found)
    };
    audit_with(registry, config, routes, Evidenced::No, keep).0
}

/// Lays `found` over `descriptions`, the listing's of `registry`.
pub fn lay_over(registry: &Registry, config: &Config, routes: &[(String, String)], descriptions: &mut Descriptions) {
    descriptions.set_found(found(registry, config, routes));
}

/// The declarations `[sandbox] infer` gives a tool from its audit (SPEC §20): each of
/// `read_only` and `open_world` it leaves undeclared, when its code cannot break it
/// (no `fs_write` and no `subprocess`: read-only; no `network`: `open_world: false`).
/// Code lcp cannot bound (`dynamic`, `native`, or a call it cannot see into) gets none.
pub(crate) fn inferred(audit: &ToolAudit) -> Vec<&'static str> {
    let can = |capability| audit.capabilities.contains_key(&capability);
    if can(Capability::Dynamic) || can(Capability::Native) || !audit.unknown.is_empty() {
        return Vec::new();
    }
    let mut inferred = Vec::new();
    if audit.declared.read_only.is_none() && !can(Capability::FsWrite) && !can(Capability::Subprocess) {
        inferred.push("read_only");
    }
    if audit.declared.open_world.is_none() && !can(Capability::Network) {
        inferred.push("open_world");
    }
    inferred
}

/// The packages of the audit, each once: those discovery read, and those to read
/// (their files, by the first of them).
#[derive(Default)]
struct Packages {
    all: Vec<Pending>,
    by_first: HashMap<PathBuf, usize>,
    by_read: HashMap<*const graph::Package, usize>,
}

/// A package discovery read (and whether it is a loose file's), or the files of one
/// to read.
enum Pending {
    Read(Arc<graph::Package>, bool),
    Files(Vec<PathBuf>),
}

impl Packages {
    fn index(&mut self, files: Vec<PathBuf>) -> usize {
        let key = files.first().cloned().unwrap_or_default();
        *self.by_first.entry(key).or_insert_with(|| {
            self.all.push(Pending::Files(files));
            self.all.len() - 1
        })
    }

    fn read(&mut self, package: &Arc<graph::Package>, loose: bool) -> usize {
        *self.by_read.entry(Arc::as_ptr(package)).or_insert_with(|| {
            self.all.push(Pending::Read(Arc::clone(package), loose));
            self.all.len() - 1
        })
    }
}

/// Where a tool's code is: the files read with its module's, and its module's file;
/// `None` for a tool whose code is not a file lcp can read (an MCP server's, a
/// virtual one's, a `[[tools]]` entry of an installed package).
fn code_of(library: &Library, folders: &mut Folders) -> Option<(Vec<PathBuf>, PathBuf)> {
    match &library.origin {
        Origin::File => Some((package_files(library, folders), library.path.clone())),
        Origin::Config { module, path, .. } => {
            let file = module_file(module, path)?;
            Some((folders.files(file.parent().unwrap_or(Path::new("."))).to_vec(), file))
        }
        Origin::Mcp { .. } | Origin::Virtual => None,
    }
}

/// One tool's audit, `function` of `library` declaring `declared`, with its module
/// `code` (its package as read, and its module's file) when lcp can read it.
fn tool_audit(
    library: &Library,
    tool: &Tool,
    function: &str,
    declared: Declared,
    code: At<&graph::Package>,
    evidenced: Evidenced,
) -> ToolAudit {
    let mut entry = ToolAudit {
        name: tool.name.clone(),
        library: library.name.clone().unwrap_or_else(|| library.stem.clone()),
        file: shown(&library.path),
        line: tool.line,
        capabilities: BTreeMap::new(),
        unknown: Vec::new(),
        declared,
        drift: Vec::new(),
        gained: None,
    };
    let mut follow = |package, file, function| {
        let reached = reachable(package, file, function, evidenced);
        (entry.capabilities, entry.unknown) = (reached.capabilities, reached.unknown);
    };
    match (&library.origin, code) {
        (Origin::File, At::Package(package, file)) => follow(package, &file, function),
        (Origin::Config { function, .. }, At::Package(package, file)) => follow(package, &file, function),
        (Origin::File, At::Reached(reached)) => {
            (entry.capabilities, entry.unknown) = (reached.capabilities.clone(), reached.unknown.clone());
        }
        (Origin::Config { module, function, .. }, _) => {
            from_table(&format!("{module}.{function}"), library, tool, &mut entry)
        }
        (Origin::Mcp { server }, _) => entry.unknown.push(format!("mcp:{server}")),
        (Origin::Virtual, _) => entry.unknown.push("virtual".into()),
        (Origin::File, At::Unseen) => entry.unknown.push(format!("unreadable:{}", shown(&library.path))),
    }
    entry.drift = drift(&entry.declared, &entry.capabilities);
    entry
}

/// A path as reports show it.
fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The files read with a library's: its folder's `*.py` when it is in a library
/// folder (its siblings, which relative imports reach), else the loose files beside
/// it, which it imports by their names.
fn package_files(library: &Library, folders: &mut Folders) -> Vec<PathBuf> {
    let folder = library.package.as_deref().unwrap_or_else(|| library.path.parent().unwrap_or(Path::new(".")));
    let mut files = folders.files(folder).to_vec();
    if !files.contains(&library.path) {
        files.push(library.path.clone());
    }
    files
}

/// `file` and the files of `beside` it may import, transitively: those whose stem is
/// a name in its text. A static import names its module, so none is missed; a name
/// that only looks like a module's costs a file read for nothing (an import by a
/// computed name is `dynamic` whatever is read).
#[cfg(feature = "python")]
fn imported_beside(file: &Path, beside: &[PathBuf]) -> Vec<PathBuf> {
    let stems: HashMap<&str, &PathBuf> =
        beside.iter().filter_map(|path| Some((path.file_stem()?.to_str()?, path))).collect();
    let mut files = vec![file.to_path_buf()];
    let mut at = 0;
    while at < files.len() {
        let text = std::fs::read_to_string(&files[at]).unwrap_or_default();
        for name in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if let Some(&path) = stems.get(name)
                && !files.contains(path)
            {
                files.push(path.clone());
            }
        }
        at += 1;
    }
    files
}

/// The `*.py` files of each folder read so far: a folder's tools share one listing.
#[derive(Default)]
struct Folders(HashMap<PathBuf, Vec<PathBuf>>);

impl Folders {
    fn files(&mut self, folder: &Path) -> &[PathBuf] {
        self.0.entry(folder.to_path_buf()).or_insert_with(|| python_files(folder))
    }
}

/// The `*.py` files of `folder`, sorted, never a dot file (which no import names):
/// what a package of the folder reads, as discovery's walk lists it
/// (`scan::Listings`, by the same `scan::is_visible`).
fn python_files(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| crate::discovery::scan::is_visible(&entry.file_name()))
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "py") && path.is_file())
        .collect();
    files.sort();
    files
}

/// A `[[tools]]` entry's module file, looked for where a call looks first.
fn module_file(module: &str, path: &[PathBuf]) -> Option<PathBuf> {
    let relative: PathBuf = module.split('.').collect();
    path.iter().find_map(|folder| {
        let file = folder.join(&relative).with_extension("py");
        let init = folder.join(&relative).join("__init__.py");
        [file, init].into_iter().find(|f| f.is_file())
    })
}

/// A `[[tools]]` entry whose module is not a file of the config's path: the
/// standard library's or a package's function, by its table.
fn from_table(dotted: &str, library: &Library, tool: &Tool, entry: &mut ToolAudit) {
    let evidence = |deletes| Evidence {
        file: shown(&library.path),
        line: tool.line,
        via: dotted.to_string(),
        chain: vec![tool.name.clone()],
        deletes,
    };
    match tables::lookup(dotted) {
        Some(tables::Entry::Pure) => {}
        Some(tables::Entry::Can(capabilities)) => {
            for &capability in capabilities {
                entry.capabilities.entry(capability).or_default().push(evidence(false));
            }
        }
        Some(tables::Entry::Deletes) => entry.capabilities.entry(Capability::FsWrite).or_default().push(evidence(true)),
        Some(tables::Entry::OpenMode) => {
            entry.capabilities.entry(Capability::FsWrite).or_default().push(evidence(false))
        }
        None => entry.unknown.push(dotted.to_string()),
    }
}

/// The capabilities and unknown calls reachable from the function `name` of the
/// module at `path`, each with the chain that reaches it (the shortest).
fn reachable(package: &graph::Package, path: &Path, name: &str, evidenced: Evidenced) -> Reached {
    let mut entry = Reached::default();
    let Some(module) = package.module(path) else {
        let why = package.unreadable.iter().find(|(p, _)| p == path).map_or("not read", |(_, why)| why.as_str());
        entry.unknown.push(format!("unreadable:{}: {why}", shown(path)));
        return entry;
    };
    let Some(&start) = package.modules[module].functions.get(name) else {
        entry.unknown.push(format!("unresolved:{name}"));
        return entry;
    };
    // States: a node with the literal booleans its call binds (`_connect(p,
    // read_only=True)` runs only the `if read_only:` branches that value takes).
    type Context = Vec<(String, bool)>;
    let mut states: Vec<(usize, Context, usize)> = vec![(start, Vec::new(), 0)];
    let mut seen: crate::discovery::registry::FastSet<(usize, Context)> =
        std::iter::once((start, Vec::new())).collect();
    let mut queue = VecDeque::from([0usize]);
    let init = package.modules[module].init;
    while let Some(at) = queue.pop_front() {
        let (node_index, context) = (states[at].0, states[at].1.clone());
        let node = &package.nodes[node_index];
        let mut next: Vec<(usize, Context)> = node.edges.iter().map(|&to| (to, Vec::new())).collect();
        if at == 0 {
            next.push((init, Vec::new()));
        }
        for call in node.guarded.iter().filter(|c| graph::runs(&c.guards, &context)) {
            let parameters = &package.nodes[call.to].parameters;
            let mut bound: Context = call
                .literals
                .iter()
                .filter_map(|(literal, value)| match literal {
                    graph::Literal::Position(i) => parameters.get(*i).map(|p| (p.clone(), *value)),
                    graph::Literal::Keyword(k) => Some((k.clone(), *value)),
                })
                .collect();
            bound.sort();
            next.push((call.to, bound));
        }
        for (to, bound) in next {
            if seen.insert((to, bound.clone())) {
                states.push((to, bound, at));
                queue.push_back(states.len() - 1);
            }
        }
    }
    let chain = |mut at: usize| {
        let mut names = vec![package.display(states[at].0, module)];
        while at != 0 {
            at = states[at].2;
            names.push(package.display(states[at].0, module));
        }
        let last = names.len() - 1;
        names[last] = name.to_string();
        names.reverse();
        names
    };
    for (at, (node_index, context, _)) in states.iter().enumerate() {
        let node = &package.nodes[*node_index];
        if node.effects.is_empty() && node.unknown.is_empty() {
            continue;
        }
        let file = match evidenced {
            Evidenced::Yes => shown(&package.modules[node.module].path),
            Evidenced::No => String::new(),
        };
        for effect in node.effects.iter().filter(|e| graph::runs(&e.guards, context)) {
            let found = entry.capabilities.entry(effect.capability).or_default();
            if evidenced == Evidenced::No {
                continue;
            }
            let duplicate = found.iter().any(|e| e.file == file && e.line == effect.line && e.via == effect.via);
            if !duplicate {
                found.push(Evidence {
                    file: file.clone(),
                    line: effect.line,
                    via: effect.via.clone(),
                    chain: chain(at),
                    deletes: effect.deletes,
                });
            }
        }
        for (dotted, _) in &node.unknown {
            if !entry.unknown.contains(dotted) {
                entry.unknown.push(dotted.clone());
            }
        }
    }
    entry.unknown.sort();
    entry
}

/// What following a function finds: each capability with its evidence (none when
/// not evidenced), and the calls lcp cannot see into.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reached {
    capabilities: BTreeMap<Capability, Vec<Evidence>>,
    unknown: Vec<String>,
}

/// What listings show of `function` of the module at `path` in `package`
/// ([`found`]): what following it finds, without evidence.
fn listed(package: &graph::Package, path: &Path, function: &str) -> Reached {
    reachable(package, path, function, Evidenced::No)
}

/// Where the audit finds a tool's code: what was found following it as discovery
/// read it, a package to follow it in (`P`: the package, or its index among the
/// audit's packages while they are still to read) with its module's file, or nowhere
/// lcp can read.
enum At<'r, P> {
    Reached(&'r Reached),
    Package(P, Cow<'r, Path>),
    Unseen,
}

/// The declarations `capabilities` break (SPEC §20): `read_only` with writes or
/// processes, `open_world: false` with the network, `destructive: false` with
/// deletions. An undeclared key claims nothing, so nothing breaks it.
pub(crate) fn drift(declared: &Declared, capabilities: &BTreeMap<Capability, Vec<Evidence>>) -> Vec<Drift> {
    let mut found = Vec::new();
    let mut add = |declaration: &'static str, capability: Capability, only_deletions: bool| {
        let evidence = capabilities.get(&capability).into_iter().flatten().find(|e| !only_deletions || e.deletes);
        if let Some(evidence) = evidence {
            found.push(Drift { declaration, capability, evidence: evidence.clone() });
        }
    };
    if declared.read_only == Some(true) {
        add("read_only", Capability::FsWrite, false);
        add("read_only", Capability::Subprocess, false);
    }
    if declared.open_world == Some(false) {
        add("open_world", Capability::Network, false);
    }
    if declared.destructive == Some(false) {
        add("destructive", Capability::FsWrite, true);
    }
    found
}

/// Marks what each tool gained since `baseline` (an earlier `lcp audit --format
/// json`): each capability it has now that it had not then, with its evidence; a
/// tool the baseline does not have gained all of its. Fails on a baseline that is
/// not such a document.
pub(crate) fn compare(audit: &mut Audit, baseline: &Value) -> Result<(), String> {
    let tools =
        baseline["tools"].as_array().ok_or("the baseline has no `tools` list (is it `lcp audit --format json`?)")?;
    let mut before: HashMap<&str, Vec<Capability>> = HashMap::new();
    for tool in tools {
        let name = tool["name"].as_str().ok_or("a tool of the baseline has no `name`")?;
        let had = tool["capabilities"].as_object().map(Map::keys).into_iter().flatten();
        before.insert(name, had.filter_map(|c| Capability::named(c)).collect());
    }
    for tool in &mut audit.tools {
        let had = before.get(tool.name.as_str());
        let gained: BTreeMap<Capability, Vec<Evidence>> = tool
            .capabilities
            .iter()
            .filter(|(c, _)| had.is_none_or(|had| !had.contains(c)))
            .map(|(c, e)| (*c, e.clone()))
            .collect();
        tool.gained = Some(gained);
    }
    Ok(())
}

/// Evidence as JSON: `{"file", "line", "via", "chain"}`.
pub(crate) fn evidence_json(evidence: &Evidence) -> Value {
    json!({"file": evidence.file, "line": evidence.line, "via": evidence.via, "chain": evidence.chain})
}

#[cfg(test)]
mod tests;
