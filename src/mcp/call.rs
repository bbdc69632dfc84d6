//! One `tools/call`, from the request to the result.
//!
//! A call runs on a blocking thread through the server's runtime, with a confirm
//! handler that reports to this call only; calls run side by side. The thread sends
//! [`Event`]s: the confirmations the tool asks for, then its result. A confirmation
//! becomes an elicitation: a server→client `elicitation/create` request in a handshake session,
//! or, on the handshake-less protocol (which forbids server→client requests), an
//! `InputRequiredResult` carrying that request; the call is then parked under an
//! opaque `requestState` until the client retries with the answer. Accept means
//! `allow`; decline, cancel or no answer mean `reject`. A client that cannot elicit
//! gets `reject` with a reason, or `allow` under `--yes`.
//!
//! Cancellation stops the call: with worker processes the tool is stopped (its
//! worker is ended if it does not stop); in-process (`--in-process`) it finishes in
//! the background and whatever it still asks to confirm is rejected.

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
use tokio::sync::mpsc;

use super::Server;
use crate::runtime::{CallOptions, Cancel, ConfirmRequest, Confirmation, ToolResult, validate};
use crate::view::Admission;

/// How long a call parked on a confirmation waits for the client to answer.
const PARKED_FOR: Duration = Duration::from_secs(600);

/// The key of the confirmation inside `inputRequests` / `inputResponses`.
const CONFIRM_KEY: &str = "confirm";

/// Calls waiting for a handshake-less client to answer a confirmation.
#[derive(Default)]
pub(super) struct Parked {
    calls: Arc<Mutex<HashMap<String, Waiting>>>,
    next: AtomicU64,
}

struct Waiting {
    tool: String,
    events: mpsc::UnboundedReceiver<Event>,
    question: Question,
    cancel: Cancel,
}

/// What a running call reports.
enum Event {
    Confirm(Question),
    Done(ToolResult),
}

/// A tool's request for confirmation; its thread waits until it is answered.
/// Dropping it unanswered rejects it.
struct Question {
    request: ConfirmRequest,
    reply: std::sync::mpsc::Sender<Confirmation>,
}

impl Question {
    fn answer(self, answer: Confirmation) {
        let _ = self.reply.send(answer);
    }

    fn message(&self) -> String {
        let request = &self.request;
        let asker = match &request.tool {
            Some(tool) => format!("`{tool}` ({})", request.library),
            None => format!("`{}`", request.library),
        };
        let mut message = format!("{asker} asks for confirmation");
        if !request.label.is_empty() {
            message.push_str(&format!(": {}", request.label));
        }
        if !request.content.is_empty() {
            message.push_str(&format!("\n\n{}", request.content));
        }
        message
    }
}

fn rejected(reason: &str) -> Confirmation {
    Confirmation::reject(reason)
}

impl Parked {
    /// A `requestState` no other client can guess (with HTTP, whoever names it
    /// answers the confirmation); `None` when the system has no randomness to offer.
    fn new_state(&self) -> Option<String> {
        let secret = unguessable()?;
        Some(format!("lcp-{}-{secret}", self.next.fetch_add(1, Ordering::Relaxed)))
    }

    /// Parks the call until the client answers or [`PARKED_FOR`] passes.
    fn park(&self, state: &str, waiting: Waiting) {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(state.to_string(), waiting);
        let calls = Arc::clone(&self.calls);
        let expiring = state.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            let expired = calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&expiring);
            if let Some(waiting) = expired {
                waiting.question.answer(rejected("the client did not answer in time"));
                waiting.cancel.cancel();
                drain(waiting.events);
            }
        });
    }

    /// The call parked under `state`, if it is a call of `tool`.
    fn take(&self, state: &str, tool: &str) -> Option<Waiting> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if calls.get(state).is_some_and(|waiting| waiting.tool == tool) { calls.remove(state) } else { None }
    }
}

/// 128 random bits from the kernel, as hex.
fn unguessable() -> Option<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: writes at most the remaining length into the buffer.
        let n = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0) };
        match usize::try_from(n) {
            Ok(n) => filled += n,
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

pub(super) async fn call_tool(
    server: &Server,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let (events, cancel) = match &request.request_state {
        Some(state) => {
            let Some(waiting) = server.shared.parked.take(state, &request.name) else {
                let message = "this confirmation was already answered or has expired; call the tool again";
                return Ok(failure(message).into());
            };
            let answer = request.input_responses.as_ref().and_then(|responses| responses.get(CONFIRM_KEY));
            waiting.question.answer(decision(answer.and_then(|answer| answer.get("action"))));
            (waiting.events, waiting.cancel)
        }
        None => {
            let name = request.name.as_ref();
            // Every call is checked against the profile and the policy as the config
            // and the tool's file are now (SPEC §12), before any code runs: the folders
            // are read again when that file changed or the tool is not known.
            let current = server.snapshot();
            let fresh = match server.admit(&current, name) {
                Admission::Run(tool) => {
                    current.tool(&tool).is_some_and(|(library, _)| current.is_current(&library.path))
                }
                _ => false,
            };
            if !fresh {
                server.rescan().await;
            }
            let registry = server.snapshot();
            let tool = match server.admit(&registry, name) {
                Admission::Run(tool) => tool,
                Admission::Refused(rule) => return Ok(failure(&rule).into()),
                Admission::Unknown(message) => return Err(ErrorData::invalid_params(message, None)),
            };
            start(server, registry, &tool, request.arguments.clone().unwrap_or_default())
        }
    };
    drive(server, &request.name, events, cancel, &context).await
}

/// Starts the call on a blocking thread, with a confirm handler that asks this
/// call's client, and a flag that stops it.
fn start(
    server: &Server,
    registry: Arc<crate::registry::Registry>,
    tool: &str,
    arguments: Map<String, Value>,
) -> (mpsc::UnboundedReceiver<Event>, Cancel) {
    let (events, receiver) = mpsc::unbounded_channel();
    let settings = &server.shared.settings;
    let cancel = Cancel::default();
    let asking = events.clone();
    let options = CallOptions {
        workspace: settings.workspace.clone(),
        timeout: settings.timeout,
        confirm: Some(Arc::new(move |request: &ConfirmRequest| ask(&asking, request))),
        cancel: Some(cancel.clone()),
        ..CallOptions::default()
    };
    let server = server.clone();
    let tool = tool.to_string();
    tokio::task::spawn_blocking(move || {
        let result = match server.python() {
            Err(err) => ToolResult::failure(err),
            Ok(runtime) => {
                let mut result = runtime.call(&registry, &tool, &Value::Object(arguments), &options);
                if let Some((_, found)) = registry.tool(&tool) {
                    validate::check_result(&mut result, found);
                }
                result
            }
        };
        let _ = events.send(Event::Done(result));
    });
    (receiver, cancel)
}

/// The confirm handler (on the tool's thread): hands the question to the call's
/// driver and waits for the answer.
fn ask(events: &mpsc::UnboundedSender<Event>, request: &ConfirmRequest) -> Confirmation {
    let (reply, answer) = std::sync::mpsc::channel();
    let question = Question { request: request.clone(), reply };
    if events.send(Event::Confirm(question)).is_err() {
        return rejected("nobody waits for this call any more");
    }
    answer.recv().unwrap_or_else(|_| rejected("the confirmation was not answered"))
}

/// Follows the call until it ends, is parked on a confirmation, or is cancelled.
async fn drive(
    server: &Server,
    tool: &str,
    mut events: mpsc::UnboundedReceiver<Event>,
    cancel: Cancel,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let settings = &server.shared.settings;
    let mut next = None;
    loop {
        let event = match next.take() {
            Some(event) => event,
            None => tokio::select! {
                event = events.recv() => event,
                () = context.ct.cancelled() => return Ok(cancelled(events, &cancel)),
            },
        };
        let question = match event {
            Some(Event::Done(result)) => {
                let shape = server.output_shape(&server.snapshot(), tool);
                return Ok(tool_result(result, settings.max_output, shape).into());
            }
            None => return Ok(failure("the call ended without a result").into()),
            Some(Event::Confirm(question)) => question,
        };
        match how_to_ask(context) {
            How::Request => {
                let asking = elicit(&context.peer, elicitation(&question));
                tokio::pin!(asking);
                loop {
                    tokio::select! {
                        answer = &mut asking => {
                            question.answer(answer);
                            break;
                        }
                        // The call can still end meanwhile (its timeout): then the question is moot.
                        event = events.recv() => match event {
                            Some(Event::Confirm(other)) => {
                                other.answer(rejected("another confirmation of this call is waiting for the user"));
                            }
                            event => {
                                question.answer(rejected("the call ended before the user answered"));
                                next = Some(event);
                                break;
                            }
                        },
                        () = context.ct.cancelled() => {
                            question.answer(rejected("the call was cancelled"));
                            return Ok(cancelled(events, &cancel));
                        }
                    }
                }
            }
            How::InputRequired => match server.shared.parked.new_state() {
                Some(state) => {
                    let request = InputRequest::Elicitation(ElicitRequest::new(elicitation(&question)));
                    let waiting = Waiting { tool: tool.to_string(), events, question, cancel };
                    server.shared.parked.park(&state, waiting);
                    let requests = InputRequests::from([(CONFIRM_KEY.to_string(), request)]);
                    return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
                }
                None => question.answer(rejected("lcp could not make a secret to park the call under")),
            },
            How::Cannot if settings.yes => question.answer(Confirmation::allow("allowed by `lcp serve --yes`")),
            How::Cannot => question.answer(rejected(
                "the MCP client cannot ask the user (it does not support elicitation); \
                 `lcp serve --yes` allows such actions",
            )),
        }
    }
}

fn cancelled(events: mpsc::UnboundedReceiver<Event>, cancel: &Cancel) -> CallToolResponse {
    cancel.cancel();
    drain(events);
    failure("the call was cancelled").into()
}

/// After the caller stopped waiting: refuse whatever the call still asks and let it
/// finish in the background.
fn drain(mut events: mpsc::UnboundedReceiver<Event>) {
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                Event::Confirm(question) => question.answer(rejected("the call was cancelled")),
                Event::Done(_) => return,
            }
        }
    });
}

enum How {
    /// A server→client `elicitation/create` request (handshake sessions).
    Request,
    /// An `InputRequiredResult` round (protocol 2026-07-28 and later).
    InputRequired,
    Cannot,
}

fn how_to_ask(context: &RequestContext<RoleServer>) -> How {
    let can_elicit = context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
    let handshake_less =
        context.protocol_version().is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    match (can_elicit, handshake_less) {
        (false, _) => How::Cannot,
        (true, true) => How::InputRequired,
        (true, false) => How::Request,
    }
}

fn elicitation(question: &Question) -> ElicitRequestParams {
    // A confirmation asks for nothing but the decision: an empty form.
    let schema = serde_json::from_value(json!({ "type": "object", "properties": {} }))
        .expect("an empty object schema is a valid elicitation schema");
    ElicitRequestParams::FormElicitationParams { meta: None, message: question.message(), requested_schema: schema }
}

async fn elicit(peer: &Peer<RoleServer>, params: ElicitRequestParams) -> Confirmation {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    match peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(result)) => match result.action {
            ElicitationAction::Accept => Confirmation::allow("the user accepted"),
            ElicitationAction::Decline => rejected("the user declined"),
            _ => rejected("the user cancelled"),
        },
        Ok(_) => rejected("the client answered the confirmation with something else"),
        Err(err) => rejected(&format!("the client could not ask the user: {err}")),
    }
}

/// The answer in an `inputResponses` entry (`{"action": "accept" | ...}`).
fn decision(action: Option<&Value>) -> Confirmation {
    match action.and_then(Value::as_str) {
        Some("accept") => Confirmation::allow("the user accepted"),
        Some("decline") => rejected("the user declined"),
        Some("cancel") => rejected("the user cancelled"),
        _ => rejected("the client did not answer the confirmation"),
    }
}

fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// What a tool's output schema asks of its results' `structuredContent` (SPEC §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// No output schema: an object as it is, anything else under `result`.
    Free,
    /// An object type: the object as it is.
    Object,
    /// Any other type: every value under `result`, objects included.
    Wrapped,
}

/// The tool's result as MCP: the output as JSON text and as `structuredContent` (an
/// object; anything else, or anything at all when `shape` is [`Shape::Wrapped`], is
/// wrapped as `{"result": ...}`). A failure is `isError: true` with the error and its
/// traceback as text (a tool-reported failure keeps its output). What the tool printed
/// follows as more text. Each text longer than `max_output` bytes is cut with a marker;
/// cut output carries no `structuredContent`, so for a tool with an output schema it is
/// an error result (a success must carry the structured content its schema describes).
fn tool_result(result: ToolResult, max_output: usize, shape: Shape) -> CallToolResult {
    let ToolResult { ok, output, error, traceback, stdout, stderr } = result;
    let (text, structured) = match (output, error) {
        (Value::Null, Some(error)) if !ok => {
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
        (output, _) => {
            let text = serde_json::to_string(&output).unwrap_or_else(|err| format!("the output is not JSON: {err}"));
            let structured = match output {
                Value::Object(object) if !(shape == Shape::Wrapped && ok) => Value::Object(object),
                other => json!({ "result": other }),
            };
            (text, structured)
        }
    };
    let (text, structured) = match cut(&text, max_output) {
        Some(cut) => (cut, None),
        None => (text, Some(structured)),
    };
    let mut content = vec![ContentBlock::text(text)];
    let ok = if ok && structured.is_none() && shape != Shape::Free {
        content.push(ContentBlock::text(
            "[the result was cut, so it cannot be given as the structured content the tool's output schema describes]",
        ));
        false
    } else {
        ok
    };
    for (stream, printed) in [("stdout", stdout), ("stderr", stderr)] {
        if !printed.is_empty() {
            let printed = cut(&printed, max_output).unwrap_or(printed);
            content.push(ContentBlock::text(format!("[the tool printed to {stream}]\n{printed}")));
        }
    }
    let mut result = if ok { CallToolResult::success(content) } else { CallToolResult::error(content) };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(result: ToolResult, max: usize, expected: Value) {
        assert_eq!(serde_json::to_value(tool_result(result, max, Shape::Free)).unwrap(), expected);
    }

    fn ok(output: Value) -> ToolResult {
        ToolResult { ok: true, output, error: None, traceback: None, stdout: String::new(), stderr: String::new() }
    }

    #[test]
    fn results() {
        check(
            ok(json!({"a": 1})),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}, "isError": false}),
        );
        check(
            ok(json!([1, 2])),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "[1,2]"}], "structuredContent": {"result": [1, 2]}, "isError": false}),
        );
        check(
            ToolResult { ok: false, error: Some("no".into()), ..ok(json!({"success": false, "error": "no"})) },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"success\":false,\"error\":\"no\"}"}], "structuredContent": {"success": false, "error": "no"}, "isError": true}),
        );
        check(
            ToolResult { traceback: Some("Traceback ...".into()), ..ToolResult::failure("ValueError: x") },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ValueError: x\n\nTraceback ..."}], "structuredContent": {"error": "ValueError: x", "traceback": "Traceback ..."}, "isError": true}),
        );
        check(
            ToolResult { stdout: "hello\n".into(), ..ok(json!(1)) },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "1"}, {"type": "text", "text": "[the tool printed to stdout]\nhello\n"}], "structuredContent": {"result": 1}, "isError": false}),
        );
    }

    #[test]
    fn an_output_schema_that_is_not_an_object_type_puts_every_value_under_result() {
        let wrapped = serde_json::to_value(tool_result(ok(json!({"a": 1})), 100, Shape::Wrapped)).unwrap();
        assert_eq!(wrapped["structuredContent"], json!({"result": {"a": 1}}));
        let object = serde_json::to_value(tool_result(ok(json!({"a": 1})), 100, Shape::Object)).unwrap();
        assert_eq!(object["structuredContent"], json!({"a": 1}));
        let failed = ToolResult { ok: false, error: Some("no".into()), ..ok(json!({"success": false, "error": "no"})) };
        let failed = serde_json::to_value(tool_result(failed, 100, Shape::Wrapped)).unwrap();
        assert_eq!(failed["structuredContent"], json!({"success": false, "error": "no"}));
    }

    #[test]
    fn a_cut_result_of_a_tool_with_an_output_schema_is_an_error() {
        let free = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Free)).unwrap();
        assert_eq!(free["isError"], false);
        let typed = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Wrapped)).unwrap();
        assert_eq!(typed["isError"], true);
        assert!(typed.get("structuredContent").is_none());
        assert!(typed["content"][1]["text"].as_str().unwrap().contains("output schema"), "{typed}");
    }

    #[test]
    fn long_output_is_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(cut("abc", 3), None);
        assert_eq!(
            cut("aé", 2).unwrap(),
            "a\n[output cut: 1 of 3 bytes shown; `lcp serve --max-output` sets the limit]"
        );
        let result = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Free)).unwrap();
        assert!(result.get("structuredContent").is_none());
        assert!(result["content"][0]["text"].as_str().unwrap().starts_with("\"xxxxxxxxx\n[output cut: 10 of 52 bytes"));
    }

    #[test]
    fn elicitation_answers() {
        assert_eq!(decision(Some(&json!("accept"))), Confirmation::allow("the user accepted"));
        assert_eq!(decision(Some(&json!("decline"))), Confirmation::reject("the user declined"));
        assert_eq!(decision(Some(&json!("cancel"))), Confirmation::reject("the user cancelled"));
        assert_eq!(decision(None), Confirmation::reject("the client did not answer the confirmation"));
    }
}
