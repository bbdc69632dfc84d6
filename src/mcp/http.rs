//! `lcp serve --http ADDR`: Streamable HTTP on one address, endpoint `/mcp`.
//!
//! rmcp's `StreamableHttpService` does the protocol (sessions for handshake clients,
//! stateless requests for handshake-less ones); this file accepts
//! connections (with `TCP_NODELAY`: replies are small and latency-bound), checks each
//! request (SPEC §17), routes the path, and puts the kept tool list into `tools/list`
//! responses (`listing`).
//! On a loopback address, `Host` must be a loopback name (DNS rebinding) and a
//! browser's `Origin`, when there is one, a loopback origin (another site's page).
//! Any other address is reachable from other machines: `Origin` must then be one of
//! `[auth] allowed_origins`, and (checked when the server starts) credentials are
//! required unless `--allow-unauthenticated`. With `[auth]`, every request needs a
//! token (`auth`), and the Protected Resource Metadata is served. A request has one
//! `Host` and at most one `Origin`; slow clients are cut (headers, body); a 401 or
//! 403 ends its connection.
//!
//! Callers are bound to their sessions (SPEC §17): every request carries its
//! `auth::Caller` (the anonymous one without `[auth]`) in its head's extensions, where
//! the handlers find it; a session belongs to the caller whose `initialize` opened it,
//! and a request of any other caller naming it (POST, GET, DELETE) is answered 404, as
//! if it did not exist.
//!
//! No lock-outs: connections are capped, per peer address too, and with `[auth]` a
//! quarter of them are kept for callers with a valid token (a connection accepted into
//! those that has sent nothing gives way to a newer one). Only an `initialize` counts
//! against the session cap, and past it the least recently used idle session ends;
//! idle sessions expire.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionHandle, LocalSessionManager};
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio::net::TcpListener;

use super::auth::{self, Refusal};
use super::listing::{Listings, SplicingBody};
use super::{ServeError, Server};
use crate::sync;

/// The endpoint's path.
pub const PATH: &str = "/mcp";

const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// `8080` and `:8080` mean `127.0.0.1:8080`; anything else is `host:port`.
pub(crate) fn parse_address(text: &str) -> Result<SocketAddr, AddressError> {
    let port_only = text.strip_prefix(':').unwrap_or(text);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let address = || text.to_string();
    text.to_socket_addrs()
        .map_err(|error| AddressError::Unresolved { address: address(), error })?
        .next()
        .ok_or_else(|| AddressError::NoAddress { address: address() })
}

/// Why [`parse_address`] found no address to serve on.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum AddressError {
    /// The text is no `host:port`, or its host name cannot be resolved.
    Unresolved {
        /// The text given.
        address: String,
        /// What the resolver said.
        error: std::io::Error,
    },
    /// The host name resolves to no address.
    NoAddress {
        /// The text given.
        address: String,
    },
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddressError::Unresolved { address, error } => write!(f, "{address}: {error}"),
            AddressError::NoAddress { address } => write!(f, "{address}: the name resolves to no address"),
        }
    }
}

impl std::error::Error for AddressError {}

/// Most connections served at once; past it, a new one is answered 503 and closed.
const MAX_CONNECTIONS: usize = 512;
/// With `[auth]`, most connections of one peer address at once that have not shown a
/// valid token; past it, 503 and closed. A connection that showed one no longer
/// counts (clients behind one proxy or NAT share an address), nor does any on a
/// server that asks for no token (its every client shows all it needs).
pub const MAX_CONNECTIONS_PER_PEER: usize = 64;
/// With `[auth]`, most connections that have not shown a valid token yet: the rest of
/// [`MAX_CONNECTIONS`] is kept for callers with one (a connection accepted into it is
/// ended for a newer one while it has sent nothing).
const MAX_UNPROVEN: usize = MAX_CONNECTIONS / 4 * 3;
/// Most sessions kept at once; past it, an `initialize` ends the least recently used
/// idle session (503 when every session is busy).
pub const MAX_SESSIONS: usize = 256;
/// How long a client may take to send a request's headers (also the idle time
/// allowed between requests on a kept connection).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Who may reach the endpoint: what every request is checked against.
struct Access {
    /// `[auth]`'s checks, when credentials are required.
    auth: Option<Arc<auth::Gate>>,
    /// Browser origins allowed on an address that is not loopback (`[auth] allowed_origins`).
    allowed_origins: Option<Vec<String>>,
}

/// Serves `server` on `address`, printing where on stderr; returns only when the
/// address cannot be bound.
pub(super) async fn serve(
    server: Server,
    address: SocketAddr,
    listings: Arc<Listings>,
    auth: Option<auth::Gate>,
) -> Result<(), ServeError> {
    let cannot_serve = |error| ServeError::Http { address, error };
    let listener = TcpListener::bind(address).await.map_err(cannot_serve)?;
    let bound = listener.local_addr().map_err(cannot_serve)?;
    let loopback = address.ip().is_loopback();
    let config = if loopback {
        StreamableHttpServerConfig::default().with_allowed_origins(LOOPBACK_ORIGINS)
    } else {
        StreamableHttpServerConfig::default().disable_allowed_hosts()
    };
    let allowed_origins = (!loopback).then(|| server.shared.settings.config.current().auth.allowed_origins.clone());
    let reserve = auth.is_some();
    let access = Access { auth: auth.map(Arc::new), allowed_origins };
    let mut sessions = LocalSessionManager::default();
    // A session unused this long is closed (`[mcp] session_idle`).
    sessions.session_config.keep_alive = Some(server.shared.session_idle);
    let sessions = Arc::new(sessions);
    let opener = server.clone();
    let service = StreamableHttpService::new(move || Ok(opener.new_session()), Arc::clone(&sessions), config);
    let connections = Arc::new(Connections::new(reserve));
    let owners = Owners::default();
    let endpoint = Arc::new(Endpoint { service, server, listings, access, sessions, owners, connections });
    eprintln!("lcp: serving MCP at http://{bound}{PATH}");
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before accept: the next one may work.
            Err(err) => {
                eprintln!("lcp: accept failed: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Some(held) = Connections::admit(&endpoint.connections, peer.ip()) else {
            tokio::spawn(refuse_connection(stream));
            continue;
        };
        let endpoint = Arc::clone(&endpoint);
        tokio::spawn(async move {
            let connection = Arc::clone(&held.connection);
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (endpoint, connection) = (Arc::clone(&endpoint), Arc::clone(&connection));
                async move { Ok::<_, Infallible>(route(request, &endpoint, &connection).await) }
            });
            let serving = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), route);
            tokio::select! {
                _ = serving => {}
                // A connection that sent nothing, in the kept slots, ended for a newer one.
                () = held.connection.evicted.cancelled() => {}
            }
            drop(held);
        });
    }
}

pub(super) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// What answers the requests of every connection.
struct Endpoint {
    service: StreamableHttpService<Server, LocalSessionManager>,
    /// The server (its tasks acknowledge what a listen stream names).
    server: Server,
    listings: Arc<Listings>,
    access: Access,
    sessions: Arc<LocalSessionManager>,
    /// Whose each session is, and how recently it was used.
    owners: Owners,
    connections: Arc<Connections>,
}

/// The connections open, by peer address and by whether they showed a valid token.
struct Connections {
    /// `[auth]` is configured: slots are kept for callers with a token.
    reserve: bool,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    open: usize,
    /// Connections in the share of those without a valid token yet.
    unproven: usize,
    by_peer: HashMap<IpAddr, usize>,
    /// Connections accepted into the kept slots that have sent nothing yet, oldest first.
    waiting: std::collections::VecDeque<Arc<Connection>>,
}

impl Counts {
    /// One connection fewer of `peer` without a valid token.
    fn less_of(&mut self, peer: IpAddr) {
        if let Some(count) = self.by_peer.get_mut(&peer) {
            *count -= 1;
            if *count == 0 {
                self.by_peer.remove(&peer);
            }
        }
    }
}

/// One connection, as the caps see it.
struct Connection {
    peer: IpAddr,
    class: Mutex<Class>,
    /// Cancelled to end a connection of the kept slots that sent nothing.
    evicted: tokio_util::sync::CancellationToken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Counted in [`MAX_UNPROVEN`] until a request shows a valid token.
    Unproven,
    /// Accepted into the kept slots: ended for a newer connection while it sent nothing.
    Kept,
    /// Showed a valid token (or the server asks for none).
    Proven,
}

/// A connection's slot, given back when dropped.
struct Held {
    connections: Arc<Connections>,
    connection: Arc<Connection>,
}

impl Connections {
    fn new(reserve: bool) -> Connections {
        Connections { reserve, counts: Mutex::default() }
    }

    /// A slot for a new connection from `peer`, or `None` (503) past the caps.
    fn admit(connections: &Arc<Connections>, peer: IpAddr) -> Option<Held> {
        let mut counts = sync::lock(&connections.counts);
        if connections.reserve && counts.by_peer.get(&peer).is_some_and(|&count| count >= MAX_CONNECTIONS_PER_PEER) {
            return None;
        }
        let class = if !connections.reserve {
            if counts.open >= MAX_CONNECTIONS {
                return None;
            }
            Class::Proven
        } else if counts.open >= MAX_CONNECTIONS {
            // Full: the oldest connection of the kept slots that sent nothing makes room.
            let oldest = counts.waiting.pop_front()?;
            oldest.evicted.cancel();
            Class::Kept
        } else if counts.unproven >= MAX_UNPROVEN {
            Class::Kept
        } else {
            Class::Unproven
        };
        let connection = Arc::new(Connection {
            peer,
            class: Mutex::new(class),
            evicted: tokio_util::sync::CancellationToken::new(),
        });
        counts.open += 1;
        if class != Class::Proven {
            *counts.by_peer.entry(peer).or_default() += 1;
        }
        match class {
            Class::Unproven => counts.unproven += 1,
            Class::Kept => counts.waiting.push_back(Arc::clone(&connection)),
            Class::Proven => {}
        }
        Some(Held { connections: Arc::clone(connections), connection })
    }

    /// A request came on `connection`: a connection of the kept slots is no longer
    /// ended for a newer one.
    fn started(&self, connection: &Arc<Connection>) {
        if *sync::lock(&connection.class) == Class::Kept {
            sync::lock(&self.counts).waiting.retain(|waiting| !Arc::ptr_eq(waiting, connection));
        }
    }

    /// A request on `connection` showed a valid token.
    fn proven(&self, connection: &Connection) {
        let mut class = sync::lock(&connection.class);
        if *class != Class::Proven {
            let mut counts = sync::lock(&self.counts);
            if *class == Class::Unproven {
                counts.unproven -= 1;
            }
            counts.less_of(connection.peer);
        }
        *class = Class::Proven;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let class = *sync::lock(&self.connection.class);
        let mut counts = sync::lock(&self.connections.counts);
        counts.open -= 1;
        if class != Class::Proven {
            counts.less_of(self.connection.peer);
        }
        match class {
            Class::Unproven => counts.unproven -= 1,
            Class::Kept => counts.waiting.retain(|waiting| !Arc::ptr_eq(waiting, &self.connection)),
            Class::Proven => {}
        }
    }
}

/// Whose each session is (SPEC §17: a session belongs to the caller that opened it),
/// when it was last used and whether a request of it is in progress.
#[derive(Default)]
struct Owners {
    sessions: Mutex<HashMap<String, Owned>>,
}

struct Owned {
    caller: auth::Caller,
    used: Instant,
    /// Requests of the session in progress (their responses not yet sent to their end).
    busy: Arc<AtomicUsize>,
}

/// What a request naming a session finds.
enum Found {
    /// The caller's own session: in use until this is dropped.
    Own(Busy),
    /// No session of this caller's (another caller's is none of its business).
    None,
    /// The caller's session, opened with a token that chose another profile.
    OtherProfile,
}

impl Owners {
    fn find(&self, id: &str, caller: &auth::Caller) -> Found {
        let mut sessions = sync::lock(&self.sessions);
        match sessions.get_mut(id) {
            Some(owned) if owned.caller.id == caller.id && owned.caller.profile == caller.profile => {
                owned.used = Instant::now();
                Found::Own(Busy::new(&owned.busy))
            }
            Some(owned) if owned.caller.id == caller.id => Found::OtherProfile,
            _ => Found::None,
        }
    }

    /// Records the session `id` as `caller`'s, forgetting those rmcp no longer holds.
    fn insert(&self, id: &str, caller: auth::Caller, live: &HashMap<SessionId, LocalSessionHandle>) {
        let mut sessions = sync::lock(&self.sessions);
        sessions.retain(|id, _| live.contains_key(id.as_str()));
        let owned = Owned { caller, used: Instant::now(), busy: Arc::default() };
        sessions.insert(id.to_string(), owned);
    }

    /// The least recently used session of `live` with no request in progress, forgotten.
    fn take_idle(&self, live: &HashMap<SessionId, LocalSessionHandle>) -> Option<SessionId> {
        let mut sessions = sync::lock(&self.sessions);
        let idle = live
            .keys()
            .filter_map(|id| match sessions.get(id.as_ref()) {
                Some(owned) if owned.busy.load(Ordering::Acquire) > 0 => None,
                Some(owned) => Some((Some(owned.used), id)),
                // Never recorded (it did not finish opening): the first to go.
                None => Some((None, id)),
            })
            .min_by_key(|(used, _)| *used)
            .map(|(_, id)| id.clone())?;
        sessions.remove(idle.as_ref());
        Some(idle)
    }
}

/// A request of a session in progress, until dropped.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(count: &Arc<AtomicUsize>) -> Busy {
        count.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(count))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A `subscriptions/listen` response whose acknowledgement says, in its filter, the task
/// ids the stream is told of (`taskIds`, the tasks extension's part of the filter, which
/// rmcp's filter does not carry).
struct AcknowledgedTasks {
    body: Body,
    /// What goes in at the start of the acknowledged filter, until it went in.
    insert: Option<Vec<u8>>,
}

impl AcknowledgedTasks {
    /// The acknowledged filter's key, in rmcp's compact JSON.
    const FILTER: &[u8] = b"\"notifications\":{";

    fn new(body: Body, honoured: &[String]) -> AcknowledgedTasks {
        let ids = serde_json::to_string(honoured).unwrap_or_else(|_| "[]".to_string());
        AcknowledgedTasks { body, insert: Some(format!("\"taskIds\":{ids}").into_bytes()) }
    }

    /// `data` with the task ids at the start of its acknowledged filter, if it holds it.
    fn spliced(&mut self, data: &Bytes) -> Option<Bytes> {
        memchr::memmem::find(data, b"notifications/subscriptions/acknowledged")?;
        let at = memchr::memmem::find(data, Self::FILTER)? + Self::FILTER.len();
        let mut insert = self.insert.take()?;
        if data.get(at) != Some(&b'}') {
            insert.push(b',');
        }
        Some([&data[..at], &insert[..], &data[at..]].concat().into())
    }
}

impl hyper::body::Body for AcknowledgedTasks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        let std::task::Poll::Ready(Some(Ok(frame))) = polled else { return polled };
        if self.insert.is_none() {
            return std::task::Poll::Ready(Some(Ok(frame)));
        }
        let frame = match frame.into_data() {
            Ok(data) => hyper::body::Frame::data(self.spliced(&data).unwrap_or(data)),
            Err(frame) => frame,
        };
        std::task::Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        // Longer by what goes in, when it does.
        hyper::body::SizeHint::default()
    }
}

/// A response body that keeps its session busy until it is sent to its end or dropped.
struct BusyBody {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for BusyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// One request: the checks of SPEC §17, then the protocol; a 401 or 403 closes the
/// connection.
async fn route(request: Request<Incoming>, endpoint: &Endpoint, connection: &Arc<Connection>) -> Response<Body> {
    endpoint.connections.started(connection);
    let mut response = checked(request, endpoint, connection).await;
    if matches!(response.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        response.headers_mut().insert(hyper::header::CONNECTION, hyper::header::HeaderValue::from_static("close"));
    }
    response
}

/// The checks of SPEC §17 in order (one `Host`, one `Origin`, the metadata, the
/// endpoint, `Origin`'s value, the token, the session's owner, the body read in
/// bounded time, the session cap), then the protocol: rmcp's.
async fn checked(request: Request<Incoming>, endpoint: &Endpoint, connection: &Arc<Connection>) -> Response<Body> {
    let Endpoint { service, server, listings, access, sessions, owners, connections } = endpoint;
    if request.headers().get_all(hyper::header::HOST).iter().count() > 1 {
        return plain(StatusCode::BAD_REQUEST, "more than one Host header");
    }
    if request.headers().get_all(hyper::header::ORIGIN).iter().count() > 1 {
        return plain(StatusCode::FORBIDDEN, "more than one Origin header");
    }
    let path = request.uri().path();
    if path == auth::METADATA_PATH || path.strip_prefix(auth::METADATA_PATH) == Some(PATH) {
        return match access.auth.as_ref().and_then(|auth| auth.metadata()) {
            Some(metadata) => json_response(StatusCode::OK, &metadata),
            None => not_found(),
        };
    }
    if path != PATH {
        return not_found();
    }
    if let (Some(allowed), Some(origin)) = (&access.allowed_origins, request.headers().get(hyper::header::ORIGIN))
        && !allowed.iter().any(|allowed| allowed.as_bytes() == origin.as_bytes())
    {
        return plain(StatusCode::FORBIDDEN, "this Origin is not in [auth] allowed_origins");
    }
    let (mut parts, body) = request.into_parts();
    let caller = match &access.auth {
        None => auth::Caller::anonymous(),
        Some(auth) => {
            let headers: Vec<Vec<u8>> = parts
                .headers
                .get_all(hyper::header::AUTHORIZATION)
                .iter()
                .map(|value| value.as_bytes().to_vec())
                .collect();
            let checking = Arc::clone(auth);
            let checked = tokio::task::spawn_blocking(move || {
                let headers: Vec<&[u8]> = headers.iter().map(Vec::as_slice).collect();
                checking.check(&headers)
            })
            .await
            .unwrap_or_else(|_| Err(Refusal::Unauthorized("the check failed".to_string())));
            match checked {
                Ok(caller) => caller,
                Err(refusal) => {
                    let status = match refusal {
                        Refusal::Unauthorized(_) => StatusCode::UNAUTHORIZED,
                        Refusal::InsufficientScope => StatusCode::FORBIDDEN,
                    };
                    let mut response = plain(status, "a valid access token is required");
                    if let Ok(value) = hyper::header::HeaderValue::from_str(&auth.challenge(&refusal)) {
                        response.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, value);
                    }
                    return response;
                }
            }
        }
    };
    if access.auth.is_some() {
        connections.proven(connection);
    }
    parts.extensions.insert(caller.clone());
    let session = parts.headers.get("mcp-session-id").map(|id| id.to_str().unwrap_or_default().to_string());
    // Another caller's session is answered as if it did not exist.
    let busy = match &session {
        None => None,
        Some(id) => match owners.find(id, &caller) {
            Found::Own(busy) => Some(busy),
            Found::None => return plain(StatusCode::NOT_FOUND, "no such session"),
            Found::OtherProfile => {
                return json_response(
                    StatusCode::FORBIDDEN,
                    &serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                        "message": "this session was opened with a token that chose another profile"}}),
                );
            }
        },
    };
    let body = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, MAX_BODY).collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(_)) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large or broken"),
        Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, "the request body took too long"),
    };
    if parts.method == hyper::Method::POST && serde_json::from_slice::<&serde_json::value::RawValue>(&body).is_err() {
        return json_response(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error: the body is not JSON"}}),
        );
    }
    // A listen stream naming tasks is told of them whichever replica runs them (`tasks`),
    // and its acknowledgement says which of them it honours: the caller's.
    let mut honoured = None;
    if parts.method == hyper::Method::POST
        && let Some(listened) = super::tasks::ListenedTasks::of(&body)
    {
        honoured = Some(server.shared.tasks.honoured(&listened.0, &caller.key()).await);
        parts.extensions.insert(listened);
    }
    // Only an `initialize` opens a session: a handshake-less request is never refused
    // for the cap. Past it, the least recently used idle session ends.
    let opens_session = parts.method == hyper::Method::POST && session.is_none() && is_initialize(&body);
    if opens_session && !make_room(sessions, owners).await {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "too many sessions in use; try again when some have closed");
    }
    let deletes = parts.method == hyper::Method::DELETE;
    let response = service.handle(Request::from_parts(parts, Full::new(body))).await;
    let mut response = response.map(|body| SplicingBody::new(body, Arc::clone(listings)).boxed());
    if let Some(honoured) = honoured {
        response = response.map(|body| AcknowledgedTasks::new(body, &honoured).boxed());
    }
    // A session ended on the client's DELETE is answered 200, as clients expect (rmcp
    // says 202, which MCP's Python clients log as a failed termination).
    if deletes && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    if opens_session && let Some(id) = response.headers().get("mcp-session-id").and_then(|id| id.to_str().ok()) {
        owners.insert(id, caller, &*sessions.sessions.read().await);
    }
    match busy {
        Some(busy) => response.map(|body| BusyBody { body, _busy: busy }.boxed()),
        None => response,
    }
}

/// Whether `body` is an `initialize` request (the only one that opens a session).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body).is_ok_and(|message| message.method.as_deref() == Some("initialize"))
}

/// Room for one more session: past [`MAX_SESSIONS`], the least recently used idle one
/// is ended; `false` when every session is in use.
async fn make_room(sessions: &LocalSessionManager, owners: &Owners) -> bool {
    loop {
        let idle = {
            let live = sessions.sessions.read().await;
            if live.len() < MAX_SESSIONS {
                return true;
            }
            owners.take_idle(&live)
        };
        let Some(idle) = idle else { return false };
        let _ = SessionManager::close_session(sessions, &idle).await;
    }
}

/// Past the connection cap: one 503, then the connection is closed.
async fn refuse_connection(stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let mut stream = stream;
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        stream.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 20\r\nconnection: close\r\n\r\ntoo many connections",
        ),
    )
    .await;
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

fn not_found() -> Response<Body> {
    plain(StatusCode::NOT_FOUND, &format!("not found: the MCP endpoint is {PATH}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_is_loopback_and_anything_else_is_host_and_port() {
        let loopback = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        assert_eq!(parse_address("8080").unwrap(), loopback(8080));
        assert_eq!(parse_address(":8080").unwrap(), loopback(8080));
        assert_eq!(parse_address("0.0.0.0:9000").unwrap(), "0.0.0.0:9000".parse().unwrap());
        let err = parse_address("no port").unwrap_err();
        assert!(matches!(&err, AddressError::Unresolved { address, .. } if address == "no port"), "{err:?}");
        assert!(err.to_string().starts_with("no port: "), "{err}");
    }
}
