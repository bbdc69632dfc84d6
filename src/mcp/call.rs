//! One `tools/call`, from the request to the result.
//!
//! A call runs on a blocking thread and reports [`Event`]s: confirmations the tool
//! asks for, then its outcome. A confirmation becomes an elicitation: a
//! server→client `elicitation/create` request in a handshake session, or, on the
//! handshake-less protocol (which forbids server→client requests), an
//! `InputRequiredResult` carrying the same request; the call is parked under an
//! opaque `requestState` until the client retries with the answer. Accept means
//! `allow`; decline, cancel or no answer mean `reject`. A client that cannot elicit
//! gets `reject` with a reason, or `allow` under `--yes`.
//!
//! Calls run one at a time (a tool may change the working directory, and Python
//! holds its lock anyway); the turn is held by the running call, not by a
//! request, so a parked call keeps it until it is answered or expires.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitationAction, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
    ServerRequest,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedMutexGuard, mpsc};

use super::Server;

/// How long a call parked on a confirmation waits for the client to answer.
const PARKED_FOR: Duration = Duration::from_secs(600);

/// The key of the confirmation inside `inputRequests` / `inputResponses`.
const CONFIRM_KEY: &str = "confirm";

#[derive(Default)]
pub(super) struct Calls {
    /// One call at a time: the running call holds the guard.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Where the running call's confirmations go (the runtime's confirm handler
    /// posts here; calls run one at a time, so there is only one).
    route: Arc<Mutex<Option<mpsc::UnboundedSender<Event>>>>,
    /// Calls waiting for a handshake-less client to answer a confirmation.
    parked: Arc<Mutex<HashMap<String, Parked>>>,
    next_state: AtomicU64,
}

/// What a running call reports.
pub(super) enum Event {
    Confirm(Confirmation),
    Done(Outcome),
}

/// A tool's request for confirmation; the call waits until it is answered.
/// Dropping it unanswered rejects it.
pub(super) struct Confirmation {
    pub library: String,
    pub tool: String,
    pub content: String,
    pub label: String,
    reply: std::sync::mpsc::Sender<Decision>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    Allow,
    Reject(String),
}

impl Confirmation {
    fn answer(self, decision: Decision) {
        let _ = self.reply.send(decision);
    }

    fn message(&self) -> String {
        let mut message = format!("`{}` ({}) asks for confirmation", self.tool, self.library);
        if !self.label.is_empty() {
            message.push_str(&format!(": {}", self.label));
        }
        if !self.content.is_empty() {
            message.push_str(&format!("\n\n{}", self.content));
        }
        message
    }
}

/// How a call ended, as the runtime reports it (SPEC §5 "Result").
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Outcome {
    pub ok: bool,
    pub output: Value,
    pub error: Option<String>,
    pub traceback: Option<String>,
}

impl Outcome {
    fn failed(error: impl Into<String>) -> Outcome {
        Outcome { ok: false, output: Value::Null, error: Some(error.into()), traceback: None }
    }
}

/// A call in progress: its events, and the turn it holds until it ends.
struct Running {
    events: mpsc::UnboundedReceiver<Event>,
    _turn: OwnedMutexGuard<()>,
}

struct Parked {
    running: Running,
    confirmation: Confirmation,
}

impl Calls {
    /// The runtime's confirm handler: forwards the request to the running call's
    /// client and blocks (on the Python thread) until it is answered.
    #[allow(dead_code)] // Wired to the runtime's confirm handler once the runtime is in.
    pub(super) fn confirm(&self, library: &str, tool: &str, content: &str, label: &str) -> Decision {
        let (reply, answer) = std::sync::mpsc::channel();
        let confirmation = Confirmation {
            library: library.to_string(),
            tool: tool.to_string(),
            content: content.to_string(),
            label: label.to_string(),
            reply,
        };
        let route = self.route.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match route {
            Some(route) if route.send(Event::Confirm(confirmation)).is_ok() => {
                answer.recv().unwrap_or_else(|_| Decision::Reject("the confirmation was not answered".to_string()))
            }
            _ => Decision::Reject("no MCP call is waiting for this confirmation".to_string()),
        }
    }

    fn park(&self, parked: Parked) -> String {
        let state = format!("lcp-confirm-{}", self.next_state.fetch_add(1, Ordering::Relaxed));
        self.parked.lock().unwrap_or_else(|p| p.into_inner()).insert(state.clone(), parked);
        let all = Arc::clone(&self.parked);
        let expiring = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            let expired = all.lock().unwrap_or_else(|p| p.into_inner()).remove(&expiring);
            if let Some(parked) = expired {
                parked.confirmation.answer(Decision::Reject("the client did not answer in time".to_string()));
                drain(parked.running);
            }
        });
        state
    }

    fn unpark(&self, state: &str) -> Option<Parked> {
        self.parked.lock().unwrap_or_else(|p| p.into_inner()).remove(state)
    }
}

pub(super) async fn call_tool(
    server: &Server,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let calls = &server.shared.calls;
    let running = match &request.request_state {
        Some(state) => {
            let Some(parked) = calls.unpark(state) else {
                return Ok(failure("this confirmation was already answered or has expired; call the tool again").into());
            };
            let action = request.input_responses.as_ref().and_then(|responses| responses.get(CONFIRM_KEY));
            parked.confirmation.answer(decision(action.and_then(|answer| answer.get("action"))));
            parked.running
        }
        None => {
            let name = request.name.as_ref();
            server.rescan_if_unknown(name).await;
            let known = server.registry().tool(name).map(|(library, _)| library.stem.clone());
            let Some(_library) = known else {
                return Err(ErrorData::invalid_params(unknown_tool(name, &server.tool_names()), None));
            };
            let arguments = request.arguments.clone().unwrap_or_default();
            start(server, name, arguments).await
        }
    };
    drive(server, running, &context).await
}

impl Server {
    async fn rescan_if_unknown(&self, name: &str) {
        if self.registry().tool(name).is_none() {
            self.rescan().await;
        }
    }

    fn tool_names(&self) -> Vec<String> {
        self.registry().tools().map(|(_, tool)| tool.name.clone()).collect()
    }
}

/// Takes the turn and starts the call on a blocking thread.
async fn start(server: &Server, tool: &str, arguments: Map<String, Value>) -> Running {
    let calls = &server.shared.calls;
    let turn = Arc::clone(&calls.turn).lock_owned().await;
    let (events, receiver) = mpsc::unbounded_channel();
    *calls.route.lock().unwrap_or_else(|p| p.into_inner()) = Some(events.clone());
    let tool = tool.to_string();
    tokio::task::spawn_blocking(move || {
        let outcome = run(&tool, arguments);
        let _ = events.send(Event::Done(outcome));
    });
    Running { events: receiver, _turn: turn }
}

/// Runs one tool in the embedded Python runtime.
fn run(_tool: &str, _arguments: Map<String, Value>) -> Outcome {
    Outcome::failed("this build of lcp cannot run tools yet: the Python runtime is not part of it")
}

/// Waits for the running call's next events until it ends, is parked or cancelled.
async fn drive(
    server: &Server,
    mut running: Running,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let settings = &server.shared.settings;
    loop {
        let event = tokio::select! {
            event = running.events.recv() => event,
            () = context.ct.cancelled() => {
                drain(running);
                return Ok(failure("the call was cancelled").into());
            }
        };
        let confirmation = match event {
            Some(Event::Done(outcome)) => return Ok(result(outcome, settings.max_output).into()),
            None => return Ok(failure("the call ended without a result").into()),
            Some(Event::Confirm(confirmation)) => confirmation,
        };
        match ask(context) {
            Ask::Request => {
                let decision = tokio::select! {
                    decision = elicit(&context.peer, &confirmation) => decision,
                    () = context.ct.cancelled() => {
                        confirmation.answer(Decision::Reject("the call was cancelled".to_string()));
                        drain(running);
                        return Ok(failure("the call was cancelled").into());
                    }
                };
                confirmation.answer(decision);
            }
            Ask::InputRequired => {
                let request = elicit_request(&confirmation);
                let state = server.shared.calls.park(Parked { running, confirmation });
                let requests = InputRequests::from([(CONFIRM_KEY.to_string(), request)]);
                return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
            }
            Ask::Cannot if settings.yes => confirmation.answer(Decision::Allow),
            Ask::Cannot => confirmation.answer(Decision::Reject(
                "the MCP client cannot ask the user for confirmation (it does not support elicitation); \
                 start `lcp serve --yes` to allow such actions"
                    .to_string(),
            )),
        }
    }
}

/// After the caller stopped waiting: refuse whatever the call still asks and let
/// it finish in the background; the turn is released when it ends.
fn drain(mut running: Running) {
    tokio::spawn(async move {
        while let Some(event) = running.events.recv().await {
            match event {
                Event::Confirm(confirmation) => {
                    confirmation.answer(Decision::Reject("the call was cancelled".to_string()))
                }
                Event::Done(_) => return,
            }
        }
    });
}

enum Ask {
    /// A server→client `elicitation/create` request (handshake sessions).
    Request,
    /// An `InputRequiredResult` round (2026-07-28 and later).
    InputRequired,
    Cannot,
}

fn ask(context: &RequestContext<RoleServer>) -> Ask {
    let can_elicit = context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
    let handshake_less =
        context.protocol_version().is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    match (can_elicit, handshake_less) {
        (false, _) => Ask::Cannot,
        (true, true) => Ask::InputRequired,
        (true, false) => Ask::Request,
    }
}

fn elicit_request(confirmation: &Confirmation) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(elicit_params(confirmation)))
}

fn elicit_params(confirmation: &Confirmation) -> ElicitRequestParams {
    // A confirmation asks for nothing but the decision: an empty form.
    let schema = serde_json::from_value(json!({ "type": "object", "properties": {} }))
        .expect("an empty object schema is a valid elicitation schema");
    ElicitRequestParams::FormElicitationParams { meta: None, message: confirmation.message(), requested_schema: schema }
}

async fn elicit(peer: &Peer<RoleServer>, confirmation: &Confirmation) -> Decision {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(elicit_params(confirmation)));
    match peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(result)) => match result.action {
            ElicitationAction::Accept => Decision::Allow,
            ElicitationAction::Decline => Decision::Reject("the user declined".to_string()),
            _ => Decision::Reject("the user cancelled".to_string()),
        },
        Ok(_) => Decision::Reject("the client answered the confirmation with something else".to_string()),
        Err(err) => Decision::Reject(format!("the client could not ask the user: {err}")),
    }
}

/// The decision in an `inputResponses` entry (`{"action": "accept" | ...}`).
fn decision(action: Option<&Value>) -> Decision {
    match action.and_then(Value::as_str) {
        Some("accept") => Decision::Allow,
        Some("decline") => Decision::Reject("the user declined".to_string()),
        Some("cancel") => Decision::Reject("the user cancelled".to_string()),
        _ => Decision::Reject("the client did not answer the confirmation".to_string()),
    }
}

fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The outcome as an MCP result: the output as JSON text and as `structuredContent`
/// (an object; anything else is wrapped as `{"result": ...}`). A failure is
/// `isError: true` with the error and its traceback as text. Text longer than
/// `max_output` bytes is cut with a marker, and then carries no `structuredContent`.
fn result(outcome: Outcome, max_output: usize) -> CallToolResult {
    let ok = outcome.ok;
    let (text, structured) = match outcome {
        Outcome { ok: false, output: Value::Null, error: Some(error), traceback } => {
            let text = match &traceback {
                Some(traceback) if !traceback.is_empty() => format!("{error}\n\n{traceback}"),
                _ => error.clone(),
            };
            let mut structured = Map::new();
            structured.insert("error".to_string(), Value::String(error));
            if let Some(traceback) = traceback {
                structured.insert("traceback".to_string(), Value::String(traceback));
            }
            (text, Value::Object(structured))
        }
        Outcome { output, .. } => {
            let text = serde_json::to_string(&output)
                .unwrap_or_else(|err| format!("the output cannot be written as JSON: {err}"));
            let structured = match output {
                Value::Object(object) => Value::Object(object),
                other => json!({ "result": other }),
            };
            (text, structured)
        }
    };
    let (text, structured) = match cut(&text, max_output) {
        Some(cut) => (cut, None),
        None => (text, Some(structured)),
    };
    let mut result = if ok {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = structured;
    result
}

/// `text` cut to at most `max` bytes (on a character boundary) plus a marker, or
/// `None` when it fits.
fn cut(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "{}\n[output cut: {end} of {} bytes shown; `lcp serve --max-output` sets the limit]",
        &text[..end],
        text.len()
    ))
}

/// `unknown tool `x``, with the closest known names.
fn unknown_tool(name: &str, known: &[String]) -> String {
    let mut ranked: Vec<(usize, &String)> = known.iter().map(|k| (distance(name, k), k)).collect();
    ranked.sort();
    let close: Vec<&str> = ranked
        .iter()
        .take(3)
        .filter(|(d, k)| *d <= 3.max(k.len().max(name.len()) / 3))
        .map(|(_, k)| k.as_str())
        .collect();
    match close.as_slice() {
        [] if known.is_empty() => format!("unknown tool `{name}`; this server has no tools"),
        [] => format!("unknown tool `{name}`; `tools/list` names the {} tools of this server", known.len()),
        close => format!(
            "unknown tool `{name}`; did you mean {}?",
            close.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Levenshtein distance, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_result(outcome: Outcome, max: usize, expected: Value) {
        let result = serde_json::to_value(result(outcome, max)).unwrap();
        assert_eq!(result, expected);
    }

    fn ok(output: Value) -> Outcome {
        Outcome { ok: true, output, error: None, traceback: None }
    }

    #[test]
    fn results() {
        check_result(
            ok(json!({"a": 1})),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}, "isError": false}),
        );
        check_result(
            ok(json!([1, 2])),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "[1,2]"}], "structuredContent": {"result": [1, 2]}, "isError": false}),
        );
        check_result(
            Outcome {
                ok: false,
                output: json!({"success": false, "error": "no"}),
                error: Some("no".into()),
                traceback: None,
            },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"success\":false,\"error\":\"no\"}"}], "structuredContent": {"success": false, "error": "no"}, "isError": true}),
        );
        check_result(
            Outcome {
                ok: false,
                output: Value::Null,
                error: Some("ValueError: x".into()),
                traceback: Some("Traceback ...".into()),
            },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ValueError: x\n\nTraceback ..."}], "structuredContent": {"error": "ValueError: x", "traceback": "Traceback ..."}, "isError": true}),
        );
    }

    #[test]
    fn long_output_is_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(cut("abc", 3), None);
        assert_eq!(
            cut("aé", 2).unwrap(),
            "a\n[output cut: 1 of 3 bytes shown; `lcp serve --max-output` sets the limit]"
        );
        let result = serde_json::to_value(result(ok(json!("x".repeat(50))), 10)).unwrap();
        assert!(result.get("structuredContent").is_none());
        assert!(result["content"][0]["text"].as_str().unwrap().starts_with("\"xxxxxxxxx\n[output cut: 10 of 52 bytes"));
    }

    #[test]
    fn unknown_tools_name_the_closest_ones() {
        let known: Vec<String> = ["tool_add", "tool_sub", "tool_weather"].iter().map(|s| s.to_string()).collect();
        assert_eq!(unknown_tool("tool_ad", &known), "unknown tool `tool_ad`; did you mean `tool_add`, `tool_sub`?");
        assert_eq!(unknown_tool("zzz", &known), "unknown tool `zzz`; `tools/list` names the 3 tools of this server");
        assert_eq!(unknown_tool("x", &[]), "unknown tool `x`; this server has no tools");
    }

    #[test]
    fn elicitation_answers() {
        assert_eq!(decision(Some(&json!("accept"))), Decision::Allow);
        assert_eq!(decision(Some(&json!("decline"))), Decision::Reject("the user declined".into()));
        assert_eq!(decision(Some(&json!("cancel"))), Decision::Reject("the user cancelled".into()));
        assert_eq!(decision(None), Decision::Reject("the client did not answer the confirmation".into()));
    }
}
