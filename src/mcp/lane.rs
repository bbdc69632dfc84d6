//! The lane: a handshake session's `tools/call` of a tool forwarded the short way
//! (SPEC §14), answered by lcp itself instead of by rmcp's session machinery, whose
//! channels and tasks cost a gateway more than the forwarding does. The request is
//! read once; the call runs as every call does (`call.rs`: admission, host callbacks,
//! cancellation); what it tells and asks the client goes on the response's own event
//! stream, and the client's answers and cancellations are taken from the session's
//! POSTs before rmcp sees them. A result with nothing before it is one
//! `application/json` reply.
//!
//! Must never: take a request it cannot answer completely (any other request, a task,
//! a `requestState`, a session rmcp does not hold or lcp has not met, a header it does
//! not expect: rmcp takes those as they came), or leave a call running once its
//! client cancelled it or went away.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Frame};
use hyper::http::request::Parts;
use hyper::{HeaderMap, Response, StatusCode, header};
use rmcp::model::{
    ClientCapabilities, ProgressToken, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerNotification,
    ServerRequest, ServerResult,
};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionHandle, LocalSessionManager};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::call;
use super::http::Body;
use super::requester::{self, Channel, Requester};
use super::{Server, Session};
use crate::fast_paths::FastPath;
use crate::sync;

/// The prefix of the ids of the requests the lane sends to clients.
const QUESTION: &str = "lcp-lane-";

/// What the lane knows of the sessions and of the calls it answers.
pub(super) struct Lane {
    /// How long rmcp keeps a session that nothing passes through (`[mcp] session_idle`).
    idle: Duration,
    /// The sessions lcp has met (their `notifications/initialized`), by `Mcp-Session-Id`.
    sessions: Mutex<HashMap<String, Met>>,
    /// The calls in progress, by session and the JSON text of their request's id.
    calls: Mutex<HashMap<(String, String), CancellationToken>>,
    /// The requests sent to clients and not answered yet, by id.
    questions: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

struct Met {
    session: Weak<Session>,
    capabilities: ClientCapabilities,
    /// When rmcp's session was last told it is in use.
    touched: Instant,
}

/// A request sent to a client: the session that must answer it, and where the answer goes.
struct Waiting {
    session: String,
    answer: oneshot::Sender<Result<Value, String>>,
}

impl Lane {
    pub(super) fn new(idle: Duration) -> Lane {
        Lane {
            idle,
            sessions: Mutex::default(),
            calls: Mutex::default(),
            questions: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }

    /// How long a session stays open unused.
    pub(super) fn idle(&self) -> Duration {
        self.idle
    }

    /// Remembers the session `id` (once), and what its client declared it can do.
    pub(super) fn meet(&self, id: &str, session: &Arc<Session>, capabilities: &ClientCapabilities) {
        let mut sessions = sync::lock(&self.sessions);
        if sessions.contains_key(id) {
            return;
        }
        sessions.retain(|_, met| met.session.strong_count() > 0);
        let met = Met { session: Arc::downgrade(session), capabilities: capabilities.clone(), touched: Instant::now() };
        sessions.insert(id.to_string(), met);
    }

    /// The session `id` while lcp serves it, and what its client can do.
    fn session(&self, id: &str) -> Option<(Arc<Session>, ClientCapabilities)> {
        let sessions = sync::lock(&self.sessions);
        let met = sessions.get(id)?;
        Some((met.session.upgrade()?, met.capabilities.clone()))
    }

    /// Tells rmcp's session that it is in use (it counts only what passes through
    /// it), a few times in each of its idle times: a request-wise channel that does not
    /// exist is closed, which changes nothing but counts as activity.
    fn touch(&self, id: &str, handle: &LocalSessionHandle) {
        {
            let every = self.idle / 12;
            let mut sessions = sync::lock(&self.sessions);
            let Some(met) = sessions.get_mut(id).filter(|met| met.touched.elapsed() >= every) else { return };
            met.touched = Instant::now();
        }
        let handle = handle.clone();
        tokio::spawn(async move {
            let _ = handle.close_request_wise_channel(u64::MAX).await;
        });
    }
}

/// What the lane answers of a POST: `None` for whatever rmcp must take.
pub(super) async fn answer(
    server: &Server,
    sessions: &LocalSessionManager,
    parts: &Parts,
    body: &Bytes,
    loopback: bool,
) -> Option<Response<Body>> {
    let session = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    if !FastPath::Lane.on() || parts.method != hyper::Method::POST || !expected(&parts.headers, loopback) {
        return None;
    }
    let lane = &server.shared.lane;
    let message: Value = serde_json::from_slice(body).ok()?;
    if message["jsonrpc"] != "2.0" {
        return None;
    }
    if let Some(method) = message["method"].as_str() {
        return match method {
            "tools/call" => call(server, sessions, parts, session, &message).await,
            "notifications/cancelled" => {
                let request = message["params"]["requestId"].to_string();
                let ct = sync::lock(&lane.calls).get(&(session.to_string(), request)).cloned()?;
                ct.cancel();
                Some(accepted())
            }
            _ => None,
        };
    }
    // A client's answer to a request of the lane's.
    let id = message["id"].as_str().filter(|id| id.starts_with(QUESTION))?;
    let outcome = match (message.get("result"), message.get("error")) {
        (Some(result), None) => Ok(result.clone()),
        (None, Some(error)) => Err(format!("the client answered with an error: {}", error["message"])),
        _ => return None,
    };
    let mut questions = sync::lock(&lane.questions);
    if questions.get(id).is_none_or(|waiting| waiting.session != session) {
        return None;
    }
    if let Some(waiting) = questions.remove(id) {
        let _ = waiting.answer.send(outcome);
    }
    Some(accepted())
}

/// Whether a request's headers are those the lane expects of a plain client: it takes
/// both kinds of answer, sends JSON, names a protocol version with sessions (or none),
/// no header of the handshake-less protocol and, on a loopback address, a loopback
/// `Host` and no `Origin` (rmcp checks those of browsers).
fn expected(headers: &HeaderMap, loopback: bool) -> bool {
    let text = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let accepts = text(header::ACCEPT.as_str())
        .is_some_and(|accept| accept.contains("application/json") && accept.contains("text/event-stream"));
    let json = text(header::CONTENT_TYPE.as_str())
        .is_some_and(|kind| kind.split(';').next().is_some_and(|essence| essence.trim() == "application/json"));
    let version = match headers.get("mcp-protocol-version") {
        None => true,
        Some(value) => ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .any(|known| known.has_initialize() && known.as_str().as_bytes() == value.as_bytes()),
    };
    let handshake_less = headers.contains_key("mcp-method") || headers.contains_key("mcp-name");
    let browser = loopback && (headers.contains_key(header::ORIGIN) || !text("host").is_some_and(loopback_host));
    accepts && json && version && !handshake_less && !browser
}

/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

/// A `tools/call` the lane takes: its call started, its response on its way.
async fn call(
    server: &Server,
    sessions: &LocalSessionManager,
    parts: &Parts,
    session: &str,
    message: &Value,
) -> Option<Response<Body>> {
    let id: RequestId = serde_json::from_value(message.get("id")?.clone()).ok()?;
    let (name, arguments, progress) = plain_call(&message["params"])?;
    let lane = Arc::clone(&server.shared.lane);
    let (held, capabilities) = lane.session(session)?;
    let handle = sessions.sessions.read().await.get(session).cloned()?;
    let server = server.of_session(held);
    server.bind_caller_of(Some(parts)).ok()?;
    let (out, sent) = mpsc::unbounded_channel();
    let last = out.clone();
    let ct = CancellationToken::new();
    let requester = Requester {
        to: Channel::Lane(Stream { out, lane: Arc::clone(&lane), session: session.to_string() }),
        ct: ct.clone(),
        handshake_less: false,
        able: requester::able(&server, Some(&capabilities)),
        progress,
        level: server.session_log_level(),
    };
    let caller = super::caller_of(Some(parts));
    let started = call::start_forwarded(&server, &name, arguments, &requester, &caller)?;
    let key = (session.to_string(), message["id"].to_string());
    sync::lock(&lane.calls).insert(key.clone(), ct.clone());
    let running = Running { lane: Arc::clone(&lane), key, ct };
    lane.touch(session, &handle);
    let session = session.to_string();
    tokio::spawn(async move {
        let response = call::follow(&server, &name, started, &requester).await;
        lane.touch(&session, &handle);
        // A request the client cancelled is not answered.
        if requester.ct.is_cancelled() {
            return;
        }
        let message = match response {
            Ok(response) => {
                let mut result = ServerResult::from(response);
                // A session's protocol predates `resultType` and non-object output.
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                ServerJsonRpcMessage::response(result, id)
            }
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        let _ = last.send(Sent::Last(encoded(&message)));
    });
    Some(respond(sent, running).await)
}

/// The name, arguments and progress token of a `tools/call`'s parameters that hold
/// nothing else (a task, a `requestState`, other `_meta` go to rmcp).
fn plain_call(params: &Value) -> Option<(String, Map<String, Value>, Option<ProgressToken>)> {
    let params = params.as_object()?;
    if params.keys().any(|key| !matches!(key.as_str(), "name" | "arguments" | "_meta")) {
        return None;
    }
    let name = params.get("name")?.as_str()?.to_string();
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(arguments) => arguments.as_object()?.clone(),
    };
    let progress = match params.get("_meta") {
        None => None,
        Some(meta) => {
            let meta = meta.as_object()?;
            if meta.keys().any(|key| key != "progressToken") {
                return None;
            }
            match meta.get("progressToken") {
                None => None,
                Some(token) => Some(serde_json::from_value(token.clone()).ok()?),
            }
        }
    };
    Some((name, arguments, progress))
}

/// What a lane call sends its client, in order.
enum Sent {
    /// A notification or a request, while the call runs.
    Told(Bytes),
    /// The response, which ends the call's stream.
    Last(Bytes),
}

/// Where a lane call's notifications and requests go: its response's event stream.
pub(super) struct Stream {
    out: mpsc::UnboundedSender<Sent>,
    lane: Arc<Lane>,
    session: String,
}

impl Stream {
    fn send(&self, message: &ServerJsonRpcMessage) -> bool {
        self.out.send(Sent::Told(encoded(message))).is_ok()
    }

    pub(super) fn notify(&self, notification: ServerNotification) {
        self.send(&ServerJsonRpcMessage::notification(notification));
    }

    /// Sends `request` on the call's stream and waits for the client's answer, which
    /// comes in a POST of its own ([`answer`]).
    pub(super) async fn ask(&self, request: ServerRequest) -> Result<Value, String> {
        let id = format!("{QUESTION}{}", self.lane.next.fetch_add(1, Ordering::Relaxed));
        let (answer, answered) = oneshot::channel();
        let waiting = Waiting { session: self.session.clone(), answer };
        sync::lock(&self.lane.questions).insert(id.clone(), waiting);
        let _asked = Asked { lane: Arc::clone(&self.lane), id: id.clone() };
        let message = ServerJsonRpcMessage::request(request, RequestId::String(id.into()));
        if !self.send(&message) {
            return Err("the client went away".to_string());
        }
        answered.await.unwrap_or_else(|_| Err("the client went away".to_string()))
    }
}

/// A request of the lane's waiting for its answer; forgotten however the wait ends.
struct Asked {
    lane: Arc<Lane>,
    id: String,
}

impl Drop for Asked {
    fn drop(&mut self) {
        sync::lock(&self.lane.questions).remove(&self.id);
    }
}

/// A lane call whose client may still be waiting: when its response is dropped before
/// its end (the client went away), the call is cancelled; either way it is forgotten.
struct Running {
    lane: Arc<Lane>,
    key: (String, String),
    ct: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ct.cancel();
        sync::lock(&self.lane.calls).remove(&self.key);
    }
}

fn encoded(message: &ServerJsonRpcMessage) -> Bytes {
    Bytes::from(serde_json::to_vec(message).expect("an MCP message serializes"))
}

/// The response of a lane call: its result alone as `application/json`, or, once it
/// tells or asks something first, an event stream of everything it sends.
async fn respond(mut sent: mpsc::UnboundedReceiver<Sent>, running: Running) -> Response<Body> {
    let first = sent.recv().await;
    let body = match first {
        Some(Sent::Last(result)) => {
            let mut response = Response::new(Full::new(result).boxed());
            response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            return response;
        }
        // Cancelled by its client before it said anything: an empty stream.
        None => Events { first: None, sent, _running: running }.boxed(),
        Some(Sent::Told(told)) => Events { first: Some(told), sent, _running: running }.boxed(),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    response
}

/// A lane call's event stream: each message as an SSE event, as it is sent.
struct Events {
    first: Option<Bytes>,
    sent: mpsc::UnboundedReceiver<Sent>,
    _running: Running,
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(event(&first)))));
        }
        match self.sent.poll_recv(cx) {
            Poll::Ready(Some(Sent::Told(message) | Sent::Last(message))) => {
                Poll::Ready(Some(Ok(Frame::data(event(&message)))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// One message as an SSE event.
fn event(message: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(message.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

fn accepted() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_with_anything_but_a_name_arguments_and_a_progress_token_is_rmcps() {
        let plain = plain_call(&serde_json::json!({"name": "t", "arguments": {"a": 1}, "_meta": {"progressToken": 7}}));
        let (name, arguments, progress) = plain.expect("a plain call");
        assert_eq!((name.as_str(), arguments["a"].as_i64()), ("t", Some(1)));
        assert_eq!(progress, Some(ProgressToken(RequestId::Number(7))));
        assert!(plain_call(&serde_json::json!({"name": "t"})).is_some_and(|(_, arguments, _)| arguments.is_empty()));
        for other in [
            serde_json::json!({"name": "t", "task": {}}),
            serde_json::json!({"name": "t", "requestState": "s"}),
            serde_json::json!({"name": "t", "_meta": {"io.modelcontextprotocol/logLevel": "debug"}}),
            serde_json::json!({"name": "t", "arguments": [1]}),
            serde_json::json!({"arguments": {}}),
        ] {
            assert!(plain_call(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn only_a_plain_clients_headers_are_the_lanes() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, header::HeaderValue::from_static(value));
            }
            headers
        };
        let plain = [
            ("host", "127.0.0.1:8080"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        assert!(expected(&headers(&plain), true));
        let with = |extra: (&'static str, &'static str)| {
            let mut pairs = plain.to_vec();
            pairs.retain(|(name, _)| *name != extra.0);
            pairs.push(extra);
            headers(&pairs)
        };
        assert!(expected(&with(("host", "[::1]:9")), true));
        assert!(expected(&with(("content-type", "application/json; charset=utf-8")), true));
        for refused in [
            ("host", "evil.example:8080"),
            ("origin", "http://localhost:3000"),
            ("accept", "application/json"),
            ("content-type", "text/plain"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-protocol-version", "1999-01-01"),
            ("mcp-method", "tools/call"),
        ] {
            assert!(!expected(&with(refused), true), "{refused:?}");
        }
        // Off loopback, rmcp checks no Host and lcp checked the Origin already.
        assert!(expected(&with(("host", "tools.example")), false));
    }

    #[test]
    fn an_event_is_the_message_on_one_data_line() {
        assert_eq!(&event(br#"{"a":1}"#)[..], b"data: {\"a\":1}\n\n");
    }
}
