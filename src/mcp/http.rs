//! `lcp serve --http ADDR`: Streamable HTTP on one address, endpoint `/mcp`.
//!
//! rmcp's `StreamableHttpService` does the protocol (sessions for handshake clients,
//! stateless requests for handshake-less ones); this file only accepts connections
//! (with `TCP_NODELAY`: replies are small and latency-bound), routes the path, and
//! puts the kept tool list into `tools/list` responses (`listing`).
//! On a loopback address, `Host` must be a loopback name (DNS rebinding) and a
//! browser's `Origin`, when there is one, a loopback origin (another site's page);
//! clients that send no `Origin` are unaffected. Binding any other address is an
//! explicit choice to be reachable, so both guards are lifted.

use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

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

/// Serves `server` on `address`, printing where on stderr; returns only when the
/// address cannot be bound.
pub(super) async fn serve(server: Server, address: SocketAddr, listings: Arc<Listings>) -> Result<(), ServeError> {
    let cannot_serve = |error| ServeError::Http { address, error };
    let listener = TcpListener::bind(address).await.map_err(cannot_serve)?;
    let bound = listener.local_addr().map_err(cannot_serve)?;
    let config = if address.ip().is_loopback() {
        StreamableHttpServerConfig::default().with_allowed_origins(LOOPBACK_ORIGINS)
    } else {
        StreamableHttpServerConfig::default().disable_allowed_hosts()
    };
    let service =
        StreamableHttpService::new(move || Ok(server.new_session()), Arc::new(LocalSessionManager::default()), config);
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
        let service = service.clone();
        let listings = Arc::clone(&listings);
        tokio::spawn(async move {
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let listings = Arc::clone(&listings);
                async move {
                    if request.uri().path() == PATH {
                        let response = service.handle(request).await;
                        Ok::<_, Infallible>(response.map(|body| SplicingBody::new(body, listings).boxed()))
                    } else {
                        Ok(not_found())
                    }
                }
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), route).await;
        });
    }
}

fn not_found() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut response =
        Response::new(Full::new(Bytes::from(format!("not found: the MCP endpoint is {PATH}\n"))).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
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
