//! [`Runtime`]: the host API over the embedded CPython (the `python` feature). It
//! looks a tool up, validates its arguments and hands a self-contained job to where
//! tools run: this process's interpreter (`engine`) or supervised worker processes
//! (`supervisor`). Owns call ids and the runtime's host callbacks; never touches pyo3
//! itself (`python` does).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::engine::{self, Engine, Job, Kind, ModuleTarget, WirePath};
use super::host_objects::{self, Answer, Callbacks, Generated, Generation, Interaction, LogRecord, Model, Progress};
use super::sandbox::Sandbox;
use super::{
    CallOptions, ConfirmRequest, Confirmation, Isolation, RuntimeConfig, RuntimeError, ToolResult, capture,
    library_key, process_tree, python, supervisor, validate, workspace,
};
use crate::diag::{Diagnostic, Level};
use crate::discovery::extract::{Library, Origin, Tool};
use crate::discovery::registry::{Changes, Descriptions, Registry};
use crate::host::view::Member;
use crate::sync;

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
/// use lcp::discovery::registry::{Options, Registry, Sources};
/// use lcp::runtime::{CallOptions, Runtime, RuntimeConfig};
/// use serde_json::json;
///
/// let folder = std::env::temp_dir().join(format!("lcp-doc-runtime-{}", std::process::id()));
/// std::fs::create_dir_all(&folder)?;
/// let code = "def tool_add(a: int, b: int = 1) -> int:\n    \"\"\"Adds.\"\"\"\n    return a + b\n";
/// std::fs::write(folder.join("math.py"), code)?;
/// let registry = Registry::load(&Sources { folders: vec![folder.clone()], files: vec![] }, &Options::default());
///
/// let runtime = Runtime::new(RuntimeConfig::default())?;
/// let result = runtime.call(&registry, "tool_add", &json!({"a": 2, "b": 3}), &CallOptions::default());
/// assert!(result.ok(), "{result:?}");
/// assert_eq!(result.output, json!(5));
///
/// // Arguments the schema refuses never reach Python.
/// let refused = runtime.call(&registry, "tool_add", &json!({"a": "two"}), &CallOptions::default());
/// assert!(!refused.ok());
/// # runtime.shutdown();
/// # std::fs::remove_dir_all(&folder)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runtime {
    config: RuntimeConfig,
    base: PathBuf,
    callbacks: RwLock<Callbacks>,
    forward: RwLock<Option<Forward>>,
    resolver: RwLock<Option<Resolver>>,
    place: Place,
}

/// A virtual tool's implementation (`[[virtual_tools]]`, SPEC §14): the arguments,
/// already checked against its schema, and the call's options, to its result.
pub type VirtualTool = Arc<dyn Fn(&Value, &CallOptions) -> ToolResult + Send + Sync>;

/// The embedding host's virtual tools: a name to its implementation, or `None` when the
/// host cannot supply it now.
pub type Resolver = Arc<dyn Fn(&str) -> Option<VirtualTool> + Send + Sync>;

/// Runs the tools, prompts and resources that are not Python's (an MCP server's,
/// SPEC §14): the tool (a prompt's record, or a resource's function), its library
/// (whose origin says where it is), what it is, arguments already checked (a
/// resource template's variables), the options. A prompt's or resource's output is
/// the server's `GetPromptResult` or `ReadResourceResult`, as it sent it
/// ([`super::Outcome::Relayed`]).
pub(crate) type Forward = Arc<dyn Fn(&Library, &Tool, Member, &Value, &CallOptions) -> ToolResult + Send + Sync>;

/// `args` as `tool` takes them (a text holding the JSON of what a parameter asks for is
/// that value), checked against its schema: what every call passes before it runs; a
/// refusal naming each problem otherwise.
fn checked_arguments<'a>(tool: &Tool, args: &'a Value) -> Result<std::borrow::Cow<'a, Value>, String> {
    let schema = tool.parameters.value();
    let args = match validate::as_meant(schema, args) {
        Some(meant) => std::borrow::Cow::Owned(meant),
        None => std::borrow::Cow::Borrowed(args),
    };
    let problems = validate::check(schema, &args);
    if !problems.is_empty() {
        return Err(validate::report(&tool.name, schema, &problems));
    }
    Ok(args)
}

/// Where this runtime's calls run.
enum Place {
    InProcess(Engine),
    Workers(supervisor::Pools),
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
            autonomy_level: config.autonomy_level,
            injected: config.injected.clone(),
            site_packages,
            sandbox: Default::default(),
            scratch: None,
            writable: config.sandbox.writable.iter().map(|dir| WirePath(base.join(dir))).collect(),
            require: config.sandbox.require,
            confined: false,
            unconfined: false,
        };
        let place = match &config.isolation {
            Isolation::InProcess => Place::InProcess(Engine::start(settings, None).map_err(RuntimeError::Python)?),
            Isolation::Workers(workers) => {
                // What the kernel lacks of the sandbox is said once, when workers first
                // start: process-wide, as the kernel is the same for every runtime.
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| super::sandbox::kernel_gaps().iter().for_each(|gap| eprintln!("lcp: {gap}")));
                let settings = engine::Settings { unconfined: !workers.sandboxed, ..settings };
                Place::Workers(supervisor::Pools::new(workers.clone(), settings).map_err(RuntimeError::Workers)?)
            }
        };
        Ok(Runtime {
            config,
            base,
            callbacks: RwLock::default(),
            forward: RwLock::default(),
            resolver: RwLock::default(),
            place,
        })
    }

    /// Starts a worker process for calls in `workspace` (the working directory when
    /// `None`) ahead of the first call, in the background (with worker processes;
    /// nothing otherwise).
    pub fn warm_up(&self, workspace: Option<&Path>) {
        if let Place::Workers(pool) = &self.place {
            pool.warm_up(workspace.map(|dir| self.base.join(dir)).as_deref());
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
        let generate = move |generation: &Generation| generate(generation).map(Generated::from);
        sync::write(&self.callbacks).model = Some(Model { generate: Arc::new(generate), vision });
    }

    /// Registers what runs the tools whose library's origin is an MCP server: every
    /// surface's calls of them go through [`Runtime::call`] like any other, admission,
    /// argument checks and all, and end here instead of in Python.
    pub(crate) fn set_forwarder(&self, forward: Forward) {
        *sync::write(&self.forward) = Some(forward);
    }

    /// Registers what supplies the config's virtual tools (SPEC §14). Show
    /// [`Runtime::resolvable`] of a registry: a tool the host cannot supply is hidden,
    /// and one withdrawn between a listing and a call is a failed call saying so.
    pub fn set_resolver(&self, resolver: Resolver) {
        *sync::write(&self.resolver) = Some(resolver);
    }

    /// `registry` without the virtual tools the resolver cannot supply now (all of
    /// them, without a resolver).
    pub fn resolvable(&self, registry: &Registry) -> Registry {
        let resolver = sync::read(&self.resolver).clone();
        registry.resolved(|name| resolver.as_ref().is_some_and(|resolve| resolve(name).is_some()))
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

    /// Runs what the host's view admitted ([`crate::host::view::admit`]: the profile shows
    /// it, the policy allows it), as [`Runtime::call`] does: the tool, prompt or
    /// resource the admission holds, with no lookup of its own. `lcp call` and
    /// `lcp serve` call through here, so neither can run a tool it did not admit.
    pub(crate) fn call_admitted(
        &self,
        admitted: &crate::host::view::Admitted,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        match admitted.member() {
            Member::Tool => {
                let confined;
                let options = match options.declared {
                    Some(_) => options,
                    None => {
                        confined = CallOptions { declared: Some(admitted.confined()), ..options.clone() };
                        &confined
                    }
                };
                self.call_found(admitted.library(), admitted.function(), args, options)
            }
            Member::Prompt => self.get_prompt(admitted, args, options),
            Member::Resource => self.read_resource(admitted, args, options),
        }
    }

    /// Runs a prompt function (SPEC §15) the view admitted, with `args` checked
    /// against its parameters (a text that holds the JSON of the type a parameter
    /// asks for is taken as that value: MCP's prompt arguments are strings). The
    /// result's output is what it returned: a string, a list of messages, or a dict
    /// of `description` and `messages`.
    pub(crate) fn get_prompt(
        &self,
        admitted: &crate::host::view::Admitted,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        if admitted.member() != Member::Prompt {
            return ToolResult::failure(format!("there is no prompt `{}`", admitted.tool()));
        }
        let (library, prompt) = (admitted.library(), admitted.function());
        if matches!(library.origin, Origin::Mcp { .. }) {
            return self.forward_member(library, prompt, Member::Prompt, args, options);
        }
        self.call_member(library, prompt, &prompt.name, Kind::Tool, args, options)
    }

    /// Reads a resource (SPEC §15) the view admitted: its function called with
    /// `args` (a template's variables) checked as [`Runtime::get_prompt`] checks. The
    /// result's output is a list of `{"text"}` or `{"blob"}` (base64) contents, each
    /// with the `uri` and `mimeType` the function gave, if it gave them.
    pub(crate) fn read_resource(
        &self,
        admitted: &crate::host::view::Admitted,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        if admitted.member() != Member::Resource {
            return ToolResult::failure(format!("there is no resource `{}`", admitted.tool()));
        }
        let (library, function) = (admitted.library(), admitted.function());
        if matches!(library.origin, Origin::Mcp { .. }) {
            return self.forward_member(library, function, Member::Resource, args, options);
        }
        self.call_member(library, function, &function.name, Kind::Resource, args, options)
    }

    /// The values completion offers (SPEC §15) for `argument` of the prompt or
    /// resource admitted, given what was typed: what its library's
    /// `complete_<name>(argument, value)` returns (a list of strings; `None` leaves
    /// the argument to its annotation), else the members of the argument's
    /// `Literal` / `Enum` that start with `value`.
    pub(crate) fn complete(
        &self,
        admitted: &crate::host::view::Admitted,
        argument: &str,
        value: &str,
        options: &CallOptions,
    ) -> Result<Vec<String>, String> {
        if admitted.member() == Member::Tool {
            return Err(format!("there is no prompt or resource `{}`", admitted.tool()));
        }
        let (library, function) = (admitted.library(), admitted.function());
        if let Origin::Mcp { server } = &library.origin {
            // `lcp serve` asks the server itself (`Upstreams::complete`).
            return Err(format!("`{}` is the MCP server `{server}`'s: its server completes it", function.name));
        }
        let completer = format!("{}{}", crate::discovery::extract::COMPLETE_PREFIX, function.name);
        if library.completers.contains(&completer) {
            let args = serde_json::json!({"argument": argument, "value": value});
            let result = self.run(library, &completer, Kind::Tool, &args, options, options.timeout, true);
            if !result.ok() {
                return Err(format!("`{completer}` failed: {}", result.error.unwrap_or_default()));
            }
            match result.output {
                Value::Array(values) => {
                    return Ok(values
                        .into_iter()
                        .map(|value| match value {
                            Value::String(text) => text,
                            other => other.to_string(),
                        })
                        .collect());
                }
                Value::Null => {}
                other => return Err(format!("`{completer}` returned {other}, not a list of strings")),
            }
        }
        if !crate::discovery::extract::parameter_names(function).iter().any(|name| name == argument) {
            return Err(format!("`{}` has no argument `{argument}`", function.name));
        }
        let typed = value.to_lowercase();
        Ok(crate::discovery::extract::listed_values(function, argument)
            .into_iter()
            .filter(|candidate| candidate.to_lowercase().starts_with(&typed))
            .collect())
    }

    /// A prompt or resource of an MCP server's, its arguments checked as
    /// [`Runtime::call_member`] checks them, forwarded as [`Runtime::call_checked`]
    /// forwards a tool: what the server asks or tells meanwhile reaches the call's
    /// callbacks.
    fn forward_member(
        &self,
        library: &Library,
        function: &Tool,
        member: Member,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        let args = match member_arguments(function, &function.name, args) {
            Ok(args) => args,
            Err(refused) => return ToolResult::failure(refused),
        };
        let Some(forward) = sync::read(&self.forward).clone() else {
            let server = match &library.origin {
                Origin::Mcp { server } => server.as_str(),
                _ => "?",
            };
            return ToolResult::failure(format!(
                "`{}` is the MCP server `{server}`'s, and this runtime has no connection to it",
                function.name
            ));
        };
        let options = CallOptions { callbacks: self.callbacks_of(options), ..options.clone() };
        forward(library, function, member, &args, &options)
    }

    /// A prompt or resource function called as a tool is, with its arguments checked
    /// against its parameters first.
    fn call_member(
        &self,
        library: &Library,
        function: &Tool,
        name: &str,
        kind: Kind,
        args: &Value,
        options: &CallOptions,
    ) -> ToolResult {
        match member_arguments(function, name, args) {
            Ok(args) => self.run(library, name, kind, &args, options, options.timeout, true),
            Err(refused) => ToolResult::failure(refused),
        }
    }

    /// Runs a tool: validates `args` against its schema (nothing runs when they are
    /// invalid), loads its library on first use, converts the arguments, calls it, and
    /// checks what it returned against its output schema (`validate::check_result`).
    /// `Runtime::call_admitted` does the same for what a view admitted; `lcp test`
    /// calls here with the tools of its view.
    pub fn call(&self, registry: &Registry, tool: &str, args: &Value, options: &CallOptions) -> ToolResult {
        match registry.tool(tool) {
            Some((library, found)) => self.call_found(library, found, args, options),
            None => ToolResult::failure(registry.unknown_tool(tool)),
        }
    }

    /// `tool` of `library` called with `args` once they are checked against its schema.
    fn call_found(&self, library: &Library, tool: &Tool, args: &Value, options: &CallOptions) -> ToolResult {
        match checked_arguments(tool, args) {
            Ok(args) => self.call_checked(library, tool, &args, options),
            Err(refused) => ToolResult::failure(refused),
        }
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
        if let Origin::Mcp { server, .. } = &library.origin {
            let forward = sync::read(&self.forward).clone();
            // The server's requests reach the same callbacks a Python tool's would.
            let options = CallOptions { callbacks: self.callbacks_of(options), ..options.clone() };
            return match forward {
                Some(forward) => forward(library, tool, Member::Tool, args, &options),
                None => ToolResult::failure(format!(
                    "`{}` is a tool of the MCP server `{server}`, and this runtime has no connection to it",
                    tool.name
                )),
            };
        }
        if library.origin == Origin::Virtual {
            let resolver = sync::read(&self.resolver).clone();
            let Some(implementation) = resolver.and_then(|resolve| resolve(&tool.name)) else {
                return ToolResult::failure(format!(
                    "`{}` is a virtual tool the host cannot supply now: it was withdrawn after it was listed",
                    tool.name
                ));
            };
            let mut result =
                implementation(args, &CallOptions { callbacks: self.callbacks_of(options), ..options.clone() });
            validate::check_result(&mut result, tool);
            return result;
        }
        let declared = options.declared.as_ref().unwrap_or(&tool.policy);
        let rerun = declared.idempotent == Some(true) || declared.read_only == Some(true);
        let (function, filled);
        let args = match &library.origin {
            Origin::Config { function: name, parameters, .. } => {
                function = name;
                filled = with_defaults(tool, parameters, args);
                &filled
            }
            Origin::File | Origin::Mcp { .. } | Origin::Virtual => {
                function = &tool.name;
                args
            }
        };
        let mut result = self.run(library, function, Kind::Tool, args, options, options.timeout, rerun);
        validate::check_result(&mut result, tool);
        result
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
        match (result.ok(), result.output) {
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
            Place::InProcess(engine) => engine.drop_modules(files),
            Place::Workers(pool) => pool.forget(files),
        }
    }

    /// Rescans the registry (SPEC §6) and drops the loaded modules of the files that
    /// changed or went away; modules of unchanged files stay loaded. A [`super::catalog::Catalog`]
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
        let callbacks = self.callbacks_of(options);
        // Only a tool's call is confined: prompts and resources declare nothing.
        let declared = match kind {
            Kind::Tool => options
                .declared
                .clone()
                .or_else(|| library.tools.iter().find(|tool| tool.name == function).map(|tool| tool.policy.clone())),
            Kind::Resource | Kind::Provider => None,
        };
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
            module: match &library.origin {
                Origin::Config { module, path, parameters, .. } => Some(Box::new(ModuleTarget {
                    name: module.clone(),
                    path: path.iter().map(|dir| absolute(&self.base, dir)).collect(),
                    parameters: parameters.clone(),
                })),
                Origin::File | Origin::Mcp { .. } | Origin::Virtual => None,
            },
            sandbox: declared.as_ref().map(Sandbox::of).unwrap_or_default(),
        };
        match &self.place {
            Place::InProcess(engine) => {
                let mut result = engine.run(&job, callbacks, timeout, options.cancel.as_ref());
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

/// A prompt's or resource's arguments as its function takes them (a text holding the
/// JSON of the type a parameter asks for taken as that value), or the failure that
/// lists what is wrong with them.
fn member_arguments(function: &Tool, name: &str, args: &Value) -> Result<Value, String> {
    let schema = function.parameters.value();
    let args = validate::texts_as_values(schema, args);
    let problems = validate::check(schema, &args);
    if problems.is_empty() { Ok(args) } else { Err(validate::report(name, schema, &problems)) }
}

/// A config-defined tool's arguments in their declared order, each one not given
/// taking its declared default: the function may take them by position (SPEC §14).
fn with_defaults(tool: &Tool, parameters: &[String], args: &Value) -> Value {
    let schema = tool.parameters.value();
    let mut filled = serde_json::Map::new();
    for name in parameters {
        let value = args.get(name).or_else(|| schema["properties"][name].get("default"));
        if let Some(value) = value {
            filled.insert(name.clone(), value.clone());
        }
    }
    Value::Object(filled)
}

impl Runtime {
    /// A call's host callbacks: its own, else the runtime's.
    fn callbacks_of(&self, options: &CallOptions) -> Callbacks {
        options.callbacks.clone().or(&sync::read(&self.callbacks))
    }
}

/// `path` from `base`, without `.` components: the key of a file's module.
pub(crate) fn absolute(base: &Path, path: &Path) -> WirePath {
    WirePath(base.join(path).components().collect::<PathBuf>())
}

/// `VENV/lib/pythonX.Y/site-packages` for the interpreter lcp embeds.
fn site_packages(venv: &Path) -> Result<PathBuf, RuntimeError> {
    let version = python::interpreter().1;
    let site = venv.join("lib").join(format!("python{version}")).join("site-packages");
    if site.is_dir() {
        Ok(site)
    } else {
        let message = format!(
            "not a virtual environment for Python {version} (no {})",
            site.strip_prefix(venv).unwrap_or(&site).display()
        );
        Err(RuntimeError::Venv { path: venv.to_path_buf(), message })
    }
}

/// The interpreter tools run in: `(executable, major.minor)`: the one lcp embeds, or
/// the host's when lcp is its extension module.
pub fn python_build() -> (&'static str, &'static str) {
    python::interpreter()
}
