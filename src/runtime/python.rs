//! The embedded interpreter: the only code in lcp that calls pyo3.
//!
//! Starts CPython once per process (the interpreter chosen at build time, as its
//! program name, so `sys.prefix` and the standard library are its own from any
//! working directory; no signal handlers), loads `host.py` as `_lcp_host` and passes
//! JSON text to and from it. Python objects never leave this file: failures come back
//! as strings holding the formatted traceback.

use std::ffi::{CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyModule, PyTuple};

/// The interpreter lcp was built against (`PYO3_PYTHON`, see `build.rs`).
pub const EXECUTABLE: &str = env!("LCP_PYTHON_EXECUTABLE");
/// Its `major.minor` version.
pub const VERSION: &str = env!("LCP_PYTHON_VERSION");

const HOST_SOURCE: &str = include_str!("host.py");
const HOST_FILE: &CStr = c"<lcp host>";

struct Host {
    call: Py<PyAny>,
    stop: Py<PyAny>,
    rebind: Py<PyAny>,
    forget: Py<PyAny>,
    add_site_dir: Py<PyAny>,
}

static HOST: OnceLock<Result<Host, String>> = OnceLock::new();

/// Answers the confirm requests of tools: JSON text in, JSON text out. It runs with
/// the interpreter released, so it may block (a terminal prompt) without stopping
/// other calls.
pub type ConfirmFn = fn(&str) -> String;

/// Starts the interpreter and the host module, once per process.
pub fn start(confirm: ConfirmFn) -> Result<(), String> {
    HOST.get_or_init(|| load(confirm)).as_ref().map(|_| ()).map_err(Clone::clone)
}

fn host() -> Result<&'static Host, String> {
    match HOST.get() {
        Some(Ok(host)) => Ok(host),
        Some(Err(err)) => Err(err.clone()),
        None => Err("the Python runtime was not started".to_string()),
    }
}

fn load(confirm: ConfirmFn) -> Result<Host, String> {
    initialize()?;
    Python::attach(|py| {
        let source = CString::new(HOST_SOURCE).map_err(|err| err.to_string())?;
        let module = PyModule::from_code(py, &source, HOST_FILE, c"_lcp_host").map_err(|err| describe(py, err))?;
        let bridge = PyCFunction::new_closure(
            py,
            Some(c"confirm"),
            None,
            move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| {
                let request: String = args.get_item(0)?.extract()?;
                Ok::<String, PyErr>(args.py().detach(|| confirm(&request)))
            },
        )
        .map_err(|err| describe(py, err))?;
        module.getattr("install").and_then(|install| install.call1((bridge,))).map_err(|err| describe(py, err))?;
        let function = |name: &str| module.getattr(name).map(Bound::unbind).map_err(|err| describe(py, err));
        Ok(Host {
            call: function("call")?,
            stop: function("stop")?,
            rebind: function("rebind")?,
            forget: function("forget")?,
            add_site_dir: function("add_site_dir")?,
        })
    })
}

/// Starts CPython unless someone in this process already did.
fn initialize() -> Result<(), String> {
    // SAFETY: plain C-API calls on a config struct this function owns; the
    // interpreter is started at most once (callers go through `HOST`'s `OnceLock`).
    unsafe {
        if ffi::Py_IsInitialized() != 0 {
            return Ok(());
        }
        if !Path::new(EXECUTABLE).is_file() {
            return Err(format!(
                "the Python lcp was built with ({EXECUTABLE}) is missing; rebuild lcp with PYO3_PYTHON set to an installed CPython {VERSION}"
            ));
        }
        let program = CString::new(EXECUTABLE).map_err(|err| err.to_string())?;
        let mut config = std::mem::MaybeUninit::<ffi::PyConfig>::uninit();
        ffi::PyConfig_InitPythonConfig(config.as_mut_ptr());
        let config = config.as_mut_ptr();
        (*config).install_signal_handlers = 0;
        (*config).parse_argv = 0;
        let status = ffi::PyConfig_SetBytesString(config, &raw mut (*config).program_name, program.as_ptr());
        if ffi::PyStatus_Exception(status) != 0 {
            ffi::PyConfig_Clear(config);
            return Err(status_message("cannot configure Python", status));
        }
        let status = ffi::Py_InitializeFromConfig(config);
        ffi::PyConfig_Clear(config);
        if ffi::PyStatus_Exception(status) != 0 {
            return Err(status_message("cannot start Python", status));
        }
        // Release the GIL taken by initialisation: every use goes through `Python::attach`.
        ffi::PyEval_SaveThread();
    }
    Ok(())
}

fn status_message(context: &str, status: ffi::PyStatus) -> String {
    let text = |ptr: *const std::ffi::c_char| {
        // SAFETY: CPython's status strings are static, NUL-terminated C strings.
        (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
    };
    match (text(status.func), text(status.err_msg)) {
        (Some(func), Some(message)) => format!("{context}: {func}: {message}"),
        (None, Some(message)) => format!("{context}: {message}"),
        _ => format!("{context} (exit code {})", status.exitcode),
    }
}

/// Runs one request of `host.call` and returns its JSON reply.
pub fn call(request: &str) -> Result<String, String> {
    let host = host()?;
    Python::attach(|py| {
        host.call.call1(py, (request,)).and_then(|reply| reply.extract(py)).map_err(|err| describe(py, err))
    })
}

/// Raises the timeout exception in the thread running `call_id`, if it runs tool code.
pub fn stop(call_id: u64) -> bool {
    let Ok(host) = host() else { return false };
    Python::attach(|py| host.stop.call1(py, (call_id,)).and_then(|done| done.extract(py)).unwrap_or(false))
}

/// Calls `set_confirm_handler` again on every loaded module; returns the failures as JSON.
pub fn rebind() -> Result<String, String> {
    let host = host()?;
    Python::attach(|py| host.rebind.call0(py).and_then(|reply| reply.extract(py)).map_err(|err| describe(py, err)))
}

/// Drops the loaded modules of these files (a JSON list of paths).
pub fn forget(paths: &str) -> Result<(), String> {
    let host = host()?;
    Python::attach(|py| host.forget.call1(py, (paths,)).map(drop).map_err(|err| describe(py, err)))
}

pub fn add_site_dir(dir: &str) -> Result<(), String> {
    let host = host()?;
    Python::attach(|py| host.add_site_dir.call1(py, (dir,)).map(drop).map_err(|err| describe(py, err)))
}

/// Evaluates a Python expression in a fresh namespace and returns its `repr()`;
/// for diagnostics and measurements, never for running tools.
pub fn eval_repr(expression: &str) -> Result<String, String> {
    host()?;
    let expression = CString::new(expression).map_err(|err| err.to_string())?;
    Python::attach(|py| {
        let value = py.eval(&expression, None, None).map_err(|err| describe(py, err))?;
        value.repr().map(|r| r.to_string()).map_err(|err| describe(py, err))
    })
}

/// The exception with its formatted traceback.
fn describe(py: Python<'_>, err: PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|tb| tb.getattr("format_exception")?.call1((err.value(py),)))
        .and_then(|lines| lines.extract::<Vec<String>>());
    match formatted {
        Ok(lines) => lines.concat(),
        Err(_) => err.to_string(),
    }
}
