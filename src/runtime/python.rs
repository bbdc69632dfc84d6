//! The embedded interpreter: the only code in lcp that calls pyo3.
//!
//! Starts CPython once per process (the interpreter chosen at build time, as its
//! program name, so `sys.prefix` and the standard library are its own from any
//! working directory; no signal handlers), loads `host.py` as `_lcp_host` and passes
//! JSON text to and from it. Warm calls of simple tools skip both the JSON text and
//! `host.py`: [`direct`] resolves the tool function once and [`call_direct`] calls it
//! with arguments built straight from `serde_json` values. Python objects never leave
//! this file (a [`Direct`] holds them opaquely): failures come back as strings holding
//! the formatted traceback.

use std::ffi::{CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

use pyo3::exceptions::PyRecursionError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCFunction, PyDict, PyFloat, PyInt, PyList, PyModule, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// The interpreter lcp was built against (found by `.cargo/python3`, or `PYO3_PYTHON`; see `build.rs`).
#[cfg(not(feature = "extension"))]
const EXECUTABLE: &str = env!("LCP_PYTHON_EXECUTABLE");
/// Its `major.minor` version.
#[cfg(not(feature = "extension"))]
const VERSION: &str = env!("LCP_PYTHON_VERSION");

/// The interpreter tools run in: `(executable, major.minor)`. The one lcp was built
/// against, or, as the extension module `lcp_tools._lcp`, the one that imported it.
#[cfg(not(feature = "extension"))]
pub fn interpreter() -> (&'static str, &'static str) {
    (EXECUTABLE, VERSION)
}

/// The interpreter tools run in: `(executable, major.minor)`. The one lcp was built
/// against, or, as the extension module `lcp_tools._lcp`, the one that imported it.
#[cfg(feature = "extension")]
pub fn interpreter() -> (&'static str, &'static str) {
    static RUNNING: OnceLock<(String, String)> = OnceLock::new();
    let (executable, version) = RUNNING.get_or_init(|| {
        Python::attach(|py| {
            let sys = py.import("sys").ok();
            let get = |name: &str| sys.as_ref().and_then(|sys| sys.getattr(name).ok());
            let executable = get("executable").and_then(|e| e.extract::<String>().ok()).unwrap_or_default();
            let version = get("version_info")
                .and_then(|v| v.extract::<(u32, u32, u32, String, u32)>().ok())
                .map_or_else(String::new, |(major, minor, ..)| format!("{major}.{minor}"));
            (executable, version)
        })
    });
    (executable, version)
}

/// lcp's Python modules (`host/`), loaded once in this order, each under its name and
/// a file name that marks its frames as lcp's in tracebacks: the module every tool may
/// import for confined, atomic file operations (SPEC §17); the calls in progress and
/// what they print; results as plain data; the host objects (SPEC §9); argument
/// plans and conversions; and `host.py`, the entry points, built on the others.
const MODULES: [(&CStr, &CStr, &str); 6] = [
    (c"lcp_files", c"<lcp files>", include_str!("host/lcp_files.py")),
    (c"_lcp_calls", c"<lcp calls>", include_str!("host/_lcp_calls.py")),
    (c"_lcp_results", c"<lcp results>", include_str!("host/_lcp_results.py")),
    (c"_lcp_host_objects", c"<lcp host objects>", include_str!("host/_lcp_host_objects.py")),
    (c"_lcp_arguments", c"<lcp arguments>", include_str!("host/_lcp_arguments.py")),
    (c"_lcp_host", c"<lcp host>", include_str!("host/host.py")),
];

struct Host {
    call: Py<PyAny>,
    stop: Py<PyAny>,
    rebind: Py<PyAny>,
    forget: Py<PyAny>,
    add_site_dir: Py<PyAny>,
    confine: Py<PyAny>,
    install_exit_hook: Py<PyAny>,
    direct: Py<PyAny>,
    /// `_direct`: thread ident -> marker of the direct call it runs.
    direct_markers: Py<PyDict>,
    /// `_direct_calls`: the direct calls that printed or asked to confirm.
    direct_calls: Py<PyDict>,
    direct_captured: Py<PyAny>,
    direct_result: Py<PyAny>,
    direct_failure: Py<PyAny>,
    restore_streams: Py<PyAny>,
    /// `sys.__dict__`, and the keys and values of `sys.stdout` and `sys.stderr` while
    /// `host.py` routes them.
    sys: Py<PyDict>,
    streams: [(Py<PyString>, Py<PyAny>); 2],
}

/// `host.py`'s objects, loaded once: process-wide, as the interpreter holding them is.
static HOST: OnceLock<Result<Host, String>> = OnceLock::new();

/// Answers what tools ask of the host (confirmations, the user, the model) and hears
/// what they report (progress, log records): JSON text in, JSON text out. It runs
/// with the interpreter released, so it may block (a terminal prompt) without
/// stopping other calls.
pub type HostFn = fn(&str) -> String;

use super::engine::Printed;

/// Starts the interpreter and the host module, once per process. `before_chdir` is
/// called before a tool changes the working directory.
pub fn start(host: HostFn, before_chdir: fn(), printed: Option<Printed>) -> Result<(), String> {
    HOST.get_or_init(|| load(host, before_chdir, printed)).as_ref().map(|_| ()).map_err(Clone::clone)
}

fn host() -> Result<&'static Host, String> {
    match HOST.get() {
        Some(Ok(host)) => Ok(host),
        Some(Err(err)) => Err(err.clone()),
        None => Err("the Python runtime was not started".to_string()),
    }
}

fn load(host_fn: HostFn, before_chdir: fn(), printed: Option<Printed>) -> Result<Host, String> {
    initialize()?;
    Python::attach(|py| {
        let mut modules = Vec::with_capacity(MODULES.len());
        for (name, file, source) in MODULES {
            let source = CString::new(source).map_err(|err| err.to_string())?;
            modules.push(PyModule::from_code(py, &source, file, name).map_err(|err| exception_text(py, err))?);
        }
        let [files, calls, _, _, _, module] = &modules[..] else { unreachable!("MODULES has six entries") };
        PyCFunction::new_closure(
            py,
            Some(c"_search_lines"),
            None,
            |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| {
                let (pattern, text, literal, ignore_case): (String, String, bool, bool) = args.extract()?;
                args.py()
                    .detach(|| super::line_search::matching_lines(&pattern, literal, ignore_case, &text))
                    .map_err(pyo3::exceptions::PyValueError::new_err)
            },
        )
        .and_then(|function| files.setattr("_search_lines", function))
        .map_err(|err| exception_text(py, err))?;
        let bridge = PyCFunction::new_closure(
            py,
            Some(c"host"),
            None,
            move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| {
                let request: String = args.get_item(0)?.extract()?;
                Ok::<String, PyErr>(args.py().detach(|| host_fn(&request)))
            },
        )
        .map_err(|err| exception_text(py, err))?;
        let chdir_hook = PyCFunction::new_closure(
            py,
            Some(c"before_chdir"),
            None,
            move |_: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                before_chdir();
                Ok(())
            },
        )
        .map_err(|err| exception_text(py, err))?;
        let printed_hook = match printed {
            None => None,
            Some(printed) => Some(
                PyCFunction::new_closure(
                    py,
                    Some(c"printed"),
                    None,
                    move |args: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                        let (call, stream, text): (u64, String, String) = args.extract()?;
                        args.py().detach(|| printed(call, &stream, &text));
                        Ok(())
                    },
                )
                .map_err(|err| exception_text(py, err))?,
            ),
        };
        module
            .getattr("install")
            .and_then(|install| install.call1((bridge, chdir_hook, printed_hook)))
            .map_err(|err| exception_text(py, err))?;
        let of = |module: &Bound<'_, PyModule>, name: &str| {
            module.getattr(name).map(Bound::unbind).map_err(|err| exception_text(py, err))
        };
        let function = |name: &str| of(module, name);
        let dict = |name: &str| {
            calls
                .getattr(name)
                .and_then(|d| Ok(d.cast_into::<PyDict>()?.unbind()))
                .map_err(|err| exception_text(py, err))
        };
        Ok(Host {
            call: function("call")?,
            stop: function("stop")?,
            rebind: function("rebind")?,
            forget: function("forget")?,
            add_site_dir: function("add_site_dir")?,
            confine: function("confine")?,
            install_exit_hook: function("install_exit_hook")?,
            direct: function("direct")?,
            direct_markers: dict("_direct")?,
            direct_calls: dict("_direct_calls")?,
            direct_captured: of(calls, "_direct_captured")?,
            direct_result: function("_direct_result")?,
            direct_failure: function("_direct_failure")?,
            restore_streams: of(calls, "_restore_streams")?,
            sys: py.import("sys").map(|sys| sys.dict().unbind()).map_err(|err| exception_text(py, err))?,
            streams: [
                (PyString::intern(py, "stdout").unbind(), of(calls, "_STDOUT")?),
                (PyString::intern(py, "stderr").unbind(), of(calls, "_STDERR")?),
            ],
        })
    })
}

/// Has `host.py` call `hook` before a tool ends the process itself (`os._exit`, a
/// signal to its own process), in the tool's thread.
pub fn set_exit_hook(hook: fn()) {
    let Ok(host) = host() else { return };
    Python::attach(|py| {
        let hook = PyCFunction::new_closure(
            py,
            Some(c"before_exit"),
            None,
            move |_: &Bound<'_, PyTuple>, _: Option<&Bound<'_, PyDict>>| -> PyResult<()> {
                hook();
                Ok(())
            },
        );
        let installed = hook.and_then(|hook| host.install_exit_hook.bind(py).call1((hook,)));
        if let Err(err) = installed {
            eprintln!("lcp: the exit hook could not be installed: {}", exception_text(py, err));
        }
    });
}

/// As the extension module, CPython is the host's and already runs.
#[cfg(feature = "extension")]
fn initialize() -> Result<(), String> {
    // SAFETY: a plain C call that reads a flag.
    if unsafe { ffi::Py_IsInitialized() } == 0 {
        return Err("lcp_tools._lcp runs inside a Python interpreter, and none is running".to_string());
    }
    Ok(())
}

/// Starts CPython unless someone in this process already did.
#[cfg(not(feature = "extension"))]
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

#[cfg(not(feature = "extension"))]
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

/// Keeps a Python thread state for the calling thread while it lives, so that the
/// calls it makes do not each make and free one (with its frame stack). For threads
/// that make many calls, such as a worker's call threads.
pub struct ThreadState {
    gil: ffi::PyGILState_STATE,
    saved: *mut ffi::PyThreadState,
}

impl ThreadState {
    /// `None` when the interpreter was not started.
    pub fn keep() -> Option<ThreadState> {
        host().ok()?;
        // SAFETY: the interpreter is running; `PyGILState_Ensure` makes this thread's
        // state and takes the GIL, `PyEval_SaveThread` releases the GIL and keeps it.
        unsafe {
            let gil = ffi::PyGILState_Ensure();
            let saved = ffi::PyEval_SaveThread();
            Some(ThreadState { gil, saved })
        }
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        // SAFETY: the reverse of `keep`, on the same thread (the type is not `Send`).
        unsafe {
            ffi::PyEval_RestoreThread(self.saved);
            ffi::PyGILState_Release(self.gil);
        }
    }
}

/// Runs one request of `host.call` and returns its JSON reply.
pub fn call(request: &str) -> Result<String, String> {
    let host = host()?;
    Python::attach(|py| {
        host.call.call1(py, (request,)).and_then(|reply| text_of(reply.bind(py))).map_err(|err| exception_text(py, err))
    })
}

/// Raises the timeout exception in the thread running `call_id`, if it runs tool code.
pub fn stop(call_id: u64) -> bool {
    let Ok(host) = host() else { return false };
    Python::attach(|py| host.stop.call1(py, (call_id,)).and_then(|done| done.extract(py)).unwrap_or(false))
}

/// A reply's text. Text Python holds may carry lone surrogates (a path that is not
/// UTF-8, as `os.fsdecode` makes it): they become U+FFFD, as JSON cannot carry them.
fn text_of(reply: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = reply.cast::<PyString>()?;
    Ok(match text.to_str() {
        Ok(text) => text.to_owned(),
        Err(_) => text.to_string_lossy().into_owned(),
    })
}

/// Calls `set_confirm_handler` again on every loaded module; returns the failures as JSON.
pub fn rebind() -> Result<String, String> {
    let host = host()?;
    Python::attach(|py| {
        host.rebind.call0(py).and_then(|reply| reply.extract(py)).map_err(|err| exception_text(py, err))
    })
}

/// Drops the loaded modules of these files (a JSON list of paths).
pub fn forget(paths: &str) -> Result<(), String> {
    let host = host()?;
    Python::attach(|py| host.forget.call1(py, (paths,)).map(drop).map_err(|err| exception_text(py, err)))
}

pub fn add_site_dir(dir: &str) -> Result<(), String> {
    let host = host()?;
    Python::attach(|py| host.add_site_dir.call1(py, (dir,)).map(drop).map_err(|err| exception_text(py, err)))
}

/// Tells `host.py` what this process's kernel enforces (SPEC §18), so that a refused
/// write or socket is named by the declaration it broke.
pub fn confine(read_only: bool, offline: bool, confined: bool) -> Result<(), String> {
    let host = host()?;
    Python::attach(|py| {
        host.confine.call1(py, (read_only, offline, confined)).map(drop).map_err(|err| exception_text(py, err))
    })
}

/// A tool function resolved by `host.direct`, for [`call_direct`].
pub struct Direct {
    function: Py<PyAny>,
    /// The module's namespace: a module that rebinds the tool's name gets its new
    /// function called (through `host.py`, which resolves again).
    namespace: Py<PyDict>,
    /// Each parameter: its name, the same as a Python string, what a number becomes.
    parameters: Vec<(String, Py<PyString>, Coercion)>,
    takes_any_keyword: bool,
    /// `(library, function)`: what `host.py` needs to route what the call prints; the
    /// function's name is interned, the key to look it up in `namespace`.
    names: Py<PyTuple>,
    /// Bit set of the parameters given -> the tuple of their names.
    keyword_names: Py<PyDict>,
}

/// What `host.py`'s `_convert` does to a valid JSON value for a parameter of a direct tool.
#[derive(Clone, Copy, PartialEq)]
enum Coercion {
    Keep,
    /// An integral float becomes an int.
    Int,
    /// An int becomes a float.
    Float,
}

/// Whether a tool can be called directly.
pub enum Resolution {
    Direct(Direct),
    /// Its calls need `host.py` (see `host.direct`).
    Never,
    /// Its library is not loaded yet.
    NotLoaded,
}

/// The tool `function` of the library `file` (library key `library`), resolved for
/// [`call_direct`] when its calls need nothing of `host.py`.
pub fn direct(file: &Path, function: &str, library: &str, injected: &[String]) -> Resolution {
    let Ok(host) = host() else { return Resolution::NotLoaded };
    Python::attach(|py| {
        // The path as Python names it (`os.fsdecode` of its bytes), as `host.py` keys it.
        let Ok(resolved) = host.direct.call1(py, (file.as_os_str(), function, injected.to_vec())) else {
            return Resolution::Never;
        };
        let resolved = resolved.bind(py);
        if resolved.is_none() {
            return Resolution::NotLoaded;
        }
        let Ok((tool, parameters, takes_any_keyword, namespace)) =
            resolved.extract::<(Bound<'_, PyAny>, Vec<(String, String)>, bool, Bound<'_, PyDict>)>()
        else {
            return Resolution::Never;
        };
        let parameters = parameters
            .into_iter()
            .map(|(name, coercion)| {
                let coercion = match coercion.as_str() {
                    "int" => Coercion::Int,
                    "float" => Coercion::Float,
                    _ => Coercion::Keep,
                };
                let python = PyString::intern(py, &name).unbind();
                (name, python, coercion)
            })
            .collect();
        match PyTuple::new(py, [PyString::new(py, library), PyString::intern(py, function)]) {
            Ok(names) => Resolution::Direct(Direct {
                function: tool.unbind(),
                namespace: namespace.unbind(),
                parameters,
                takes_any_keyword,
                names: names.unbind(),
                keyword_names: PyDict::new(py).unbind(),
            }),
            Err(_) => Resolution::Never,
        }
    })
}

impl Direct {
    /// Whether every argument names a parameter the function takes.
    pub fn takes(&self, args: &Map<String, Value>) -> bool {
        self.takes_any_keyword || args.keys().all(|name| self.parameters.iter().any(|(known, ..)| known == name))
    }
}

/// What a direct call came to. `stdout` and `stderr` are what it printed through
/// `sys.stdout` / `sys.stderr`.
pub enum DirectOutcome {
    /// The module no longer holds the function under its name: nothing ran.
    Rebound,
    /// Plain JSON data that reports no failure: the call succeeded with it.
    Returned { output: Value, stdout: String, stderr: String },
    /// `host.py`'s reply (JSON text) for everything else: an exception, a value JSON
    /// cannot carry as it is, a failure the tool reported.
    Replied { reply: String, stdout: String, stderr: String },
}

/// Calls a [`Direct`] tool with `args` (valid for its schema, [`Direct::takes`] them)
/// as keywords.
pub fn call_direct(direct: &Direct, call_id: u64, args: &Map<String, Value>) -> Result<DirectOutcome, String> {
    let host = host()?;
    Python::attach(|py| {
        let name = direct.names.bind(py).get_borrowed_item(1).map_err(|err| exception_text(py, err))?;
        let current = direct.namespace.bind(py).get_item(name).map_err(|err| exception_text(py, err))?;
        if !current.is_some_and(|current| current.is(direct.function.bind(py))) {
            return Ok(DirectOutcome::Rebound);
        }
        let (names, values) = keywords(py, direct, args).map_err(|err| exception_text(py, err))?;
        let marker = marker(py, host).map_err(|err| exception_text(py, err))?;
        let marked = marker.set_item(0, call_id).and_then(|()| marker.set_item(1, direct.names.bind(py)));
        marked.map_err(|err| exception_text(py, err))?;
        let result = vectorcall(py, direct.function.bind(py), &values, &names);
        let cleared = marker.set_item(0, py.None());
        let returned = match result {
            Ok(value) => match to_json(&value, 0) {
                Some(output) if !may_report_failure(&output) => Ok(output),
                _ => Err(reply(py, host.direct_result.call1(py, (value,)))?),
            },
            Err(err) => {
                let traceback = err.traceback(py);
                Err(reply(py, host.direct_failure.call1(py, (err.value(py), traceback, &name)))?)
            }
        };
        cleared.map_err(|err| exception_text(py, err))?;
        let sys = host.sys.bind(py);
        let replaced = host.streams.iter().any(|(name, router)| {
            sys.get_item(name.bind(py)).ok().flatten().is_none_or(|stream| !stream.is(router.bind(py)))
        });
        if replaced {
            host.restore_streams.call0(py).map_err(|err| exception_text(py, err))?;
        }
        let (stdout, stderr) = if host.direct_calls.bind(py).is_empty() {
            (String::new(), String::new())
        } else {
            host.direct_captured
                .call1(py, (call_id,))
                .and_then(|texts| texts.extract(py))
                .map_err(|err| exception_text(py, err))?
        };
        Ok(match returned {
            Ok(output) => DirectOutcome::Returned { output, stdout, stderr },
            Err(reply) => DirectOutcome::Replied { reply, stdout, stderr },
        })
    })
}

/// The keyword arguments of a direct call: their names (a tuple made once per set
/// of names) and their values, in the order of the function's parameters.
fn keywords<'py>(
    py: Python<'py>,
    direct: &Direct,
    args: &Map<String, Value>,
) -> PyResult<(Bound<'py, PyTuple>, Vec<Bound<'py, PyAny>>)> {
    let mut ordered: Vec<(usize, &String, &Value)> = Vec::with_capacity(args.len());
    for (name, value) in args {
        let index = direct.parameters.iter().position(|(known, ..)| known == name).unwrap_or(usize::MAX);
        ordered.push((index, name, value));
    }
    ordered.sort_by_key(|(index, ..)| *index);
    let mut values = Vec::with_capacity(ordered.len());
    for (index, _, value) in &ordered {
        let coercion = direct.parameters.get(*index).map_or(Coercion::Keep, |(_, _, coercion)| *coercion);
        values.push(to_python(py, value, coercion, 0)?);
    }
    let known = ordered.iter().all(|(index, ..)| *index < 64);
    if !known {
        let names = ordered.iter().map(|(index, name, _)| match direct.parameters.get(*index) {
            Some((_, python, _)) => python.bind(py).clone(),
            None => PyString::new(py, name),
        });
        return Ok((PyTuple::new(py, names)?, values));
    }
    let mask: u64 = ordered.iter().fold(0, |mask, (index, ..)| mask | 1 << index);
    let cache = direct.keyword_names.bind(py);
    if let Some(names) = cache.get_item(mask)? {
        return Ok((names.cast_into::<PyTuple>()?, values));
    }
    let names = PyTuple::new(py, ordered.iter().map(|(index, ..)| direct.parameters[*index].1.bind(py)))?;
    cache.set_item(mask, &names)?;
    Ok((names, values))
}

/// `function(**dict(zip(names, values)))`. The limited API of the abi3 extension
/// has no vectorcall before 3.12: the dict is made.
#[cfg(feature = "extension")]
fn vectorcall<'py>(
    py: Python<'py>,
    function: &Bound<'py, PyAny>,
    values: &[Bound<'py, PyAny>],
    names: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let keywords = PyDict::new(py);
    for (name, value) in names.iter().zip(values) {
        keywords.set_item(name, value)?;
    }
    function.call((), Some(&keywords))
}

/// `function(**dict(zip(names, values)))`, without making the dict.
#[cfg(not(feature = "extension"))]
fn vectorcall<'py>(
    py: Python<'py>,
    function: &Bound<'py, PyAny>,
    values: &[Bound<'py, PyAny>],
    names: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let pointers: Vec<*mut ffi::PyObject> = values.iter().map(Bound::as_ptr).collect();
    let names = if values.is_empty() { std::ptr::null_mut() } else { names.as_ptr() };
    // SAFETY: `pointers` holds `values.len()` live references (kept alive by `values`),
    // all of them keywords named by the tuple `names`; the result is a new reference
    // or NULL with an exception set.
    unsafe {
        let result = ffi::PyObject_Vectorcall(function.as_ptr(), pointers.as_ptr(), 0, names);
        Bound::from_owned_ptr_or_err(py, result)
    }
}

thread_local! {
    /// This thread's entry of `host._direct`: `[call id or None, (library, function)]`.
    static MARKER: std::cell::OnceCell<Py<PyList>> = const { std::cell::OnceCell::new() };
}

/// This thread's marker, made and entered in `host._direct` on first use.
fn marker<'py>(py: Python<'py>, host: &Host) -> PyResult<Bound<'py, PyList>> {
    MARKER.with(|cell| {
        if let Some(marker) = cell.get() {
            return Ok(marker.bind(py).clone());
        }
        let marker = PyList::new(py, [py.None(), py.None()])?;
        // SAFETY: a plain C call; it reads the calling thread's id.
        let thread = unsafe { ffi::PyThread_get_thread_ident() };
        host.direct_markers.bind(py).set_item(thread, &marker)?;
        let _ = cell.set(marker.clone().unbind());
        Ok(marker)
    })
}

fn reply(py: Python<'_>, text: PyResult<Py<PyAny>>) -> Result<String, String> {
    text.and_then(|text| text_of(text.bind(py))).map_err(|err| exception_text(py, err))
}

/// Arguments nested deeper than this are not built here (serde_json parses at most 128 levels).
const MAX_DEPTH: usize = 256;

/// A JSON value as the Python object `json.loads` makes of it, with `coercion` applied
/// to a number at the top.
fn to_python<'py>(py: Python<'py>, value: &Value, coercion: Coercion, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(PyRecursionError::new_err("the arguments are nested too deeply"));
    }
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), ..) if coercion == Coercion::Float => PyFloat::new(py, int as f64).into_any(),
            (_, Some(int), _) if coercion == Coercion::Float => PyFloat::new(py, int as f64).into_any(),
            (Some(int), ..) => int.into_pyobject(py)?.into_any(),
            (_, Some(int), _) => int.into_pyobject(py)?.into_any(),
            // An integer beyond 64 bits stays exact, as Python's own `json.loads` keeps it.
            _ if coercion != Coercion::Float && is_integer_text(&number.to_string()) => {
                let digits = CString::new(number.to_string()).map_err(|_| PyRecursionError::new_err("a number"))?;
                // SAFETY: `digits` is a NUL-terminated string of decimal digits; the
                // result is a new reference or NULL with an exception set.
                unsafe {
                    Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromString(digits.as_ptr(), std::ptr::null_mut(), 10))?
                }
            }
            (.., Some(float)) if coercion == Coercion::Int && float.is_finite() && float.fract() == 0.0 => {
                // SAFETY: PyLong_FromDouble returns a new reference or NULL with an exception set.
                unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromDouble(float))? }
            }
            (.., float) => PyFloat::new(py, float.unwrap_or(f64::NAN)).into_any(),
        },
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let items: Vec<_> =
                items.iter().map(|item| to_python(py, item, Coercion::Keep, depth + 1)).collect::<PyResult<_>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(fields) => {
            let dict = PyDict::new(py);
            for (key, item) in fields {
                dict.set_item(key, to_python(py, item, Coercion::Keep, depth + 1)?)?;
            }
            dict.into_any()
        }
    })
}

/// Whether a JSON number's text is an integer (`-`, then digits only).
fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Return values nested deeper than this go to `host.py`, which reports them.
const MAX_RESULT_DEPTH: usize = 64;

/// A return value made only of JSON's own types (exact `None`, `bool`, `int`, finite
/// `float`, `str`, `list`, `tuple`, `dict` with `str` keys) as JSON;
/// `None` for anything else, which `host.py` converts or reports.
fn to_json(value: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    if depth > MAX_RESULT_DEPTH {
        return None;
    }
    if value.is_none() {
        return Some(Value::Null);
    }
    if let Ok(flag) = value.cast_exact::<PyBool>() {
        return Some(Value::Bool(flag.is_true()));
    }
    if let Ok(int) = value.cast_exact::<PyInt>() {
        if let Ok(small) = int.extract::<i64>() {
            return Some(Value::from(small));
        }
        // Any other integer, exactly: JSON integers are text.
        return int.str().ok()?.to_str().ok()?.parse::<Number>().ok().map(Value::Number);
    }
    if let Ok(float) = value.cast_exact::<PyFloat>() {
        return Number::from_f64(float.value()).map(Value::Number);
    }
    if let Ok(text) = value.cast_exact::<PyString>() {
        return text.to_str().ok().map(|text| Value::String(text.to_owned()));
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        return list.iter().map(|item| to_json(&item, depth + 1)).collect::<Option<Vec<_>>>().map(Value::Array);
    }
    if let Ok(tuple) = value.cast_exact::<PyTuple>() {
        return tuple.iter().map(|item| to_json(&item, depth + 1)).collect::<Option<Vec<_>>>().map(Value::Array);
    }
    let dict = value.cast_exact::<PyDict>().ok()?;
    let mut fields = Map::with_capacity(dict.len());
    for (key, item) in dict.iter() {
        let key = key.cast_exact::<PyString>().ok()?.to_str().ok()?.to_owned();
        fields.insert(key, to_json(&item, depth + 1)?);
    }
    Some(Value::Object(fields))
}

/// Whether `host.py` must look at a returned dict: one with `success: false` or an
/// `error` key may report a failure (SPEC §5).
fn may_report_failure(output: &Value) -> bool {
    output
        .as_object()
        .is_some_and(|fields| fields.get("success") == Some(&Value::Bool(false)) || fields.contains_key("error"))
}

/// Evaluates a Python expression in a fresh namespace and returns its `repr()`;
/// for diagnostics and measurements, never for running tools.
pub fn eval_repr(expression: &str) -> Result<String, String> {
    host()?;
    let expression = CString::new(expression).map_err(|err| err.to_string())?;
    Python::attach(|py| {
        let value = py.eval(&expression, None, None).map_err(|err| exception_text(py, err))?;
        value.repr().map(|r| r.to_string()).map_err(|err| exception_text(py, err))
    })
}

/// The exception with its formatted traceback.
fn exception_text(py: Python<'_>, err: PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|tb| tb.getattr("format_exception")?.call1((err.value(py),)))
        .and_then(|lines| lines.extract::<Vec<String>>());
    match formatted {
        Ok(lines) => lines.concat(),
        Err(_) => err.to_string(),
    }
}
