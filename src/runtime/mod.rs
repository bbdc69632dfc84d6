//! Running tools in an embedded CPython, on demand (SPEC §5–§8).
//!
//! - [`Runtime`]: the host API: call a tool, ask the prompt providers, register the
//!   confirm handler. It looks the tool up, validates the arguments and hands a
//!   self-contained job to where tools run: supervised worker processes
//!   ([`Isolation::Workers`], SPEC §8) or this process ([`Isolation::InProcess`]).
//! - [`catalog`]: a registry that changes while the host runs: mounted libraries,
//!   tools registered from code, rescans that re-read only changed files (SPEC §6).
//! - `engine`: runs a job in this process's interpreter (in-process, and inside each
//!   worker). `python`: the only code in lcp that touches pyo3. `host/`: the Python
//!   side, a package of modules (`host.py`'s entry points, loading and hooks; calls and
//!   capture; results; host objects; argument conversion; `lcp_files`).
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

#[cfg(feature = "python")]
mod capture;
#[cfg(feature = "python")]
pub mod catalog;
#[cfg(feature = "python")]
mod channel;
#[cfg(feature = "python")]
mod embedded;
#[cfg(feature = "python")]
mod engine;
pub mod host_objects;
#[cfg(feature = "python")]
mod line_search;
#[cfg(feature = "python")]
mod memory;
#[cfg(feature = "python")]
mod process_tree;
#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod refusals;
pub(crate) mod sandbox;
#[cfg(feature = "python")]
mod supervisor;
#[cfg(feature = "python")]
pub(crate) mod validate;
#[cfg(feature = "python")]
pub(crate) mod worker;
#[cfg(feature = "python")]
mod workspace;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use crate::host::config::runtime::venv_beside;
pub use crate::host::config::runtime::{
    Autonomy, Isolation, RuntimeConfig, RuntimeError, SandboxSettings, WorkerSettings, library_key,
};
#[cfg(feature = "python")]
pub(crate) use embedded::Forward;
#[cfg(feature = "python")]
pub use embedded::{Resolver, Runtime, VirtualTool, python_build};
use host_objects::Callbacks;

/// The default bound of a result's text sent on (`--max-output` of `lcp serve`), in bytes.
pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

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
    /// Stops the call when cancelled: a worker's call always (its worker is ended
    /// when the tool does not stop); in-process, a tool running Python code is
    /// stopped, one blocked in C code is left running and its result dropped.
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
    /// What the host holds the tool declares (its config laid over its file); `None`:
    /// its file's declarations. Chooses the sandbox of the worker that runs it (SPEC §18).
    pub declared: Option<crate::policy::Declared>,
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

/// How a call ended, said once where it is known (SPEC §5, §8) and read by every
/// surface from here: never told apart by field combinations or message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool returned; `output` is its value.
    Returned,
    /// The tool returned a failure it reports itself (`{"success": false, "error": …}`);
    /// `output` is that value, `error` its message.
    Reported,
    /// The tool (or its library's import or init) raised: `error` is `Type: message`,
    /// `traceback` the formatted traceback.
    Raised,
    /// Nothing of the tool ran: an unknown tool, invalid arguments, a policy rule, no
    /// worker to take the call.
    Refused,
    /// It returned a value its return annotation (output schema) refuses.
    Invalid,
    /// Stopped by its time limit.
    TimedOut,
    /// Stopped because the caller cancelled it.
    Cancelled,
    /// It ran out of memory (`MemoryError`): with worker processes, of what its worker
    /// may use (`--memory-limit`).
    OutOfMemory,
    /// Its worker process died under it (or was left unusable by it).
    Died,
    /// Another MCP server ran it (SPEC §14): `output` is the `CallToolResult` it sent,
    /// content blocks and `structuredContent` as they were; with `is_error`, `error`
    /// is its text.
    Relayed {
        /// The server's `isError`.
        is_error: bool,
    },
}

/// The result of a call; as JSON, SPEC §5's `{"ok", "output", "error"?, "traceback"?,
/// "stdout", "stderr"}`, where `ok` is whether the tool returned (the outcome itself
/// crosses from Python and from a worker with the other fields: `Carried`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// How the call ended.
    pub outcome: Outcome,
    /// The return value as JSON (`null` when there is none).
    pub output: Value,
    /// Why it failed: `Type: message` for an exception.
    pub error: Option<String>,
    /// The formatted traceback of the exception, if one was raised.
    pub traceback: Option<String>,
    /// What the tool printed on standard output, up to a bound.
    pub stdout: String,
    /// What the tool printed on standard error, up to a bound.
    pub stderr: String,
    /// When the output's text was longer than [`CallOptions::max_output`]: its length
    /// in bytes, and `output` holds the start of that text (a string) and no more.
    pub output_cut_from: Option<usize>,
    /// What the worker's sandbox refused during the call (SPEC §18), a sentence each
    /// naming the declaration, the process and what it tried: a subprocess's bare
    /// `Permission denied` explained.
    pub refused: Vec<String>,
}

impl Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut fields = serializer.serialize_struct("ToolResult", 7)?;
        fields.serialize_field("ok", &self.ok())?;
        fields.serialize_field("output", &self.output)?;
        if let Some(error) = &self.error {
            fields.serialize_field("error", error)?;
        }
        if let Some(traceback) = &self.traceback {
            fields.serialize_field("traceback", traceback)?;
        }
        fields.serialize_field("stdout", &self.stdout)?;
        fields.serialize_field("stderr", &self.stderr)?;
        if let Some(total) = self.output_cut_from {
            fields.serialize_field("output_cut_from", &total)?;
        }
        if !self.refused.is_empty() {
            fields.serialize_field("refused", &self.refused)?;
        }
        fields.end()
    }
}

/// A result as it is made in Python and crosses from a worker: every field, the
/// outcome included (`host.py` says it where it is known).
#[derive(Serialize, Deserialize)]
pub(crate) struct Carried {
    outcome: Outcome,
    #[serde(default)]
    output: Value,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    traceback: Option<String>,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
    #[serde(default)]
    output_cut_from: Option<usize>,
    #[serde(default)]
    refused: Vec<String>,
}

impl From<ToolResult> for Carried {
    fn from(result: ToolResult) -> Carried {
        let ToolResult { outcome, output, error, traceback, stdout, stderr, output_cut_from, refused } = result;
        Carried { outcome, output, error, traceback, stdout, stderr, output_cut_from, refused }
    }
}

impl From<Carried> for ToolResult {
    fn from(carried: Carried) -> ToolResult {
        let Carried { outcome, output, error, traceback, stdout, stderr, output_cut_from, refused } = carried;
        ToolResult { outcome, output, error, traceback, stdout, stderr, output_cut_from, refused }
    }
}

impl ToolResult {
    /// A call that ran nothing of the tool ([`Outcome::Refused`]).
    pub fn failure(error: impl Into<String>) -> ToolResult {
        ToolResult::ended(Outcome::Refused, error)
    }

    /// A call that ended as `outcome`, for the reason `error`, with no value.
    pub fn ended(outcome: Outcome, error: impl Into<String>) -> ToolResult {
        ToolResult {
            outcome,
            output: Value::Null,
            error: Some(error.into()),
            traceback: None,
            stdout: String::new(),
            stderr: String::new(),
            output_cut_from: None,
            refused: Vec::new(),
        }
    }

    /// Whether the tool returned a value ([`Outcome::Returned`]).
    pub fn ok(&self) -> bool {
        matches!(self.outcome, Outcome::Returned | Outcome::Relayed { is_error: false })
    }

    /// Cuts the output's text (a string as it is, anything else as JSON text) to
    /// `max` bytes where the result is made, so that no more of it is ever sent or
    /// held (SPEC §17). An object with content (`images`, `audio`, `resources`) is
    /// left whole: its text and its blocks are told apart where it is shown.
    #[cfg(feature = "python")]
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
#[cfg(feature = "python")]
pub(crate) const CONTENT_KEYS: [&str; 3] = ["images", "audio", "resources"];

/// The length of a value's compact JSON text, counted without making it.
#[cfg(feature = "python")]
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
