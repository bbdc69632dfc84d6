//! `lcp test`: every tool called once per representative payload (SPEC §13, seed 001).
//!
//! Owns the payloads (the JSON objects of the docstring's `Examples:` section, else one
//! generated from the input schema), the scratch workspace of each call (a fresh
//! temporary folder, removed after), and the verdict: the payload must match the input
//! schema, the call must succeed, and its value must match the output schema. Tools
//! run only through the [`Runtime`] (as [`Runtime::call`] runs them, less the check of
//! the arguments, which this module makes itself to say which payload was invalid);
//! it never runs Python itself and never lets a call work anywhere but in its scratch
//! workspace.
//!
//! An example may carry `"$files": {"name.txt": "text"}`: files written into the
//! scratch workspace before the call (never a parameter: parameter names are Python
//! identifiers). The lane has no user and no model: a confirmation is refused (unless
//! `--yes`), a question to the user is declined, and `generate_text` fails saying
//! there is no model. A call that met one of these passes when the tool reports it as
//! a failure instead of acting or crashing.
//!
//! A folder of tool files may hold a test file, [`TESTS_FILE`] (`lcp_tests.toml`),
//! read without running code ([`read_tests`]): a `fixtures` folder copied into every
//! call's workspace, a `setup` shell command run there before each call (with a time
//! limit; what it leaves running is ended with the call), and recorded calls of its
//! tools (`[[call]]`: arguments, files, and what the call must give: an output,
//! exactly or in part, or a failure saying a text). A tool's recorded calls replace
//! its generated payload; its `Examples:` still run, in workspaces prepared alike.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::diag::print_to_stderr;
use crate::discovery::extract::Tool;
use crate::discovery::registry::Registry;
use crate::host::view::View;
use crate::runtime::host_objects::{Answer, Callbacks, Model};
use crate::runtime::{CallOptions, Confirmation, Runtime, ToolResult, validate};

/// The key of an example that names files to create in the scratch workspace.
pub const FILES_KEY: &str = "$files";

/// Where a payload comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// An `Examples:` entry of the docstring.
    Example,
    /// Made from the parameters' schemas.
    Generated,
    /// A `[[call]]` of the folder's test file.
    Recorded,
}

impl Source {
    /// `example` or `generated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Example => "example",
            Source::Generated => "generated",
            Source::Recorded => "recorded",
        }
    }
}

/// One representative call of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    /// Where it comes from.
    pub source: Source,
    /// The arguments (without `$files`).
    pub args: Value,
    /// Files to create in the scratch workspace: relative path → text.
    pub files: Vec<(PathBuf, String)>,
    /// How every call of the tool's folder is prepared (its test file), if it has one.
    pub prepare: Option<Arc<Prepare>>,
    /// What a recorded call sets and expects.
    pub recorded: Option<Box<Recorded>>,
}

impl Payload {
    fn new(source: Source, args: Value, files: Vec<(PathBuf, String)>) -> Payload {
        Payload { source, args, files, prepare: None, recorded: None }
    }
}

/// The outcome of one call: `{"tool", "source", "name"?, "at"?, "payload", "ok",
/// "error"?, "note"?, "output"?, "seconds"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The tool called.
    pub tool: String,
    /// Where the payload comes from.
    pub source: Source,
    /// A recorded call's `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where a recorded call is: `file:line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The arguments of the call.
    pub payload: Value,
    /// Whether the call passed.
    pub ok: bool,
    /// Why it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why a call passed although it did not go all the way (a refused confirmation,
    /// a declined question, no model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The same, in a few words, for the table.
    #[serde(skip)]
    pub unmet: Option<Unmet>,
    /// The call failed, as its recorded call expected.
    #[serde(skip)]
    pub failed_as_expected: bool,
    /// What the tool returned, when it ran and returned something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// How long the call took.
    pub seconds: f64,
}

/// How `lcp test` runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Stop a call after this long.
    pub timeout: Option<Duration>,
    /// Allow what tools ask to confirm (otherwise it is refused).
    pub yes: bool,
    /// Only these tools (names as shown); empty: every tool of the view.
    pub only: Vec<String>,
    /// The Python a setup command finds as `$LCP_TEST_PYTHON` (the venv's, else the
    /// embedded interpreter's executable).
    pub python: Option<PathBuf>,
}

/// The payloads of a tool: its examples, or one generated from its input schema. An
/// example that cannot be read is an `Err` saying why.
pub fn payloads(tool: &Tool) -> Vec<Result<Payload, String>> {
    let examples = tool.docstring.as_deref().map(examples).unwrap_or_default();
    if !examples.is_empty() {
        return examples;
    }
    let args = generate(tool.parameters.value());
    vec![Ok(Payload::new(Source::Generated, args, Vec::new()))]
}

/// The JSON objects of a docstring's `Examples:` section (Google `Examples:` or NumPy
/// `Examples` over dashes), one per line; other lines (prose, doctests) are skipped.
pub fn examples(docstring: &str) -> Vec<Result<Payload, String>> {
    let lines: Vec<&str> = docstring.lines().collect();
    let is_dashes = |line: &str| line.trim().len() >= 3 && line.trim().chars().all(|c| c == '-');
    let header = |i: usize| {
        let line = lines[i].trim();
        let named = |name: &str| matches!(name, "Examples" | "Example");
        line.strip_suffix(':').is_some_and(named)
            || (named(line) && lines.get(i + 1).is_some_and(|next| is_dashes(next)))
    };
    let Some(start) = (0..lines.len()).find(|&i| header(i)) else { return Vec::new() };
    let indent = |line: &str| line.len() - line.trim_start().len();
    let header_indent = indent(lines[start]);
    let mut found = Vec::new();
    let mut i = start + 1;
    if lines.get(i).is_some_and(|line| is_dashes(line)) {
        i += 1;
    }
    while let Some(line) = lines.get(i) {
        let text = line.trim();
        // Another section starts: a `Name:` line no deeper than the header, or a
        // NumPy header over dashes.
        let next_section = (indent(line) <= header_indent && text.ends_with(':') && !text.starts_with('{'))
            || lines.get(i + 1).is_some_and(|next| is_dashes(next) && !text.is_empty());
        if next_section {
            break;
        }
        if text.starts_with('{') {
            found.push(example(text).map_err(|err| format!("example `{text}` is not a JSON object: {err}")));
        }
        i += 1;
    }
    found
}

fn example(text: &str) -> Result<Payload, String> {
    let Value::Object(mut args) = serde_json::from_str::<Value>(text).map_err(|err| err.to_string())? else {
        return Err("it is not an object".to_string());
    };
    let files = match args.remove(FILES_KEY) {
        None => Vec::new(),
        Some(Value::Object(listed)) => workspace_files(FILES_KEY, listed)?,
        Some(other) => return Err(format!("`{FILES_KEY}` must map file names to their text, not {other}")),
    };
    Ok(Payload::new(Source::Example, Value::Object(args), files))
}

/// `{"name": "text"}` as files of the workspace: each name a relative path inside it.
fn workspace_files(key: &str, listed: Map<String, Value>) -> Result<Vec<(PathBuf, String)>, String> {
    let mut files = Vec::new();
    for (name, content) in listed {
        let path = PathBuf::from(&name);
        let inside = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        match content {
            Value::String(text) if inside && !name.is_empty() => files.push((path, text)),
            Value::String(_) => {
                return Err(format!("`{key}` names `{name}`, which is not a relative path inside the workspace"));
            }
            other => return Err(format!("`{key}[\"{name}\"]` must be the file's text, not {other}")),
        }
    }
    Ok(files)
}

/// The smallest arguments an input schema accepts: required parameters only, each
/// its default, first enum member or minimal valid value.
pub fn generate(schema: &Value) -> Value {
    minimal(schema, schema, 0)
}

fn minimal(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(object) = schema.as_object() else { return Value::Null };
    if depth > 32 {
        return Value::Null;
    }
    if let Some(target) = object.get("$ref").and_then(Value::as_str).and_then(|r| root.pointer(r.strip_prefix('#')?)) {
        return minimal(target, root, depth + 1);
    }
    if let Some(value) = object.get("default").or_else(|| object.get("const")) {
        return value.clone();
    }
    if let Some(first) = object.get("enum").and_then(Value::as_array).and_then(|values| values.first()) {
        return first.clone();
    }
    if let Some(first) = object.get("anyOf").and_then(Value::as_array).and_then(|branches| branches.first()) {
        return minimal(first, root, depth + 1);
    }
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str).unwrap_or("null"),
        _ => "null",
    };
    let number = |key: &str| object.get(key).and_then(Value::as_f64);
    match kind {
        "string" => {
            let format = object.get("format").and_then(Value::as_str).unwrap_or_default();
            let text = match format {
                "date" => "2000-01-01".to_string(),
                "date-time" => "2000-01-01T00:00:00Z".to_string(),
                "time" => "00:00:00".to_string(),
                "duration" => "P0D".to_string(),
                "uuid" => "00000000-0000-0000-0000-000000000000".to_string(),
                "email" => "someone@example.com".to_string(),
                "uri" => "https://example.com/".to_string(),
                "ipv4" => "127.0.0.1".to_string(),
                "ipv6" => "::1".to_string(),
                _ => "a".repeat(number("minLength").unwrap_or(0.0) as usize),
            };
            Value::String(text)
        }
        "integer" | "number" => {
            let step = if kind == "integer" { 1.0 } else { number("multipleOf").unwrap_or(1.0) };
            let value = match (number("minimum"), number("exclusiveMinimum"), number("maximum")) {
                (Some(min), _, _) => min,
                (None, Some(min), _) => min + step,
                (None, None, Some(max)) if max < 0.0 => max,
                _ => 0.0,
            };
            if kind == "integer" { json!(value.ceil() as i64) } else { json!(value) }
        }
        "boolean" => Value::Bool(false),
        "array" => {
            let count = number("minItems").unwrap_or(0.0) as usize;
            let prefix = object.get("prefixItems").and_then(Value::as_array);
            let items = object.get("items").cloned().unwrap_or(json!({}));
            let item = |i: usize| match prefix.and_then(|p| p.get(i)) {
                Some(schema) => minimal(schema, root, depth + 1),
                None => minimal(&items, root, depth + 1),
            };
            Value::Array((0..count).map(item).collect())
        }
        "object" => {
            let properties = object.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for name in object.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let property = properties.and_then(|p| p.get(name)).cloned().unwrap_or(json!({}));
                out.insert(name.to_string(), minimal(&property, root, depth + 1));
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

/// The test file of a folder of tool files (SPEC §13): its tools' recorded calls and
/// how every call of them is prepared.
pub const TESTS_FILE: &str = "lcp_tests.toml";

/// How long a setup command may run unless the test file says otherwise.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How every call of the tools of a test file's folder is prepared.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepare {
    /// The test file.
    pub file: PathBuf,
    /// A folder copied into each call's workspace (`fixtures`).
    pub fixtures: Option<PathBuf>,
    /// A shell command run in each call's workspace before the call (`setup`).
    pub setup: Option<String>,
    /// How long a setup command may run (`setup_timeout`).
    pub setup_timeout: Duration,
}

/// What a recorded call (`[[call]]`) sets and expects.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Where it is: `file:line`.
    pub at: String,
    /// Its `name`, if it has one.
    pub name: Option<String>,
    /// The folder copied into its workspace: its own `fixtures`, else the file's.
    pub fixtures: Option<PathBuf>,
    /// Its own `setup`, run after the file's.
    pub setup: Option<String>,
    /// `yes = true`: what the tool asks to confirm is allowed.
    pub yes: bool,
    /// `timeout`: its own time limit.
    pub timeout: Option<Duration>,
    /// What the call must give.
    pub expect: Expect,
    /// `files_after`: files the workspace must hold after the call, with their text.
    pub files_after: Vec<(PathBuf, String)>,
}

/// What a call must give to pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Expect {
    /// Success, any output (an example's and a generated payload's expectation).
    #[default]
    Success,
    /// `output` (or `output_json`): success with exactly this output.
    Output(Value),
    /// `output_includes`: success with an output holding this (see [`difference`]).
    Includes(Value),
    /// `error`: a failure whose error says this text.
    Failure(String),
}

/// A test file, read: how its folder's calls are prepared, and its recorded calls by
/// the name of their tool.
#[derive(Debug, Clone)]
pub struct Tests {
    /// What every call of the folder's tools is prepared with.
    pub prepare: Arc<Prepare>,
    /// `(tool, payload)` in the file's order.
    pub calls: Vec<(String, Payload)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTests {
    fixtures: Option<toml::Spanned<String>>,
    setup: Option<String>,
    setup_timeout: Option<toml::Spanned<f64>>,
    #[serde(default)]
    call: Vec<toml::Spanned<RawCall>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: String,
    name: Option<String>,
    #[serde(default)]
    args: Map<String, Value>,
    #[serde(default)]
    files: Map<String, Value>,
    fixtures: Option<String>,
    setup: Option<String>,
    #[serde(default)]
    yes: bool,
    timeout: Option<f64>,
    output: Option<Value>,
    output_json: Option<String>,
    output_includes: Option<Value>,
    error: Option<String>,
    #[serde(default)]
    files_after: Map<String, Value>,
}

/// Reads the test file `file`, whose recorded calls may name the tools `tools` (those
/// of its folder). Every problem is an error at its line (`file:line: message`).
/// Nothing is run: fixture folders are only looked at.
pub fn read_tests(file: &Path, tools: &[&str]) -> Result<Tests, Vec<String>> {
    let text =
        crate::host::config::read_regular_file(file).map_err(|err| vec![format!("{}: {err}", file.display())])?;
    // Each line found by a binary search (a file's every entry placed in time linear
    // in its size).
    let starts = crate::located::LineStarts::new(&text);
    let at = |offset: usize| format!("{}:{}", file.display(), starts.line(offset));
    let raw: RawTests = toml::from_str(&text).map_err(|err| {
        let line = err.span().map(|span| format!(":{}", starts.line(span.start))).unwrap_or_default();
        vec![format!("{}{line}: {}", file.display(), err.message().trim_end())]
    })?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut errors = Vec::new();
    let folder = |name: &str, place: &str, errors: &mut Vec<String>| -> Option<PathBuf> {
        let path = base.join(name);
        if name.is_empty() {
            return None;
        }
        if !path.is_dir() {
            errors.push(format!("{place}: `fixtures` names `{name}`, which is not a folder beside the test file"));
        }
        Some(path)
    };
    let seconds = |secs: f64, key: &str, place: &str, errors: &mut Vec<String>| match Duration::try_from_secs_f64(secs)
    {
        Ok(duration) if secs > 0.0 => Some(duration),
        _ => {
            errors.push(format!("{place}: `{key}` is {secs}; expected a positive number of seconds"));
            None
        }
    };
    let prepare = Arc::new(Prepare {
        file: file.to_path_buf(),
        fixtures: raw.fixtures.and_then(|name| folder(name.get_ref(), &at(name.span().start), &mut errors)),
        setup: raw.setup.filter(|command| !command.trim().is_empty()),
        setup_timeout: raw
            .setup_timeout
            .and_then(|secs| seconds(*secs.get_ref(), "setup_timeout", &at(secs.span().start), &mut errors))
            .unwrap_or(SETUP_TIMEOUT),
    });
    let mut calls = Vec::new();
    for spanned in raw.call {
        let place = at(spanned.span().start);
        let call = spanned.into_inner();
        let problems_before = errors.len();
        if !tools.contains(&call.tool.as_str()) {
            let near = crate::suggest::closest(&call.tool, tools.iter().copied(), |name| {
                name.strip_prefix("tool_").map(str::to_string)
            });
            errors.push(format!(
                "{place}: `{}` is not a tool of the files beside this test file{}",
                call.tool,
                crate::suggest::did_you_mean(&near)
            ));
        }
        let given =
            [call.output.is_some(), call.output_json.is_some(), call.output_includes.is_some(), call.error.is_some()];
        if given.iter().filter(|&&given| given).count() > 1 {
            errors.push(format!("{place}: give at most one of `output`, `output_json`, `output_includes` and `error`"));
        }
        let expect = if let Some(output) = call.output {
            Expect::Output(output)
        } else if let Some(text) = call.output_json {
            match serde_json::from_str(&text) {
                Ok(output) => Expect::Output(output),
                Err(err) => {
                    errors.push(format!("{place}: `output_json` is not JSON: {err}"));
                    Expect::Success
                }
            }
        } else if let Some(part) = call.output_includes {
            Expect::Includes(part)
        } else if let Some(text) = call.error {
            Expect::Failure(text)
        } else {
            Expect::Success
        };
        let files = workspace_files("files", call.files).unwrap_or_else(|err| {
            errors.push(format!("{place}: {err}"));
            Vec::new()
        });
        let files_after = workspace_files("files_after", call.files_after).unwrap_or_else(|err| {
            errors.push(format!("{place}: {err}"));
            Vec::new()
        });
        let fixtures = match call.fixtures.as_deref() {
            Some(name) => folder(name, &place, &mut errors),
            None => prepare.fixtures.clone(),
        };
        let timeout = call.timeout.and_then(|secs| seconds(secs, "timeout", &place, &mut errors));
        if errors.len() > problems_before {
            continue;
        }
        let recorded = Recorded {
            at: place,
            name: call.name,
            fixtures,
            setup: call.setup.filter(|command| !command.trim().is_empty()),
            yes: call.yes,
            timeout,
            expect,
            files_after,
        };
        let payload = Payload {
            source: Source::Recorded,
            args: Value::Object(call.args),
            files,
            prepare: Some(Arc::clone(&prepare)),
            recorded: Some(Box::new(recorded)),
        };
        calls.push((call.tool, payload));
    }
    if errors.is_empty() { Ok(Tests { prepare, calls }) } else { Err(errors) }
}

/// Where `got` departs from `expected`, said in a sentence; `None` when it matches.
/// With `partly`, an object matches when each key it has is in the output with a
/// matching value (the output may hold more); otherwise every key must be the same.
/// Arrays match item by item and must be as long; numbers match by value (`1` and
/// `1.0`); anything else must be equal.
pub fn difference(expected: &Value, got: &Value, partly: bool) -> Option<String> {
    let mut at = String::new();
    let found = differ(expected, got, partly, &mut at)?;
    let place = if at.is_empty() { String::new() } else { format!(" at `{at}`") };
    Some(format!("the output differs{place}: {found}"))
}

fn differ(expected: &Value, got: &Value, partly: bool, at: &mut String) -> Option<String> {
    let kind = |value: &Value| match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mismatch = || Some(format!("expected {}, got {}", brief(expected), brief(got)));
    match (expected, got) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let depth = at.len();
                at.push_str(&pointer_of(key));
                match have.get(key) {
                    None => return Some(format!("missing (expected {})", brief(value))),
                    Some(other) => {
                        if let Some(found) = differ(value, other, partly, at) {
                            return Some(found);
                        }
                    }
                }
                at.truncate(depth);
            }
            if !partly && let Some((key, value)) = have.iter().find(|(key, _)| !want.contains_key(*key)) {
                at.push_str(&pointer_of(key));
                return Some(format!("not expected (got {})", brief(value)));
            }
            None
        }
        (Value::Array(want), Value::Array(have)) => {
            for (index, (value, other)) in want.iter().zip(have).enumerate() {
                let depth = at.len();
                at.push_str(&format!("/{index}"));
                if let Some(found) = differ(value, other, partly, at) {
                    return Some(found);
                }
                at.truncate(depth);
            }
            (want.len() != have.len()).then(|| format!("expected {} items, got {}", want.len(), have.len()))
        }
        (Value::Number(want), Value::Number(have)) => {
            let same = match (want.as_i64(), have.as_i64(), want.as_u64(), have.as_u64()) {
                (Some(a), Some(b), _, _) => a == b,
                (_, _, Some(a), Some(b)) => a == b,
                _ => want.as_f64() == have.as_f64(),
            };
            if same { None } else { mismatch() }
        }
        _ if std::mem::discriminant(expected) != std::mem::discriminant(got) => {
            Some(format!("expected {}, got {} {}", brief(expected), kind(got), brief(got)))
        }
        _ if expected == got => None,
        _ => mismatch(),
    }
}

/// A value as compact JSON, cut after 120 characters.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 120 { text } else { text.chars().take(119).chain(['…']).collect() }
}

/// The folder whose test file covers `library`: the one holding its file (none for
/// tools that are not a file's).
fn tests_folder(library: &crate::discovery::extract::Library) -> Option<PathBuf> {
    (library.origin == crate::discovery::extract::Origin::File)
        .then(|| library.path.parent().map(Path::to_path_buf))
        .flatten()
}

/// The test files of the folders holding the tools of `view`, read, by folder; the
/// names their calls may use are the tools of `registry` in that folder.
fn tests_of(view: &View, registry: &Registry) -> Result<Vec<(PathBuf, Tests)>, String> {
    let folder = tests_folder;
    let mut folders: Vec<PathBuf> = view.registry.libraries().iter().filter_map(|library| folder(library)).collect();
    folders.sort();
    folders.dedup();
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for dir in folders {
        let file = dir.join(TESTS_FILE);
        if !file.exists() {
            continue;
        }
        let tools: Vec<&str> = registry
            .tools()
            .filter(|(library, _)| folder(library).as_deref() == Some(dir.as_path()))
            .map(|(_, tool)| tool.name.as_str())
            .collect();
        match read_tests(&file, &tools) {
            Ok(tests) => found.push((dir, tests)),
            Err(problems) => errors.extend(problems),
        }
    }
    if errors.is_empty() { Ok(found) } else { Err(errors.join("\n")) }
}

/// Calls every tool of `view` (or those of `options.only`) once per payload, through
/// `registry` (the tools as they are named there), and says how each call went.
/// `progress(done, total, tool)` is told before each call. A test file that cannot be
/// read is an error, every problem at its line, and nothing runs.
pub fn run(
    view: &View,
    registry: &Registry,
    runtime: &Runtime,
    options: &Options,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<Vec<Outcome>, String> {
    let suites = tests_of(view, registry)?;
    let met = Arc::new(Met::default());
    let counted = Arc::clone(&met);
    print_to_stderr(&runtime.set_confirm_handler(move |_| {
        if counted.allow.load(Ordering::Relaxed) {
            return Confirmation::allow("allowed with `lcp test --yes` (or the recorded call's `yes = true`)");
        }
        counted.refused.fetch_add(1, Ordering::Relaxed);
        Confirmation::reject("`lcp test` refuses confirmations unless it runs with --yes")
    }));
    let mut planned = Vec::new();
    for (library, tool) in view.registry.tools() {
        if options.only.is_empty() || options.only.contains(&tool.name) {
            let real = view.tool(&tool.name).unwrap_or(&tool.name).to_string();
            let folder = tests_folder(library);
            let suite =
                folder.as_deref().and_then(|dir| suites.iter().find(|(found, _)| found == dir)).map(|(_, tests)| tests);
            let mut list: Vec<Result<Payload, String>> = suite
                .into_iter()
                .flat_map(|tests| &tests.calls)
                .filter(|(name, _)| *name == real)
                .map(|(_, payload)| Ok(payload.clone()))
                .collect();
            let recorded = !list.is_empty();
            // Recorded calls replace the generated payload; examples still run.
            list.extend(payloads(tool).into_iter().filter(|payload| {
                !(recorded && payload.as_ref().is_ok_and(|payload| payload.source == Source::Generated))
            }));
            for payload in list {
                let payload = payload.map(|mut payload| {
                    if payload.prepare.is_none() {
                        payload.prepare = suite.map(|tests| Arc::clone(&tests.prepare));
                    }
                    payload
                });
                planned.push((tool, real.clone(), folder.clone(), payload));
            }
        }
    }
    let total = planned.len();
    let mut outcomes = Vec::with_capacity(total);
    for (done, (tool, real, folder, payload)) in planned.into_iter().enumerate() {
        progress(done, total, &tool.name);
        let outcome = match payload {
            Err(error) => Outcome {
                tool: tool.name.clone(),
                source: Source::Example,
                name: None,
                at: None,
                payload: Value::Null,
                ok: false,
                error: Some(error),
                note: None,
                unmet: None,
                failed_as_expected: false,
                output: None,
                seconds: 0.0,
            },
            Ok(payload) => {
                met.clear();
                let yes = options.yes || payload.recorded.as_ref().is_some_and(|recorded| recorded.yes);
                met.allow.store(yes, Ordering::Relaxed);
                let began = Instant::now();
                let ran = call(tool, registry, &real, runtime, &payload, options, &met);
                let seconds = (began.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
                let expect = payload.recorded.as_ref().map(|recorded| &recorded.expect).unwrap_or(&Expect::Success);
                let mut verdict = judge(expect, ran);
                if let (Some(error), Source::Generated) = (&mut verdict.error, payload.source) {
                    // A generated payload is a guess: say how to give a real one.
                    let file =
                        folder.as_ref().map(|dir| format!(", or recorded calls in {}", dir.join(TESTS_FILE).display()));
                    error.push_str(&format!(
                        "\n(a generated payload: give the tool an `Examples:` section{})",
                        file.unwrap_or_default()
                    ));
                }
                Outcome {
                    tool: tool.name.clone(),
                    source: payload.source,
                    name: payload.recorded.as_ref().and_then(|recorded| recorded.name.clone()),
                    at: payload.recorded.as_ref().map(|recorded| recorded.at.clone()),
                    payload: payload.args,
                    ok: verdict.error.is_none(),
                    error: verdict.error,
                    note: verdict.note,
                    unmet: verdict.unmet,
                    failed_as_expected: verdict.failed_as_expected,
                    output: verdict.output,
                    seconds,
                }
            }
        };
        outcomes.push(outcome);
    }
    progress(total, total, "");
    Ok(outcomes)
}

/// A call that was made (or refused for its payload), before its expectation is
/// applied; a call the lane could not make (its workspace, fixtures or setup failed)
/// is an `Err` saying why.
struct Made {
    /// Its result.
    result: ToolResult,
    /// What the lane could not give it, with the note saying so.
    unmet: Option<(Unmet, String)>,
    /// How the workspace departs from the recorded call's `files_after`.
    after: Option<String>,
}

/// A call's verdict.
#[derive(Default)]
struct Verdict {
    error: Option<String>,
    note: Option<String>,
    unmet: Option<Unmet>,
    failed_as_expected: bool,
    output: Option<Value>,
}

/// Whether a call gave what `expect` asks for.
fn judge(expect: &Expect, ran: Result<Made, String>) -> Verdict {
    let Made { result, unmet, after } = match ran {
        Ok(made) => made,
        Err(error) => return Verdict { error: Some(error), ..Verdict::default() },
    };
    let output = (!result.output.is_null()).then(|| result.output.clone());
    let failure = || match &unmet {
        Some((_, note)) => note.clone(),
        None => result.error.clone().unwrap_or_else(|| "the call failed".to_string()),
    };
    let mut verdict = match expect {
        // A failure the tool reports because the lane could not give it something (no
        // user, no model) is a pass with a note.
        Expect::Success if result.ok() => Verdict::default(),
        Expect::Success => match &unmet {
            Some((unmet, note)) => Verdict { unmet: Some(*unmet), note: Some(note.clone()), ..Verdict::default() },
            None => Verdict { error: Some(failure()), ..Verdict::default() },
        },
        Expect::Output(_) | Expect::Includes(_) if !result.ok() => {
            Verdict { error: Some(failure()), ..Verdict::default() }
        }
        Expect::Output(expected) => {
            Verdict { error: difference(expected, &result.output, false), ..Verdict::default() }
        }
        Expect::Includes(expected) => {
            Verdict { error: difference(expected, &result.output, true), ..Verdict::default() }
        }
        Expect::Failure(text) if result.ok() => Verdict {
            error: Some(format!("did not fail: expected a failure saying `{text}`, got {}", brief(&result.output))),
            ..Verdict::default()
        },
        Expect::Failure(text) => {
            let error = failure();
            if error.contains(text.as_str()) {
                Verdict {
                    failed_as_expected: true,
                    note: Some(format!("failed as expected: {error}")),
                    ..Verdict::default()
                }
            } else {
                Verdict {
                    error: Some(format!("failed otherwise: expected `{text}` in the error, got: {error}")),
                    ..Verdict::default()
                }
            }
        }
    };
    if verdict.error.is_none() {
        verdict.error = after;
    }
    verdict.output = output;
    verdict
}

/// What the lane could not give a call: it has no user and no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmet {
    /// A confirmation was refused (no `--yes`).
    Confirmation,
    /// A question to the user was declined.
    User,
    /// `generate_text` found no model.
    Model,
}

impl Unmet {
    /// What was not met, in a few words (`confirmation refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Unmet::Confirmation => "confirmation refused",
            Unmet::User => "user declined",
            Unmet::Model => "no model",
        }
    }

    fn note(self, reported: &str) -> String {
        let why = match self {
            Unmet::Confirmation => "confirmation refused (--yes, or a recorded call's `yes = true`, allows it)",
            Unmet::User => "the user was asked and declined (`lcp test` has no user)",
            Unmet::Model => "the tool asked for the host's model (`lcp test` has none)",
        };
        format!("{why}; the tool reported: {reported}")
    }
}

/// How many times the current call met each of [`Unmet`], and whether it may have
/// what it asks to confirm.
#[derive(Default)]
struct Met {
    refused: AtomicUsize,
    declined: AtomicUsize,
    no_model: AtomicUsize,
    allow: AtomicBool,
}

impl Met {
    fn clear(&self) {
        for count in [&self.refused, &self.declined, &self.no_model] {
            count.store(0, Ordering::Relaxed);
        }
    }

    fn first(&self) -> Option<Unmet> {
        [(&self.refused, Unmet::Confirmation), (&self.declined, Unmet::User), (&self.no_model, Unmet::Model)]
            .into_iter()
            .find(|(count, _)| count.load(Ordering::Relaxed) > 0)
            .map(|(_, unmet)| unmet)
    }
}

/// One call in a fresh scratch workspace, prepared as its test file says (fixtures,
/// files, setup commands); what the lane could not give it when it passed without
/// going all the way, with the note saying so; how the workspace departs from what
/// the recorded call expects after it.
fn call(
    shown: &Tool,
    registry: &Registry,
    real: &str,
    runtime: &Runtime,
    payload: &Payload,
    options: &Options,
    met: &Arc<Met>,
) -> Result<Made, String> {
    let made = |result: ToolResult| Ok(Made { result, unmet: None, after: None });
    let source = payload.source.as_str();
    let problems = validate::check(shown.parameters.value(), &payload.args);
    if !problems.is_empty() {
        let mut error = validate::report(&shown.name, shown.parameters.value(), &problems);
        if payload.source == Source::Generated {
            error.push_str(
                "\nno valid payload could be generated: give the tool an `Examples:` section or a recorded call",
            );
        }
        return made(ToolResult::failure(format!("the {source} payload is not valid: {error}")));
    }
    let recorded = payload.recorded.as_deref();
    let fixtures = match recorded {
        Some(recorded) => recorded.fixtures.as_deref(),
        None => payload.prepare.as_ref().and_then(|prepare| prepare.fixtures.as_deref()),
    };
    let workspace = match Scratch::new(fixtures, &payload.files) {
        Ok(workspace) => workspace,
        Err(err) => return Err(format!("cannot make a scratch workspace: {err}")),
    };
    // What the setup commands leave running is ended when this is dropped: after
    // the call, before the workspace is removed.
    let mut setups = Setups::default();
    if let Some(prepare) = &payload.prepare {
        let commands = [prepare.setup.as_deref(), recorded.and_then(|recorded| recorded.setup.as_deref())];
        for command in commands.into_iter().flatten() {
            setups.run(command, prepare, &workspace.path, real, options.python.as_deref())?;
        }
    }
    let declined = Arc::clone(met);
    let no_model = Arc::clone(met);
    let callbacks = Callbacks {
        interact: Some(Arc::new(move |_| {
            declined.declined.fetch_add(1, Ordering::Relaxed);
            Answer::Declined
        })),
        model: Some(Model {
            generate: Arc::new(move |_| {
                no_model.no_model.fetch_add(1, Ordering::Relaxed);
                Err("`lcp test` has no model to generate text with".to_string())
            }),
            vision: false,
        }),
        ..Callbacks::default()
    };
    // The view's tool holds what the config declares of it: its worker's sandbox.
    let call_options = CallOptions {
        workspace: Some(workspace.path.clone()),
        timeout: recorded.and_then(|recorded| recorded.timeout).or(options.timeout),
        callbacks,
        declared: Some(shown.policy.clone()),
        ..CallOptions::default()
    };
    // The payload is checked above, once: the call does not check it again.
    let Some((library, tool)) = registry.tool(real) else {
        return made(ToolResult::failure(registry.unknown_tool(real)));
    };
    let result = runtime.call_checked(library, tool, &payload.args, &call_options);
    drop(setups);
    let after = recorded.and_then(|recorded| files_differ(&workspace.path, &recorded.files_after));
    let unmet = met.first().filter(|_| result.outcome == crate::runtime::Outcome::Reported).map(|unmet| {
        let note = unmet.note(result.error.as_deref().unwrap_or_default());
        (unmet, note)
    });
    Ok(Made { result, unmet, after })
}

/// How the files of `workspace` depart from `expected` (path → text): the first one
/// missing or different, said in a sentence.
fn files_differ(workspace: &Path, expected: &[(PathBuf, String)]) -> Option<String> {
    for (name, text) in expected {
        let shown = name.display();
        match std::fs::read(workspace.join(name)) {
            Err(err) => return Some(format!("`{shown}` should be in the workspace after the call: {err}")),
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(bytes) => {
                let got = Value::String(String::from_utf8_lossy(&bytes).into_owned());
                return Some(format!(
                    "`{shown}` after the call: expected {}, got {}",
                    brief(&Value::String(text.clone())),
                    brief(&got)
                ));
            }
        }
    }
    None
}

/// A fresh temporary folder, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// A fresh folder holding a copy of `fixtures`, then `files`.
    fn new(fixtures: Option<&Path>, files: &[(PathBuf, String)]) -> std::io::Result<Scratch> {
        // Process-wide, as the names it numbers are: they hold the process id.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("lcp-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        let scratch = Scratch { path };
        if let Some(fixtures) = fixtures {
            copy_tree(fixtures, &scratch.path).map_err(|err| {
                std::io::Error::new(err.kind(), format!("cannot copy the fixtures {}: {err}", fixtures.display()))
            })?;
        }
        for (name, text) in files {
            let file = scratch.path.join(name);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(file, text)?;
        }
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Copies the folder `from` into `to`: files with their permissions, folders, and
/// symbolic links as links (never followed, so a link cannot make a loop).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The process groups of the setup commands of one call: what they leave running (a
/// server the tool talks to) is ended when this is dropped, after the call.
#[derive(Default)]
struct Setups {
    groups: Vec<libc::pid_t>,
}

impl Setups {
    /// Runs `command` with `sh -c` in `workspace`, in a process group of its own,
    /// within the test file's `setup_timeout`; its output is kept to say why it
    /// failed. It sees `$LCP_TEST_WORKSPACE`, `$LCP_TEST_DIR` (the test file's folder),
    /// `$LCP_TEST_TOOL` and `$LCP_TEST_PYTHON`.
    fn run(
        &mut self,
        command: &str,
        prepare: &Prepare,
        workspace: &Path,
        tool: &str,
        python: Option<&Path>,
    ) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let failed = |why: String| format!("setup {why}\nthe command: {command}");
        let log_path = workspace.with_extension("setup-log");
        let log = std::fs::File::create(&log_path).map_err(|err| failed(format!("cannot start: {err}")))?;
        let log_err = log.try_clone().map_err(|err| failed(format!("cannot start: {err}")))?;
        let dir = prepare.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let mut shell = std::process::Command::new("/bin/sh");
        shell
            .arg("-c")
            .arg(command)
            .current_dir(workspace)
            .env("LCP_TEST_WORKSPACE", workspace)
            .env("LCP_TEST_DIR", &dir)
            .env("LCP_TEST_TOOL", tool)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        if let Some(python) = python {
            shell.env("LCP_TEST_PYTHON", python);
        }
        let output = || {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let _ = std::fs::remove_file(&log_path);
            let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
            // The last line (where a failure is usually said) first, then the last few.
            match lines.as_slice() {
                [] => String::new(),
                [one] => format!(": {one}"),
                [.., last] => {
                    format!(": {last}\nits output ends:\n{}", lines[lines.len().saturating_sub(20)..].join("\n"))
                }
            }
        };
        let mut child = match shell.spawn() {
            Ok(child) => child,
            Err(err) => {
                let _ = std::fs::remove_file(&log_path);
                return Err(failed(format!("cannot start: {err}")));
            }
        };
        self.groups.push(child.id() as libc::pid_t);
        let deadline = Instant::now() + prepare.setup_timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => {
                    let _ = std::fs::remove_file(&log_path);
                    return Ok(());
                }
                Ok(Some(status)) => return Err(failed(format!("failed ({status}){}", output()))),
                Ok(None) if Instant::now() >= deadline => {
                    // SAFETY: the group is the one this command was started in.
                    unsafe { libc::killpg(child.id() as libc::pid_t, libc::SIGKILL) };
                    let _ = child.wait();
                    return Err(failed(format!(
                        "did not finish within {}s (`setup_timeout`) and was ended{}",
                        prepare.setup_timeout.as_secs_f64(),
                        output()
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(err) => {
                    let _ = std::fs::remove_file(&log_path);
                    return Err(failed(format!("cannot be waited for: {err}")));
                }
            }
        }
    }
}

impl Drop for Setups {
    fn drop(&mut self) {
        for &group in &self.groups {
            // SAFETY: a process group this lane started; a group already empty is
            // an error (`ESRCH`) that changes nothing.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
    }
}

/// The text report: one line per call (tool, payload source, ok or the error's first
/// line, time), then a count. Each cell is one line (a multi-line error is cut after
/// its first line, with `…`; `--format json` has it whole); with a `width`, the
/// columns are narrowed to fit it, the result first.
pub fn table(outcomes: &[Outcome], width: Option<usize>) -> String {
    use crate::table::{Cut, cell, columns, fit};
    let mut rows = vec![["TOOL", "SOURCE", "RESULT", "TIME"].map(String::from)];
    for outcome in outcomes {
        let result = match (&outcome.error, &outcome.unmet) {
            (Some(error), _) => {
                let mut lines = error.lines().map(str::trim).filter(|line| !line.is_empty());
                let first = lines.next().unwrap_or_default();
                let more = if lines.next().is_some() { "…" } else { "" };
                format!("error: {first}{more}")
            }
            (None, Some(unmet)) => format!("ok ({})", unmet.as_str()),
            (None, None) if outcome.failed_as_expected => "ok (failed as expected)".to_string(),
            (None, None) => "ok".to_string(),
        };
        rows.push([
            cell(&outcome.tool, Cut::End),
            outcome.source.as_str().to_string(),
            cell(&result, Cut::End),
            format!("{:.3}s", outcome.seconds),
        ]);
    }
    if let Some(width) = width {
        fit(&mut rows, width, &[(0, 16, Cut::End), (2, 16, Cut::End)]);
    }
    let mut out = columns(&rows);
    let failed = outcomes.iter().filter(|outcome| !outcome.ok).count();
    out.push_str(&format!("{} calls, {} passed, {failed} failed", outcomes.len(), outcomes.len() - failed));
    out
}

/// The JSON Pointer step of `key` (`~` and `/` escaped).
fn pointer_of(key: &str) -> String {
    format!("/{}", key.replace('~', "~0").replace('/', "~1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated(schema: Value) -> Value {
        generate(&schema)
    }

    #[test]
    fn generated_payloads_take_required_parameters_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "style": {"type": "string", "enum": ["lower", "upper"]},
                "count": {"type": "integer", "exclusiveMinimum": 0},
                "ratio": {"type": "number", "minimum": 0.5},
                "when": {"type": "string", "format": "date"},
                "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
                "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "name": {"type": "string", "minLength": 2},
                "optional": {"type": "string", "default": "x"}
            },
            "required": ["text", "style", "count", "ratio", "when", "pair", "maybe", "name"]
        });
        assert_eq!(
            generated(schema.clone()),
            json!({"text": "", "style": "lower", "count": 1, "ratio": 0.5, "when": "2000-01-01", "pair": [0, ""], "maybe": false, "name": "aa"})
        );
        assert!(validate::check(&schema, &generate(&schema)).is_empty());
        let nested = json!({
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/Item"}},
            "required": ["item"],
            "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "integer", "default": 7}, "tag": {"type": "string"}}, "required": ["tag"]}}
        });
        assert_eq!(generated(nested), json!({"item": {"tag": ""}}));
    }

    #[test]
    fn differences_name_the_first_place_and_what_differs() {
        let got = json!({"n": 2.0, "items": [{"id": 1, "tags": ["a"]}], "extra": true});
        assert_eq!(difference(&json!({"n": 2, "items": [{"id": 1}]}), &got, true), None);
        assert_eq!(
            difference(&json!({"n": 2, "items": [{"id": 1}]}), &got, false).unwrap(),
            "the output differs at `/items/0/tags`: not expected (got [\"a\"])"
        );
        assert_eq!(
            difference(&json!({"items": [{"id": 2}]}), &got, true).unwrap(),
            "the output differs at `/items/0/id`: expected 2, got 1"
        );
        assert_eq!(
            difference(&json!({"items": []}), &got, true).unwrap(),
            "the output differs at `/items`: expected 0 items, got 1"
        );
        assert_eq!(
            difference(&json!({"a/b": 1}), &got, true).unwrap(),
            "the output differs at `/a~1b`: missing (expected 1)"
        );
        assert_eq!(
            difference(&json!("2"), &json!(2), false).unwrap(),
            "the output differs: expected \"2\", got a number 2"
        );
    }

    #[test]
    fn examples_are_the_json_lines_of_the_section() {
        let doc = "Adds.\n\nArgs:\n    a: A.\n\nExamples:\n    {\"a\": 1}\n    Some prose.\n    {\"a\": 2, \"$files\": {\"n.txt\": \"hi\"}}\n    {\"a\": \n\nReturns:\n    {\"not\": \"an example\"}\n";
        let found = examples(doc);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0], Ok(Payload::new(Source::Example, json!({"a": 1}), Vec::new())));
        assert_eq!(found[1].as_ref().unwrap().files, [(PathBuf::from("n.txt"), "hi".to_string())]);
        assert!(found[2].as_ref().unwrap_err().starts_with("example `{\"a\":` is not a JSON object"));
        let numpy = "Adds.\n\nExamples\n--------\n{\"a\": 3}\n\nNotes\n-----\n{\"a\": 4}\n";
        assert_eq!(examples(numpy).len(), 1);
        assert!(examples("No examples here.\n{\"a\": 1}\n").is_empty());
        let escape = examples("Example:\n    {\"a\": 1, \"$files\": {\"../x\": \"\"}}\n");
        assert!(escape[0].as_ref().unwrap_err().contains("not a relative path inside the workspace"));
    }
}
