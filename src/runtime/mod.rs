//! Running tools in an embedded CPython, on demand (SPEC §5–§6).
//!
//! - [`Runtime`]: the host API: call a tool, ask the prompt providers, register the
//!   confirm handler.
//! - [`catalog`]: a registry that changes while the host runs: mounted libraries,
//!   tools registered from code, rescans that re-read only changed files (SPEC §6).
//! - `validate`: arguments against the tool's schema, in Rust, before Python runs.
//! - `python`: the only code in lcp that touches pyo3. `host.py`: the Python side
//!   (loading, hooks, conversion, capture); it speaks JSON text only, so it can serve
//!   a worker process as well.
//! - `capture`: keeps file descriptor 1 away from tools. `workspace`: leases the
//!   working directory to calls.
//!
//! A call takes one of two paths. The first call of a tool, a call with a timeout and
//! a call of a tool whose arguments need converting go through `host.py`'s `call`
//! (JSON text in and out). Once a tool's library is loaded, a tool whose parameters
//! are plain JSON types (numbers, strings, booleans, lists, dicts, `Optional` of them)
//! is called *directly*: its arguments are built from the `serde_json` values and its
//! return value read back without JSON text, `host.py` only joins in for what the tool
//! prints, an exception or a value that is not plain JSON. Both paths give the same
//! result for the same call.
//!
//! Invariants: module code runs only when one of its tools or providers is asked
//! for; a tool's failure of any kind, `SystemExit` included, is a [`ToolResult`],
//! never a panic or an exit; nothing a tool prints reaches the host's stdout.

mod capture;
pub mod catalog;
mod python;
pub mod validate;
mod workspace;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::diag::{Diagnostic, Level};
use crate::extract::{DEFAULT_INJECTED, Library};
use crate::registry::{Changes, FastMap, Registry};

/// How long a call that ran out of time gets to unwind after it was told to stop.
const GRACE: Duration = Duration::from_secs(2);

/// What the host sets up once. Every field has a default.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Configuration handed to each library's `init_tools_library`, by library key
    /// ([`library_key`]): the folder name of a library folder, else the file stem.
    /// `autonomy_level` and `confirm_handler` are added to it. Default: none.
    pub libraries: BTreeMap<String, Map<String, Value>>,
    /// `autonomy_level` given to every library. Default: `"safe"`.
    pub autonomy_level: String,
    /// A virtual environment whose site-packages tools may import. Default: the
    /// active one, `$VIRTUAL_ENV`, if set.
    pub venv: Option<PathBuf>,
    /// Parameter names the host injects (left out of schemas); a tool that requires
    /// one gets `None`. Default: [`DEFAULT_INJECTED`].
    pub injected: Vec<String>,
    /// Time limit for each prompt provider in [`Runtime::describe`]. Default: 10 s.
    pub provider_timeout: Option<Duration>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            libraries: BTreeMap::new(),
            autonomy_level: "safe".to_string(),
            venv: std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()).map(PathBuf::from),
            injected: DEFAULT_INJECTED.iter().map(|s| s.to_string()).collect(),
            provider_timeout: Some(Duration::from_secs(10)),
        }
    }
}

/// Options of one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Working directory while the tool runs; the previous one is restored after,
    /// even on failure. The directory belongs to the process: calls for the same
    /// workspace run together, a call for another one waits until they are done.
    pub workspace: Option<PathBuf>,
    /// Time limit; a tool still running then is stopped and the call fails.
    pub timeout: Option<Duration>,
}

/// The outcome of a call (SPEC §5): `{"ok", "output", "error"?, "traceback"?, "stdout", "stderr"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub ok: bool,
    /// The return value as JSON (`null` when there is none).
    pub output: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

impl ToolResult {
    /// A failed call that ran no tool code.
    pub fn failure(error: impl Into<String>) -> ToolResult {
        ToolResult {
            ok: false,
            output: Value::Null,
            error: Some(error.into()),
            traceback: None,
            stdout: String::new(),
            stderr: String::new(),
        }
    }
}

/// What a library asks the user to confirm, as its tool called the handler.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfirmRequest {
    /// The library key ([`library_key`]).
    pub library: String,
    /// The tool (or provider) being run, when the handler is called during a call.
    pub tool: Option<String>,
    /// What would be done: the first argument, or a dict's `content` / `command`.
    pub content: String,
    /// A short title: the second argument, or a dict's `label` / `title`.
    pub label: String,
    /// Every positional argument, as JSON (objects JSON cannot carry as their `repr`).
    pub args: Vec<Value>,
    pub kwargs: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Reject,
    /// Allow, and do not ask again for this kind of action.
    Always,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Reject => "reject",
            Decision::Always => "always",
        }
    }
}

/// The handler's answer; Python receives `(decision, reason)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    pub decision: Decision,
    pub reason: String,
}

impl Confirmation {
    pub fn allow(reason: impl Into<String>) -> Self {
        Confirmation { decision: Decision::Allow, reason: reason.into() }
    }

    pub fn reject(reason: impl Into<String>) -> Self {
        Confirmation { decision: Decision::Reject, reason: reason.into() }
    }
}

type Handler = Arc<dyn Fn(&ConfirmRequest) -> Confirmation + Send + Sync>;

/// Descriptions from prompt providers, to lay over the static ones.
#[derive(Debug, Clone, Default)]
pub struct Descriptions {
    /// `(tool name, description)` for every provider that answered.
    pub tools: Vec<(String, String)>,
    /// Providers that failed; their tools keep the static description.
    pub diagnostics: Vec<Diagnostic>,
}

impl Descriptions {
    pub fn apply(&self, registry: &mut Registry) {
        for library in &mut registry.libraries {
            if !library.tools.iter().any(|tool| self.tools.iter().any(|(name, _)| *name == tool.name)) {
                continue;
            }
            for tool in &mut Arc::make_mut(library).tools {
                if let Some((_, description)) = self.tools.iter().find(|(name, _)| *name == tool.name) {
                    tool.description = description.clone();
                }
            }
        }
    }
}

/// Runs the tools of a registry in the process's embedded CPython.
///
/// The interpreter and the loaded libraries belong to the process: every `Runtime`
/// shares them, and each library is imported and initialised once per process, with
/// the configuration of the runtime that first loads it. Each runtime has its own
/// confirm handler, used for the calls it makes. Relative paths (of tool files and
/// workspaces) are taken from the working directory the runtime was created in.
///
/// Calls may come from many threads; Python runs one at a time (the GIL), switching
/// every few milliseconds, so a tool that spins does not hold up the others. While a
/// call runs, the process's fd 1 points at lcp's capture: a host that writes to its
/// standard output while tools may run writes through [`Runtime::claim_stdout`].
pub struct Runtime {
    config: RuntimeConfig,
    base: PathBuf,
    handler: RwLock<Option<Handler>>,
    /// How each tool called so far is called, by function name.
    resolved: RwLock<FastMap<String, Resolved>>,
}

/// A tool's [`python::Resolution`], while the modules it was made with stay loaded.
struct Resolved {
    /// The tool's library file, as the registry names it.
    file: PathBuf,
    generation: u64,
    direct: Option<Arc<python::Direct>>,
}

impl Resolved {
    fn holds(&self, library: &Library, generation: u64) -> bool {
        self.generation == generation && self.file.as_os_str() == library.path.as_os_str()
    }
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// Counts the times loaded modules were dropped: a resolution made before is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Calls running on this thread: a call made while another one runs here (from a
    /// confirm handler) takes `host.py`'s path, which keeps the outer call's state.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// What holds while a call runs, on either path: its confirm handler is the one
/// `host.py` reaches for its id, it has its share of the working directory, and it
/// counts in this thread's [`DEPTH`]. All of it ends when the scope is dropped.
struct CallScope {
    _registration: Option<Registration>,
    _lease: workspace::Lease,
}

impl CallScope {
    fn enter(id: u64, handler: Option<Handler>, workspace: Option<&Path>) -> Result<CallScope, String> {
        let registration = handler.map(|handler| Registration::new(id, handler));
        let lease = workspace::enter(workspace)?;
        DEPTH.set(DEPTH.get() + 1);
        Ok(CallScope { _registration: registration, _lease: lease })
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get() - 1);
    }
}

/// The confirm handler of each call in progress, by call id.
static HANDLERS: LazyLock<Mutex<HashMap<u64, Handler>>> = LazyLock::new(Default::default);

impl Runtime {
    /// Starts the interpreter (once per process) and adds the virtual environment's
    /// site-packages. Runs no tool code.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, String> {
        let base = std::env::current_dir().map_err(|err| format!("cannot read the working directory: {err}"))?;
        python::start(answer_confirm, workspace::before_chdir)?;
        if let Some(venv) = &config.venv {
            let site = site_packages(&base.join(venv))?;
            python::add_site_dir(&site.to_string_lossy())?;
        }
        Ok(Runtime { config, base, handler: RwLock::new(None), resolved: RwLock::default() })
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Registers the confirm handler, and calls `set_confirm_handler` again on every
    /// loaded library that defines it. Returns the hooks that failed.
    pub fn set_confirm_handler(
        &self,
        handler: impl Fn(&ConfirmRequest) -> Confirmation + Send + Sync + 'static,
    ) -> Vec<Diagnostic> {
        *self.handler.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(handler));
        #[derive(Deserialize)]
        struct Problem {
            file: PathBuf,
            error: String,
        }
        match python::rebind()
            .and_then(|text| serde_json::from_str::<Vec<Problem>>(&text).map_err(|err| err.to_string()))
        {
            Ok(problems) => problems.into_iter().map(|p| Diagnostic::at_file(&p.file, Level::Error, p.error)).collect(),
            Err(err) => vec![Diagnostic::at_file(Path::new("<lcp>"), Level::Error, err)],
        }
    }

    /// Runs a tool: validates `args` against its schema (nothing runs when they are
    /// invalid), loads its library on first use, converts the arguments, calls it.
    pub fn call(&self, registry: &Registry, tool: &str, args: &Value, options: &CallOptions) -> ToolResult {
        let Some((library, found)) = registry.tool(tool) else {
            return ToolResult::failure(unknown_tool(registry, tool));
        };
        let schema = found.parameters.value();
        let problems = validate::check(schema, args);
        if !problems.is_empty() {
            return ToolResult::failure(validate::report(tool, schema, &problems));
        }
        if options.timeout.is_none()
            && let Some(result) = self.call_direct(library, &found.name, args, options)
        {
            return result;
        }
        let result = self.run(library, &found.name, Kind::Tool, args, options, options.timeout);
        self.resolve(library, &found.name);
        result
    }

    /// The direct path (see the module doc); `None` when the call must take `host.py`'s.
    fn call_direct(
        &self,
        library: &Library,
        function: &str,
        args: &Value,
        options: &CallOptions,
    ) -> Option<ToolResult> {
        let Value::Object(args) = args else { return None };
        if DEPTH.get() > 0 || ANY_DROPPED.load(Ordering::Acquire) {
            return None;
        }
        let direct = {
            let resolved = self.resolved.read().unwrap_or_else(|p| p.into_inner());
            let entry = resolved.get(function).filter(|entry| entry.holds(library, GENERATION.load(Ordering::Acquire)));
            entry?.direct.clone()?
        };
        if !direct.takes(args) {
            return None;
        }
        let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        let handler = self.handler.read().unwrap_or_else(|p| p.into_inner()).clone();
        let folder = options.workspace.as_deref().map(|dir| self.base.join(dir));
        let scope = match CallScope::enter(id, handler, folder.as_deref()) {
            Ok(scope) => scope,
            Err(err) => return Some(ToolResult::failure(err)),
        };
        let capture = capture::begin(id);
        let outcome = python::call_direct(&direct, id, args);
        let raw_stdout = capture.finish();
        Some(match outcome {
            Ok(None) => {
                // The module rebound the tool's name: nothing ran; `host.py` calls what
                // the name holds now, and the tool is resolved again after.
                drop(scope);
                self.resolved.write().unwrap_or_else(|p| p.into_inner()).remove(function);
                return None;
            }
            Ok(Some(python::DirectOutcome { returned: python::Returned::Output(output), stdout, stderr })) => {
                ToolResult { ok: true, output, error: None, traceback: None, stdout: stdout + &raw_stdout, stderr }
            }
            Ok(Some(python::DirectOutcome { returned: python::Returned::Reply(reply), stdout, stderr })) => {
                let mut result = read_reply(Ok(reply), raw_stdout).0;
                result.stdout.insert_str(0, &stdout);
                result.stderr.insert_str(0, &stderr);
                result
            }
            Err(err) => read_reply(Err(err), raw_stdout).0,
        })
    }

    /// Records how `function` of `library` is called from now on, unless known.
    fn resolve(&self, library: &Library, function: &str) {
        let generation = GENERATION.load(Ordering::Acquire);
        let resolved = self.resolved.read().unwrap_or_else(|p| p.into_inner());
        if resolved.get(function).is_some_and(|entry| entry.holds(library, generation)) {
            return;
        }
        drop(resolved);
        let file = absolute(&self.base, &library.path);
        let direct = match python::direct(&file, function, &library_key(library), &self.config.injected) {
            python::Resolution::Direct(direct) => Some(Arc::new(direct)),
            python::Resolution::Never => None,
            python::Resolution::NotLoaded => return,
        };
        let entry = Resolved { file: library.path.clone(), generation, direct };
        self.resolved.write().unwrap_or_else(|p| p.into_inner()).insert(function.to_string(), entry);
    }

    /// Asks every tool's prompt provider for its description (SPEC §2).
    pub fn describe(&self, registry: &Registry, options: &CallOptions) -> Descriptions {
        let mut descriptions = Descriptions::default();
        for (library, tool) in registry.tools() {
            let Some(provider) = &tool.prompt_provider else { continue };
            match self.provide(library, provider, options) {
                Ok(text) => descriptions.tools.push((tool.name.clone(), text)),
                Err(err) => descriptions.diagnostics.push(Diagnostic::new(
                    &library.path,
                    tool.line,
                    1,
                    Level::Warning,
                    format!(
                        "prompt provider `{provider}` failed, the static description of `{}` is kept: {err}",
                        tool.name
                    ),
                )),
            }
        }
        descriptions
    }

    /// The dynamic prompt of every library that has one (`tool_<stem>_prompt`).
    pub fn library_prompts(
        &self,
        registry: &Registry,
        options: &CallOptions,
    ) -> (Vec<(PathBuf, String)>, Vec<Diagnostic>) {
        let (mut prompts, mut diagnostics) = (Vec::new(), Vec::new());
        for library in &registry.libraries {
            let Some(provider) = &library.prompt_provider else { continue };
            match self.provide(library, provider, options) {
                Ok(text) => prompts.push((library.path.clone(), text)),
                Err(err) => diagnostics.push(Diagnostic::at_file(
                    &library.path,
                    Level::Warning,
                    format!("library prompt provider `{provider}` failed: {err}"),
                )),
            }
        }
        (prompts, diagnostics)
    }

    fn provide(&self, library: &Library, provider: &str, options: &CallOptions) -> Result<String, String> {
        let timeout = options.timeout.or(self.config.provider_timeout);
        let result = self.run(library, provider, Kind::Provider, &Value::Null, options, timeout);
        match (result.ok, result.output) {
            (true, Value::String(text)) if !text.trim().is_empty() => Ok(text),
            (true, _) => Err("it returned an empty description".to_string()),
            (false, _) => Err(result.error.unwrap_or_default()),
        }
    }

    /// Drops the loaded modules of these files; their next call imports them again.
    pub fn forget(&self, files: &[PathBuf]) {
        drop_modules(files.iter().map(|path| absolute(&self.base, path)));
    }

    /// Rescans the registry (SPEC §6) and drops the loaded modules of the files that
    /// changed or went away; modules of unchanged files stay loaded. A [`catalog::Catalog`]
    /// does this by itself.
    pub fn rescan(&self, registry: &mut Registry) -> Changes {
        let changes = registry.rescan();
        self.forget(&changes.changed);
        self.forget(&changes.removed);
        changes
    }

    /// Evaluates a Python expression in the embedded interpreter and returns its
    /// `repr()`: for diagnostics (`sys.prefix`) and measurements, not for tools.
    pub fn eval(&self, expression: &str) -> Result<String, String> {
        python::eval_repr(expression)
    }

    /// Takes the real standard output for the whole process (see `capture`): from
    /// now on fd 1 never reaches it, and the returned file is the only way to it.
    pub fn claim_stdout() -> std::io::Result<File> {
        capture::claim()
    }

    fn run(
        &self,
        library: &Library,
        function: &str,
        kind: Kind,
        args: &Value,
        options: &CallOptions,
        timeout: Option<Duration>,
    ) -> ToolResult {
        let id = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        forget_dropped_modules();
        let key = library_key(library);
        let handler = self.handler.read().unwrap_or_else(|p| p.into_inner()).clone();
        let request = Request {
            call_id: id,
            kind,
            file: absolute(&self.base, &library.path),
            package: library.package.as_deref().map(|dir| absolute(&self.base, dir)),
            library: &key,
            function,
            args,
            config: self.config.libraries.get(&key),
            autonomy_level: &self.config.autonomy_level,
            has_handler: handler.is_some(),
            injected: &self.config.injected,
        };
        let request = match serde_json::to_string(&request) {
            Ok(text) => text,
            Err(err) => return ToolResult::failure(format!("cannot encode the call: {err}")),
        };
        let folder = options.workspace.as_deref().map(|dir| self.base.join(dir));
        match timeout {
            None => execute(id, &request, handler, folder.as_deref()).0,
            Some(limit) => execute_with_deadline(id, request, handler, folder, limit, function),
        }
    }
}

#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Tool,
    Provider,
}

/// One call as `host.py` reads it.
#[derive(Serialize)]
struct Request<'a> {
    call_id: u64,
    kind: Kind,
    file: String,
    package: Option<String>,
    library: &'a str,
    function: &'a str,
    args: &'a Value,
    config: Option<&'a Map<String, Value>>,
    autonomy_level: &'a str,
    has_handler: bool,
    injected: &'a [String],
}

/// `host.py`'s answer.
#[derive(Deserialize)]
struct Reply {
    ok: bool,
    #[serde(default)]
    output: Value,
    error: Option<String>,
    traceback: Option<String>,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
    #[serde(default)]
    timed_out: bool,
}

/// Runs the call on this thread, in the working directory `workspace` (the host's
/// own when `None`); returns the result and whether it was stopped.
fn execute(id: u64, request: &str, handler: Option<Handler>, workspace: Option<&Path>) -> (ToolResult, bool) {
    let _scope = match CallScope::enter(id, handler, workspace) {
        Ok(scope) => scope,
        Err(err) => return (ToolResult::failure(err), false),
    };
    let capture = capture::begin(id);
    let reply = python::call(request);
    let raw_stdout = capture.finish();
    read_reply(reply, raw_stdout)
}

/// A result from `host.py`'s reply and what reached fd 1; also whether the call was stopped.
fn read_reply(reply: Result<String, String>, raw_stdout: String) -> (ToolResult, bool) {
    let reply =
        reply.and_then(|text| serde_json::from_str::<Reply>(&text).map_err(|err| format!("unreadable reply: {err}")));
    match reply {
        Ok(reply) => {
            let result = ToolResult {
                ok: reply.ok,
                output: reply.output,
                error: reply.error,
                traceback: reply.traceback,
                stdout: reply.stdout + &raw_stdout,
                stderr: reply.stderr,
            };
            (result, reply.timed_out)
        }
        Err(err) => {
            let mut result = ToolResult::failure(format!("lcp's Python host failed: {err}"));
            result.stdout = raw_stdout;
            (result, false)
        }
    }
}

/// Runs the call on its own thread and waits at most `limit`. A call still running
/// then is stopped (the timeout exception is raised in its thread); one that cannot
/// be stopped (blocked outside Python code) is left running and its result dropped.
fn execute_with_deadline(
    id: u64,
    request: String,
    handler: Option<Handler>,
    workspace: Option<PathBuf>,
    limit: Duration,
    function: &str,
) -> ToolResult {
    let (sender, receiver) = mpsc::channel();
    let worker = std::thread::Builder::new().name(format!("lcp-call-{id}")).spawn(move || {
        let _ = sender.send(execute(id, &request, handler, workspace.as_deref()));
    });
    if let Err(err) = worker {
        return ToolResult::failure(format!("cannot start a thread for the call: {err}"));
    }
    let late = match receiver.recv_timeout(limit) {
        Ok((result, _)) => return result,
        Err(RecvTimeoutError::Disconnected) => return ToolResult::failure("the call ended without a result"),
        Err(RecvTimeoutError::Timeout) => {
            python::stop(id);
            receiver.recv_timeout(GRACE)
        }
    };
    let message = format!("`{function}` timed out after {} s", limit.as_secs_f64());
    match late {
        Ok((mut result, _)) => {
            result.ok = false;
            result.error = Some(format!("{message} and was stopped"));
            result
        }
        Err(_) => ToolResult::failure(format!(
            "{message}; it could not be stopped (it is blocked outside Python code) and goes on in the background, its result will be dropped"
        )),
    }
}

/// Makes the runtime's handler the one `host.py` reaches for the call `id`.
struct Registration(u64);

impl Registration {
    fn new(id: u64, handler: Handler) -> Registration {
        HANDLERS.lock().unwrap_or_else(|p| p.into_inner()).insert(id, handler);
        Registration(id)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        HANDLERS.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.0);
    }
}

/// Files whose loaded modules are out of date, waiting for the next call to drop them.
static DROPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static ANY_DROPPED: AtomicBool = AtomicBool::new(false);

/// Marks modules as out of date: the next call of any runtime drops them (modules
/// belong to the process, like the interpreter).
pub(crate) fn drop_modules(paths: impl IntoIterator<Item = String>) {
    let mut dropped = DROPPED.lock().unwrap_or_else(|p| p.into_inner());
    dropped.extend(paths);
    GENERATION.fetch_add(1, Ordering::AcqRel);
    ANY_DROPPED.store(!dropped.is_empty(), Ordering::Release);
}

fn forget_dropped_modules() {
    if !ANY_DROPPED.load(Ordering::Acquire) {
        return;
    }
    let paths = std::mem::take(&mut *DROPPED.lock().unwrap_or_else(|p| p.into_inner()));
    ANY_DROPPED.store(false, Ordering::Release);
    if let Ok(json) = serde_json::to_string(&paths) {
        let _ = python::forget(&json);
    }
}

/// `path` from `base`, without `.` components: the key of a file's module.
pub(crate) fn absolute(base: &Path, path: &Path) -> String {
    base.join(path).components().collect::<PathBuf>().to_string_lossy().into_owned()
}

/// `host.py`'s confirm requests: finds the handler of the call and asks it.
fn answer_confirm(text: &str) -> String {
    #[derive(Deserialize)]
    struct Wire {
        call_id: Option<u64>,
        library: Option<String>,
        tool: Option<String>,
        #[serde(default)]
        args: Vec<Value>,
        #[serde(default)]
        kwargs: Map<String, Value>,
    }
    let confirmation = match serde_json::from_str::<Wire>(text) {
        Err(err) => Confirmation::reject(format!("lcp could not read the confirm request: {err}")),
        Ok(wire) => {
            let handler =
                wire.call_id.and_then(|id| HANDLERS.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned());
            match handler {
                None => Confirmation::reject("the host has no confirmation handler"),
                Some(handler) => {
                    let (content, label) = content_and_label(&wire.args, &wire.kwargs);
                    let request = ConfirmRequest {
                        library: wire.library.unwrap_or_default(),
                        tool: wire.tool,
                        content,
                        label,
                        args: wire.args,
                        kwargs: wire.kwargs,
                    };
                    catch_unwind(AssertUnwindSafe(|| handler(&request)))
                        .unwrap_or_else(|_| Confirmation::reject("the confirmation handler failed"))
                }
            }
        }
    };
    json!({"decision": confirmation.decision.as_str(), "reason": confirmation.reason}).to_string()
}

/// `(content, label[, extra])`, keywords of those names, or one dict.
fn content_and_label(args: &[Value], kwargs: &Map<String, Value>) -> (String, String) {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let first = |fields: &Map<String, Value>, keys: &[&str]| keys.iter().find_map(|key| fields.get(*key)).map(text);
    match args {
        [Value::Object(fields)] if kwargs.is_empty() => (
            first(fields, &["content", "command", "text", "message"])
                .unwrap_or_else(|| Value::Object(fields.clone()).to_string()),
            first(fields, &["label", "title", "action"]).unwrap_or_default(),
        ),
        _ => (
            args.first().map(text).or_else(|| first(kwargs, &["content"])).unwrap_or_default(),
            args.get(1).map(text).or_else(|| first(kwargs, &["label"])).unwrap_or_default(),
        ),
    }
}

/// The key of a library's configuration: its folder's name for a library folder,
/// else the file stem.
pub fn library_key(library: &Library) -> String {
    library
        .package
        .as_deref()
        .and_then(Path::file_name)
        .map_or_else(|| library.stem.clone(), |name| name.to_string_lossy().into_owned())
}

/// `unknown tool `x``, with the closest names when there are any.
pub fn unknown_tool(registry: &Registry, name: &str) -> String {
    let close = closest_names(registry, name);
    if close.is_empty() {
        format!("unknown tool `{name}`")
    } else {
        format!(
            "unknown tool `{name}`; did you mean {}?",
            close.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        )
    }
}

/// Up to three tool names near `name` (edit distance, or one containing the other).
pub fn closest_names(registry: &Registry, name: &str) -> Vec<String> {
    let wanted = name.to_lowercase();
    let bare = wanted.strip_prefix("tool_").unwrap_or(&wanted);
    let mut scored: Vec<(usize, &str)> = registry
        .tools()
        .filter_map(|(_, tool)| {
            let candidate = tool.name.to_lowercase();
            let distance = edit_distance(&wanted, &candidate);
            let contains = bare.len() >= 3 && candidate.contains(bare);
            (distance <= (wanted.chars().count() / 3).max(2) || contains).then_some((distance, tool.name.as_str()))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, name)| name.to_string()).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current.push((previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// `VENV/lib/pythonX.Y/site-packages` for the interpreter lcp embeds.
fn site_packages(venv: &Path) -> Result<PathBuf, String> {
    let site = venv.join("lib").join(format!("python{}", python::VERSION)).join("site-packages");
    if site.is_dir() {
        Ok(site)
    } else {
        Err(format!(
            "{}: not a virtual environment for Python {} (no {})",
            venv.display(),
            python::VERSION,
            site.strip_prefix(venv).unwrap_or(&site).display()
        ))
    }
}

/// The interpreter lcp embeds: `(executable, major.minor)`.
pub fn python_build() -> (&'static str, &'static str) {
    (python::EXECUTABLE, python::VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirm_arguments_in_every_shape() {
        let map = |v: Value| v.as_object().cloned().unwrap();
        let none = Map::new();
        assert_eq!(content_and_label(&[json!("rm -rf x"), json!("Run")], &none), ("rm -rf x".into(), "Run".into()));
        assert_eq!(content_and_label(&[json!("a"), json!("b"), json!({"x": 1})], &none), ("a".into(), "b".into()));
        assert_eq!(
            content_and_label(&[json!({"command": "ls", "title": "List"})], &none),
            ("ls".into(), "List".into())
        );
        assert_eq!(content_and_label(&[], &map(json!({"content": "c", "label": "l"}))), ("c".into(), "l".into()));
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("tool_add", "tool_add"), 0);
        assert_eq!(edit_distance("tool_ad", "tool_add"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
