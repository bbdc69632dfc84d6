//! What a tool asks of its host during a call (SPEC §5, §9): the requests, their
//! answers, the one-way notices, and the per-call set of callbacks that answer them.
//!
//! A tool reaches the host through the objects `host.py` gives it (the confirm
//! handler, `user_interaction_handler`, `lollms_client_instance` /
//! `tool_context.client`, `tool_context.emit_progress`, Python `logging`). Each
//! becomes a [`HostRequest`] the call waits for (answered with a [`HostAnswer`]) or a
//! [`Notice`] it does not wait for. In-process, `host.py`'s JSON reaches `answer_wire`
//! on the tool's thread; in a worker, the worker's callbacks send the same requests
//! and notices over the call's connection and the supervisor answers them with the
//! call's [`Callbacks`] (see `worker` and `supervisor`). Either way the same
//! [`Callbacks::answer`] and [`Callbacks::notify`] decide.
//!
//! Must never: block on anything but the host's own callback, or let a callback's
//! panic reach the tool (a panic is a refusal saying so).
// Without the `python` feature no call runs: the wire half (what `host.py` and the
// workers send) has no reader, while the callback types stay for hosts to name.
#![cfg_attr(not(feature = "python"), allow(dead_code))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{ConfirmHandler, ConfirmRequest, Confirmation};

/// Python's numeric logging levels (`logging.DEBUG` ...).
pub mod level {
    /// `logging.DEBUG`.
    pub const DEBUG: u32 = 10;
    /// `logging.INFO`.
    pub const INFO: u32 = 20;
    /// `logging.WARNING`.
    pub const WARNING: u32 = 30;
    /// `logging.ERROR`.
    pub const ERROR: u32 = 40;
    /// `logging.CRITICAL`.
    pub const CRITICAL: u32 = 50;
    /// Above every level Python defines: no record is made.
    pub const OFF: u32 = 100;
}

/// What `user_interaction_handler(request)` asks the user (the reference's protocol,
/// plus `"type": "form"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// The library key ([`super::library_key`]).
    pub library: String,
    /// The tool being run, when asked during a call.
    pub tool: Option<String>,
    /// What kind of answer is wanted.
    pub kind: InteractionKind,
    /// A short title.
    pub title: String,
    /// The question.
    pub prompt: String,
    /// The choices of a `select`.
    #[serde(default)]
    pub options: Vec<String>,
    /// The answer the user gets when they just confirm.
    #[serde(default)]
    pub default: Option<Value>,
    /// A `form`'s flat JSON Schema object (MCP's elicitation subset).
    #[serde(default)]
    pub schema: Option<Value>,
    /// The name the tool gives the question (`key`): an `InputRequiredResult`'s
    /// `inputRequests` holds it under this name.
    #[serde(default)]
    pub key: Option<String>,
}

/// The `type` of an [`Interaction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InteractionKind {
    /// Free text.
    Text,
    /// Text that is never shown while typed (a key, a password).
    Secret,
    /// One of `options`.
    Select,
    /// A dict of answers, one per field of `schema`.
    Form,
}

/// The answer to an [`Interaction`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// What the user gave: a string, or a form's object. The tool receives it.
    Given(Value),
    /// The user declined (or cancelled): the tool receives `None`.
    Declined,
    /// Nobody can be asked (no terminal, a client without elicitation, a host without
    /// a handler): the tool's call raises an error carrying this reason.
    Unavailable(String),
}

/// What `generate_text(prompt, images, n_predict, temperature, system_prompt, **kwargs)`
/// asks the host's model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// The library key ([`super::library_key`]).
    pub library: String,
    /// The tool being run, when asked during a call.
    pub tool: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// Images as base64 or `data:` URIs.
    #[serde(default)]
    pub images: Vec<String>,
    /// The most tokens to generate.
    #[serde(default)]
    pub n_predict: Option<u64>,
    /// The sampling temperature, if given.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The system prompt, if given.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Any other keyword argument, as JSON.
    #[serde(default)]
    pub extra: Map<String, Value>,
    /// The name the tool gives the request (`key=`), as [`Interaction::key`].
    #[serde(default)]
    pub key: Option<String>,
}

/// `tool_context.roots()`: the roots of the host's file system it lets tools see
/// (MCP's `roots/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootsRequest {
    /// The library key ([`super::library_key`]).
    pub library: String,
    /// The tool being run, when asked during a call.
    pub tool: Option<String>,
    /// The name the tool gives the request (`key=`), as [`Interaction::key`].
    #[serde(default)]
    pub key: Option<String>,
}

/// `tool_context.emit_progress(text, meta)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// The tool reporting.
    pub tool: Option<String>,
    /// What it says.
    pub text: String,
    /// `meta["progress"]` when it is a number.
    #[serde(default)]
    pub progress: Option<f64>,
    /// `meta["total"]` when it is a number.
    #[serde(default)]
    pub total: Option<f64>,
    /// The whole `meta`, as JSON.
    #[serde(default)]
    pub meta: Map<String, Value>,
}

/// A record a tool logged through Python's `logging`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The tool that logged it.
    pub tool: Option<String>,
    /// Python's numeric level ([`level`]).
    pub level: u32,
    /// The logger's name (`root` for the root logger).
    pub logger: String,
    /// The formatted message.
    pub message: String,
}

/// Something a call asks and waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum HostRequest {
    /// A confirmation (`set_confirm_handler`'s callback).
    Confirm(ConfirmRequest),
    /// A question to the user (`user_interaction_handler`).
    Interact(Interaction),
    /// Text from the host's model (`generate_text`).
    Generate(Generation),
    /// The host's roots (`tool_context.roots()`).
    Roots(RootsRequest),
    /// Several of the above at once, each under its name (`tool_context.ask`): a host
    /// that can ask them together (MCP's `inputRequests`) does.
    Batch(Vec<(String, HostRequest)>),
}

/// The answer to a [`HostRequest`] of the same kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum HostAnswer {
    /// The handler's decision.
    Confirm(Confirmation),
    /// The user's answer.
    Interact(Answer),
    /// The model's text, or why there is none.
    Generate(Result<String, String>),
    /// The roots (`{"uri", "name"?}`), or why there are none.
    Roots(Result<Vec<Value>, String>),
    /// An answer for each request of a batch, under its name.
    Batch(Vec<(String, HostAnswer)>),
}

/// Something a call tells the host without waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Notice {
    /// Progress of the call.
    Progress(Progress),
    /// A log record.
    Log(LogRecord),
    /// The call goes on as a task (`tool_context.become_task(text)`): the host may
    /// answer its caller now and let it follow the rest (SPEC §16).
    BecomeTask(Progress),
}

/// Answers what a tool asks the user.
pub type InteractHandler = Arc<dyn Fn(&Interaction) -> Answer + Send + Sync>;
/// Asks the host's model: the generated text, or why there is none.
pub type GenerateHandler = Arc<dyn Fn(&Generation) -> Result<String, String> + Send + Sync>;
/// Gives the host's roots, or why there are none.
pub type RootsHandler = Arc<dyn Fn(&RootsRequest) -> Result<Vec<Value>, String> + Send + Sync>;
/// Answers several requests at once, each under its name.
pub type BatchHandler = Arc<dyn Fn(&[(String, HostRequest)]) -> Vec<(String, HostAnswer)> + Send + Sync>;
/// Hears a call's progress.
pub type ProgressHandler = Arc<dyn Fn(&Progress) + Send + Sync>;
/// Hears what a call logs (records at or above the call's log level).
pub type LogHandler = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// The host's model, for `generate_text`.
#[derive(Clone)]
pub struct Model {
    /// Generates text.
    pub generate: GenerateHandler,
    /// Whether images may be sent (`has_vision_capability()`).
    pub vision: bool,
}

/// The callbacks that answer one call. A missing one answers as a host without it:
/// confirmations are rejected, interactions unavailable, `generate_text` fails,
/// progress is dropped and log records go to the result's `stderr`.
#[derive(Clone, Default)]
pub struct Callbacks {
    /// Answers confirmations.
    pub confirm: Option<ConfirmHandler>,
    /// Answers questions to the user.
    pub interact: Option<InteractHandler>,
    /// The model `generate_text` asks.
    pub model: Option<Model>,
    /// Gives the roots `tool_context.roots()` asks for.
    pub roots: Option<RootsHandler>,
    /// Answers a batch (`tool_context.ask`) at once; without it each request of a batch
    /// is answered in turn by its own callback.
    pub batch: Option<BatchHandler>,
    /// Hears progress.
    pub progress: Option<ProgressHandler>,
    /// Hears log records.
    pub log: Option<LogHandler>,
    /// Hears that the call goes on as a task; without it `become_task` does nothing.
    pub task: Option<ProgressHandler>,
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Offered { confirm, interact, model, vision, roots, batch, progress, log, task, log_level: _ } =
            self.offered(0);
        f.debug_struct("Callbacks")
            .field("confirm", &confirm)
            .field("interact", &interact)
            .field("model", &model.then_some(vision))
            .field("roots", &roots)
            .field("batch", &batch)
            .field("progress", &progress)
            .field("log", &log)
            .field("task", &task)
            .finish()
    }
}

/// Which callbacks a call has, as the process running it learns them: what `host.py`
/// offers the tool, and what a worker asks lcp for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Offered {
    pub confirm: bool,
    pub interact: bool,
    pub model: bool,
    pub vision: bool,
    #[serde(default)]
    pub roots: bool,
    #[serde(default)]
    pub batch: bool,
    pub progress: bool,
    pub log: bool,
    #[serde(default)]
    pub task: bool,
    /// Records below this Python level are not made.
    pub log_level: u32,
}

impl Callbacks {
    /// Each of `self`'s callbacks, else `fallback`'s.
    pub fn or(self, fallback: &Callbacks) -> Callbacks {
        Callbacks {
            confirm: self.confirm.or_else(|| fallback.confirm.clone()),
            interact: self.interact.or_else(|| fallback.interact.clone()),
            model: self.model.or_else(|| fallback.model.clone()),
            roots: self.roots.or_else(|| fallback.roots.clone()),
            batch: self.batch.or_else(|| fallback.batch.clone()),
            progress: self.progress.or_else(|| fallback.progress.clone()),
            log: self.log.or_else(|| fallback.log.clone()),
            task: self.task.or_else(|| fallback.task.clone()),
        }
    }

    /// Whether it has no callback at all.
    pub fn is_empty(&self) -> bool {
        let Offered { confirm, interact, model, vision: _, roots, batch, progress, log, task, log_level: _ } =
            self.offered(0);
        ![confirm, interact, model, roots, batch, progress, log, task].contains(&true)
    }

    /// Which kinds it answers. Every kind is named here by the struct's pattern, so a
    /// kind added to `Callbacks` cannot be left out of what a call is offered.
    pub(crate) fn offered(&self, log_level: u32) -> Offered {
        let Callbacks { confirm, interact, model, roots, batch, progress, log, task } = self;
        Offered {
            confirm: confirm.is_some(),
            interact: interact.is_some(),
            model: model.is_some(),
            vision: model.as_ref().is_some_and(|model| model.vision),
            roots: roots.is_some(),
            batch: batch.is_some(),
            progress: progress.is_some(),
            log: log.is_some(),
            task: task.is_some(),
            log_level,
        }
    }

    /// Answers a request with the callback of its kind.
    pub fn answer(&self, request: &HostRequest) -> HostAnswer {
        match request {
            HostRequest::Confirm(request) => HostAnswer::Confirm(match &self.confirm {
                None => Confirmation::reject("the host has no confirmation handler"),
                Some(handler) => guarded(|| handler(request))
                    .unwrap_or_else(|| Confirmation::reject("the confirmation handler failed")),
            }),
            HostRequest::Interact(interaction) => HostAnswer::Interact(match &self.interact {
                None => Answer::Unavailable("the host has no user interaction handler".to_string()),
                Some(handler) => guarded(|| handler(interaction))
                    .unwrap_or_else(|| Answer::Unavailable("the user interaction handler failed".to_string())),
            }),
            HostRequest::Generate(generation) => HostAnswer::Generate(match &self.model {
                None => Err("the host has no model to generate text with".to_string()),
                Some(model) => guarded(|| (model.generate)(generation))
                    .unwrap_or_else(|| Err("the host's model handler failed".to_string())),
            }),
            HostRequest::Roots(request) => HostAnswer::Roots(match &self.roots {
                None => Err("the host shares no roots".to_string()),
                Some(handler) => {
                    guarded(|| handler(request)).unwrap_or_else(|| Err("the host's roots handler failed".to_string()))
                }
            }),
            HostRequest::Batch(requests) => HostAnswer::Batch(match &self.batch {
                Some(handler) => guarded(|| handler(requests)).unwrap_or_else(|| {
                    requests.iter().map(|(key, request)| (key.clone(), refused(request, "the host failed"))).collect()
                }),
                None => requests.iter().map(|(key, request)| (key.clone(), self.answer(request))).collect(),
            }),
        }
    }

    /// Hands a notice to its callback; whether one took it.
    pub fn notify(&self, notice: &Notice) -> bool {
        match notice {
            Notice::Progress(progress) => self.progress.as_ref().is_some_and(|handler| {
                guarded(|| handler(progress));
                true
            }),
            Notice::Log(record) => self.log.as_ref().is_some_and(|handler| {
                guarded(|| handler(record));
                true
            }),
            Notice::BecomeTask(status) => self.task.as_ref().is_some_and(|handler| {
                guarded(|| handler(status));
                true
            }),
        }
    }
}

fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// `host.py`'s request, as JSON text: `{"kind", "call_id", "library", "tool", ...}`.
#[derive(Deserialize)]
struct Wire {
    kind: String,
    call_id: Option<u64>,
    library: Option<String>,
    tool: Option<String>,
    /// `confirm`: the handler's arguments.
    #[serde(default)]
    args: Vec<Value>,
    #[serde(default)]
    kwargs: Map<String, Value>,
    /// `interact`: the request dict; `generate`: its arguments; `progress`, `log`: the notice.
    #[serde(default)]
    body: Value,
}

/// What `host.py` sent, read: a request, a notice, or why it cannot be read.
pub(crate) enum Received {
    Request(HostRequest),
    Notice(Notice),
}

/// The `key` a tool named its question with: a non-empty string.
fn key_of(body: &Value) -> Option<String> {
    body.get("key").and_then(Value::as_str).map(str::trim).filter(|key| !key.is_empty()).map(str::to_string)
}

/// Reads `host.py`'s JSON: the call it belongs to and what it asks.
pub(crate) fn read_wire(text: &str) -> Result<(Option<u64>, Received), String> {
    let wire: Wire = serde_json::from_str(text).map_err(|err| format!("lcp could not read the request: {err}"))?;
    let library = wire.library.unwrap_or_default();
    let tool = wire.tool;
    let body = wire.body;
    let text_of = |key: &str| body.get(key).map(plain_text).unwrap_or_default();
    let received = match wire.kind.as_str() {
        "confirm" => {
            let (content, label) = content_and_label(&wire.args, &wire.kwargs);
            Received::Request(HostRequest::Confirm(ConfirmRequest {
                library,
                tool,
                content,
                label,
                args: wire.args,
                kwargs: wire.kwargs,
            }))
        }
        "interact" => {
            let kind = match body.get("type").and_then(Value::as_str).map(str::to_ascii_lowercase).as_deref() {
                Some("secret" | "password") => InteractionKind::Secret,
                Some("select" | "choice") => InteractionKind::Select,
                Some("form") => InteractionKind::Form,
                _ => InteractionKind::Text,
            };
            let options = body.get("options").and_then(Value::as_array).into_iter().flatten().map(plain_text).collect();
            Received::Request(HostRequest::Interact(Interaction {
                library,
                tool,
                kind,
                title: text_of("title"),
                prompt: text_of("prompt"),
                options,
                default: body.get("default").filter(|value| !value.is_null()).cloned(),
                schema: body.get("schema").filter(|value| value.is_object()).cloned(),
                key: key_of(&body),
            }))
        }
        "generate" => {
            let mut extra = body.get("extra").and_then(Value::as_object).cloned().unwrap_or_default();
            extra.retain(|_, value| !value.is_null());
            Received::Request(HostRequest::Generate(Generation {
                library,
                tool,
                prompt: text_of("prompt"),
                images: body.get("images").and_then(Value::as_array).into_iter().flatten().map(plain_text).collect(),
                n_predict: body.get("n_predict").and_then(Value::as_u64),
                temperature: body.get("temperature").and_then(Value::as_f64),
                system_prompt: body.get("system_prompt").and_then(Value::as_str).map(str::to_string),
                extra,
                key: key_of(&body),
            }))
        }
        "roots" => Received::Request(HostRequest::Roots(RootsRequest { library, tool, key: key_of(&body) })),
        "batch" => {
            let mut requests = Vec::new();
            for (key, item) in body.get("requests").and_then(Value::as_object).into_iter().flatten() {
                let kind = item.get("kind").and_then(Value::as_str).unwrap_or_default();
                if !matches!(kind, "interact" | "generate" | "roots") {
                    return Err(format!("`{key}`: a batch asks interact, generate or roots, not `{kind}`"));
                }
                let mut body = item.get("body").cloned().unwrap_or_else(|| json!({}));
                body["key"] = json!(key);
                let inner = json!({"kind": kind, "library": library, "tool": tool, "body": body});
                match read_wire(&inner.to_string())? {
                    (_, Received::Request(request)) => requests.push((key.clone(), request)),
                    (_, Received::Notice(_)) => unreachable!("interact, generate and roots are requests"),
                }
            }
            Received::Request(HostRequest::Batch(requests))
        }
        "progress" => {
            let meta = body.get("meta").and_then(Value::as_object).cloned().unwrap_or_default();
            Received::Notice(Notice::Progress(Progress {
                tool,
                text: text_of("text"),
                progress: meta.get("progress").and_then(Value::as_f64),
                total: meta.get("total").and_then(Value::as_f64),
                meta,
            }))
        }
        "task" => Received::Notice(Notice::BecomeTask(Progress { tool, text: text_of("text"), ..Progress::default() })),
        "log" => Received::Notice(Notice::Log(LogRecord {
            tool,
            level: body.get("level").and_then(Value::as_u64).map_or(level::INFO, |l| l.min(u64::from(u32::MAX)) as u32),
            logger: text_of("logger"),
            message: text_of("message"),
        })),
        other => return Err(format!("lcp does not know the request `{other}`")),
    };
    Ok((wire.call_id, received))
}

/// Reads `host.py`'s JSON, answers it with `callbacks` (those of its call, found by
/// `find`) and returns the JSON `host.py` reads back.
pub(crate) fn answer_wire(text: &str, find: impl FnOnce(Option<u64>) -> Option<Callbacks>) -> String {
    match read_wire(text) {
        Err(err) => json!({"error": err}).to_string(),
        Ok((call, received)) => {
            let callbacks = find(call).unwrap_or_default();
            match received {
                Received::Request(request) => wire_answer(&callbacks.answer(&request)),
                Received::Notice(notice) => json!({"delivered": callbacks.notify(&notice)}).to_string(),
            }
        }
    }
}

/// An answer as `host.py` reads it.
pub(crate) fn wire_answer(answer: &HostAnswer) -> String {
    wire_value(answer).to_string()
}

fn wire_value(answer: &HostAnswer) -> Value {
    match answer {
        HostAnswer::Confirm(confirmation) => {
            json!({"decision": confirmation.decision.as_str(), "reason": confirmation.reason})
        }
        HostAnswer::Interact(Answer::Given(value)) => json!({"status": "given", "value": value}),
        HostAnswer::Interact(Answer::Declined) => json!({"status": "declined"}),
        HostAnswer::Interact(Answer::Unavailable(reason)) => json!({"status": "unavailable", "reason": reason}),
        HostAnswer::Generate(Ok(text)) => json!({"text": text}),
        HostAnswer::Generate(Err(error)) | HostAnswer::Roots(Err(error)) => json!({"error": error}),
        HostAnswer::Roots(Ok(roots)) => json!({"roots": roots}),
        HostAnswer::Batch(answers) => {
            let answers: Map<String, Value> =
                answers.iter().map(|(key, answer)| (key.clone(), wire_value(answer))).collect();
            json!({"answers": answers})
        }
    }
}

/// What the host answers when nobody could: the request's kind, refused with `reason`.
pub fn refused(request: &HostRequest, reason: &str) -> HostAnswer {
    match request {
        HostRequest::Confirm(_) => HostAnswer::Confirm(Confirmation::reject(reason)),
        HostRequest::Interact(_) => HostAnswer::Interact(Answer::Unavailable(reason.to_string())),
        HostRequest::Generate(_) => HostAnswer::Generate(Err(reason.to_string())),
        HostRequest::Roots(_) => HostAnswer::Roots(Err(reason.to_string())),
        HostRequest::Batch(requests) => {
            HostAnswer::Batch(requests.iter().map(|(key, request)| (key.clone(), refused(request, reason))).collect())
        }
    }
}

fn plain_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `(content, label[, extra])`, keywords of those names, or one dict.
fn content_and_label(args: &[Value], kwargs: &Map<String, Value>) -> (String, String) {
    let first =
        |fields: &Map<String, Value>, keys: &[&str]| keys.iter().find_map(|key| fields.get(*key)).map(plain_text);
    match args {
        [Value::Object(fields)] if kwargs.is_empty() => (
            first(fields, &["content", "command", "text", "message"])
                .unwrap_or_else(|| Value::Object(fields.clone()).to_string()),
            first(fields, &["label", "title", "action"]).unwrap_or_default(),
        ),
        _ => (
            args.first().map(plain_text).or_else(|| first(kwargs, &["content"])).unwrap_or_default(),
            args.get(1).map(plain_text).or_else(|| first(kwargs, &["label"])).unwrap_or_default(),
        ),
    }
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

    fn request(text: Value) -> HostRequest {
        match read_wire(&text.to_string()) {
            Ok((_, Received::Request(request))) => request,
            _ => panic!("not a request: {text}"),
        }
    }

    #[test]
    fn interactions_read_the_reference_protocol() {
        let HostRequest::Interact(asked) = request(json!({"kind": "interact", "call_id": 1, "library": "l",
            "body": {"type": "select", "title": "Region", "prompt": "Pick", "options": ["eu", "us"], "default": "eu"}}))
        else {
            panic!()
        };
        assert_eq!(asked.kind, InteractionKind::Select);
        assert_eq!(asked.options, ["eu", "us"]);
        assert_eq!(asked.default, Some(json!("eu")));
        let HostRequest::Interact(asked) = request(json!({"kind": "interact", "body": {"prompt": "?"}})) else {
            panic!()
        };
        assert_eq!((asked.kind, asked.title.as_str(), asked.default), (InteractionKind::Text, "", None));
    }

    #[test]
    fn a_missing_callback_answers_as_a_host_without_it() {
        let none = Callbacks::default();
        let ask = Interaction {
            library: "l".into(),
            tool: None,
            kind: InteractionKind::Text,
            title: String::new(),
            prompt: "?".into(),
            options: Vec::new(),
            default: None,
            schema: None,
            key: None,
        };
        assert!(matches!(none.answer(&HostRequest::Interact(ask)), HostAnswer::Interact(Answer::Unavailable(_))));
        let notice = Notice::Log(LogRecord { tool: None, level: level::INFO, logger: "x".into(), message: "m".into() });
        assert!(!none.notify(&notice));
        let panicking = Callbacks { log: Some(Arc::new(|_| panic!("no"))), ..Callbacks::default() };
        assert!(panicking.notify(&notice), "a panicking callback still took the notice");
    }
}
