//! What a tool asks of its host during a call (SPEC §5, §9): the requests, their
//! answers, the one-way notices, and the per-call set of callbacks that answer them.
//!
//! A tool reaches the host through the objects `host.py` gives it (the confirm
//! handler, `user_interaction_handler`, `lollms_client_instance` /
//! `tool_context.client`, `tool_context.emit_progress`, Python `logging`). Each
//! becomes a [`HostRequest`] the call waits for (answered with a [`HostAnswer`]) or a
//! [`Notice`] it does not wait for. These types are the one host protocol: `host.py`
//! sends them (serde's JSON of a `FromTool`, read back as a `ToTool`) to
//! `answer_wire` on the tool's thread, and in a worker the worker's callbacks send the
//! same values over the call's connection, where the supervisor answers them with the
//! call's [`Callbacks`] (see `worker` and `supervisor`). Either way the same
//! [`Callbacks::answer`] and [`Callbacks::notify`] decide.
//!
//! A surface that answers calls implements `Host` once, every kind through its two
//! methods, and `Callbacks::of_host` makes it a call's callbacks: lcp as a worker's
//! host (`worker`), an MCP client of `lcp serve` (`mcp::call`). The upstream bridge
//! (`mcp::upstream`) hands what a server asks or tells to its call's host as these
//! same values. Closures, one per kind, are the adapter for embedders (a Rust host,
//! the Python package, `lcp test`).
//!
//! Must never: block on anything but the host's own callback, or let a callback's
//! panic reach the tool (a panic is a refusal saying so).
// Without the `python` feature no call runs: the wire half (what `host.py` and the
// workers send) and the `Host` trait are built with it, while the callback types stay
// for hosts to name.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// What the host's model answered a [`Generation`]: its text, and the model's name
/// when the host knows it (an MCP client's sampling result names it, and a gateway
/// tells the server that asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generated {
    /// The text.
    pub text: String,
    /// The model that wrote it, when the host knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl From<String> for Generated {
    /// Text from a model that is not named.
    fn from(text: String) -> Generated {
        Generated { text, model: None }
    }
}

/// The answer to a [`HostRequest`] of the same kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum HostAnswer {
    /// The handler's decision.
    Confirm(Confirmation),
    /// The user's answer.
    Interact(Answer),
    /// The model's text, or why there is none.
    Generate(Result<Generated, String>),
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
pub type GenerateHandler = Arc<dyn Fn(&Generation) -> Result<Generated, String> + Send + Sync>;
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

/// A host that answers a call's requests and hears its notices as the protocol's
/// values, every kind through the same two methods: what a surface implements once
/// (an MCP client's session, lcp as a worker's host). [`Callbacks::of_host`] makes it
/// the callbacks a call takes; closures, one per kind, stay the adapter for embedders.
#[cfg(feature = "python")]
pub(crate) trait Host: Send + Sync {
    /// The answer to `request`, of its kind (another kind is taken as a refusal).
    fn answer(&self, request: HostRequest) -> HostAnswer;
    /// Hears `notice`.
    fn notify(&self, notice: Notice);
}

/// Why an answer of another kind than its request is refused.
#[cfg(feature = "python")]
const ANOTHER_KIND: &str = "the host answered a request of another kind";

impl Offered {
    /// Every kind; the model takes images when `vision`, and the host follows a call
    /// as a task when `task`.
    #[cfg(feature = "python")]
    pub(crate) fn all(vision: bool, task: bool) -> Offered {
        Offered {
            confirm: true,
            interact: true,
            model: true,
            vision,
            roots: true,
            batch: true,
            progress: true,
            log: true,
            task,
            log_level: 0,
        }
    }
}

impl Callbacks {
    /// The kinds `offered`, each handed to `host`.
    #[cfg(feature = "python")]
    pub(crate) fn of_host(host: &Arc<dyn Host>, offered: &Offered) -> Callbacks {
        let to = |on: bool| on.then(|| Arc::clone(host));
        let Offered { confirm, interact, model, vision, roots, batch, progress, log, task, log_level: _ } = *offered;
        Callbacks {
            confirm: to(confirm).map(|host| -> ConfirmHandler {
                Arc::new(move |request| match host.answer(HostRequest::Confirm(request.clone())) {
                    HostAnswer::Confirm(answer) => answer,
                    _ => Confirmation::reject(ANOTHER_KIND),
                })
            }),
            interact: to(interact).map(|host| -> InteractHandler {
                Arc::new(move |interaction| match host.answer(HostRequest::Interact(interaction.clone())) {
                    HostAnswer::Interact(answer) => answer,
                    _ => Answer::Unavailable(ANOTHER_KIND.to_string()),
                })
            }),
            model: to(model).map(|host| Model {
                generate: Arc::new(move |generation| match host.answer(HostRequest::Generate(generation.clone())) {
                    HostAnswer::Generate(answer) => answer,
                    _ => Err(ANOTHER_KIND.to_string()),
                }),
                vision,
            }),
            roots: to(roots).map(|host| -> RootsHandler {
                Arc::new(move |request| match host.answer(HostRequest::Roots(request.clone())) {
                    HostAnswer::Roots(answer) => answer,
                    _ => Err(ANOTHER_KIND.to_string()),
                })
            }),
            batch: to(batch).map(|host| -> BatchHandler {
                Arc::new(move |requests| match host.answer(HostRequest::Batch(requests.to_vec())) {
                    HostAnswer::Batch(answers) => answers,
                    _ => requests.iter().map(|(key, request)| (key.clone(), refused(request, ANOTHER_KIND))).collect(),
                })
            }),
            progress: to(progress).map(|host| -> ProgressHandler {
                Arc::new(move |progress| host.notify(Notice::Progress(progress.clone())))
            }),
            log: to(log).map(|host| -> LogHandler { Arc::new(move |record| host.notify(Notice::Log(record.clone()))) }),
            task: to(task).map(|host| -> ProgressHandler {
                Arc::new(move |status| host.notify(Notice::BecomeTask(status.clone())))
            }),
        }
    }
}

fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// What `host.py` sends the host: a request or a notice of the call `call_id` (`None`
/// outside a call), in serde's JSON of the same [`HostRequest`] and [`Notice`] the
/// worker frames carry (`{"call_id": 7, "sent": {"Request": {"Interact": {...}}}}`).
/// `host.py` makes a tool's arguments into these types' fields; nothing here reads them
/// a second way.
#[cfg(feature = "python")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FromTool {
    pub call_id: Option<u64>,
    pub sent: Sent,
}

/// A request the call waits for, or a notice it does not.
#[cfg(feature = "python")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Sent {
    Request(HostRequest),
    Notice(Notice),
}

/// What `host.py` reads back: the [`HostAnswer`] to a request, whether a notice was
/// taken, or why what it sent could not be read.
#[cfg(feature = "python")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToTool {
    Answer(HostAnswer),
    Delivered(bool),
    Unreadable(String),
}

/// Reads `host.py`'s [`FromTool`], answers it with `callbacks` (those of its call,
/// found by `find`) and returns the [`ToTool`] `host.py` reads back, as JSON.
#[cfg(feature = "python")]
pub(crate) fn answer_wire(text: &str, find: impl FnOnce(Option<u64>) -> Option<Callbacks>) -> String {
    let reply = match serde_json::from_str::<FromTool>(text) {
        Err(err) => ToTool::Unreadable(format!("lcp could not read the request: {err}")),
        Ok(FromTool { call_id, sent }) => {
            let callbacks = find(call_id).unwrap_or_default();
            match sent {
                Sent::Request(request) => ToTool::Answer(callbacks.answer(&request)),
                Sent::Notice(notice) => ToTool::Delivered(callbacks.notify(&notice)),
            }
        }
    };
    // Every map of these types has string keys: serialising cannot fail.
    serde_json::to_string(&reply).unwrap_or_else(|err| format!("{{\"Unreadable\": \"{err}\"}}"))
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

#[cfg(test)]
mod tests {
    #[cfg(feature = "python")]
    use serde_json::json;

    use super::*;

    /// `answer_wire` of `sent` for the call 7, answered by `callbacks`, read back.
    #[cfg(feature = "python")]
    fn answered(sent: Value, callbacks: Callbacks) -> Value {
        let text = json!({"call_id": 7, "sent": sent}).to_string();
        let reply = answer_wire(&text, |call| (call == Some(7)).then_some(callbacks));
        serde_json::from_str(&reply).expect("the reply is JSON")
    }

    #[test]
    #[cfg(feature = "python")]
    fn host_py_sends_and_reads_the_types_the_worker_frames_carry() {
        let asked = Interaction {
            library: "l".into(),
            tool: Some("tool_pick".into()),
            kind: InteractionKind::Select,
            title: "Region".into(),
            prompt: "Pick".into(),
            options: vec!["eu".into(), "us".into()],
            default: Some(json!("eu")),
            schema: None,
            key: None,
        };
        let seen = Arc::new(std::sync::Mutex::new(None));
        let interact: InteractHandler = {
            let seen = Arc::clone(&seen);
            Arc::new(move |asked: &Interaction| {
                *seen.lock().unwrap() = Some(asked.clone());
                Answer::Given(json!("us"))
            })
        };
        let sent = serde_json::to_value(Sent::Request(HostRequest::Interact(asked.clone()))).unwrap();
        let reply = answered(sent, Callbacks { interact: Some(interact), ..Callbacks::default() });
        assert_eq!(reply, json!({"Answer": {"Interact": {"Given": "us"}}}));
        assert_eq!(seen.lock().unwrap().as_ref(), Some(&asked), "the callback got the request as sent");

        let log = json!({"Notice": {"Log": {"tool": null, "level": 20, "logger": "x", "message": "m"}}});
        assert_eq!(answered(log.clone(), Callbacks::default()), json!({"Delivered": false}));
        let taken = Callbacks { log: Some(Arc::new(|_| {})), ..Callbacks::default() };
        assert_eq!(answered(log, taken), json!({"Delivered": true}));
    }

    #[test]
    #[cfg(feature = "python")]
    fn what_host_py_sends_wrong_is_refused_with_where() {
        let wrong = json!({"Request": {"Roots": {"library": "l", "tool": null, "key": 3}}});
        let reply = answered(wrong, Callbacks::default());
        let why = reply["Unreadable"].as_str().expect("unreadable");
        assert!(why.starts_with("lcp could not read the request: invalid type: integer `3`"), "{why}");
        let unknown = answered(json!({"Request": {"Shout": {}}}), Callbacks::default());
        assert!(unknown["Unreadable"].as_str().is_some_and(|why| why.contains("unknown variant `Shout`")), "{unknown}");
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
