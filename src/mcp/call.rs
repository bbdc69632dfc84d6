//! One `tools/call`, from the request to the result.
//!
//! A call runs on a blocking thread through the server's runtime, with host
//! callbacks (SPEC §9) that report to this call only; calls run side by side. The
//! thread sends [`Event`]s: what the tool asks (a confirmation, the user, the model),
//! what it tells (progress, log records), then its result. What it asks becomes a
//! request for the client (`host.rs` translates): a server→client request in a
//! handshake session, or, on the handshake-less protocol (which forbids server→client
//! requests), an `InputRequiredResult` carrying it; the call is then parked under an
//! opaque `requestState` until the client retries with the answer. A client that
//! cannot take the request (no elicitation, no sampling) is answered at once, saying
//! why. Progress becomes `notifications/progress` with the request's progress token
//! (a log message without one); log records at or above the call's level become
//! `notifications/message`.
//!
//! The client is a [`Requester`]: rmcp's peer of the request.
//!
//! Cancellation stops the call: with worker processes the tool is stopped (its
//! worker is ended if it does not stop); in-process (`--in-process`) it finishes in
//! the background and whatever it still asks is refused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequests, InputRequiredResult,
    InputResponses, TASKS_EXTENSION_ID,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::Server;
use super::content;
use super::host::{self, Able};
use super::requester::{Reporter, Requester};
use super::state::{self, StateKey};
use super::tasks::TaskRun;
use crate::host::view::{Admission, Admitted};
use crate::policy::{Declared, TaskSupport};
use crate::runtime::host_objects::{Callbacks, Host, HostAnswer, HostRequest, Notice, Offered, refused};
use crate::runtime::{CallOptions, Cancel, ToolResult};
use crate::sync;

/// How long a call parked on a question waits for the client to answer.
const PARKED_FOR: Duration = Duration::from_secs(600);

/// The key of a question inside `inputRequests` / `inputResponses` when its tool
/// named none (`key`).
const INPUT_KEY: &str = "lcp";

/// The key of `request` inside `inputRequests` / `inputResponses`.
pub(super) fn input_key(request: &HostRequest) -> &str {
    let named = match request {
        HostRequest::Interact(interaction) => interaction.key.as_deref(),
        HostRequest::Generate(generation) => generation.key.as_deref(),
        HostRequest::Roots(roots) => roots.key.as_deref(),
        HostRequest::Confirm(_) | HostRequest::Batch(_) => None,
    };
    named.unwrap_or(INPUT_KEY)
}

/// The tool's answer to `request` from the client's `inputResponses` (a batch's
/// requests each from its own key, those in `settled` as they were answered).
pub(super) fn answered(
    request: &HostRequest,
    responses: Option<&InputResponses>,
    settled: &[(String, HostAnswer)],
) -> HostAnswer {
    if let HostRequest::Batch(requests) = request {
        let answers = requests.iter().map(|(key, request)| {
            let answer = match settled.iter().find(|(done, _)| done == key) {
                Some((_, answer)) => answer.clone(),
                None => answered(request, responses, &[]),
            };
            (key.clone(), answer)
        });
        return HostAnswer::Batch(answers.collect());
    }
    match responses.and_then(|responses| responses.get(input_key(request))) {
        Some(response) => host::answer(request, response),
        None => refused(request, "the client did not answer"),
    }
}

/// Calls waiting for a handshake-less client to answer a question, each under an
/// unguessable id that the signed `requestState` carries (`state.rs`).
pub(super) struct Parked {
    calls: Arc<Mutex<HashMap<String, Waiting>>>,
    next: AtomicU64,
    key: StateKey,
}

struct Waiting {
    tool: String,
    events: mpsc::UnboundedReceiver<Event>,
    question: Question,
    /// The requests of a batch answered without the client (it could not take them).
    settled: Vec<(String, HostAnswer)>,
    cancel: Cancel,
    reporter: Reporter,
}

/// What a running call reports.
pub(super) enum Event {
    Ask(Question),
    Tell(Notice),
    Done(ToolResult),
}

/// What a tool asks; its thread waits until it is answered. Dropping it unanswered
/// refuses it.
pub(super) struct Question {
    pub(super) request: HostRequest,
    reply: std::sync::mpsc::Sender<HostAnswer>,
}

impl Question {
    pub(super) fn answer(self, answer: HostAnswer) {
        let _ = self.reply.send(answer);
    }

    /// The answer the client's `result` gives.
    fn answer_from(self, result: &Value) {
        let answer = host::answer(&self.request, result);
        self.answer(answer);
    }

    pub(super) fn refuse(self, reason: &str) {
        let answer = refused(&self.request, reason);
        self.answer(answer);
    }
}

impl Parked {
    pub(super) fn new(key: StateKey) -> Parked {
        Parked { calls: Arc::default(), next: AtomicU64::new(0), key }
    }

    /// An id no other client can guess and the signed `requestState` that carries it
    /// with the answers of the earlier rounds, bound to its caller and its call; `None`
    /// when the system has no randomness to offer.
    fn new_state(&self, tool: &str, rounds: &[InputResponses], bound: &Bound) -> Option<(String, String)> {
        let secret = unguessable()?;
        let id = format!("{}-{secret}", self.next.fetch_add(1, Ordering::Relaxed));
        let payload = json!({
            "call": id, "tool": tool, "rounds": rounds,
            "caller": state::digest(&[&bound.caller]), "arguments": bound.call,
        });
        Some((id, self.key.sign(payload, PARKED_FOR)))
    }

    /// The id of the call a `requestState` of a call of `tool` parks, and the answers
    /// of its earlier rounds; a state this server did not sign (with this key), whose
    /// time is up, or made for another caller or other arguments, is refused.
    fn open(&self, state: &str, tool: &str, bound: &Bound) -> Result<(String, Vec<InputResponses>), ErrorData> {
        let refused = |message: String| ErrorData::invalid_params(message, Some(json!({ "requestState": "refused" })));
        let payload = self.key.open(state).map_err(|why| refused(why.to_string()))?;
        let rounds = serde_json::from_value(payload["rounds"].clone()).unwrap_or_default();
        let (Some(id), Some(signed_for), Some(caller), Some(call)) = (
            payload["call"].as_str(),
            payload["tool"].as_str(),
            payload["caller"].as_str(),
            payload["arguments"].as_str(),
        ) else {
            return Err(refused(state::Refused::Forged.to_string()));
        };
        if signed_for != tool {
            return Err(refused(format!("requestState belongs to a call of `{signed_for}`, not of `{tool}`")));
        }
        if caller != state::digest(&[&bound.caller]) {
            return Err(refused(
                "requestState belongs to another caller: only the caller whose call asked may answer it".to_string(),
            ));
        }
        if call != bound.call {
            return Err(refused(format!(
                "requestState was made for a call of `{tool}` with other arguments: retry with the same arguments"
            )));
        }
        Ok((id.to_string(), rounds))
    }

    /// Ends the call a `requestState` parks, when it is this caller's and this server
    /// holds it (its caller may no longer run it).
    fn abandon(&self, state: &str, tool: &str, bound: &Bound) {
        let Ok((id, _)) = self.open(state, tool, bound) else { return };
        if let Some(waiting) = self.take(&id, tool) {
            waiting.question.refuse("the call is no longer admitted");
            waiting.cancel.cancel();
            drain(waiting.events);
        }
    }

    /// Parks the call until the client answers or [`PARKED_FOR`] passes.
    fn park(&self, id: &str, waiting: Waiting) {
        sync::lock(&self.calls).insert(id.to_string(), waiting);
        let calls = Arc::clone(&self.calls);
        let expiring = id.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            let expired = sync::lock(&calls).remove(&expiring);
            if let Some(waiting) = expired {
                waiting.question.refuse("the client did not answer in time");
                waiting.cancel.cancel();
                drain(waiting.events);
            }
        });
    }

    /// The call parked under `id`, if it is a call of `tool`.
    fn take(&self, id: &str, tool: &str) -> Option<Waiting> {
        let mut calls = sync::lock(&self.calls);
        if calls.get(id).is_some_and(|waiting| waiting.tool == tool) { calls.remove(id) } else { None }
    }
}

/// What a call's `requestState` is bound to (SPEC §16): who made it, and what it calls
/// with what.
#[derive(Clone)]
pub(super) struct Bound {
    /// The caller, with its profile (`auth::Caller::key`): the owner of the tasks it makes.
    pub(super) caller: String,
    /// The digest of the target (a tool, a prompt, a resource URI) and its arguments.
    call: String,
}

impl Bound {
    pub(super) fn new(caller: &super::auth::Caller, target: &str, arguments: Option<&Map<String, Value>>) -> Bound {
        let arguments =
            arguments.map_or_else(|| "{}".to_string(), |given| state::canonical(&Value::Object(given.clone())));
        Bound { caller: caller.key(), call: state::digest(&[target, &arguments]) }
    }
}

/// 128 random bits from the kernel, as hex.
pub(super) fn unguessable() -> Option<String> {
    let bytes = state::random_bytes()?;
    Some(bytes[..16].iter().map(|byte| format!("{byte:02x}")).collect())
}

/// How a call followed by [`drive`] came out for its request.
pub(super) enum Driven {
    /// It ended with this result.
    Done(ToolResult),
    /// It asks the client, and is parked until the client answers (handshake-less).
    Asked(InputRequiredResult),
    /// It ended without a result (cancelled, abandoned), for this reason.
    Ended(String),
    /// It goes on as a task (`become_task`): the rest of its events, its stop, and the
    /// status it gave.
    Task(mpsc::UnboundedReceiver<Event>, Cancel, String),
}

/// A call that was asked the client, when the client answers.
enum Resumed {
    /// This server holds it: it goes on, its events to follow, the answers of every
    /// round so far with it.
    Here(Followed),
    /// Another replica holds it, or it ended (this server restarted, it expired): it
    /// runs again from the start, its questions answered from these rounds (SPEC §16).
    Elsewhere(Vec<InputResponses>),
}

/// A running call as [`drive`] follows it.
struct Followed {
    events: mpsc::UnboundedReceiver<Event>,
    cancel: Cancel,
    reporter: Reporter,
    /// The client's answers of the rounds so far.
    rounds: Vec<InputResponses>,
    /// Answers to give the call's next questions without asking (a call run again).
    replay: std::collections::VecDeque<InputResponses>,
    /// Its caller and call, which a `requestState` of it names.
    bound: Bound,
}

/// The call a `requestState` names, given the client's answers. A state this server
/// did not sign for `target`, this caller and these arguments is refused, the call it
/// parks left as it is. Only for a request already admitted.
fn resume(
    server: &Server,
    target: &str,
    state: &str,
    bound: &Bound,
    responses: Option<&InputResponses>,
    requester: &Requester,
) -> Result<Resumed, ErrorData> {
    let (id, mut rounds) = server.shared.parked.open(state, target, bound)?;
    rounds.push(responses.cloned().unwrap_or_default());
    let Some(waiting) = server.shared.parked.take(&id, target) else { return Ok(Resumed::Elsewhere(rounds)) };
    let answer = answered(&waiting.question.request, responses, &waiting.settled);
    let _ = waiting.question.reply.send(answer);
    // The first request is over: what the call reports from now on belongs to this
    // one, under its progress token.
    let reporter = Reporter { token: requester.progress.clone(), ..waiting.reporter };
    let (events, cancel) = (waiting.events, waiting.cancel);
    let bound = bound.clone();
    Ok(Resumed::Here(Followed { events, cancel, reporter, rounds, replay: Default::default(), bound }))
}

/// A prompt or resource run as a call is (SPEC §15, §16): what its function asks the
/// client is asked as a tool's is, an `InputRequiredResult` round included; `target`
/// names it in its `requestState`.
pub(super) async fn call_member(
    server: &Server,
    target: &str,
    run: Option<(Admitted, Map<String, Value>)>,
    state: Option<&str>,
    responses: Option<&InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Result<Driven, ErrorData> {
    let requester = Requester::of(server, context);
    let caller = super::caller_of(context.extensions.get::<hyper::http::request::Parts>());
    let bound = Bound::new(&caller, target, run.as_ref().map(|(_, arguments)| arguments));
    let started = |rounds| {
        run.map(|(admitted, arguments)| {
            let declared = Some(admitted.confined());
            begin(server, &admitted, declared, arguments, rounds, false, &requester, bound.clone())
        })
    };
    let followed = match state {
        Some(state) => match resume(server, target, state, &bound, responses, &requester)? {
            Resumed::Here(followed) => Some(followed),
            Resumed::Elsewhere(rounds) => started(rounds),
        },
        None => started(Vec::new()),
    };
    let Some(followed) = followed else { return Ok(Driven::Ended("nothing to run".to_string())) };
    Ok(match drive(server, target, followed, &requester).await? {
        // Only a tool's call is offered `become_task`.
        Driven::Task(events, cancel, _) => {
            cancel.cancel();
            drain(events);
            Driven::Ended("a prompt or resource cannot become a task".to_string())
        }
        driven => driven,
    })
}

/// Starts a call (see [`start`]), to be followed by [`drive`]; `replay` answers its
/// first questions (the rounds of a call run again).
#[allow(clippy::too_many_arguments)] // Each is one part of the call; a struct would only rename them.
fn begin(
    server: &Server,
    admitted: &Admitted,
    declared: Option<Declared>,
    arguments: Map<String, Value>,
    replay: Vec<InputResponses>,
    may_become_task: bool,
    requester: &Requester,
    bound: Bound,
) -> Followed {
    let (level, able) = (requester.level, requester.able);
    let reporter = Reporter { token: requester.progress.clone(), level, reports: 0 };
    let (events, cancel) = start(server, admitted, declared, arguments, able, level, may_become_task);
    Followed { events, cancel, reporter, rounds: replay.clone(), replay: replay.into(), bound }
}

pub(super) async fn call_tool(
    server: &Server,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    // Every call is checked against the profile and the policy as the config and
    // the tool's file are now (SPEC §12), before any code runs: the config as it is
    // when the request comes, for the whole request.
    let config = server.shared.settings.config.current();
    let requester = Requester::of(server, &context);
    let name = request.name.as_ref();
    let caller = super::caller_of(context.extensions.get::<hyper::http::request::Parts>());
    // A retry answering a question names its call by a `requestState`, bound to its
    // caller and arguments: checked once the retry is admitted as any call is.
    let bound = Bound::new(&caller, name, request.arguments.as_ref());
    let abandoned = || {
        if let Some(state) = &request.request_state {
            server.shared.parked.abandon(state, name, &bound);
        }
    };
    // The folders are read again when the tool's file changed or the tool is not known.
    let current = server.snapshot();
    let admission = match server.admit(&current, &config, name) {
        Admission::Run(tool) if current.is_current(tool.library()) => Admission::Run(tool),
        _ => {
            server.rescan().await;
            server.admit(&server.snapshot(), &config, name)
        }
    };
    let tool = match admission {
        Admission::Run(tool) => tool,
        Admission::Refused(rule) => {
            abandoned();
            return Ok(failure(&rule).into());
        }
        Admission::Unknown(message) => {
            abandoned();
            return match server.docs_call(&server.snapshot(), name, request.arguments.as_ref()).await {
                Some(result) => Ok(result.into()),
                None => Err(ErrorData::invalid_params(message, None)),
            };
        }
    };
    let declared = Some(tool.confined());
    if let Some(parts) = context.extensions.get::<hyper::http::request::Parts>()
        && let Some(headers) = declared.as_ref().and_then(|declared| declared.mcp_headers.as_ref())
    {
        check_param_headers(&parts.headers, headers, request.arguments.as_ref())?;
    }
    let shape = super::output_shape_of(tool.function());
    let mut replay = Vec::new();
    if let Some(state) = &request.request_state {
        match resume(server, name, state, &bound, request.input_responses.as_ref(), &requester)? {
            Resumed::Here(followed) => return finish(server, name, followed, shape, &requester).await,
            Resumed::Elsewhere(rounds) => replay = rounds,
        }
    }
    // A task tool that calls `become_task` is an ordinary call up to that point.
    let (as_task, may_become_task) = match declared.as_ref().and_then(|declared| declared.task) {
        Some(TaskSupport::Optional | TaskSupport::Required) if takes_tasks(&context) => {
            let becomes = tool.function().becomes_task;
            (!becomes, becomes)
        }
        Some(TaskSupport::Required) => return Err(tasks_needed(name)),
        _ => (false, false),
    };
    let arguments = request.arguments.clone().unwrap_or_default();
    let followed = begin(server, &tool, declared, arguments, replay, may_become_task, &requester, bound);
    if as_task {
        let owner = followed.bound.caller.clone();
        return run_as_task(server, name, (followed.events, followed.cancel, None), shape, &requester, owner).await;
    }
    finish(server, name, followed, shape, &requester).await
}

/// Whether the request's client takes tasks (it declared the extension).
fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks())
}

/// A call of a tool that runs only as a task, from a client that takes none.
fn tasks_needed(tool: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("`{tool}` runs only as a task: the client must declare the {TASKS_EXTENSION_ID} extension"),
        Some(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION_ID: {} } } })),
    )
}

/// The call, started, handed to the server's tasks: the client gets its task now.
async fn run_as_task(
    server: &Server,
    tool: &str,
    (events, cancel, status): (mpsc::UnboundedReceiver<Event>, Cancel, Option<String>),
    shape: content::Shape,
    requester: &Requester,
    owner: String,
) -> Result<CallToolResponse, ErrorData> {
    let max_output = server.shared.settings.max_output;
    let watcher = (!requester.handshake_less).then(|| requester.to.0.clone());
    let run = TaskRun {
        events,
        cancel,
        status,
        watcher,
        able: requester.able,
        finish: Box::new(move |result| content::tool_result(result, max_output, shape)),
    };
    let created = server.shared.tasks.create(tool, owner, run).await?;
    Ok(CallToolResponse::Task(created))
}

/// Follows a tool's call to its response.
async fn finish(
    server: &Server,
    tool: &str,
    followed: Followed,
    shape: content::Shape,
    requester: &Requester,
) -> Result<CallToolResponse, ErrorData> {
    let owner = followed.bound.caller.clone();
    Ok(match drive(server, tool, followed, requester).await? {
        Driven::Done(result) => content::tool_result(result, server.shared.settings.max_output, shape).into(),
        Driven::Asked(asked) => asked.into(),
        Driven::Ended(reason) => failure(&reason).into(),
        Driven::Task(events, cancel, status) => {
            let status = Some(status).filter(|status| !status.is_empty());
            return run_as_task(server, tool, (events, cancel, status), shape, requester, owner).await;
        }
    })
}

/// Starts the call on a blocking thread, with host callbacks that ask this call's
/// client, and a flag that stops it.
#[allow(clippy::too_many_arguments)] // Each is one part of the call; a struct would only rename them.
fn start(
    server: &Server,
    tool: &Admitted,
    declared: Option<Declared>,
    arguments: Map<String, Value>,
    able: Able,
    log_level: u32,
    may_become_task: bool,
) -> (mpsc::UnboundedReceiver<Event>, Cancel) {
    let (events, receiver) = mpsc::unbounded_channel();
    let settings = &server.shared.settings;
    let cancel = Cancel::default();
    // MCP sampling takes images.
    let offered = Offered::all(able.sample, may_become_task);
    let caller: Arc<dyn Host> = Arc::new(Caller { events: events.clone() });
    let callbacks = Callbacks::of_host(&caller, &offered);
    let options = CallOptions {
        workspace: settings.workspace.clone(),
        timeout: settings.timeout,
        cancel: Some(cancel.clone()),
        callbacks,
        log_level: Some(log_level),
        max_output: Some(settings.max_output),
        declared,
    };
    let arguments = Value::Object(arguments);
    let server = server.clone();
    let tool = tool.clone();
    tokio::task::spawn_blocking(move || {
        let result = match server.python() {
            Err(err) => ToolResult::failure(err),
            Ok(runtime) => runtime.call_admitted(&tool, &arguments, &options),
        };
        let _ = events.send(Event::Done(result));
    });
    (receiver, cancel)
}

/// The client of a call, as its host: what the call asks or tells goes to the call's
/// driver ([`drive`]), which asks the client.
struct Caller {
    events: mpsc::UnboundedSender<Event>,
}

impl Host for Caller {
    /// On the tool's thread: hands the request to the driver and waits for the answer.
    fn answer(&self, request: HostRequest) -> HostAnswer {
        let (reply, answer) = std::sync::mpsc::channel();
        let refusal = refused(&request, "the question was not answered");
        if let Err(unsent) = self.events.send(Event::Ask(Question { request, reply })) {
            let Event::Ask(question) = unsent.0 else { unreachable!("the event sent is a question") };
            return refused(&question.request, "nobody waits for this call any more");
        }
        answer.recv().unwrap_or(refusal)
    }

    fn notify(&self, notice: Notice) {
        let _ = self.events.send(Event::Tell(notice));
    }
}

/// Follows the call until it ends, is parked on a question, or is cancelled.
async fn drive(server: &Server, tool: &str, followed: Followed, requester: &Requester) -> Result<Driven, ErrorData> {
    let Followed { mut events, cancel, mut reporter, rounds, mut replay, bound } = followed;
    let (able, to) = (requester.able, &requester.to);
    let mut next = None;
    loop {
        let event = match next.take() {
            Some(event) => event,
            None => tokio::select! {
                event = events.recv() => event,
                () = requester.ct.cancelled() => return Ok(cancelled(events, &cancel)),
            },
        };
        let question = match event {
            Some(Event::Done(result)) => return Ok(Driven::Done(result)),
            None => return Ok(Driven::Ended("the call ended without a result".to_string())),
            Some(Event::Tell(Notice::BecomeTask(status))) => return Ok(Driven::Task(events, cancel, status.text)),
            Some(Event::Tell(notice)) => {
                reporter.tell(to, notice).await;
                continue;
            }
            Some(Event::Ask(question)) => question,
        };
        // A call run again: its earlier questions are answered as the client did.
        if let Some(round) = replay.pop_front() {
            let answer = answered(&question.request, Some(&round), &[]);
            question.answer(answer);
            continue;
        }
        if let HostRequest::Batch(requests) = &question.request {
            if requester.handshake_less {
                // One round: every request the client can take, under its key.
                let (mut asked, mut settled, mut missing) = (InputRequests::new(), Vec::new(), None);
                for (key, request) in requests {
                    if let Some(capability) = host::missing_capability(request, able) {
                        let why = format!("the request did not declare the client capability `{capability}`");
                        settled.push((key.clone(), refused(request, &why)));
                        missing.get_or_insert(capability);
                        continue;
                    }
                    match host::outbound(request, able) {
                        Ok(outbound) => {
                            asked.insert(key.clone(), outbound.input_request());
                        }
                        Err(answer) => settled.push((key.clone(), answer)),
                    }
                }
                if asked.is_empty() {
                    if let Some(capability) = missing {
                        question.refuse("the request did not declare the client capabilities it needs");
                        cancel.cancel();
                        drain(events);
                        return Err(missing_capability(capability, tool));
                    }
                    question.answer(HostAnswer::Batch(settled));
                    continue;
                }
                match server.shared.parked.new_state(tool, &rounds, &bound) {
                    Some((id, state)) => {
                        let waiting = Waiting { tool: tool.to_string(), events, question, settled, cancel, reporter };
                        server.shared.parked.park(&id, waiting);
                        return Ok(Driven::Asked(InputRequiredResult::new(Some(asked), Some(state))));
                    }
                    None => question.refuse("lcp could not make a secret to park the call under"),
                }
                continue;
            }
            // A handshake session: each request in turn.
            let mut answers = Vec::new();
            for (key, request) in requests {
                let answer = match host::outbound(request, able) {
                    Err(answer) => answer,
                    Ok(outbound) => tokio::select! {
                        answer = to.ask(outbound.server_request()) => match answer {
                            Ok(result) => host::answer(request, &result),
                            Err(why) => refused(request, &why),
                        },
                        () = requester.ct.cancelled() => {
                            question.refuse("the call was cancelled");
                            return Ok(cancelled(events, &cancel));
                        }
                    },
                };
                answers.push((key.clone(), answer));
            }
            question.answer(HostAnswer::Batch(answers));
            continue;
        }
        // On the handshake-less protocol a request declares what its client can do:
        // one that needs a capability it did not declare is refused as a whole (SPEC
        // §16), the tool stopped.
        if requester.handshake_less
            && let Some(capability) = host::missing_capability(&question.request, able)
        {
            question.refuse(&format!("the request did not declare the client capability `{capability}`"));
            cancel.cancel();
            drain(events);
            return Err(missing_capability(capability, tool));
        }
        let outbound = match host::outbound(&question.request, able) {
            Ok(outbound) => outbound,
            Err(answer) => {
                question.answer(answer);
                continue;
            }
        };
        if requester.handshake_less {
            match server.shared.parked.new_state(tool, &rounds, &bound) {
                Some((id, state)) => {
                    let key = input_key(&question.request).to_string();
                    let requests = InputRequests::from([(key, outbound.input_request())]);
                    let settled = Vec::new();
                    let waiting = Waiting { tool: tool.to_string(), events, question, settled, cancel, reporter };
                    server.shared.parked.park(&id, waiting);
                    return Ok(Driven::Asked(InputRequiredResult::new(Some(requests), Some(state))));
                }
                None => question.refuse("lcp could not make a secret to park the call under"),
            }
            continue;
        }
        let asking = to.ask(outbound.server_request());
        tokio::pin!(asking);
        loop {
            tokio::select! {
                answer = &mut asking => {
                    match answer {
                        Ok(result) => question.answer_from(&result),
                        Err(why) => {
                            let refusal = refused(&question.request, &why);
                            question.answer(refusal);
                        }
                    }
                    break;
                }
                // The call can still end meanwhile (its timeout): then the question is moot.
                event = events.recv() => match event {
                    Some(Event::Ask(other)) => other.refuse("another question of this call is waiting for the client"),
                    Some(Event::Tell(notice)) => reporter.tell(to, notice).await,
                    event => {
                        question.refuse("the call ended before the client answered");
                        next = Some(event);
                        break;
                    }
                },
                () = requester.ct.cancelled() => {
                    question.refuse("the call was cancelled");
                    return Ok(cancelled(events, &cancel));
                }
            }
        }
    }
}

/// SPEC §16: each argument a tool's `mcp_headers` names, when a call over HTTP gives
/// it, comes in its `Mcp-Param-<Name>` header too with the same value (a value
/// `=?base64?…?=` is the Base64 of it, decoded strictly; any other is the value as it
/// is). Anything else is refused with `HeaderMismatch` (-32020; HTTP 400).
fn check_param_headers(
    headers: &hyper::http::HeaderMap,
    declared: &std::collections::BTreeMap<String, String>,
    arguments: Option<&Map<String, Value>>,
) -> Result<(), ErrorData> {
    use base64::Engine;
    let mismatch = |message: String| ErrorData::new(rmcp::model::ErrorCode::HEADER_MISMATCH, message, None);
    for (parameter, name) in declared {
        let expected = match arguments.and_then(|arguments| arguments.get(parameter)) {
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let header = format!("Mcp-Param-{name}");
        let Some(given) = headers.get(&header) else {
            return Err(mismatch(format!("the argument `{parameter}` must come in the `{header}` header too")));
        };
        let given = given.to_str().map_err(|_| mismatch(format!("`{header}` is not visible ASCII")))?.trim();
        let value = match given.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
            Some(encoded) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| mismatch(format!("`{header}` is not valid Base64 (=?base64?…?=)")))?,
            None => given.to_string(),
        };
        if value != expected {
            return Err(mismatch(format!("`{header}` does not match the argument `{parameter}`")));
        }
    }
    Ok(())
}

/// `MissingRequiredClientCapabilityError` (-32021; HTTP 400) naming what `tool` asked for.
fn missing_capability(capability: &str, tool: &str) -> ErrorData {
    let required = json!({ capability: {} });
    let message = format!(
        "`{tool}` asks the client for {capability}, a capability this request did not declare \
         (io.modelcontextprotocol/clientCapabilities)"
    );
    ErrorData::new(
        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message,
        Some(json!({ "requiredCapabilities": required })),
    )
}

fn cancelled(events: mpsc::UnboundedReceiver<Event>, cancel: &Cancel) -> Driven {
    cancel.cancel();
    drain(events);
    Driven::Ended("the call was cancelled".to_string())
}

/// After the caller stopped waiting: refuse whatever the call still asks and let it
/// finish in the background.
pub(super) fn drain(mut events: mpsc::UnboundedReceiver<Event>) {
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                Event::Ask(question) => question.refuse("the call was cancelled"),
                Event::Tell(_) => {}
                Event::Done(_) => return,
            }
        }
    });
}

fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
