//! Running one [`Job`] in this process's embedded CPython: what lcp does in-process
//! (`--in-process`) and what each worker process does for the calls it is sent.
//!
//! A job is self-contained (the library's file, package and key, the function, the
//! arguments, the workspace), so it crosses the worker channel as it is. It takes one
//! of two paths. A tool's first call and a call with a timeout go through `host.py`'s
//! `call` (JSON text in and out). Once a tool's library is loaded, a tool whose
//! parameters are plain JSON types is called *directly*: its arguments are built from
//! the `serde_json` values and its return value read back without JSON text; `host.py`
//! only joins in for what the tool prints, an exception or a value that is not plain
//! JSON. Both paths give the same result for the same job.
//!
//! Must never: look at a registry (a job carries what it needs), or let a tool's
//! failure be anything but a [`ToolResult`].

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::host_objects::{self, Callbacks, Offered};
use super::{Cancel, Carried, Outcome, ToolResult, capture, python, workspace};
use crate::diag::{Diagnostic, Level};
use crate::discovery::registry::FastMap;
use crate::fast_paths::FastPath;
use crate::sync;

/// How long a call that ran out of time gets to unwind after it was told to stop.
const GRACE: Duration = Duration::from_secs(2);

/// What runs: a tool (or a prompt or a completion function, called as tools are), a
/// resource (whose `bytes` are carried as base64 blobs), or a prompt provider (a
/// tool's or a library's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Tool,
    Resource,
    Provider,
}

/// One call, with everything needed to run it in any process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Job {
    /// Unique in the process that made it; the key to stop the call.
    pub id: u64,
    pub kind: Kind,
    /// The library's file, absolute.
    pub file: WirePath,
    /// The library folder (a private package), absolute.
    pub package: Option<WirePath>,
    /// The library's key ([`super::library_key`]).
    pub library: String,
    pub function: String,
    pub args: Value,
    /// The working directory while it runs, absolute; `None`: the process's own.
    pub workspace: Option<WirePath>,
    /// Which host callbacks the call has (SPEC §9): the library gets
    /// `set_confirm_handler` when it has a confirm handler; `host.py` makes its log
    /// records from the level given.
    pub host: Offered,
    /// Whether the call may run again in another worker when another call's crash
    /// ends the one it ran in: its tool declares `idempotent` or `read_only`. Never
    /// sent: the supervisor's own business.
    #[serde(skip)]
    pub rerun: bool,
    /// Cut the output's text to this many bytes before it leaves the process.
    #[serde(default)]
    pub max_output: Option<usize>,
    /// A `[[tools]]` tool (SPEC §14): the module to import instead of `file`.
    #[serde(default)]
    pub module: Option<Box<ModuleTarget>>,
    /// The sandbox its tool's declarations ask for: the worker that runs it is in it,
    /// and `host.py` names the declaration a refused write or socket broke.
    #[serde(default)]
    pub sandbox: super::sandbox::Sandbox,
}

/// Where a config-defined tool's function is: `function` of `name`, imported from
/// `path` first, then the venv and the standard library.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ModuleTarget {
    pub name: String,
    pub path: Vec<WirePath>,
    /// The declared arguments, in order: passed by name when the function has
    /// parameters of those names, else by position in this order.
    pub parameters: Vec<String>,
}

/// A path as it crosses JSON (to `host.py`, to a worker), in lcp's one path encoding
/// ([`crate::path_json`]): its text, with `%` and the bytes that are not UTF-8
/// percent-escaped, which `host.py` turns back into the path Python uses for those
/// bytes (`os.fsdecode`). Nothing is lost either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WirePath(pub PathBuf);

impl std::ops::Deref for WirePath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Serialize for WirePath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::path_json::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for WirePath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(WirePath(crate::path_json::decode(&text)))
    }
}

/// What an engine is set up with, once per process.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Settings {
    pub libraries: BTreeMap<String, Map<String, Value>>,
    pub autonomy_level: super::Autonomy,
    pub injected: Vec<String>,
    /// A virtual environment's site-packages, absolute.
    pub site_packages: Option<String>,
    /// The declarations the worker enforces (SPEC §18), and the one folder a read-only
    /// worker writes in (made for it by the supervisor).
    #[serde(default)]
    pub sandbox: super::sandbox::Sandbox,
    #[serde(default)]
    pub scratch: Option<WirePath>,
    /// Where a worker that is not read-only may write: its workspace, the system's
    /// temp folder, `[sandbox] writable`.
    #[serde(default)]
    pub writable: Vec<WirePath>,
    /// Whether a declaration the kernel cannot enforce fails the worker's start.
    #[serde(default)]
    pub require: bool,
    /// Whether the worker enters no sandbox at all ([`super::WorkerSettings::sandboxed`]).
    #[serde(default)]
    pub unconfined: bool,
    /// Set by the worker once the kernel confines its writes.
    #[serde(default)]
    pub confined: bool,
}

/// Called with `(call id, "out" | "err", text)` each time a tool prints, as it prints.
pub(crate) type Printed = Box<dyn Fn(u64, &str, &str) + Send + Sync>;

/// The embedded interpreter of this process, running jobs.
pub(crate) struct Engine {
    settings: Settings,
    /// How each tool called so far is called, by function name.
    resolved: RwLock<FastMap<String, Resolved>>,
}

/// A tool's [`python::Resolution`], while the modules it was made with stay loaded.
struct Resolved {
    file: PathBuf,
    generation: u64,
    direct: Option<Arc<python::Direct>>,
}

impl Resolved {
    fn holds(&self, file: &Path, generation: u64) -> bool {
        self.generation == generation && self.file == file
    }
}

/// The outcome of trying a job on the direct path.
enum Direct {
    Ran(Box<ToolResult>),
    /// Not callable directly (yet, or any more): `host.py`'s path runs it.
    Declined,
}

thread_local! {
    /// Calls running on this thread: a call made while another one runs here (from a
    /// confirm handler) takes `host.py`'s path, which keeps the outer call's state.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// What holds while a call runs, on either path: its callbacks are the ones
/// `host.py` reaches for its id, it has its share of the working directory, and it
/// counts in this thread's [`DEPTH`]. All of it ends when the scope is dropped.
struct CallScope {
    _registration: Option<Registration>,
    _lease: workspace::Lease,
}

impl CallScope {
    fn enter(id: u64, callbacks: Callbacks, workspace: Option<&Path>) -> Result<CallScope, String> {
        // With no callbacks, `host.py`'s requests get the answers of a host without them.
        let registration = (!callbacks.is_empty()).then(|| Registration::new(id, callbacks));
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

/// What belongs to this process's interpreter rather than to one [`Engine`]: there
/// is one interpreter per process, so its loaded modules, the callbacks `host.py`
/// reaches by call id and the log level it last set are one object, [`INTERPRETER`].
struct Interpreter {
    /// Counts the times loaded modules were dropped: a resolution made before is stale.
    generation: AtomicU64,
    /// The callbacks of each call in progress, by call id.
    handlers: LazyLock<Mutex<HashMap<u64, Callbacks>>>,
    /// The log level `host.py` last gave Python's root logger (set by each call through
    /// `host.py`): a direct call of a job with another level goes through `host.py`.
    log_level: AtomicU32,
    /// Files whose loaded modules are out of date, waiting for the next call to drop them.
    dropped: Mutex<Vec<WirePath>>,
    any_dropped: AtomicBool,
    /// Held while modules are dropped: a call that finds some marked waits until they
    /// are gone, so it never runs the old module while another thread drops it.
    forgetting: Mutex<()>,
}

/// Process-wide: CPython has one interpreter per process, shared by every engine.
static INTERPRETER: Interpreter = Interpreter {
    generation: AtomicU64::new(0),
    handlers: LazyLock::new(Default::default),
    log_level: AtomicU32::new(u32::MAX),
    dropped: Mutex::new(Vec::new()),
    any_dropped: AtomicBool::new(false),
    forgetting: Mutex::new(()),
};

impl Interpreter {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Marks modules as out of date: the next call drops them.
    fn drop_modules(&self, paths: impl IntoIterator<Item = WirePath>) {
        let mut dropped = sync::lock(&self.dropped);
        dropped.extend(paths);
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.any_dropped.store(!dropped.is_empty(), Ordering::Release);
    }

    /// Drops the modules marked out of date, before a call through `host.py`.
    fn forget_dropped_modules(&self) {
        if !self.any_dropped.load(Ordering::Acquire) {
            return;
        }
        let _one_at_a_time = sync::lock(&self.forgetting);
        let paths = std::mem::take(&mut *sync::lock(&self.dropped));
        if !paths.is_empty()
            && let Ok(json) = serde_json::to_string(&paths)
        {
            let _ = python::forget(&json);
        }
        let dropped = sync::lock(&self.dropped);
        self.any_dropped.store(!dropped.is_empty(), Ordering::Release);
    }

    /// Whether a call may take the direct path as far as the process is concerned: no
    /// modules wait to be dropped and `host.py` last set the level the job logs at.
    fn allows_direct(&self, log_level: u32) -> bool {
        !self.any_dropped.load(Ordering::Acquire) && self.log_level.load(Ordering::Acquire) == log_level
    }
}

impl Engine {
    /// Starts the interpreter (once per process) and adds the virtual environment's
    /// site-packages. Runs no tool code. `printed` hears what tools print as they do.
    pub(crate) fn start(settings: Settings, printed: Option<Printed>) -> Result<Engine, String> {
        python::start(answer_host, workspace::before_chdir, printed)?;
        if let Some(site) = &settings.site_packages {
            python::add_site_dir(site)?;
        }
        if !settings.sandbox.is_open() || settings.confined {
            python::confine(settings.sandbox.read_only, settings.sandbox.offline, settings.confined)?;
        }
        Ok(Engine { settings, resolved: RwLock::default() })
    }

    /// Runs a job; `timeout` stops it from inside the process (the gentle way only).
    pub(crate) fn run(
        &self,
        job: &Job,
        callbacks: Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> ToolResult {
        // A module's function is found by `host.py` on each call (it keys nothing by file).
        if job.kind == Kind::Tool
            && job.module.is_none()
            && timeout.is_none()
            && cancel.is_none()
            && let Direct::Ran(result) = self.call_direct(job, &callbacks)
        {
            return *result;
        }
        let result = self.run_hosted(job, callbacks, timeout, cancel);
        INTERPRETER.log_level.store(job.host.log_level, Ordering::Release);
        if job.kind == Kind::Tool && job.module.is_none() && FastPath::Direct.on() {
            self.resolve(job);
        }
        result
    }

    /// Marks the modules of these files as out of date: the next call drops them.
    /// Modules belong to the process, like the interpreter: every engine of this
    /// process stops using them.
    /// The sandbox this process entered (SPEC §18).
    pub(crate) fn sandbox(&self) -> super::sandbox::Sandbox {
        self.settings.sandbox
    }

    pub(crate) fn drop_modules(&self, paths: impl IntoIterator<Item = WirePath>) {
        INTERPRETER.drop_modules(paths);
    }

    /// Calls `set_confirm_handler` again on every loaded library that defines it.
    /// Returns the hooks that failed.
    pub(crate) fn rebind(&self) -> Vec<Diagnostic> {
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

    /// The direct path (see the module doc).
    fn call_direct(&self, job: &Job, callbacks: &Callbacks) -> Direct {
        let Value::Object(args) = &job.args else { return Direct::Declined };
        if DEPTH.get() > 0 || !INTERPRETER.allows_direct(job.host.log_level) || !FastPath::Direct.on() {
            return Direct::Declined;
        }
        let direct = {
            let resolved = sync::read(&self.resolved);
            let entry = resolved.get(&job.function).filter(|e| e.holds(&job.file, INTERPRETER.generation()));
            match entry.and_then(|entry| entry.direct.clone()) {
                Some(direct) => direct,
                None => return Direct::Declined,
            }
        };
        if !direct.takes(args) {
            return Direct::Declined;
        }
        let scope = match CallScope::enter(job.id, callbacks.clone(), job.workspace.as_deref()) {
            Ok(scope) => scope,
            Err(err) => return Direct::Ran(Box::new(ToolResult::failure(err))),
        };
        let capture = capture::begin(job.id);
        let outcome = python::call_direct(&direct, job.id, args);
        let raw_stdout = capture.finish();
        Direct::Ran(Box::new(match outcome {
            Ok(python::DirectOutcome::Rebound) => {
                // The module rebound the tool's name: nothing ran; `host.py` calls what
                // the name holds now, and the tool is resolved again after.
                drop(scope);
                sync::write(&self.resolved).remove(&job.function);
                return Direct::Declined;
            }
            Ok(python::DirectOutcome::Returned { output, stdout, stderr }) => ToolResult {
                outcome: Outcome::Returned,
                output,
                error: None,
                traceback: None,
                stdout: stdout + &raw_stdout,
                stderr,
                output_cut_from: None,
                refused: Vec::new(),
            },
            Ok(python::DirectOutcome::Replied { reply, stdout, stderr }) => {
                let mut result = read_reply(Ok(reply), raw_stdout);
                result.stdout.insert_str(0, &stdout);
                result.stderr.insert_str(0, &stderr);
                result
            }
            Err(err) => read_reply(Err(err), raw_stdout),
        }))
    }

    /// Records how the job's function is called from now on, unless known.
    fn resolve(&self, job: &Job) {
        let generation = INTERPRETER.generation();
        let resolved = sync::read(&self.resolved);
        if resolved.get(&job.function).is_some_and(|entry| entry.holds(&job.file, generation)) {
            return;
        }
        drop(resolved);
        let direct = match python::direct(&job.file, &job.function, &job.library, &self.settings.injected) {
            python::Resolution::Direct(direct) => Some(Arc::new(direct)),
            python::Resolution::Never => None,
            python::Resolution::NotLoaded => return,
        };
        let entry = Resolved { file: job.file.0.clone(), generation, direct };
        sync::write(&self.resolved).insert(job.function.clone(), entry);
    }

    /// `host.py`'s path, on this thread or, with a timeout, on a thread of its own.
    fn run_hosted(
        &self,
        job: &Job,
        callbacks: Callbacks,
        timeout: Option<Duration>,
        cancel: Option<&Cancel>,
    ) -> ToolResult {
        INTERPRETER.forget_dropped_modules();
        let request = Request {
            call_id: job.id,
            kind: job.kind,
            file: &job.file,
            package: job.package.as_ref(),
            library: &job.library,
            function: &job.function,
            args: &job.args,
            config: self.settings.libraries.get(&job.library),
            autonomy_level: self.settings.autonomy_level.as_str(),
            host: &job.host,
            injected: &self.settings.injected,
            workspace_path: job.workspace.as_deref(),
            module: job.module.as_deref(),
        };
        let request = match serde_json::to_string(&request) {
            Ok(text) => text,
            Err(err) => return ToolResult::failure(format!("cannot encode the call: {err}")),
        };
        match (timeout, cancel) {
            (None, None) => execute(job.id, &request, callbacks, job.workspace.as_deref()),
            (limit, cancel) => {
                let workspace = job.workspace.as_ref().map(|dir| dir.0.clone());
                execute_bounded(job.id, request, callbacks, workspace, Bounds { limit, cancel }, &job.function)
            }
        }
    }
}

/// One call as `host.py` reads it.
#[derive(Serialize)]
struct Request<'a> {
    call_id: u64,
    kind: Kind,
    file: &'a WirePath,
    package: Option<&'a WirePath>,
    library: &'a str,
    function: &'a str,
    args: &'a Value,
    config: Option<&'a Map<String, Value>>,
    autonomy_level: &'a str,
    host: &'a Offered,
    injected: &'a [String],
    /// For `tool_context.workspace_path` (the directory itself is leased in Rust).
    workspace_path: Option<&'a Path>,
    module: Option<&'a ModuleTarget>,
}

/// Runs the call on this thread, in the working directory `workspace` (the host's
/// own when `None`).
fn execute(id: u64, request: &str, callbacks: Callbacks, workspace: Option<&Path>) -> ToolResult {
    let _scope = match CallScope::enter(id, callbacks, workspace) {
        Ok(scope) => scope,
        Err(err) => return ToolResult::failure(err),
    };
    let capture = capture::begin(id);
    let reply = python::call(request);
    let raw_stdout = capture.finish();
    read_reply(reply, raw_stdout)
}

/// A result from `host.py`'s reply and what reached fd 1.
fn read_reply(reply: Result<String, String>, raw_stdout: String) -> ToolResult {
    let reply =
        reply.and_then(|text| serde_json::from_str::<Carried>(&text).map_err(|err| format!("unreadable reply: {err}")));
    match reply {
        Ok(reply) => {
            let mut result = ToolResult::from(reply);
            result.stdout.push_str(&raw_stdout);
            result
        }
        Err(err) => {
            let mut result = ToolResult::failure(format!("lcp's Python host failed: {err}"));
            result.stdout = raw_stdout;
            result
        }
    }
}

/// What may stop an in-process call: its time limit, its caller's cancellation.
struct Bounds<'c> {
    limit: Option<Duration>,
    cancel: Option<&'c Cancel>,
}

/// How often a bounded call looks at its cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Runs the call on its own thread and waits until it ends, its time limit passes
/// or its caller cancels it. A call still running then is stopped (the stop
/// exception is raised in its thread); one that cannot be stopped (blocked outside
/// Python code) is left running and its result dropped.
fn execute_bounded(
    id: u64,
    request: String,
    callbacks: Callbacks,
    workspace: Option<PathBuf>,
    bounds: Bounds<'_>,
    function: &str,
) -> ToolResult {
    let (sender, receiver) = mpsc::channel();
    let worker = std::thread::Builder::new().name(format!("lcp-call-{id}")).spawn(move || {
        let _ = sender.send(execute(id, &request, callbacks, workspace.as_deref()));
    });
    if let Err(err) = worker {
        return ToolResult::failure(format!("cannot start a thread for the call: {err}"));
    }
    let deadline = bounds.limit.map(|limit| std::time::Instant::now() + limit);
    let (outcome, message) = loop {
        let now = std::time::Instant::now();
        let left = deadline.map(|deadline| deadline.saturating_duration_since(now));
        if left == Some(Duration::ZERO) {
            let limit = bounds.limit.unwrap_or_default().as_secs_f64();
            break (Outcome::TimedOut, format!("`{function}` timed out after {limit} s"));
        }
        if bounds.cancel.is_some_and(Cancel::is_cancelled) {
            break (Outcome::Cancelled, format!("`{function}` was cancelled"));
        }
        // Without a cancel flag to look at, the whole time left in one wait.
        let wait = match (left, bounds.cancel) {
            (Some(left), None) => left,
            (Some(left), Some(_)) => left.min(CANCEL_POLL),
            (None, _) => CANCEL_POLL,
        };
        match receiver.recv_timeout(wait) {
            Ok(result) => return result,
            Err(RecvTimeoutError::Disconnected) => return ToolResult::failure("the call ended without a result"),
            Err(RecvTimeoutError::Timeout) => {}
        }
    };
    python::stop(id);
    let late = receiver.recv_timeout(GRACE);
    match late {
        // Told to stop, it failed with an error of its own: say so, with that error.
        Ok(mut result) if result.outcome != Outcome::TimedOut && !result.ok() && result.error.is_some() => {
            let own = result.error.take().unwrap_or_default();
            result.error = Some(format!("{message}; told to stop, it failed with an error of its own: {own}"));
            result.outcome = outcome;
            result
        }
        Ok(mut result) => {
            result.outcome = outcome;
            result.error = Some(format!("{message} and was stopped"));
            result
        }
        Err(_) => ToolResult::ended(
            outcome,
            format!(
                "{message}; it could not be stopped (it is blocked outside Python code) and goes on in the background, \
             its result will be dropped (run lcp with worker processes to end such a tool)"
            ),
        ),
    }
}

/// Raises the timeout exception in the thread running call `id`, if it runs tool
/// code (on either path). Returns whether it did.
pub(crate) fn stop(id: u64) -> bool {
    python::stop(id)
}

/// Makes callbacks the ones `host.py` reaches for the call `id`.
struct Registration(u64);

impl Registration {
    fn new(id: u64, callbacks: Callbacks) -> Registration {
        sync::lock(&INTERPRETER.handlers).insert(id, callbacks);
        Registration(id)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        sync::lock(&INTERPRETER.handlers).remove(&self.0);
    }
}

/// `host.py`'s requests and notices (SPEC §9): answered with the callbacks of the
/// call they belong to.
fn answer_host(text: &str) -> String {
    host_objects::answer_wire(text, |call| call.and_then(|id| sync::lock(&INTERPRETER.handlers).get(&id).cloned()))
}
