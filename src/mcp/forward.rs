//! A call of a tool of an MCP server on plain `http://` Streamable HTTP, made the
//! short way (SPEC §14): one HTTP/1.1 exchange, on the runtime of whoever awaits it
//! (`lcp serve`'s own, so a forwarded call wakes no other thread), on a connection
//! kept between calls, in a session of its own (its `initialize` on the first call,
//! again when the server has forgotten it).
//!
//! What the server sends on the response's event stream during the call (progress,
//! log messages, elicitation and sampling requests) goes to that call's callbacks as
//! it arrives; the answers to its requests, and `notifications/cancelled` when the
//! call is stopped (cancelled, out of time), go back on another connection. Listing,
//! `list_changed` and `https://` servers stay with rmcp's client (`upstream.rs`).
//!
//! Must never: hold a call past its cancellation or its time limit by more than one
//! [`WATCH`], or put back for reuse a connection whose response was not read to its end.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::upstream::Active;
use crate::runtime::{Cancel, Outcome};
use crate::sync;

/// How often a call waiting for its server looks at its cancellation and time limit.
const WATCH: Duration = Duration::from_millis(20);
/// Longest response head, or line of a chunked body, read.
const MAX_HEAD: usize = 64 * 1024;
/// Longest response body read.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long a request may take to write, an answer or a notification to be taken.
const SHORT: Duration = Duration::from_secs(10);
/// Connections kept open between calls.
const KEPT: usize = 8;
/// JSON-RPC's code for a request lcp cannot answer now (invalid request), as rmcp's
/// client answers it.
const UNAVAILABLE: i64 = -32600;
/// After its result, how long the rest of a response's event stream may take to end
/// (past it the connection is closed instead of kept).
const STREAM_END: Duration = Duration::from_secs(1);

/// One server's endpoint, its session and its kept connections.
pub(super) struct Endpoint {
    /// `host:port`, connected to.
    address: String,
    /// The `Host` header.
    authority: String,
    /// The request target: path and query.
    target: String,
    /// The config's headers, as header lines.
    headers: String,
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
    id: Option<String>,
    /// The protocol version the server chose.
    version: String,
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
    /// The connection failed, closed early, or its framing is broken.
    Broken(String),
    /// The server does not know the session (404): start another.
    SessionGone,
    /// Any other status than 200 and 202, with the body's text.
    Status(u16, String),
    Stopped(Outcome),
    /// The response is not MCP.
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
        let mut lines = String::new();
        for (name, value) in headers {
            let valid = hyper::header::HeaderName::try_from(name.as_str()).is_ok()
                && hyper::header::HeaderValue::try_from(value.as_str()).is_ok();
            if !valid {
                return None;
            }
            let reserved = ["host", "content-length", "content-type", "accept", "connection", "transfer-encoding"];
            let lower = name.to_ascii_lowercase();
            if reserved.contains(&lower.as_str()) || lower.starts_with("mcp-") {
                continue;
            }
            lines.push_str(&format!("{name}: {value}\r\n"));
        }
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        Some(Endpoint {
            address: format!("{host}:{port}"),
            authority: url.authority().to_string(),
            target,
            headers: lines,
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
        let body = serde_json::to_vec(&request).unwrap_or_default();
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
        let Some(Session { id: Some(id), version }) = self.session.lock().await.take() else { return };
        let head = format!(
            "DELETE {} HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: {version}\r\n{}Content-Length: 0\r\n\r\n",
            self.target, self.authority, self.headers
        );
        let limit = Duration::from_millis(200);
        if let Ok(mut connection) = Connection::open(&self.address, limit).await
            && connection.write(head.as_bytes()).await.is_ok()
        {
            let _ = read_head(&mut connection, Watch::within(limit)).await;
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
        let body = serde_json::to_vec(&hello).unwrap_or_default();
        let (session_id, answer) = self.exchange(None, &body, Some(&id), None, watch).await.map_err(not_started)?;
        let answer = answer.ok_or_else(|| Failure::NotStarted("it did not answer `initialize`".to_string()))?;
        let Some(version) = answer["result"]["protocolVersion"].as_str() else {
            return Err(Failure::NotStarted(format!("it refused `initialize`: {}", error_text(&answer["error"]))));
        };
        let started = Session { id: session_id, version: version.to_string() };
        let initialized =
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap_or_default();
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
            let body = serde_json::to_vec(&message).unwrap_or_default();
            let _ = endpoint.exchange(Some(&session), &body, None, None, Watch::within(SHORT)).await;
        });
    }

    /// POSTs `body` and reads the response: the session id the server gave, and the
    /// message answering `id` (on a JSON or event-stream response). What the server
    /// sends before it goes to `call`'s callbacks.
    async fn exchange(
        self: &Arc<Self>,
        session: Option<&Session>,
        body: &[u8],
        id: Option<&Value>,
        call: Option<&Call>,
        watch: Watch<'_>,
    ) -> Result<(Option<String>, Option<Value>), Fault> {
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{}",
            self.target, self.authority, self.headers
        );
        if let Some(session) = session {
            if let Some(id) = &session.id {
                request.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
            }
            request.push_str(&format!("MCP-Protocol-Version: {}\r\n", session.version));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut request = request.into_bytes();
        request.extend_from_slice(body);
        // A kept connection the server has closed meanwhile fails before any byte of
        // the response: the request goes again on a new one.
        let (mut connection, head) = loop {
            let (mut connection, reused) = self.connection().await?;
            let read = match connection.write(&request).await {
                Ok(()) => read_head(&mut connection, watch).await,
                Err(fault) => Err(fault),
            };
            match read {
                Ok(head) => break (connection, head),
                Err(Fault::Broken(_)) if reused && connection.received == 0 => continue,
                Err(fault) => return Err(fault),
            }
        };
        let mut body = Body::new(head.framing);
        let answer = match head.status {
            200 if head.event_stream => self.events(&mut connection, &mut body, (session, id), call, watch).await?,
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
        if body.ended && !head.close {
            self.keep(connection);
        }
        Ok((head.session, answer))
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

    /// A kept connection (`true`) or a new one.
    async fn connection(&self) -> Result<(Connection, bool), Fault> {
        let kept = sync::lock(&self.idle).pop();
        if let Some(kept) = kept {
            return Ok((kept, true));
        }
        let connection =
            Connection::open(&self.address, self.start_limit).await.map_err(|err| Fault::Broken(err.to_string()))?;
        Ok((connection, false))
    }

    fn keep(&self, mut connection: Connection) {
        connection.received = 0;
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

/// A connection and what has been read from it and not yet taken
/// (`buffer[start..end]`).
struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes read since the request was sent.
    received: usize,
}

/// What one read takes at most, at first (a longer head or line grows it).
const READ: usize = 16 * 1024;

impl Connection {
    async fn open(address: &str, limit: Duration) -> io::Result<Connection> {
        let connecting = tokio::time::timeout(limit, TcpStream::connect(address)).await;
        let stream = connecting.map_err(|_| {
            io::Error::new(io::ErrorKind::TimedOut, format!("connecting to `{address}` took longer than {limit:?}"))
        })??;
        stream.set_nodelay(true)?;
        Ok(Connection { stream, buffer: vec![0; READ], start: 0, end: 0, received: 0 })
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        match tokio::time::timeout(SHORT, self.stream.write_all(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(Fault::Broken(err.to_string())),
            Err(_) => Err(Fault::Broken(format!("writing the request took longer than {SHORT:?}"))),
        }
    }

    fn available(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        let taken = self.buffer[self.start..self.start + n].to_vec();
        self.consume(n);
        taken
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    /// Reads more; 0 at the end of the stream. While nothing comes, `watch` decides.
    async fn fill(&mut self, watch: Watch<'_>) -> Result<usize, Fault> {
        if self.end == self.buffer.len() {
            if self.start > 0 {
                self.buffer.copy_within(self.start..self.end, 0);
                (self.start, self.end) = (0, self.end - self.start);
            } else {
                self.buffer.resize(self.buffer.len() * 2, 0);
            }
        }
        loop {
            let reading = tokio::time::timeout(WATCH, self.stream.read(&mut self.buffer[self.end..]));
            match reading.await {
                Ok(Ok(n)) => {
                    self.end += n;
                    self.received += n;
                    return Ok(n);
                }
                Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(err)) => return Err(Fault::Broken(err.to_string())),
                Err(_) => watch.check()?,
            }
        }
    }

    /// Reads until at least `n` bytes are there.
    async fn need(&mut self, n: usize, watch: Watch<'_>) -> Result<(), Fault> {
        while self.available().len() < n {
            if self.fill(watch).await? == 0 {
                return Err(Fault::Broken("the connection closed in the middle of the response".to_string()));
            }
        }
        Ok(())
    }

    /// The next line (without its line end).
    async fn line(&mut self, watch: Watch<'_>) -> Result<Vec<u8>, Fault> {
        loop {
            if let Some(end) = memchr::memchr(b'\n', self.available()) {
                let mut line = self.take(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.available().len() > MAX_HEAD {
                return Err(Fault::Protocol("a line of its response is too long".to_string()));
            }
            self.need(self.available().len() + 1, watch).await?;
        }
    }
}

/// A response's status line and the headers that matter here.
struct Head {
    status: u16,
    event_stream: bool,
    framing: Framing,
    /// `Connection: close`.
    close: bool,
    session: Option<String>,
}

async fn read_head(connection: &mut Connection, watch: Watch<'_>) -> Result<Head, Fault> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let parsed = response
            .parse(connection.available())
            .map_err(|err| Fault::Protocol(format!("its response is not HTTP: {err}")))?;
        let httparse::Status::Complete(length) = parsed else {
            if connection.available().len() > MAX_HEAD {
                return Err(Fault::Protocol("its response head is too long".to_string()));
            }
            if connection.fill(watch).await? == 0 {
                return Err(Fault::Broken("the connection closed before the response".to_string()));
            }
            continue;
        };
        let status = response.code.unwrap_or_default();
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|header| header.name.eq_ignore_ascii_case(name))
                .map(|header| String::from_utf8_lossy(header.value).trim().to_string())
        };
        let content_type = header("content-type").unwrap_or_default().to_ascii_lowercase();
        let chunked = header("transfer-encoding").is_some_and(|coding| coding.to_ascii_lowercase().contains("chunked"));
        let length_header = header("content-length");
        let framing = if chunked {
            Framing::Chunked { left: 0, line_end: false }
        } else if let Some(length) = length_header {
            Framing::Length(length.parse().map_err(|_| Fault::Protocol(format!("Content-Length `{length}`")))?)
        } else if status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Length(0)
        } else {
            Framing::Close
        };
        let head = Head {
            status,
            event_stream: content_type.starts_with("text/event-stream"),
            close: header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"))
                || matches!(framing, Framing::Close),
            session: header("mcp-session-id"),
            framing,
        };
        connection.consume(length);
        // An interim response (`100 Continue`) is followed by the real one.
        if (100..200).contains(&status) {
            continue;
        }
        return Ok(head);
    }
}

#[derive(Clone, Copy)]
enum Framing {
    Length(usize),
    /// `left` bytes of the current chunk to come, then its line end when `line_end`.
    Chunked {
        left: usize,
        line_end: bool,
    },
    /// The body ends with the connection.
    Close,
}

/// A response body, read piece by piece.
struct Body {
    framing: Framing,
    ended: bool,
    read: usize,
}

impl Body {
    fn new(framing: Framing) -> Body {
        Body { ended: matches!(framing, Framing::Length(0)), framing, read: 0 }
    }

    /// The next piece of the body; `None` at its end.
    async fn next(&mut self, connection: &mut Connection, watch: Watch<'_>) -> Result<Option<Vec<u8>>, Fault> {
        if self.ended {
            return Ok(None);
        }
        let piece = match self.framing {
            Framing::Length(left) => {
                connection.need(1, watch).await?;
                let n = left.min(connection.available().len());
                self.framing = Framing::Length(left - n);
                self.ended = left == n;
                connection.take(n)
            }
            Framing::Chunked { mut left, line_end } => {
                if line_end {
                    connection.need(2, watch).await?;
                    if &connection.available()[..2] != b"\r\n" {
                        return Err(Fault::Protocol("a chunk of its response does not end as HTTP says".to_string()));
                    }
                    connection.consume(2);
                }
                if left == 0 {
                    let line = connection.line(watch).await?;
                    let size = String::from_utf8_lossy(&line);
                    let size = size.split(';').next().unwrap_or_default().trim();
                    left = usize::from_str_radix(size, 16)
                        .map_err(|_| Fault::Protocol(format!("a chunk size `{size}` of its response")))?;
                    if left == 0 {
                        // The trailer: header lines up to an empty one.
                        while !connection.line(watch).await?.is_empty() {}
                        self.ended = true;
                        return Ok(None);
                    }
                }
                connection.need(1, watch).await?;
                let n = left.min(connection.available().len());
                self.framing = Framing::Chunked { left: left - n, line_end: left == n };
                connection.take(n)
            }
            Framing::Close => {
                if connection.available().is_empty() && connection.fill(watch).await? == 0 {
                    self.ended = true;
                    return Ok(None);
                }
                let n = connection.available().len();
                connection.take(n)
            }
        };
        self.read += piece.len();
        if self.read > MAX_BODY {
            return Err(Fault::Protocol(format!("its response is longer than {MAX_BODY} bytes")));
        }
        Ok(Some(piece))
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

    #[tokio::test]
    async fn a_chunked_body_is_read_across_reads_and_the_connection_is_left_at_the_next_response() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            use std::io::Write;
            let (mut stream, _) = listener.accept().unwrap();
            let parts: [&[u8]; 4] = [
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nda",
                b"ta: \r\n3;x=1\r\n{}\n\r\n",
                b"1\r\n\n\r\n0\r\n\r\n",
                b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
            ];
            for part in parts {
                stream.write_all(part).unwrap();
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let mut connection = Connection::open(&address, SHORT).await.unwrap();
        let watch = Watch::within(SHORT);
        let head = read_head(&mut connection, watch).await.ok().unwrap();
        assert!(head.status == 200 && head.event_stream && !head.close);
        let mut body = Body::new(head.framing);
        let text = body.read_all(&mut connection, watch).await.ok().unwrap();
        assert_eq!(text, b"data: {}\n\n");
        assert!(body.ended);
        let next = read_head(&mut connection, watch).await.ok().unwrap();
        assert_eq!(next.status, 202);
        server.join().unwrap();
    }

    #[tokio::test]
    async fn a_read_waiting_on_a_silent_server_stops_when_the_call_is_cancelled_or_out_of_time() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let mut connection = Connection::open(&address, SHORT).await.unwrap();
        let cancel = Cancel::default();
        let stopping = cancel.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stopping.cancel();
        });
        let started = Instant::now();
        let watch = Watch { cancel: Some(&cancel), deadline: None };
        assert!(matches!(read_head(&mut connection, watch).await, Err(Fault::Stopped(Outcome::Cancelled))));
        assert!(started.elapsed() < Duration::from_secs(5));
        stopper.join().unwrap();
        let watch = Watch::within(Duration::from_millis(50));
        assert!(matches!(read_head(&mut connection, watch).await, Err(Fault::Stopped(Outcome::TimedOut))));
    }

    /// A server that answers in plain JSON, takes notifications with an empty 200, and
    /// has forgotten the session by the second call (404): each call's result comes back,
    /// the second in a new session.
    #[tokio::test]
    async fn a_server_answering_in_json_is_called_and_one_that_forgot_the_session_gets_a_new_one() {
        use std::io::{BufRead, BufReader, Read, Write};
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
                let mut head = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        let (stream, _) = listener.accept().unwrap();
                        reader = BufReader::new(stream.try_clone().unwrap());
                        writer = stream;
                        continue;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push(line.to_ascii_lowercase());
                }
                let length =
                    head.iter().find_map(|h| h.strip_prefix("content-length: ")).unwrap().trim().parse().unwrap();
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
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
