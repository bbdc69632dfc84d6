//! `lcp serve --http ADDR`: Streamable HTTP on one address, endpoint `/mcp`.
//!
//! rmcp's `StreamableHttpService` does the protocol (sessions for handshake clients,
//! stateless requests for handshake-less ones), but for what the lane answers (a
//! session's calls of tools forwarded the short way, `lane.rs`); this file accepts
//! connections (with `TCP_NODELAY`: replies are small and latency-bound), checks each
//! request (SPEC §17), routes the path, and puts the kept tool list into `tools/list`
//! responses (`listing`).
//! On a loopback address, `Host` must be a loopback name (DNS rebinding) and a
//! browser's `Origin`, when there is one, a loopback origin (another site's page).
//! Any other address is reachable from other machines: `Origin` must then be one of
//! `[auth] allowed_origins`, and (checked when the server starts) credentials are
//! required unless `--allow-unauthenticated`. With `[auth]`, every request needs a
//! token (`auth`), and the Protected Resource Metadata is served. A request has one
//! `Host`; slow clients are cut (headers, body), connections and sessions are
//! capped (503 past the cap), idle sessions expire.

use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::auth::{self, Refusal};
use super::lane;
use super::listing::{Listings, SplicingBody};
use super::{ServeError, Server};

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
pub fn parse_address(text: &str) -> Result<SocketAddr, AddressError> {
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
pub enum AddressError {
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
/// Most sessions kept at once; past it, an `initialize` is answered 503.
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
    /// The address is loopback.
    loopback: bool,
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
    let access = Arc::new(Access { auth: auth.map(Arc::new), allowed_origins, loopback });
    let mut sessions = LocalSessionManager::default();
    // A session unused this long is closed (`[mcp] session_idle`).
    sessions.session_config.keep_alive = Some(server.shared.lane.idle());
    let sessions = Arc::new(sessions);
    let lane = server.clone();
    let service = StreamableHttpService::new(move || Ok(server.new_session()), Arc::clone(&sessions), config);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    eprintln!("lcp: serving MCP at http://{bound}{PATH}");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before accept: the next one may work.
            Err(err) => {
                eprintln!("lcp: accept failed: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            tokio::spawn(refuse_connection(stream));
            continue;
        };
        let endpoint = Endpoint {
            service: service.clone(),
            lane: lane.clone(),
            listings: Arc::clone(&listings),
            access: Arc::clone(&access),
            sessions: Arc::clone(&sessions),
        };
        tokio::spawn(async move {
            let endpoint = Arc::new(endpoint);
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let endpoint = Arc::clone(&endpoint);
                async move { Ok::<_, Infallible>(route(request, &endpoint).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), route)
                .await;
            drop(permit);
        });
    }
}

pub(super) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// What answers the requests of one connection.
struct Endpoint {
    service: StreamableHttpService<Server, LocalSessionManager>,
    /// The server whose lane answers what it takes (`lane.rs`).
    lane: Server,
    listings: Arc<Listings>,
    access: Arc<Access>,
    sessions: Arc<LocalSessionManager>,
}

/// One request: the checks of SPEC §17 in order (one `Host`, the metadata, the
/// endpoint, `Origin`, the token, the session cap, the body read in bounded time),
/// then the protocol: the lane's, or rmcp's.
async fn route(request: Request<Incoming>, endpoint: &Endpoint) -> Response<Body> {
    let Endpoint { service, lane, listings, access, sessions } = endpoint;
    if request.headers().get_all(hyper::header::HOST).iter().count() > 1 {
        return plain(StatusCode::BAD_REQUEST, "more than one Host header");
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
    if let Some(auth) = &access.auth {
        let headers: Vec<Vec<u8>> =
            parts.headers.get_all(hyper::header::AUTHORIZATION).iter().map(|value| value.as_bytes().to_vec()).collect();
        let checking = Arc::clone(auth);
        let checked = tokio::task::spawn_blocking(move || {
            let headers: Vec<&[u8]> = headers.iter().map(Vec::as_slice).collect();
            checking.check(&headers)
        })
        .await
        .unwrap_or_else(|_| Err(Refusal::Unauthorized("the check failed".to_string())));
        match checked {
            Ok(caller) => {
                parts.extensions.insert(caller);
            }
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
    let session = parts.headers.get("mcp-session-id").and_then(|id| id.to_str().ok());
    if parts.method == hyper::Method::DELETE
        && let Some(session) = session
        && !sessions.sessions.read().await.contains_key(session)
    {
        return plain(StatusCode::NOT_FOUND, "no such session");
    }
    let new_session = parts.method == hyper::Method::POST && session.is_none();
    if new_session && sessions.sessions.read().await.len() >= MAX_SESSIONS {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "too many sessions; try again when some have closed");
    }
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
    if let Some(answered) = lane::answer(lane, sessions, &parts, &body, access.loopback).await {
        return answered;
    }
    let response = service.handle(Request::from_parts(parts, Full::new(body))).await;
    response.map(|body| SplicingBody::new(body, Arc::clone(listings)).boxed())
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
