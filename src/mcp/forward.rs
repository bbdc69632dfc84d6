//! A call of a tool of an MCP server on plain `http://` Streamable HTTP, made the
//! short way (SPEC §14): one HTTP/1.1 exchange on hyper's client, its connection
//! driven by the call that awaits it, on that call's runtime (`lcp serve`'s own, so a
//! forwarded call wakes no other thread), kept between calls, in a session of its own
//! (its `initialize` on the first call, again when the server has forgotten it).
//!
//! What the server sends on the response's event stream during the call (progress,
//! log messages, elicitation and sampling requests) goes to that call's callbacks as
//! it arrives; the answers to its requests, and `notifications/cancelled` when the
//! call is stopped (cancelled, out of time), go back on another connection. Listing,
//! `list_changed` and `https://` servers stay with rmcp's client (`upstream.rs`).
//!
//! Must never: hold a call past its cancellation or its time limit by more than one
//! [`WATCH`], or put back for reuse a connection whose response was not read to its end.

use std::error::Error as _;
use std::future::poll_fn;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::net::TcpStream;

use super::upstream::Active;
use crate::runtime::{Cancel, Outcome};
use crate::sync;

/// How often a call waiting for its server looks at its cancellation and time limit.
const WATCH: Duration = Duration::from_millis(20);
/// Longest response head, or trailer of a chunked body, read.
const MAX_HEAD: usize = 64 * 1024;
/// Longest response body read.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long an answer or a notification may take to be taken.
const SHORT: Duration = Duration::from_secs(10);
/// Connections kept open between calls.
const KEPT: usize = 8;
/// JSON-RPC's code for a request lcp cannot answer now (invalid request), as rmcp's
/// client answers it.
const UNAVAILABLE: i64 = -32600;
/// After its result, how long the rest of a response's event stream may take to end
/// (past it the connection is closed instead of kept).
const STREAM_END: Duration = Duration::from_secs(1);

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// One server's endpoint, its session and its kept connections.
pub(super) struct Endpoint {
    /// `host:port`, connected to.
    address: String,
    /// The `Host` header.
    authority: HeaderValue,
    /// The request target: path and query.
    target: Uri,
    /// The config's headers.
    headers: HeaderMap,
    /// How long connecting and starting a session may take (`startup_timeout`).
    start_limit: Duration,
    /// The `initialize` parameters: what lcp says of itself.
    hello: Value,
    /// Held while a session starts: the calls that wait for it use it too.
    session: tokio::sync::Mutex<Option<Session>>,
    idle: Mutex<Vec<Connection>>,
}

#[derive(Clone)]
struct Session {
    /// `Mcp-Session-Id`, when the server gave one.
    id: Option<HeaderValue>,
    /// The protocol version the server chose.
    version: HeaderValue,
}

/// One forwarded call.
pub(super) struct Call {
    /// The tool's name on the server.
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// Whose callbacks hear what the server asks and tells; its token (unique in this
    /// process) makes the request's id and progress token.
    pub active: Active,
    pub cancel: Option<Cancel>,
    pub deadline: Option<Instant>,
}

/// Why a call has no result.
pub(super) enum Failure {
    /// No session could be started: the server is not reachable or not MCP.
    NotStarted(String),
    /// The connection broke or ended during the call.
    Ended(String),
    /// lcp stopped it: [`Outcome::Cancelled`] or [`Outcome::TimedOut`].
    Stopped(Outcome),
    /// The server answered with an error, or with something that is not MCP.
    Answered(String),
}

/// What went wrong in one exchange.
enum Fault {
    /// The connection failed or closed early.
    Broken(String),
    /// The server does not know the session (404): start another.
    SessionGone,
    /// Any other status than 200 and 202, with the body's text.
    Status(u16, String),
    Stopped(Outcome),
    /// The response is not HTTP, or not MCP.
    Protocol(String),
}

impl Fault {
    fn describe(&self) -> String {
        match self {
            Fault::Broken(why) | Fault::Protocol(why) => why.clone(),
            Fault::SessionGone => "it does not know the session".to_string(),
            Fault::Status(status, text) if text.is_empty() => format!("it answered HTTP {status}"),
            Fault::Status(status, text) => format!("it answered HTTP {status}: {text}"),
            Fault::Stopped(outcome) => format!("{outcome:?}"),
        }
    }

    /// What hyper's error means here: a head it cannot read is not HTTP; anything
    /// else broke the connection.
    fn of(err: hyper::Error) -> Fault {
        if err.is_parse_too_large() {
            return Fault::Protocol("its response head is too long".to_string());
        }
        let why = match err.source() {
            Some(cause) => format!("{err}: {cause}"),
            None => err.to_string(),
        };
        if err.is_parse() || err.is_parse_status() {
            Fault::Protocol(format!("its response is not HTTP: {why}"))
        } else {
            Fault::Broken(why)
        }
    }
}

/// What an exchange looks at while it waits: the call's stop and its time limit.
#[derive(Clone, Copy)]
struct Watch<'a> {
    cancel: Option<&'a Cancel>,
    deadline: Option<Instant>,
}

impl Watch<'_> {
    fn within(limit: Duration) -> Watch<'static> {
        Watch { cancel: None, deadline: Some(Instant::now() + limit) }
    }

    fn check(&self) -> Result<(), Fault> {
        if self.cancel.is_some_and(Cancel::is_cancelled) {
            return Err(Fault::Stopped(Outcome::Cancelled));
        }
        if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(Fault::Stopped(Outcome::TimedOut));
        }
        Ok(())
    }
}

impl Endpoint {
    /// The endpoint of `url`, or `None` for a URL this path does not take (any but
    /// `http://`), or headers it cannot send: rmcp's client calls those.
    pub(super) fn new(
        url: &str,
        headers: &[(String, String)],
        start_limit: Duration,
        hello: Value,
    ) -> Option<Endpoint> {
        let url = url::Url::parse(url).ok()?;
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::try_from(name.as_str()).ok()?;
            let value = HeaderValue::try_from(value.as_str()).ok()?;
            let reserved = ["host", "content-length", "content-type", "accept", "connection", "transfer-encoding"];
            if reserved.contains(&name.as_str()) || name.as_str().starts_with("mcp-") {
                continue;
            }
            map.append(name, value);
        }
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        Some(Endpoint {
            address: format!("{host}:{port}"),
            authority: HeaderValue::try_from(url.authority()).ok()?,
            target: Uri::try_from(target).ok()?,
            headers: map,
            start_limit,
            hello,
            session: tokio::sync::Mutex::new(None),
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Calls the tool and returns the result the server sent (a `CallToolResult`).
    pub(super) async fn call(self: &Arc<Self>, call: &Call) -> Result<Value, Failure> {
        let id = json!(format!("lcp-{}", call.active.token()));
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"_meta": {"progressToken": id}, "name": call.tool, "arguments": call.arguments},
        });
        let body = Bytes::from(serde_json::to_vec(&request).unwrap_or_default());
        let watch = Watch { cancel: call.cancel.as_ref(), deadline: call.deadline };
        for attempt in 0..2 {
            let session = self.session().await?;
            let answered = self.exchange(Some(&session), &body, Some(&id), Some(call), watch).await;
            let message = match answered {
                Ok((_, Some(message))) => message,
                Ok((_, None)) => return Err(Failure::Answered("it sent no result".to_string())),
                // It forgot the session (it restarted, or the session expired) before
                // taking the call: the call goes again in a new one.
                Err(Fault::SessionGone) if attempt == 0 => {
                    self.forget(&session).await;
                    continue;
                }
                Err(Fault::Stopped(outcome)) => {
                    self.cancelled(session, id);
                    return Err(Failure::Stopped(outcome));
                }
                Err(fault @ Fault::Broken(_)) => {
                    self.forget(&session).await;
                    return Err(Failure::Ended(fault.describe()));
                }
                Err(fault) => return Err(Failure::Answered(fault.describe())),
            };
            return match message {
                Value::Object(mut message) if message.contains_key("result") => {
                    Ok(message.remove("result").unwrap_or_default())
                }
                message => Err(Failure::Answered(error_text(&message["error"]))),
            };
        }
        Err(Failure::Answered("it forgot the session again".to_string()))
    }

    /// Ends the session (`DELETE`), when there is one; a server that does not answer
    /// quickly is not waited for.
    pub(super) async fn close(&self) {
        let session = self.session.lock().await.take();
        if let Some(session) = session.filter(|session| session.id.is_some()) {
            let limit = Duration::from_millis(200);
            if let Ok(mut connection) = Connection::open(&self.address, limit).await {
                let request = self.request(Method::DELETE, Some(&session), Bytes::new());
                let _ = connection.send(request, Watch::within(limit)).await;
            }
        }
        sync::lock(&self.idle).clear();
    }

    /// The session, started (`initialize`, `notifications/initialized`) when there is none.
    async fn session(self: &Arc<Self>) -> Result<Session, Failure> {
        let mut session = self.session.lock().await;
        if let Some(started) = &*session {
            return Ok(started.clone());
        }
        let watch = Watch::within(self.start_limit);
        let not_started = |fault: Fault| match fault {
            Fault::Stopped(_) => Failure::NotStarted(format!("it did not start within {:?}", self.start_limit)),
            fault => Failure::NotStarted(fault.describe()),
        };
        let id = json!("lcp-initialize");
        let hello = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": self.hello});
        let body = Bytes::from(serde_json::to_vec(&hello).unwrap_or_default());
        let (session_id, answer) = self.exchange(None, &body, Some(&id), None, watch).await.map_err(not_started)?;
        let answer = answer.ok_or_else(|| Failure::NotStarted("it did not answer `initialize`".to_string()))?;
        let Some(version) = answer["result"]["protocolVersion"].as_str() else {
            return Err(Failure::NotStarted(format!("it refused `initialize`: {}", error_text(&answer["error"]))));
        };
        let version = HeaderValue::try_from(version)
            .map_err(|_| Failure::NotStarted(format!("it chose the protocol version `{version}`")))?;
        let started = Session { id: session_id, version };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let initialized = Bytes::from(serde_json::to_vec(&initialized).unwrap_or_default());
        self.exchange(Some(&started), &initialized, None, None, watch).await.map_err(not_started)?;
        *session = Some(started.clone());
        Ok(started)
    }

    /// Drops `session` (when it is still the current one): the next call starts another.
    async fn forget(&self, session: &Session) {
        let mut current = self.session.lock().await;
        if current.as_ref().is_some_and(|current| current.id == session.id) {
            *current = None;
        }
        sync::lock(&self.idle).clear();
    }

    /// Tells the server that the request `id` is cancelled (without waiting for it).
    fn cancelled(self: &Arc<Self>, session: Session, id: Value) {
        let notice = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the call was stopped"},
        });
        self.post_later(session, notice);
    }

    /// POSTs `message` on a task of its own, its response not waited for.
    fn post_later(self: &Arc<Self>, session: Session, message: Value) {
        let endpoint = Arc::clone(self);
        tokio::spawn(async move {
            let body = Bytes::from(serde_json::to_vec(&message).unwrap_or_default());
            let _ = endpoint.exchange(Some(&session), &body, None, None, Watch::within(SHORT)).await;
        });
    }

    /// A request to the endpoint, with the config's headers and the session's.
    fn request(&self, method: Method, session: Option<&Session>, body: Bytes) -> Request<Full<Bytes>> {
        let post = method == Method::POST;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.target.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(HOST, self.authority.clone());
        if post {
            headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(session) = session {
            if let Some(id) = &session.id {
                headers.insert(SESSION_ID, id.clone());
            }
            headers.insert(PROTOCOL_VERSION, session.version.clone());
        }
        request
    }

    /// POSTs `body` and reads the response: the session id the server gave, and the
    /// message answering `id` (on a JSON or event-stream response). What the server
    /// sends before it goes to `call`'s callbacks.
    async fn exchange(
        self: &Arc<Self>,
        session: Option<&Session>,
        body: &Bytes,
        id: Option<&Value>,
        call: Option<&Call>,
        watch: Watch<'_>,
    ) -> Result<(Option<HeaderValue>, Option<Value>), Fault> {
        // A kept connection the server has closed meanwhile fails before the response's
        // head: the request goes again on a new one.
        let (mut connection, response) = loop {
            let (mut connection, reused) = self.connection(watch).await?;
            let request = self.request(Method::POST, session, body.clone());
            match connection.send(request, watch).await {
                Ok(response) => break (connection, response),
                Err(Fault::Broken(_)) if reused => continue,
                Err(fault) => return Err(fault),
            }
        };
        let status = response.status().as_u16();
        let session_id = response.headers().get(SESSION_ID).cloned();
        let event_stream = response.headers().get(CONTENT_TYPE).is_some_and(|value| {
            value.as_bytes().get(..17).is_some_and(|start| start.eq_ignore_ascii_case(b"text/event-stream"))
        });
        let mut body = Body::new(response);
        let answer = match status {
            200 if event_stream => self.events(&mut connection, &mut body, (session, id), call, watch).await?,
            200 => {
                let text = body.read_all(&mut connection, watch).await?;
                // A notification or an answer of lcp's may be taken with an empty 200.
                if id.is_none() && text.trim_ascii().is_empty() {
                    None
                } else {
                    let message: Value = serde_json::from_slice(&text)
                        .map_err(|err| Fault::Protocol(format!("its response is not JSON: {err}")))?;
                    match message {
                        Value::Array(messages) => messages.into_iter().find(|message| answers(message, id)),
                        message => answers(&message, id).then_some(message),
                    }
                }
            }
            202 => {
                body.read_all(&mut connection, watch).await?;
                None
            }
            404 if session.is_some_and(|session| session.id.is_some()) => {
                let _ = body.read_all(&mut connection, watch).await;
                return Err(Fault::SessionGone);
            }
            status => {
                let text = body.read_all(&mut connection, watch).await.unwrap_or_default();
                let text = String::from_utf8_lossy(&text[..text.len().min(512)]).trim().to_string();
                return Err(Fault::Status(status, text));
            }
        };
        if body.ended {
            self.keep(connection);
        }
        Ok((session_id, answer))
    }

    /// Reads an event stream until the message answering `id` (then on to its end, if
    /// it ends soon), handing everything else to `heard`.
    async fn events(
        self: &Arc<Self>,
        connection: &mut Connection,
        body: &mut Body,
        (session, id): (Option<&Session>, Option<&Value>),
        call: Option<&Call>,
        watch: Watch<'_>,
    ) -> Result<Option<Value>, Fault> {
        let mut events = Events::default();
        let mut answer = None;
        let mut messages = Vec::new();
        let mut watching = watch;
        loop {
            let piece = match body.next(connection, watching).await {
                Ok(piece) => piece,
                // Its result is in: a stream that does not end soon is left.
                Err(_) if answer.is_some() => return Ok(answer),
                Err(fault) => return Err(fault),
            };
            match piece {
                Some(bytes) => events.feed(&bytes, &mut messages),
                None => events.finish(&mut messages),
            }
            for data in messages.drain(..) {
                let Ok(message) = serde_json::from_str::<Value>(&data) else { continue };
                if answers(&message, id) {
                    answer = Some(message);
                    watching = Watch::within(STREAM_END);
                } else {
                    self.heard(message, (session, id), call).await;
                }
            }
            if body.ended {
                return Ok(answer);
            }
        }
    }

    /// A message of the server's during the request `id`: a notification for the
    /// call's callbacks (progress under the request's id, its progress token), or a
    /// request, answered on another connection in `session` (the host's answer may
    /// take long, and blocks: on a blocking thread).
    async fn heard(
        self: &Arc<Self>,
        message: Value,
        (session, id): (Option<&Session>, Option<&Value>),
        call: Option<&Call>,
    ) {
        let Some(method) = message["method"].as_str() else { return };
        let params = &message["params"];
        let Some(request_id) = message.get("id") else {
            let Some(call) = call else { return };
            match method {
                "notifications/progress" if id == Some(&params["progressToken"]) => {
                    call.active.progress(params);
                }
                "notifications/message" => call.active.log(params),
                _ => {}
            }
            return;
        };
        let asked = |ask: fn(&Active, &Value) -> Result<Value, String>| {
            let (active, params) = (call.map(|call| call.active.clone()), params.clone());
            async move {
                let Some(active) = active else {
                    return Err((UNAVAILABLE, "no call of lcp's is in progress to answer for".to_string()));
                };
                let answered = tokio::task::spawn_blocking(move || ask(&active, &params)).await;
                answered
                    .unwrap_or_else(|err| Err(format!("lcp's host failed: {err}")))
                    .map_err(|why| (UNAVAILABLE, why))
            }
        };
        let answered = match method {
            "ping" => Ok(json!({})),
            "elicitation/create" => asked(Active::elicit).await,
            "sampling/createMessage" => asked(Active::sample).await,
            method => Err((-32601, format!("lcp does not take `{method}`"))),
        };
        let answer = match answered {
            Ok(result) => json!({"jsonrpc": "2.0", "id": request_id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
            }
        };
        // Before its session has started (`initialize`), a server can be answered nowhere.
        if let Some(session) = session {
            self.post_later(session.clone(), answer);
        }
    }

    /// A kept connection that can take a request (`true`), or a new one.
    async fn connection(&self, watch: Watch<'_>) -> Result<(Connection, bool), Fault> {
        loop {
            let kept = sync::lock(&self.idle).pop();
            let Some(mut kept) = kept else { break };
            match kept.ready(watch).await {
                Ok(()) => return Ok((kept, true)),
                Err(Fault::Stopped(outcome)) => return Err(Fault::Stopped(outcome)),
                // The server closed it meanwhile.
                Err(_) => continue,
            }
        }
        Ok((Connection::open(&self.address, self.start_limit).await?, false))
    }

    fn keep(&self, connection: Connection) {
        let mut idle = sync::lock(&self.idle);
        if idle.len() < KEPT {
            idle.push(connection);
        }
    }
}

/// Whether `message` is the response to the request `id`.
fn answers(message: &Value, id: Option<&Value>) -> bool {
    id.is_some_and(|id| message.get("method").is_none() && message.get("id") == Some(id))
}

/// A JSON-RPC error's message and code.
fn error_text(error: &Value) -> String {
    match (error["message"].as_str(), error.get("code")) {
        (Some(message), Some(code)) => format!("{message} (error {code})"),
        (Some(message), None) => message.to_string(),
        _ => format!("it answered with neither a result nor an error: {error}"),
    }
}

/// hyper's side of a connection: what writes the requests and reads the responses.
type Driver = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// An HTTP/1.1 connection on hyper's client. Nothing drives it on a task of its own:
/// an exchange drives it while it waits ([`wait`]), and a kept connection is idle.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    /// `None` once the connection has ended.
    driver: Option<Driver>,
}

impl Connection {
    async fn open(address: &str, limit: Duration) -> Result<Connection, Fault> {
        let connecting = tokio::time::timeout(limit, TcpStream::connect(address)).await;
        let stream = connecting
            .map_err(|_| Fault::Broken(format!("connecting to `{address}` took longer than {limit:?}")))?
            .map_err(|err| Fault::Broken(err.to_string()))?;
        stream.set_nodelay(true).map_err(|err| Fault::Broken(err.to_string()))?;
        let handshake = http1::Builder::new().max_header_size(MAX_HEAD).handshake(TokioIo::new(stream));
        let (sender, driver) = handshake.await.map_err(Fault::of)?;
        Ok(Connection { sender, driver: Some(driver) })
    }

    /// Waits until a kept connection can take the next request: an error when it has
    /// ended meanwhile.
    async fn ready(&mut self, watch: Watch<'_>) -> Result<(), Fault> {
        let sender = &mut self.sender;
        wait(&mut self.driver, poll_fn(|cx| sender.poll_ready(cx)), watch).await?.map_err(Fault::of)
    }

    /// Sends `request` and waits for its response's head.
    async fn send(&mut self, request: Request<Full<Bytes>>, watch: Watch<'_>) -> Result<Response<Incoming>, Fault> {
        let sending = self.sender.send_request(request);
        wait(&mut self.driver, sending, watch).await?.map_err(Fault::of)
    }
}

/// Awaits `future` while driving `driver` (the connection it waits on); while nothing
/// comes, `watch` decides.
async fn wait<F: Future>(driver: &mut Option<Driver>, future: F, watch: Watch<'_>) -> Result<F::Output, Fault> {
    let mut future = pin!(future);
    loop {
        let step = poll_fn(|cx| {
            if let Some(connection) = driver.as_mut()
                && Pin::new(connection).poll(cx).is_ready()
            {
                // It has ended: what waits on it has been told why.
                *driver = None;
            }
            future.as_mut().poll(cx)
        });
        match tokio::time::timeout(WATCH, step).await {
            Ok(output) => return Ok(output),
            Err(_) => watch.check()?,
        }
    }
}

/// A response body, read frame by frame.
struct Body {
    incoming: Incoming,
    ended: bool,
    read: usize,
}

impl Body {
    fn new(response: Response<Incoming>) -> Body {
        let incoming = response.into_body();
        Body { ended: hyper::body::Body::is_end_stream(&incoming), incoming, read: 0 }
    }

    /// The next piece of the body; `None` at its end.
    async fn next(&mut self, connection: &mut Connection, watch: Watch<'_>) -> Result<Option<Bytes>, Fault> {
        while !self.ended {
            let frame = wait(&mut connection.driver, self.incoming.frame(), watch).await?;
            let Some(frame) = frame else {
                self.ended = true;
                break;
            };
            // A chunked body's trailers are not data.
            let Ok(piece) = frame.map_err(Fault::of)?.into_data() else { continue };
            self.read += piece.len();
            if self.read > MAX_BODY {
                return Err(Fault::Protocol(format!("its response is longer than {MAX_BODY} bytes")));
            }
            return Ok(Some(piece));
        }
        Ok(None)
    }

    async fn read_all(&mut self, connection: &mut Connection, watch: Watch<'_>) -> Result<Vec<u8>, Fault> {
        let mut whole = Vec::new();
        while let Some(piece) = self.next(connection, watch).await? {
            whole.extend_from_slice(&piece);
        }
        Ok(whole)
    }
}

/// Server-sent events: the `data` of each event, as its lines arrive.
#[derive(Default)]
struct Events {
    line: Vec<u8>,
    data: String,
    has_data: bool,
}

impl Events {
    fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<String>) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.line.extend_from_slice(&bytes[..end]);
            bytes = &bytes[end + 1..];
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.field(&line, out);
        }
        self.line.extend_from_slice(bytes);
    }

    /// The stream ended: a last event without its blank line still counts.
    fn finish(&mut self, out: &mut Vec<String>) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.field(&line, out);
        }
        self.field(b"", out);
    }

    fn field(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                out.push(std::mem::take(&mut self.data));
            }
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        if name == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value.strip_prefix(' ').unwrap_or(value));
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_blank_lines_with_their_data_lines_joined_wherever_the_bytes_break() {
        let stream =
            b"data: \nid: 0\nretry: 3000\n\n: a comment\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: message\ndata:last";
        for cut in 0..stream.len() {
            let (mut events, mut out) = (Events::default(), Vec::new());
            events.feed(&stream[..cut], &mut out);
            events.feed(&stream[cut..], &mut out);
            events.finish(&mut out);
            assert_eq!(out, ["", "{\"a\":\n1}", "last"], "cut at {cut}");
        }
    }

    /// Reads one request (its head's lines, lowercased, and its body) from a test
    /// server's connection; `None` when the client closed it.
    fn request_of(reader: &mut impl std::io::BufRead) -> Option<(Vec<String>, Vec<u8>)> {
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            if line == "\r\n" {
                break;
            }
            head.push(line.to_ascii_lowercase());
        }
        let length =
            head.iter().find_map(|h| h.strip_prefix("content-length: ")).map_or(0, |n| n.trim().parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        Some((head, body))
    }

    #[tokio::test]
    async fn a_chunked_event_stream_is_read_across_writes_and_its_connection_is_kept_for_the_next_request() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            use std::io::Write;
            // One connection only: the second request comes on the first's.
            let (stream, _) = listener.accept().unwrap();
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut writer = stream;
            let (_, body) = request_of(&mut reader).unwrap();
            let asked: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(asked["id"], "lcp-1");
            let log = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
            let answer = b"data: {\"jsonrpc\":\"2.0\",\"id\":\"lcp-1\",\r\ndata: \"result\":{\"ok\":true}}\r\n\r\n";
            let (first, second) = answer.split_at(12);
            let mut parts: Vec<Vec<u8>> = vec![
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
                format!("{:x}\r\n", log.len()).into_bytes(),
                log[..5].to_vec(),
                [&log[5..], b"\r\n"].concat(),
                [format!("{:x};x=1\r\n", first.len()).as_bytes(), &first[..7]].concat(),
                [&first[7..], b"\r\n", format!("{:x}\r\n", second.len()).as_bytes(), second, b"\r"].concat(),
                b"\n0\r\n\r\n".to_vec(),
            ];
            for part in parts.drain(..) {
                writer.write_all(&part).unwrap();
                writer.flush().unwrap();
                std::thread::sleep(Duration::from_millis(30));
            }
            let (_, body) = request_of(&mut reader).unwrap();
            let told: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(told["method"], "notifications/initialized");
            writer.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n").unwrap();
            // The client keeps the connection until it drops it.
            assert!(request_of(&mut reader).is_none());
        });
        let endpoint = Arc::new(Endpoint::new(&format!("http://{address}/mcp"), &[], SHORT, json!({})).unwrap());
        let watch = Watch::within(SHORT);
        let id = json!("lcp-1");
        let body = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":\"lcp-1\",\"method\":\"tools/call\"}");
        let Ok((_, Some(answer))) = endpoint.exchange(None, &body, Some(&id), None, watch).await else {
            panic!("no answer")
        };
        assert_eq!(answer["result"]["ok"], true);
        assert_eq!(sync::lock(&endpoint.idle).len(), 1);
        let body = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        assert!(matches!(endpoint.exchange(None, &body, None, None, watch).await, Ok((None, None))));
        assert_eq!(sync::lock(&endpoint.idle).len(), 1);
        drop(endpoint);
        server.join().unwrap();
    }

    #[tokio::test]
    async fn a_kept_connection_the_server_closed_meanwhile_is_replaced_by_a_new_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            use std::io::Write;
            // Each connection takes one request and is closed after its response.
            for _ in 0..2 {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                request_of(&mut reader).unwrap();
                (&stream).write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n").unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let endpoint = Arc::new(Endpoint::new(&format!("http://{address}/mcp"), &[], SHORT, json!({})).unwrap());
        let body = Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        for _ in 0..2 {
            let answered = endpoint.exchange(None, &body, None, None, Watch::within(SHORT)).await;
            assert!(matches!(answered, Ok((None, None))));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server.join().unwrap();
    }

    #[tokio::test]
    async fn a_request_waiting_on_a_silent_server_stops_when_the_call_is_cancelled_or_out_of_time() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let endpoint = Arc::new(Endpoint::new(&format!("http://{address}/mcp"), &[], SHORT, json!({})).unwrap());
        let body = Bytes::from_static(b"{}");
        let cancel = Cancel::default();
        let stopping = cancel.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stopping.cancel();
        });
        let started = Instant::now();
        let watch = Watch { cancel: Some(&cancel), deadline: None };
        let answered = endpoint.exchange(None, &body, None, None, watch).await;
        assert!(matches!(answered, Err(Fault::Stopped(Outcome::Cancelled))));
        assert!(started.elapsed() < Duration::from_secs(5));
        stopper.join().unwrap();
        let watch = Watch::within(Duration::from_millis(50));
        let answered = endpoint.exchange(None, &body, None, None, watch).await;
        assert!(matches!(answered, Err(Fault::Stopped(Outcome::TimedOut))));
        drop(listener);
    }

    /// A server that answers in plain JSON, takes notifications with an empty 200, and
    /// has forgotten the session by the second call (404): each call's result comes back,
    /// the second in a new session.
    #[tokio::test]
    async fn a_server_answering_in_json_is_called_and_one_that_forgot_the_session_gets_a_new_one() {
        use std::io::{BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut sessions = 0;
            let mut calls = 0;
            // A connection the client dropped (with the session it forgot) is followed by another.
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut writer = stream;
            while calls < 2 {
                let Some((head, body)) = request_of(&mut reader) else {
                    let (stream, _) = listener.accept().unwrap();
                    reader = BufReader::new(stream.try_clone().unwrap());
                    writer = stream;
                    continue;
                };
                let message: Value = serde_json::from_slice(&body).unwrap();
                let session =
                    head.iter().find_map(|h| h.strip_prefix("mcp-session-id: ")).map(str::trim).map(str::to_string);
                let reply = match message["method"].as_str().unwrap() {
                    "initialize" => {
                        sessions += 1;
                        let answer =
                            json!({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-06-18"}});
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s{sessions}\r\nContent-Length: {}\r\n\r\n{answer}",
                            answer.to_string().len()
                        )
                    }
                    "notifications/initialized" => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_string(),
                    "tools/call" if session.as_deref() == Some("s1") && calls == 1 => {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
                    }
                    "tools/call" => {
                        calls += 1;
                        let result = json!({"content": [{"type": "text", "text": format!("{} in {}", message["params"]["arguments"]["x"], session.unwrap_or_default())}]});
                        let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                            answer.to_string().len()
                        )
                    }
                    other => panic!("unexpected {other}"),
                };
                writer.write_all(reply.as_bytes()).unwrap();
            }
        });
        let endpoint = Arc::new(Endpoint::new(&format!("http://{address}/mcp"), &[], SHORT, json!({})).unwrap());
        let active = Active::default();
        let call = |x: u64| Call {
            tool: "echo".to_string(),
            arguments: json!({"x": x}).as_object().cloned().unwrap(),
            active: active.clone(),
            cancel: None,
            deadline: None,
        };
        let text = |result: Result<Value, Failure>| match result {
            Ok(result) => result["content"][0]["text"].as_str().unwrap().to_string(),
            Err(_) => panic!("the call failed"),
        };
        assert_eq!(text(endpoint.call(&call(1)).await), "1 in s1");
        assert_eq!(text(endpoint.call(&call(2)).await), "2 in s2");
        server.join().unwrap();
    }
}
