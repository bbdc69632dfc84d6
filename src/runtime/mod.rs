//! Running tools in an embedded CPython, on demand (SPEC §5–§8).
//!
//! - [`Runtime`]: the host API: call a tool, ask the prompt providers, register the
//!   confirm handler. It looks the tool up, validates the arguments and hands a
//!   self-contained job to where tools run: supervised worker processes
//!   ([`Isolation::Workers`], SPEC §8) or this process ([`Isolation::InProcess`]).
//! - [`catalog`]: a registry that changes while the host runs: mounted libraries,
//!   tools registered from code, rescans that re-read only changed files (SPEC §6).
//! - `engine`: runs a job in this process's interpreter (in-process, and inside each
//!   worker). `python`: the only code in lcp that touches pyo3. `host.py`: the Python
//!   side (loading, hooks, conversion, capture).
//! - `supervisor`: the worker processes: starting, dispatching, time limits,
//!   cancellation, noticing a death and naming its cause. `worker`: a worker's side.
//!   `channel`: the private sockets between them.
//! - [`host_objects`]: what a tool asks of its host during a call (confirmations, the
//!   user, the model, progress, log records) and the per-call [`Callbacks`] that answer.
//! - `validate`: arguments against the tool's schema, in Rust, before Python runs.
//! - `capture`: keeps file descriptor 1 away from tools. `workspace`: leases the
//!   working directory to calls.
//!
//! Invariants: module code runs only when one of its tools or providers is asked
//! for; a tool's failure of any kind, `SystemExit` included, is a [`ToolResult`],
//! never a panic or an exit; nothing a tool prints reaches the host's stdout. With
//! worker processes, whatever a tool does to its process is one failed call.

mod capture;
pub mod catalog;
mod channel;
mod engine;
pub mod host_objects;
mod line_search;
mod process_tree;
mod python;
mod supervisor;
pub mod validate;
pub mod worker;
mod workspace;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Level};
use crate::extract::{self, Library, Tool};
use crate::registry::{Changes, Descriptions, Registry};
use crate::sync;
use engine::{Engine, Job, Kind, WirePath};
use host_objects::{Answer, Callbacks, Generation, Interaction, LogRecord, Model, Progress};

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
    /// one gets `None`. Default: [`extract::DEFAULT_INJECTED`].
    pub injected: Vec<String>,
    /// Time limit for each prompt provider in [`Runtime::prompt_descriptions`]. Default: 10 s.
    pub provider_timeout: Option<Duration>,
    /// Where tools run. Default: [`Isolation::InProcess`], since worker processes need
    /// a program that serves them ([`WorkerSettings::program`]); the `lcp` command
    /// line uses workers unless given `--in-process`.
    pub isolation: Isolation,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            libraries: BTreeMap::new(),
            autonomy_level: "safe".to_string(),
            venv: std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()).map(PathBuf::from),
            injected: extract::default_injected(),
            provider_timeout: Some(Duration::from_secs(10)),
            isolation: Isolation::InProcess,
        }
    }
}

/// Where tools run (SPEC §8).
#[derive(Debug, Clone, PartialEq)]
pub enum Isolation {
    /// In this process's interpreter: the fastest calls, for tools the host trusts. A
    /// tool that ends its process ends the host, and a time limit cannot stop a tool
    /// blocked in C code.
    InProcess,
    /// In supervised worker processes: whatever a tool does to its process is one
    /// failed call, and time limits and cancellation always stop it.
    Workers(WorkerSettings),
}

/// How worker processes are started and bounded.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerSettings {
    /// The program started as a worker, as `PROGRAM __worker`: an `lcp` binary, or a
    /// host binary that calls [`worker::main`] when given that argument.
    pub program: PathBuf,
    /// How many worker processes may run at once; calls beyond that share them (a
    /// worker runs several calls of the same workspace at a time). At least 1.
    pub workers: usize,
    /// Each worker's memory (its data segment) is capped at this many MiB.
    pub memory_limit_mib: Option<u64>,
    /// Keep one idle worker started ahead of need while there are fewer than
    /// `workers`: a call then does not wait for a worker to start, not even right after
    /// one died. Costs one idle interpreter; `lcp serve` keeps one, a single `lcp call`
    /// does not.
    pub standby: bool,
}

impl WorkerSettings {
    /// Workers of `program`, one per core, without a memory cap or a standby.
    pub fn new(program: impl Into<PathBuf>) -> WorkerSettings {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        WorkerSettings { program: program.into(), workers: cores, memory_limit_mib: None, standby: false }
    }

    /// Workers of the running executable (which must serve `__worker`, as `lcp` does).
    pub fn this_program() -> Result<WorkerSettings, RuntimeError> {
        let program = std::env::current_exe()
            .map_err(|err| RuntimeError::Workers(format!("cannot find lcp's own executable: {err}")))?;
        Ok(WorkerSettings::new(program))
    }
}

/// Answers what a tool asks to confirm.
pub type ConfirmHandler = Arc<dyn Fn(&ConfirmRequest) -> Confirmation + Send + Sync>;

/// Options of one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Working directory while the tool runs; the previous one is restored after,
    /// even on failure. In one process the directory is shared: calls for the same
    /// workspace run together, a call for another one waits until they are done (with
    /// worker processes it goes to another worker instead).
    pub workspace: Option<PathBuf>,
    /// Time limit; a tool still running then is stopped and the call fails.
    pub timeout: Option<Duration>,
    /// Stops the call when cancelled (with worker processes; in-process, a cancelled
    /// call is only no longer waited for by whoever cancelled it).
    pub cancel: Option<Cancel>,
    /// What answers this call's confirmations, questions to the user and
    /// `generate_text`, and hears its progress and log records; each one missing is
    /// the runtime's ([`Runtime::set_confirm_handler`] and the other setters).
    pub callbacks: Callbacks,
    /// Records below this Python level (`host_objects::level`) are not made.
    /// Default: info.
    pub log_level: Option<u32>,
    /// An output whose text is longer than this many bytes is cut where it is made
    /// (in the worker process), so the host never holds more ([`ToolResult::output_cut_from`]).
    pub max_output: Option<usize>,
}

/// A flag that stops a call (MCP `notifications/cancelled`).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks the call to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The outcome of a call (SPEC §5): `{"ok", "output", "error"?, "traceback"?, "stdout", "stderr"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Whether the tool succeeded.
    pub ok: bool,
    /// The return value as JSON (`null` when there is none).
    pub output: Value,
    /// Why it failed: `Type: message` for an exception.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The formatted traceback of the exception, if one was raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// What the tool printed on standard output, up to a bound.
    pub stdout: String,
    /// What the tool printed on standard error, up to a bound.
    pub stderr: String,
    /// When the output's text was longer than [`CallOptions::max_output`]: its length
    /// in bytes, and `output` holds the start of that text (a string) and no more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_cut_from: Option<usize>,
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
            output_cut_from: None,
        }
    }

    /// Cuts the output's text (a string as it is, anything else as JSON text) to
    /// `max` bytes where the result is made, so that no more of it is ever sent or
    /// held (SPEC §17). An object with content (`images`, `audio`, `resources`) is
    /// left whole: its text and its blocks are told apart where it is shown.
    pub(crate) fn bound(&mut self, max: usize) {
        let mut text = match &mut self.output {
            Value::String(text) if text.len() > max => std::mem::take(text),
            Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => return,
            Value::Object(fields) if CONTENT_KEYS.iter().any(|key| fields.get(*key).is_some_and(Value::is_array)) => {
                return;
            }
            other => {
                if json_length(other) <= max {
                    return;
                }
                serde_json::to_string(other).unwrap_or_default()
            }
        };
        let mut end = max.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.output_cut_from = Some(text.len());
        text.truncate(end);
        text.shrink_to_fit();
        self.output = Value::String(text);
    }
}

/// The keys of a result dict whose lists are content for the model (SPEC §10).
pub(crate) const CONTENT_KEYS: [&str; 3] = ["images", "audio", "resources"];

/// The length of a value's compact JSON text, counted without making it.
fn json_length(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// What a library asks the user to confirm, as its tool called the handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Every keyword argument, as JSON.
    pub kwargs: Map<String, Value>,
}

/// What the handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Go ahead, this once.
    Allow,
    /// Do not.
    Reject,
    /// Allow, and do not ask again for this kind of action.
    Always,
}

impl Decision {
    /// The name Python receives: `allow`, `reject` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Reject => "reject",
            Decision::Always => "always",
        }
    }
}

/// The handler's answer; Python receives `(decision, reason)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Allow, reject or always.
    pub decision: Decision,
    /// Why, for the tool to pass on.
    pub reason: String,
}

impl Confirmation {
    /// Allows, once, for `reason`.
    pub fn allow(reason: impl Into<String>) -> Self {
        Confirmation { decision: Decision::Allow, reason: reason.into() }
    }

    /// Rejects, for `reason`.
    pub fn reject(reason: impl Into<String>) -> Self {
        Confirmation { decision: Decision::Reject, reason: reason.into() }
    }
}

/// Runs the tools of a registry, in worker processes or in this process (see
/// [`Isolation`]).
///
/// In this process, the interpreter and the loaded libraries belong to the process:
/// every in-process `Runtime` shares them, and each library is imported and
/// initialised once per process, with the configuration of the runtime that first
/// loads it. Each worker process likewise loads a library once, on its first call
/// there. Each runtime has its own host callbacks (confirm handler, user interaction
/// handler, model, progress and log handlers), used for the calls it makes unless a
/// call brings its own. Relative paths (of tool files and workspaces) are
/// taken from the working directory the runtime was created in.
///
/// Calls may come from many threads. While an in-process call runs, the process's
/// fd 1 points at lcp's capture: a host that writes to its standard output while
/// tools may run writes through [`Runtime::claim_stdout`].
///
/// ```
/// use lcp::registry::{Options, Registry, Sources};
/// use lcp::runtime::{CallOptions, Runtime, RuntimeConfig};
/// use serde_json::json;
///
/// let folder = std::env::temp_dir().join(format!("lcp-doc-runtime-{}", std::process::id()));
/// std::fs::create_dir_all(&folder)?;
/// let code = "def tool_add(a: int, b: int = 1) -> int:\n    \"\"\"Adds.\"\"\"\n    return a + b\n";
/// std::fs::write(folder.join("math.py"), code)?;
/// let registry = Registry::load(&Sources { folders: vec![folder], files: vec![] }, &Options::default());
///
/// let runtime = Runtime::new(RuntimeConfig::default())?;
/// let result = runtime.call(&registry, "tool_add", &json!({"a": 2, "b": 3}), &CallOptions::default());
/// assert!(result.ok, "{result:?}");
/// assert_eq!(result.output, json!(5));
///
/// // Arguments the schema refuses never reach Python.
/// let refused = runtime.call(&registry, "tool_add", &json!({"a": "two"}), &CallOptions::default());
/// assert!(!refused.ok);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runtime {
    config: RuntimeConfig,
    base: PathBuf,
    callbacks: RwLock<Callbacks>,
    place: Place,
}

/// Where this runtime's calls run.
enum Place {
    InProcess(Engine),
    Workers(supervisor::Pool),
}

/// Call ids, unique in this process (and so in each of its workers).
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

impl Runtime {
    /// Starts the interpreter (once per process) or gets worker processes ready to
    /// start, and adds the virtual environment's site-packages. Runs no tool code.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let base = std::env::current_dir().map_err(|err| RuntimeError::WorkingDirectory(err.to_string()))?;
        let site_packages = match &config.venv {
            Some(venv) => Some(site_packages(&base.join(venv))?.to_string_lossy().into_owned()),
            None => None,
        };
        let settings = engine::Settings {
            libraries: config.libraries.clone(),
            autonomy_level: config.autonomy_level.clone(),
            injected: config.injected.clone(),
            site_packages,
        };
        let place = match &config.isolation {
            Isolation::InProcess => Place::InProcess(Engine::start(settings, None).map_err(RuntimeError::Python)?),
            Isolation::Workers(workers) => {
                Place::Workers(supervisor::Pool::new(workers.clone(), settings).map_err(RuntimeError::Workers)?)
            }
        };
        Ok(Runtime { config, base, callbacks: RwLock::default(), place })
    }

    /// Starts a worker process ahead of the first call, in the background (with
    /// worker processes; nothing otherwise).
    pub fn warm_up(&self) {
        if let Place::Workers(pool) = &self.place {
            pool.warm_up();
        }
    }

    /// Ends the worker processes and waits for them (with worker processes; nothing
    /// otherwise). Calls made after fail. Dropping the runtime does the same.
    pub fn shutdown(&self) {
        if let Place::Workers(pool) = &self.place {
            pool.close();
        }
    }

    /// Registers the confirm handler, and calls `set_confirm_handler` again on every
    /// loaded library that defines it. Returns the hooks that failed (in-process; a
    /// worker reports them on its standard error).
    pub fn set_confirm_handler(
        &self,
        handler: impl Fn(&ConfirmRequest) -> Confirmation + Send + Sync + 'static,
    ) -> Vec<Diagnostic> {
        sync::write(&self.callbacks).confirm = Some(Arc::new(handler));
        match &self.place {
            Place::InProcess(engine) => engine.rebind(),
            Place::Workers(pool) => {
                pool.rebind();
                Vec::new()
            }
        }
    }

    /// Registers the handler of what tools ask the user (`user_interaction_handler`,
    /// SPEC §9). Without one, such a request raises an error in the tool.
    pub fn set_user_interaction_handler(&self, handler: impl Fn(&Interaction) -> Answer + Send + Sync + 'static) {
        sync::write(&self.callbacks).interact = Some(Arc::new(handler));
    }

    /// Registers the model `generate_text` asks (SPEC §9); `vision`: whether images
    /// may be sent. Without one, `generate_text` raises an error that says so.
    pub fn set_model(
        &self,
        generate: impl Fn(&Generation) -> Result<String, String> + Send + Sync + 'static,
        vision: bool,
    ) {
        sync::write(&self.callbacks).model = Some(Model { generate: Arc::new(generate), vision });
    }

    /// Registers what hears `tool_context.emit_progress` (SPEC §9).
    pub fn set_progress_handler(&self, handler: impl Fn(&Progress) + Send + Sync + 'static) {
        sync::write(&self.callbacks).progress = Some(Arc::new(handler));
    }

    /// Registers what hears the records tools log (SPEC §9); without it they go to
    /// the result's `stderr`.
    pub fn set_log_handler(&self, handler: impl Fn(&LogRecord) + Send + Sync + 'static) {
        sync::write(&self.callbacks).log = Some(Arc::new(handler));
    }

    /// Runs a tool: validates `args` against its schema (nothing runs when they are
    /// invalid), loads its library on first use, converts the arguments, calls it.
    pub fn call(&self, registry: &Registry, tool: &str, args: &Value, options: &CallOptions) -> ToolResult {
        let Some((library, found)) = registry.tool(tool) else {
            return ToolResult::failure(unknown_tool(registry, tool));
        };
        let schema = found.parameters.value();
        let meant = validate::as_meant(schema, args);
        let args = meant.as_ref().unwrap_or(args);
        let problems = validate::check(schema, args);
        if !problems.is_empty() {
            return ToolResult::failure(validate::report(tool, schema, &problems));
        }
        self.call_checked(library, found, args, options)
    }

    /// [`Runtime::call`] of `tool` of `library` with arguments the caller has already
    /// checked against its schema: `lcp test` checks each payload itself, to say which
    /// payload was invalid and where it came from.
    pub(crate) fn call_checked(
        &self,
        library: &Library,
        tool: &Tool,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        let rerun = tool.policy.idempotent == Some(true) || tool.policy.read_only == Some(true);
        self.run(library, &tool.name, Kind::Tool, args, options, options.timeout, rerun)
    }

    /// Asks every tool's prompt provider for its description (SPEC §2): the
    /// descriptions to lay over the static ones, and a warning for each provider that
    /// failed (its tool keeps its static description).
    pub fn prompt_descriptions(&self, registry: &Registry, options: &CallOptions) -> (Descriptions, Vec<Diagnostic>) {
        let (mut descriptions, mut diagnostics) = (Descriptions::default(), Vec::new());
        for (library, tool) in registry.tools() {
            let Some(provider) = &tool.prompt_provider else { continue };
            match self.provide(library, provider, options) {
                Ok(text) => descriptions.insert(tool.name.clone(), text),
                Err(err) => diagnostics.push(Diagnostic::new(
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
        (descriptions, diagnostics)
    }

    /// The dynamic prompt of every library that has one (`tool_<stem>_prompt`).
    pub fn library_prompts(
        &self,
        registry: &Registry,
        options: &CallOptions,
    ) -> (Vec<(PathBuf, String)>, Vec<Diagnostic>) {
        let (mut prompts, mut diagnostics) = (Vec::new(), Vec::new());
        for library in registry.libraries() {
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
        let result = self.run(library, provider, Kind::Provider, &Value::Null, options, timeout, false);
        match (result.ok, result.output) {
            (true, Value::String(text)) if !text.trim().is_empty() => Ok(text),
            (true, _) => Err("it returned an empty description".to_string()),
            (false, _) => Err(result.error.unwrap_or_default()),
        }
    }

    /// Drops the loaded modules of these files; their next call imports them again
    /// (in every worker).
    pub fn forget(&self, files: &[PathBuf]) {
        let files: Vec<WirePath> = files.iter().map(|path| absolute(&self.base, path)).collect();
        match &self.place {
            Place::InProcess(_) => engine::drop_modules(files),
            Place::Workers(pool) => pool.forget(files),
        }
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

    /// Evaluates a Python expression in this process's interpreter (started if it
    /// was not) and returns its `repr()`: for diagnostics (`sys.prefix`) and
    /// measurements, not for tools.
    pub fn eval(&self, expression: &str) -> Result<String, RuntimeError> {
        python::start(|_| String::new(), workspace::before_chdir, None).map_err(RuntimeError::Python)?;
        python::eval_repr(expression).map_err(RuntimeError::Evaluation)
    }

    /// Makes this process adopt the orphans of what tools start (a child subreaper),
    /// so that those a crashed worker's tools left are ended with it, and none
    /// outlives the runtime's end. For a program whose only children are its
    /// runtime's workers (`lcp serve`, `lcp call`): another child's orphans would be
    /// ended too.
    pub fn adopt_orphans() {
        process_tree::become_subreaper();
    }

    /// Takes the real standard output for the whole process (see `capture`): from
    /// now on fd 1 never reaches it, and the returned file is the only way to it.
    pub fn claim_stdout() -> std::io::Result<File> {
        capture::claim()
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        library: &Library,
        function: &str,
        kind: Kind,
        args: &Value,
        options: &CallOptions,
        timeout: Option<Duration>,
        rerun: bool,
    ) -> ToolResult {
        let callbacks = options.callbacks.clone().or(&sync::read(&self.callbacks));
        let job = Job {
            id: NEXT_CALL.fetch_add(1, Ordering::Relaxed),
            kind,
            file: absolute(&self.base, &library.path),
            package: library.package.as_deref().map(|dir| absolute(&self.base, dir)),
            library: library_key(library),
            function: function.to_string(),
            args: args.clone(),
            workspace: options.workspace.as_deref().map(|dir| WirePath(self.base.join(dir))),
            host: callbacks.offered(options.log_level.unwrap_or(host_objects::level::INFO)),
            rerun,
            max_output: options.max_output,
        };
        match &self.place {
            Place::InProcess(engine) => {
                let mut result = engine.run(&job, callbacks, timeout);
                if let Some(max) = job.max_output {
                    result.bound(max);
                }
                result
            }
            // A worker cuts the output before it sends it.
            Place::Workers(pool) => pool.run(&job, callbacks, timeout, options.cancel.as_ref()),
        }
    }
}

/// `path` from `base`, without `.` components: the key of a file's module.
pub(crate) fn absolute(base: &Path, path: &Path) -> WirePath {
    WirePath(base.join(path).components().collect::<PathBuf>())
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
    format!("unknown tool `{name}`{}", did_you_mean(&closest_names(registry, name)))
}

/// Up to three tool names near `name` (edit distance, or one containing the other).
pub fn closest_names(registry: &Registry, name: &str) -> Vec<String> {
    let bare = |candidate: &str| candidate.strip_prefix("tool_").map(str::to_string);
    closest(name, registry.tools().map(|(_, tool)| tool.name.as_str()), bare)
}

/// Up to three of `candidates` near `wanted`, nearest first: within an edit distance
/// of a third of its length (at least 2), ignoring case, or containing `wanted`
/// (less the prefix `strip` takes off, when that leaves three characters or more).
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    strip: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let bare = strip(&wanted).unwrap_or_else(|| wanted.clone());
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|name| {
            let candidate = name.to_lowercase();
            let distance = edit_distance(&wanted, &candidate);
            let contains = bare.len() >= 3 && candidate.contains(bare.as_str());
            (distance <= (wanted.chars().count() / 3).max(2) || contains).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, name)| name.to_string()).collect()
}

/// ` (did you mean `a`, `b`?)` for the names given, nothing for none.
pub fn did_you_mean(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    format!("; did you mean {}?", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
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
fn site_packages(venv: &Path) -> Result<PathBuf, RuntimeError> {
    let site = venv.join("lib").join(format!("python{}", python::VERSION)).join("site-packages");
    if site.is_dir() {
        Ok(site)
    } else {
        let message = format!(
            "not a virtual environment for Python {} (no {})",
            python::VERSION,
            site.strip_prefix(venv).unwrap_or(&site).display()
        );
        Err(RuntimeError::Venv { path: venv.to_path_buf(), message })
    }
}

/// Why a [`Runtime`] could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The working directory, which relative paths are taken from, cannot be read.
    WorkingDirectory(String),
    /// [`RuntimeConfig::venv`] is not a virtual environment for the embedded Python.
    Venv {
        /// The folder given.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The embedded interpreter or `host.py` could not start: the message, with
    /// Python's traceback when there is one.
    Python(String),
    /// Worker processes cannot be started ([`Isolation::Workers`]).
    Workers(String),
    /// [`Runtime::eval`]'s expression raised: Python's message.
    Evaluation(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::WorkingDirectory(message) => write!(f, "cannot read the working directory: {message}"),
            RuntimeError::Venv { path, message } => write!(f, "{}: {message}", path.display()),
            RuntimeError::Python(message) | RuntimeError::Workers(message) | RuntimeError::Evaluation(message) => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for RuntimeError {}

/// The interpreter lcp embeds: `(executable, major.minor)`.
pub fn python_build() -> (&'static str, &'static str) {
    (python::EXECUTABLE, python::VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("tool_add", "tool_add"), 0);
        assert_eq!(edit_distance("tool_ad", "tool_add"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
