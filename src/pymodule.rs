//! `lcp_tools._lcp`: lcp as the extension module of the Python package `lcp-tools`
//! (the `extension` feature, built by maturin; SPEC §19).
//!
//! Three entry points: [`cli`] (the console script `lcp`, every command of the
//! binary), [`worker`] (`python -m lcp_tools __worker`, a worker process started by
//! the supervisor) and [`Toolbox`] (a host's tools: discovered, exported, checked and
//! called). Values cross as JSON text and the Python side (`python/lcp_tools/`) makes
//! them Pythonic; host callables are called back from the supervisor's threads with
//! [`Python::attach`].
//!
//! Must never: import a tool in the host's process (calls go to workers), or hold the
//! GIL while a call or a command runs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};

use crate::diag::Level;
use crate::discovery::registry::{Descriptions, Registry};
use crate::export::{self, Format, Layout};
use crate::host::config::Config;
use crate::host::profile::Profile;
use crate::host::view::{self, Admission};
use crate::mcp::upstream::Upstreams;
use crate::runtime::host_objects::{Answer, Callbacks, Generated, Generation, Interaction, LogRecord, Model, Progress};
use crate::runtime::{
    Autonomy, CallOptions, ConfirmRequest, Confirmation, Decision, Isolation, Runtime, RuntimeConfig, ToolResult,
    WorkerSettings,
};

/// An exit code as the number Python's `sys.exit` takes.
fn code(exit: ExitCode) -> u8 {
    (0..=u8::MAX).find(|n| ExitCode::from(*n) == exit).unwrap_or(1)
}

/// Runs the command line `argv` (`sys.argv`: the program first) and returns its exit
/// code; the interpreter is released while it runs.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| {
        let exit = crate::cli::main_with(argv);
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        code(exit)
    })
}

/// Serves as a worker process until lcp goes away (`python -m lcp_tools __worker`).
/// The sandbox is entered here, before any tool code and with no other thread.
#[pyfunction]
fn worker(py: Python<'_>) -> u8 {
    py.detach(|| code(crate::runtime::worker::main()))
}

/// A host's tools: the registry of its sources, config and profile, and the runtime
/// that calls them in worker processes (started at the first call).
#[pyclass(frozen, module = "lcp_tools._lcp")]
struct Toolbox {
    registry: Registry,
    config: Config,
    profile: Option<Profile>,
    settings: RuntimeConfig,
    workspace: Option<PathBuf>,
    upstreams: Option<Arc<Upstreams>>,
    runtime: OnceLock<Result<Runtime, String>>,
}

#[pymethods]
impl Toolbox {
    /// `folders` and `files` as `lcp`'s sources (none: the built-in tools), `config`
    /// a config file, `profile` a profile choice, `venv` a virtual environment whose
    /// packages tools import besides the host's, `in_process` to run tools in this
    /// process (trusted tools only).
    /// `libraries`: JSON text of an object from library key to the configuration its
    /// `init_tools_library` gets, laid over the config file's; `autonomy`: the
    /// `autonomy_level` every library gets.
    #[new]
    #[pyo3(signature = (folders, files, config=None, profile=None, workspace=None, venv=None, in_process=false, libraries=None, autonomy=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        folders: Vec<PathBuf>,
        files: Vec<PathBuf>,
        config: Option<String>,
        profile: Option<String>,
        workspace: Option<PathBuf>,
        venv: Option<PathBuf>,
        in_process: bool,
        libraries: Option<&str>,
        autonomy: Option<&str>,
    ) -> PyResult<Toolbox> {
        let libraries: serde_json::Map<String, Value> = match libraries {
            Some(text) => {
                serde_json::from_str(text).map_err(|err| PyValueError::new_err(format!("libraries: {err}")))?
            }
            None => serde_json::Map::new(),
        };
        let autonomy = autonomy.map(str::parse::<Autonomy>).transpose().map_err(PyValueError::new_err)?;
        let (registry, config, profile, upstreams) = py
            .detach(|| crate::cli::load_for_python(folders, files, config, profile))
            .map_err(PyValueError::new_err)?;
        let mut settings = config.runtime.clone();
        // Tools run in this interpreter's environment: `$VIRTUAL_ENV` names it (or
        // another one, whose packages would be mixed in); only a venv given is added.
        let from_environment = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from);
        if settings.venv.is_some() && settings.venv == from_environment {
            settings.venv = None;
        }
        if venv.is_some() {
            settings.venv = venv;
        }
        for (library, value) in libraries {
            if let Value::Object(fields) = value {
                settings.libraries.entry(library).or_default().extend(fields);
            }
        }
        if let Some(level) = autonomy {
            settings.autonomy_level = level;
        }
        settings.isolation = if in_process {
            Isolation::InProcess
        } else {
            Isolation::Workers(WorkerSettings::this_program().map_err(|err| PyRuntimeError::new_err(err.to_string()))?)
        };
        Ok(Toolbox { registry, config, profile, settings, workspace, upstreams, runtime: OnceLock::new() })
    }

    /// `lcp export --format FORMAT [--strict]` of these tools, as JSON text.
    /// `vouch: false` leaves out what lcp vouches for beside the declarations (the
    /// kernel's enforcement, what each tool's code can do): `LCPBinding`'s listing.
    #[pyo3(signature = (format, strict=false, static_only=false, vouch=true))]
    fn export(&self, py: Python<'_>, format: &str, strict: bool, static_only: bool, vouch: bool) -> PyResult<String> {
        let Some(format) = Format::ALL.iter().copied().find(|known| known.as_str() == format) else {
            let names: Vec<&str> = Format::ALL.iter().map(|known| known.as_str()).collect();
            return Err(PyValueError::new_err(format!(
                "`{format}` is no format; expected one of {}",
                names.join(", ")
            )));
        };
        if strict && !format.has_strict_mode() {
            return Err(PyValueError::new_err(format!("strict is OpenAI's strict mode: {format} has not")));
        }
        let format = match format {
            Format::Mcp { .. } => Format::Mcp { inline_refs: self.config.mcp.inline_refs },
            other => other.strict(strict),
        };
        py.detach(|| {
            let view = crate::cli::expose(&self.registry, &self.config, self.profile.as_ref())?;
            let descriptions = if static_only { Descriptions::default() } else { self.descriptions(&view.registry) };
            let descriptions = if vouch {
                // What the kernel keeps where this toolbox runs its tools: none in process.
                let enforced = crate::runtime::sandbox::enforcement(&self.settings);
                crate::cli::export_descriptions(&view, &self.config, format, enforced, descriptions)
            } else {
                descriptions
            };
            let mut out = Vec::new();
            export::write(&view.registry, &descriptions, format, Layout::Pretty, &mut out)
                .map_err(|err| err.to_string())?;
            String::from_utf8(out).map_err(|err| err.to_string())
        })
        .map_err(PyValueError::new_err)
    }

    /// `lcp check --format json` of these tools, as JSON text.
    fn check(&self, py: Python<'_>) -> String {
        py.detach(|| {
            let registry = &self.registry;
            let mut diagnostics = registry.diagnostics().to_vec();
            diagnostics.extend(crate::cli::config_problems(registry, &self.config, self.profile.as_ref()));
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let warnings = diagnostics.iter().filter(|d| d.level == Level::Warning).count();
            json!({
                "libraries": registry.libraries().len(),
                "tools": registry.tools().count(),
                "prompts": registry.prompts().count(),
                "resources": registry.resources().count(),
                "errors": errors,
                "warnings": warnings,
                "diagnostics": diagnostics,
            })
            .to_string()
        })
    }

    /// Calls `name` with `arguments` (JSON text) and returns the result as JSON text:
    /// SPEC §5's fields and its `outcome`. Each handler takes the JSON text of what
    /// the tool asks and returns the JSON text of the answer (see `toolbox.py`).
    /// `generate` answers `generate_text` (the JSON text of a `Generation` in, the
    /// JSON text of `{"text"}` or `{"error"}` out); `vision`: whether images may go to it.
    #[pyo3(signature = (name, arguments, workspace=None, timeout=None, confirm=None, interact=None, progress=None, log=None, generate=None, vision=false))]
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        py: Python<'_>,
        name: &str,
        arguments: &str,
        workspace: Option<PathBuf>,
        timeout: Option<f64>,
        confirm: Option<Py<PyAny>>,
        interact: Option<Py<PyAny>>,
        progress: Option<Py<PyAny>>,
        log: Option<Py<PyAny>>,
        generate: Option<Py<PyAny>>,
        vision: bool,
    ) -> PyResult<String> {
        let arguments: Value =
            serde_json::from_str(arguments).map_err(|err| PyValueError::new_err(format!("arguments: {err}")))?;
        let timeout = match timeout {
            Some(seconds) if !(seconds.is_finite() && seconds > 0.0) => {
                return Err(PyValueError::new_err("timeout must be a positive number of seconds"));
            }
            Some(seconds) => Some(Duration::from_secs_f64(seconds)),
            None => None,
        };
        let mut callbacks = callbacks(confirm, interact, progress, log);
        if let Some(handler) = generate {
            callbacks.model = Some(Model {
                generate: Arc::new(move |asked: &Generation| {
                    let text = serde_json::to_string(asked).unwrap_or_default();
                    let answer: Value = serde_json::from_str(&ask(&handler, &text)?).map_err(|err| err.to_string())?;
                    match (answer.get("text").and_then(Value::as_str), answer.get("error").and_then(Value::as_str)) {
                        (Some(text), _) => Ok(Generated::from(text.to_string())),
                        (None, Some(error)) => Err(error.to_string()),
                        (None, None) => Err(format!("the model handler answered {answer}")),
                    }
                }),
                vision,
            });
        }
        let workspace = workspace.or_else(|| self.workspace.clone());
        let result = py.detach(|| self.run(name, &arguments, workspace, timeout, callbacks));
        let mut value = serde_json::to_value(&result).map_err(|err| PyRuntimeError::new_err(err.to_string()))?;
        value["outcome"] = serde_json::to_value(result.outcome).unwrap_or(Value::Null);
        Ok(value.to_string())
    }

    /// The descriptions the prompt providers give, run in a worker: JSON text of an
    /// object from tool name to description (the tools without a provider left out).
    #[pyo3(signature = (workspace=None))]
    fn prompt_descriptions(&self, py: Python<'_>, workspace: Option<PathBuf>) -> String {
        py.detach(|| {
            let workspace = workspace.or_else(|| self.workspace.clone());
            let descriptions = self.descriptions_in(&self.registry, workspace);
            let mut given = serde_json::Map::new();
            for (_, tool) in self.registry.tools() {
                if tool.prompt_provider.is_some()
                    && let Some(text) = descriptions.get(&tool.name)
                {
                    given.insert(tool.name.clone(), Value::String(text.to_string()));
                }
            }
            Value::Object(given).to_string()
        })
    }

    /// Makes `handler` (JSON text in and out, as [`Toolbox::call`]'s) the confirm
    /// handler of every call without its own, and calls `set_confirm_handler` again on
    /// the libraries the workers loaded.
    fn set_confirm_handler(&self, py: Python<'_>, handler: Py<PyAny>) -> PyResult<()> {
        let confirm = callbacks(Some(handler), None, None, None).confirm.expect("made from a handler");
        py.detach(|| self.runtime().map(|runtime| drop(runtime.set_confirm_handler(move |request| confirm(request)))))
            .map_err(PyRuntimeError::new_err)
    }

    /// Makes `handler` the user interaction handler of every call without its own.
    fn set_user_interaction_handler(&self, py: Python<'_>, handler: Py<PyAny>) -> PyResult<()> {
        let interact = callbacks(None, Some(handler), None, None).interact.expect("made from a handler");
        py.detach(|| self.runtime().map(|runtime| runtime.set_user_interaction_handler(move |asked| interact(asked))))
            .map_err(PyRuntimeError::new_err)
    }

    /// Stops the worker processes; a later call starts new ones.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Some(Ok(runtime)) = self.runtime.get() {
                runtime.shutdown();
            }
        });
    }
}

impl Toolbox {
    fn runtime(&self) -> Result<&Runtime, String> {
        self.runtime
            .get_or_init(|| {
                let runtime =
                    Runtime::new(self.settings.clone()).map_err(|err| format!("cannot start Python: {err}"))?;
                if let Some(upstreams) = &self.upstreams {
                    runtime.set_forwarder(upstreams.forwarder());
                }
                Ok(runtime)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The prompt providers' descriptions, run in a worker; the static ones when
    /// Python cannot start.
    fn descriptions(&self, registry: &Registry) -> Descriptions {
        self.descriptions_in(registry, self.workspace.clone())
    }

    fn descriptions_in(&self, registry: &Registry, workspace: Option<PathBuf>) -> Descriptions {
        if !registry.has_prompt_providers() {
            return Descriptions::default();
        }
        match self.runtime() {
            Ok(runtime) => {
                runtime.prompt_descriptions(registry, &CallOptions { workspace, ..CallOptions::default() }).0
            }
            Err(_) => Descriptions::default(),
        }
    }

    fn run(
        &self,
        name: &str,
        arguments: &Value,
        workspace: Option<PathBuf>,
        timeout: Option<Duration>,
        callbacks: Callbacks,
    ) -> ToolResult {
        let tool = match view::admit(&self.registry, &self.config, self.profile.as_ref(), name) {
            Admission::Run(tool) => tool,
            Admission::Unknown(message) | Admission::Refused(message) => return ToolResult::failure(message),
        };
        let runtime = match self.runtime() {
            Ok(runtime) => runtime,
            Err(message) => return ToolResult::failure(message),
        };
        let options = CallOptions { workspace, timeout, callbacks, ..CallOptions::default() };
        runtime.call_admitted(&tool, arguments, &options)
    }
}

/// The Rust callbacks of a call, each calling its Python callable with the JSON text
/// of the request. A callable that raises rejects, or leaves the user unavailable.
fn callbacks(
    confirm: Option<Py<PyAny>>,
    interact: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
    log: Option<Py<PyAny>>,
) -> Callbacks {
    let mut callbacks = Callbacks::default();
    if let Some(handler) = confirm {
        callbacks.confirm = Some(Arc::new(move |request: &ConfirmRequest| {
            let text = serde_json::to_string(request).unwrap_or_default();
            match ask(&handler, &text) {
                Ok(answer) => serde_json::from_str::<Confirmation>(&answer)
                    .unwrap_or_else(|err| Confirmation::reject(format!("the confirm handler's answer: {err}"))),
                Err(err) => Confirmation { decision: Decision::Reject, reason: err },
            }
        }));
    }
    if let Some(handler) = interact {
        callbacks.interact = Some(Arc::new(move |interaction: &Interaction| {
            let text = serde_json::to_string(interaction).unwrap_or_default();
            match ask(&handler, &text).and_then(|answer| serde_json::from_str(&answer).map_err(|e| e.to_string())) {
                Ok(Value::Object(answer)) if answer.contains_key("given") => Answer::Given(answer["given"].clone()),
                Ok(Value::Object(answer)) if answer.contains_key("declined") => Answer::Declined,
                Ok(other) => Answer::Unavailable(format!("the user interaction handler answered {other}")),
                Err(err) => Answer::Unavailable(err),
            }
        }));
    }
    if let Some(handler) = progress {
        callbacks.progress = Some(Arc::new(move |progress: &Progress| {
            let _ = ask(&handler, &serde_json::to_string(progress).unwrap_or_default());
        }));
    }
    if let Some(handler) = log {
        callbacks.log = Some(Arc::new(move |record: &LogRecord| {
            let _ = ask(&handler, &serde_json::to_string(record).unwrap_or_default());
        }));
    }
    callbacks
}

/// Calls a host callable with one JSON text; its answer as text (`None`: `null`), or
/// the exception it raised.
fn ask(handler: &Py<PyAny>, text: &str) -> Result<String, String> {
    Python::attach(|py| {
        let answer = handler.call1(py, (text,)).map_err(|err| err.to_string())?;
        if answer.is_none(py) {
            return Ok("null".to_string());
        }
        answer.extract::<String>(py).map_err(|err| err.to_string())
    })
}

/// The folder of lcp's built-in tool libraries.
#[pyfunction]
fn default_tools() -> PyResult<PathBuf> {
    crate::discovery::default_tools::folder().map_err(|err| PyRuntimeError::new_err(err.to_string()))
}

/// The module `lcp_tools._lcp`. Its workers are this interpreter's:
/// `sys.executable -m lcp_tools __worker`.
#[pymodule]
#[pyo3(name = "_lcp")]
fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let executable: PathBuf = m.py().import("sys")?.getattr("executable")?.extract()?;
    WorkerSettings::serve_with(executable, vec!["-m".into(), "lcp_tools".into()]);
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(worker, m)?)?;
    m.add_function(wrap_pyfunction!(default_tools, m)?)?;
    m.add_class::<Toolbox>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
