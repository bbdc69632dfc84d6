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

use std::path::{Component, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::extract::Tool;
use crate::registry::Registry;
use crate::runtime::host_objects::{Answer, Callbacks, Model};
use crate::runtime::{CallOptions, Confirmation, Runtime, ToolResult, validate};
use crate::view::View;

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
}

impl Source {
    /// `example` or `generated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Example => "example",
            Source::Generated => "generated",
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
}

/// The outcome of one call: `{"tool", "source", "payload", "ok", "error"?, "note"?, "seconds"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The tool called.
    pub tool: String,
    /// Where the payload comes from.
    pub source: Source,
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
}

/// The payloads of a tool: its examples, or one generated from its input schema. An
/// example that cannot be read is an `Err` saying why.
pub fn payloads(tool: &Tool) -> Vec<Result<Payload, String>> {
    let examples = tool.docstring.as_deref().map(examples).unwrap_or_default();
    if !examples.is_empty() {
        return examples;
    }
    let args = generate(tool.parameters.value());
    vec![Ok(Payload { source: Source::Generated, args, files: Vec::new() })]
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
    let mut files = Vec::new();
    match args.remove(FILES_KEY) {
        None => {}
        Some(Value::Object(listed)) => {
            for (name, content) in listed {
                let path = PathBuf::from(&name);
                let inside = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
                match content {
                    Value::String(text) if inside && !name.is_empty() => files.push((path, text)),
                    Value::String(_) => {
                        return Err(format!(
                            "`{FILES_KEY}` names `{name}`, which is not a relative path inside the workspace"
                        ));
                    }
                    other => return Err(format!("`{FILES_KEY}[\"{name}\"]` must be the file's text, not {other}")),
                }
            }
        }
        Some(other) => return Err(format!("`{FILES_KEY}` must map file names to their text, not {other}")),
    }
    Ok(Payload { source: Source::Example, args: Value::Object(args), files })
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

/// Calls every tool of `view` (or those of `options.only`) once per payload, through
/// `registry` (the tools as they are named there), and says how each call went.
/// `progress(done, total, tool)` is told before each call.
pub fn run(
    view: &View,
    registry: &Registry,
    runtime: &Runtime,
    options: &Options,
    mut progress: impl FnMut(usize, usize, &str),
) -> Vec<Outcome> {
    let met = Arc::new(Met::default());
    let counted = Arc::clone(&met);
    let yes = options.yes;
    for problem in runtime.set_confirm_handler(move |_| {
        if yes {
            return Confirmation::allow("allowed with `lcp test --yes`");
        }
        counted.refused.fetch_add(1, Ordering::Relaxed);
        Confirmation::reject("`lcp test` refuses confirmations unless it runs with --yes")
    }) {
        eprintln!("{problem}");
    }
    let mut planned = Vec::new();
    for (_, tool) in view.registry.tools() {
        if options.only.is_empty() || options.only.contains(&tool.name) {
            let real = view.tool(&tool.name).unwrap_or(&tool.name).to_string();
            planned.extend(payloads(tool).into_iter().map(|payload| (tool, real.clone(), payload)));
        }
    }
    let total = planned.len();
    let mut outcomes = Vec::with_capacity(total);
    for (done, (tool, real, payload)) in planned.into_iter().enumerate() {
        progress(done, total, &tool.name);
        let outcome = match payload {
            Err(error) => Outcome {
                tool: tool.name.clone(),
                source: Source::Example,
                payload: Value::Null,
                ok: false,
                error: Some(error),
                note: None,
                unmet: None,
                seconds: 0.0,
            },
            Ok(payload) => {
                met.clear();
                let began = Instant::now();
                let (result, unmet) = call(tool, registry, &real, runtime, &payload, options.timeout, &met);
                Outcome {
                    tool: tool.name.clone(),
                    source: payload.source,
                    payload: payload.args,
                    // A failure the tool reports because the lane could not give it
                    // something (no user, no model) is a pass with a note.
                    ok: result.ok() || unmet.is_some(),
                    error: if result.ok() || unmet.is_some() {
                        None
                    } else {
                        result.error.or(Some("the call failed".to_string()))
                    },
                    unmet: unmet.as_ref().map(|(unmet, _)| *unmet),
                    note: unmet.map(|(_, note)| note),
                    seconds: (began.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
                }
            }
        };
        outcomes.push(outcome);
    }
    progress(total, total, "");
    outcomes
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
            Unmet::Confirmation => "confirmation refused (--yes allows it)",
            Unmet::User => "the user was asked and declined (`lcp test` has no user)",
            Unmet::Model => "the tool asked for the host's model (`lcp test` has none)",
        };
        format!("{why}; the tool reported: {reported}")
    }
}

/// How many times the current call met each of [`Unmet`].
#[derive(Default)]
struct Met {
    refused: AtomicUsize,
    declined: AtomicUsize,
    no_model: AtomicUsize,
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

/// One call in a fresh scratch workspace; what the lane could not give it when it
/// passed without going all the way, with the note saying so.
fn call(
    shown: &Tool,
    registry: &Registry,
    real: &str,
    runtime: &Runtime,
    payload: &Payload,
    timeout: Option<Duration>,
    met: &Arc<Met>,
) -> (ToolResult, Option<(Unmet, String)>) {
    let source = payload.source.as_str();
    let problems = validate::check(shown.parameters.value(), &payload.args);
    if !problems.is_empty() {
        let mut error = validate::report(&shown.name, shown.parameters.value(), &problems);
        if payload.source == Source::Generated {
            error.push_str("\nno valid payload could be generated: give the tool an `Examples:` section");
        }
        return (ToolResult::failure(format!("the {source} payload is not valid: {error}")), None);
    }
    let workspace = match Scratch::new(&payload.files) {
        Ok(workspace) => workspace,
        Err(err) => return (ToolResult::failure(format!("cannot make a scratch workspace: {err}")), None),
    };
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
    let options = CallOptions {
        workspace: Some(workspace.path.clone()),
        timeout,
        callbacks,
        declared: Some(shown.policy.clone()),
        ..CallOptions::default()
    };
    // The payload is checked above, once: the call does not check it again.
    let Some((library, tool)) = registry.tool(real) else {
        return (ToolResult::failure(crate::suggest::unknown_tool(registry, real)), None);
    };
    let result = runtime.call_checked(library, tool, &payload.args, &options);
    if let Some(unmet) = met.first().filter(|_| result.outcome == crate::runtime::Outcome::Reported) {
        let note = unmet.note(result.error.as_deref().unwrap_or_default());
        return (result, Some((unmet, note)));
    }
    (result, None)
}

/// A fresh temporary folder, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(files: &[(PathBuf, String)]) -> std::io::Result<Scratch> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("lcp-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        let scratch = Scratch { path };
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

/// The text report: one line per call (tool, payload source, ok or the error's first
/// line, time), then a count.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut rows = vec![["TOOL", "SOURCE", "RESULT", "TIME"].map(String::from)];
    for outcome in outcomes {
        let result = match (&outcome.error, &outcome.unmet) {
            (Some(error), _) => {
                let lines: Vec<&str> = error.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
                format!("error: {}", lines.join(" "))
            }
            (None, Some(unmet)) => format!("ok ({})", unmet.as_str()),
            (None, None) => "ok".to_string(),
        };
        rows.push([
            outcome.tool.clone(),
            outcome.source.as_str().to_string(),
            result,
            format!("{:.3}s", outcome.seconds),
        ]);
    }
    let widths: Vec<usize> = (0..4).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let failed = outcomes.iter().filter(|outcome| !outcome.ok).count();
    out.push_str(&format!("{} calls, {} passed, {failed} failed", outcomes.len(), outcomes.len() - failed));
    out
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
    fn examples_are_the_json_lines_of_the_section() {
        let doc = "Adds.\n\nArgs:\n    a: A.\n\nExamples:\n    {\"a\": 1}\n    Some prose.\n    {\"a\": 2, \"$files\": {\"n.txt\": \"hi\"}}\n    {\"a\": \n\nReturns:\n    {\"not\": \"an example\"}\n";
        let found = examples(doc);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0], Ok(Payload { source: Source::Example, args: json!({"a": 1}), files: Vec::new() }));
        assert_eq!(found[1].as_ref().unwrap().files, [(PathBuf::from("n.txt"), "hi".to_string())]);
        assert!(found[2].as_ref().unwrap_err().starts_with("example `{\"a\":` is not a JSON object"));
        let numpy = "Adds.\n\nExamples\n--------\n{\"a\": 3}\n\nNotes\n-----\n{\"a\": 4}\n";
        assert_eq!(examples(numpy).len(), 1);
        assert!(examples("No examples here.\n{\"a\": 1}\n").is_empty());
        let escape = examples("Example:\n    {\"a\": 1, \"$files\": {\"../x\": \"\"}}\n");
        assert!(escape[0].as_ref().unwrap_err().contains("not a relative path inside the workspace"));
    }
}
