//! SPEC §17, HTTP: `lcp serve --http` as an OAuth 2.1 resource server. The test is
//! the issuer: it serves metadata and a JWKS on loopback and signs tokens with the
//! keys of `fixtures/auth/` (valid ones, expired ones, for another audience or
//! issuer, with an unknown key, unsigned); scopes choose profiles; static tokens
//! serve one user; an address other machines reach needs credentials; one `Host`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::mcp::HttpServer;
use crate::support::*;

const RESOURCE: &str = "https://tools.test/mcp";
const STATIC_TOKEN: &str = "a-static-token-for-one-user";

/// A loopback issuer: its RFC 8414 metadata and its JWKS, until dropped.
struct Issuer {
    url: String,
    jwks_fetches: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Issuer {
    fn start() -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap();
        let url = format!("http://{address}/");
        let jwks = std::fs::read_to_string(fixture("auth/jwks.json")).unwrap();
        let metadata = json!({"issuer": url, "jwks_uri": format!("http://{address}/jwks")}).to_string();
        let (jwks_fetches, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (fetches, stopping) = (Arc::clone(&jwks_fetches), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = [0u8; 4096];
                let read = stream.read(&mut request).unwrap_or(0);
                let line = String::from_utf8_lossy(&request[..read]).lines().next().unwrap_or_default().to_string();
                let body = if line.starts_with("GET /.well-known/oauth-authorization-server") {
                    Some(metadata.clone())
                } else if line.starts_with("GET /jwks") {
                    fetches.fetch_add(1, Ordering::Relaxed);
                    Some(jwks.clone())
                } else {
                    None
                };
                let reply = match body {
                    Some(body) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                };
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Issuer { url, jwks_fetches, stop, thread: Some(thread) }
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A token signed with `key` (a file of `fixtures/auth/`) as `kid`.
fn token(key: &str, alg: Algorithm, kid: &str, claims: Value) -> String {
    let pem = std::fs::read(fixture(&format!("auth/{key}"))).unwrap();
    let key = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
        _ => EncodingKey::from_ed_pem(&pem),
    }
    .unwrap();
    let header = Header { kid: Some(kid.to_string()), ..Header::new(alg) };
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn claims(issuer: &str, extra: Value) -> Value {
    let mut claims = json!({"iss": issuer, "aud": RESOURCE, "sub": "ada", "exp": now() + 600, "nbf": now() - 10,
                            "scope": "tools:notes"});
    for (key, value) in extra.as_object().unwrap() {
        claims[key] = value.clone();
    }
    claims
}

/// A server over `default_tools/workspace_files` with `[auth]` for `issuer`.
fn serve(issuer: &str) -> (HttpServer, PathBuf) {
    let folder = temp_dir("auth-server");
    let digest = {
        use sha2::Digest;
        sha2::Sha256::digest(STATIC_TOKEN).iter().map(|byte| format!("{byte:02x}")).collect::<String>()
    };
    write(&folder.join("tokens.sha256"), format!("# the operator\n{digest}\n"));
    let config = folder.join("lcp.toml");
    write(
        &config,
        format!(
            "[profiles.notes]\ntools = [\"tool_list_files\"]\n\n[profiles.everything]\ntools = [\"tool_list_files\", \"tool_read_file\"]\n\n\
             [auth]\nissuer = \"{issuer}\"\nresource = \"{RESOURCE}\"\ntokens_file = \"tokens.sha256\"\n\n\
             [auth.scopes]\n\"tools:notes\" = \"notes\"\n\"tools:all\" = \"everything\"\n"
        ),
    );
    let server = HttpServer::start(&[
        "default_tools/workspace_files",
        "--config",
        config.to_str().unwrap(),
        "--workspace",
        folder.to_str().unwrap(),
    ]);
    (server, folder)
}

/// One HTTP/1.1 exchange: `(status, headers lowercased, body)`.
pub(crate) fn exchange(address: &str, request: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|line| line.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let body = if header(&headers, "transfer-encoding").eq_ignore_ascii_case("chunked") {
        unchunked(body)
    } else {
        body.to_string()
    };
    (status, headers, body)
}

/// The body of a chunked reply.
fn unchunked(mut body: &str) -> String {
    let mut whole = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        whole.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    whole
}

pub(crate) fn address_of(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap().to_string()
}

/// A JSON-RPC POST to `/mcp`, with the token when given; `(status, headers, the
/// JSON-RPC message of the reply when there is one)`.
pub(crate) fn post(
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    message: Value,
) -> (u16, Vec<(String, String)>, Value) {
    post_as(&[("mcp-protocol-version", "2025-06-18")], url, token, session, message)
}

/// [`post`] with these headers (`mcp-protocol-version` among them).
pub(crate) fn post_as(
    headers: &[(&str, &str)],
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    message: Value,
) -> (u16, Vec<(String, String)>, Value) {
    let address = address_of(url);
    let body = message.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         connection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(token) = token {
        request.push_str(&format!("authorization: Bearer {token}\r\n"));
    }
    if let Some(session) = session {
        request.push_str(&format!("mcp-session-id: {session}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let (status, headers, body) = exchange(&address, &request);
    let message = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .or_else(|| serde_json::from_str(body.trim()).ok())
        .unwrap_or(Value::Null);
    (status, headers, message)
}

pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "auth-test", "version": "1"}}})
}

pub(crate) fn header<'h>(headers: &'h [(String, String)], name: &str) -> &'h str {
    headers.iter().find(|(key, _)| key == name).map_or("", |(_, value)| value.as_str())
}

/// The tools a token sees: a session opened with it, then `tools/list`.
fn tools_seen(url: &str, token: &str) -> Vec<String> {
    let (status, headers, reply) = post(url, Some(token), None, initialize());
    assert_eq!(status, 200, "{reply}");
    let session = header(&headers, "mcp-session-id").to_string();
    let session = (!session.is_empty()).then_some(session.as_str());
    post(url, Some(token), session, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (status, _, listed) =
        post(url, Some(token), session, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(status, 200, "{listed}");
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tokens_are_checked_against_the_issuers_keys_and_scopes_choose_the_profile() {
    let issuer = Issuer::start();
    let (server, _folder) = serve(&issuer.url);
    let url = &server.url;

    // Signed by each kind of key the issuer publishes: accepted.
    for (key, alg, kid) in [
        ("rsa.pem", Algorithm::RS256, "rsa-1"),
        ("ec.pem", Algorithm::ES256, "ec-1"),
        ("ed25519.pem", Algorithm::EdDSA, "ed-1"),
    ] {
        let valid = token(key, alg, kid, claims(&issuer.url, json!({})));
        assert_eq!(tools_seen(url, &valid), vec!["tool_list_files"], "{kid}: scope tools:notes sees profile notes");
    }
    let all = token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"scope": "openid tools:all"})));
    assert_eq!(tools_seen(url, &all), vec!["tool_list_files", "tool_read_file"]);
    assert_eq!(tools_seen(url, STATIC_TOKEN).len(), 5, "a static token sees every tool");

    let refused = [
        ("expired", token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"exp": now() - 120})))),
        (
            "not yet valid",
            token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"nbf": now() + 600}))),
        ),
        (
            "wrong audience",
            token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"aud": "https://other.test/mcp"}))),
        ),
        ("wrong issuer", token("rsa.pem", Algorithm::RS256, "rsa-1", claims("https://evil.test/", json!({})))),
        ("unknown key", token("unpublished.pem", Algorithm::RS256, "other", claims(&issuer.url, json!({})))),
        (
            "a published kid, another key",
            token("unpublished.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({}))),
        ),
        ("alg none", unsigned(&claims(&issuer.url, json!({})))),
        ("not a token", "garbage".to_string()),
    ];
    for (why, token) in &refused {
        let (status, headers, _) = post(url, Some(token), None, initialize());
        assert_eq!(status, 401, "{why}");
        let challenge = header(&headers, "www-authenticate");
        assert!(
            challenge.starts_with("Bearer ")
                && challenge
                    .contains("resource_metadata=\"https://tools.test/.well-known/oauth-protected-resource/mcp\"")
                && challenge.contains("error=\"invalid_token\""),
            "{why}: {challenge}"
        );
    }
    let (status, headers, _) = post(url, None, None, initialize());
    assert_eq!(status, 401);
    assert!(!header(&headers, "www-authenticate").contains("error="), "no token is not an invalid one");

    let unscoped = token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"scope": "openid"})));
    let (status, headers, _) = post(url, Some(&unscoped), None, initialize());
    assert_eq!(status, 403);
    assert!(header(&headers, "www-authenticate").contains("error=\"insufficient_scope\""), "{headers:?}");

    // Keys are fetched once, and again for an unknown key at most once a minute.
    assert!(
        issuer.jwks_fetches.load(Ordering::Relaxed) <= 2,
        "{} fetches",
        issuer.jwks_fetches.load(Ordering::Relaxed)
    );

    let (status, headers, body) = exchange(
        &address_of(url),
        &format!(
            "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            address_of(url)
        ),
    );
    assert_eq!(status, 200, "{body}");
    assert!(header(&headers, "content-type").starts_with("application/json"));
    let metadata: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(metadata["resource"], RESOURCE);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["scopes_supported"], json!(["tools:all", "tools:notes"]));
}

/// An unsecured JWT (`alg: none`), as an attacker would write one.
fn unsigned(claims: &Value) -> String {
    format!("{}.{}.", base64url(br#"{"alg":"none","typ":"JWT"}"#), base64url(claims.to_string().as_bytes()))
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            text.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    text
}

#[test]
fn a_session_opened_with_one_profile_refuses_a_token_of_another() {
    let issuer = Issuer::start();
    let (server, _folder) = serve(&issuer.url);
    let notes = token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({})));
    let all = token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer.url, json!({"scope": "tools:all"})));
    let (_, headers, _) = post(&server.url, Some(&notes), None, initialize());
    let session = header(&headers, "mcp-session-id").to_string();
    let (_, _, listed) =
        post(&server.url, Some(&all), Some(&session), json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert!(listed["error"]["message"].as_str().unwrap_or_default().contains("another profile"), "{listed}");
}

#[test]
fn an_issuer_that_cannot_be_reached_refuses_every_token() {
    // Nothing listens there: the keys cannot be fetched, so nothing gets in.
    let gone = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let issuer = format!("http://{gone}/");
    let (server, _folder) = serve(&issuer);
    let valid = token("rsa.pem", Algorithm::RS256, "rsa-1", claims(&issuer, json!({})));
    let (status, headers, _) = post(&server.url, Some(&valid), None, initialize());
    assert_eq!(status, 401);
    assert!(header(&headers, "www-authenticate").contains("keys cannot be had"), "{headers:?}");
    assert_eq!(tools_seen(&server.url, STATIC_TOKEN).len(), 5, "static tokens need no issuer");
}

fn lcp_serve(args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"));
    command.arg("serve").args(args).current_dir(root());
    output_within(&mut command, b"", Duration::from_secs(60))
}

#[test]
fn an_address_other_machines_reach_needs_credentials_or_an_explicit_flag() {
    let output = lcp_serve(&["default_tools/workspace_files", "--http", "0.0.0.0:0", "--workspace", "fixtures"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("reachable from other machines") && stderr.contains("--allow-unauthenticated"), "{stderr}");

    // Allowed explicitly: served, with a warning, and browsers from other sites refused.
    let server = HttpServer::start_on(
        "0.0.0.0:0",
        &["default_tools/workspace_files", "--allow-unauthenticated", "--workspace", "fixtures"],
    );
    assert!(server.stderr_seen().contains("warning: --allow-unauthenticated"), "{}", server.stderr_seen());
    let port = server.url.rsplit(':').next().unwrap().trim_end_matches("/mcp").to_string();
    let address = format!("127.0.0.1:{port}");
    let body = initialize().to_string();
    let forged = format!(
        "POST /mcp HTTP/1.1\r\nhost: attacker.example\r\norigin: http://attacker.example\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, _, reply) = exchange(&address, &forged);
    assert_eq!(status, 403, "{reply}");
}

#[test]
fn on_loopback_a_request_with_two_host_headers_is_refused() {
    let server = HttpServer::start(&["default_tools/workspace_files", "--workspace", "fixtures"]);
    let address = address_of(&server.url);
    let body = initialize().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\nhost: attacker.example\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, _, reply) = exchange(&address, &request);
    assert_eq!(status, 400, "{reply}");
}

#[test]
fn a_body_that_is_not_json_is_a_json_rpc_parse_error() {
    let server = HttpServer::start(&["default_tools/workspace_files", "--workspace", "fixtures"]);
    let address = address_of(&server.url);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: 9\r\n\r\n{{\"broken\""
    );
    let (status, _, reply) = exchange(&address, &request);
    assert_eq!(status, 400, "{reply}");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
}
