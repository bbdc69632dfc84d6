//! SPEC §16-§17, `lcp serve --http`: callers are bound to their work and cannot lock
//! others out. A `requestState` names its caller and its call, and a retry is admitted
//! before its parked call resumes; a session or a task is its caller's alone; the
//! session cap ends the least recently used idle session instead of refusing, and
//! never counts handshake-less requests; a connection ends after a 401; one peer, or
//! callers without a token, cannot take every connection; one `Origin` only.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::auth::{address_of, exchange, header, initialize, post, post_as};
use crate::mcp::HttpServer;
use crate::support::*;

const ALICE: &str = "the-static-token-of-alice";
const BOB: &str = "the-static-token-of-bob";

/// The tools of these tests: one that asks the user and then tells a secret (and
/// leaves `answered.txt` in the workspace), another, and one that runs as a task.
fn tools(folder: &Path) -> PathBuf {
    let tools = folder.join("tools");
    write(
        &tools.join("asking.py"),
        "def tool_ask_secret(question: str = \"Region?\", user_interaction_handler=None) -> dict:\n    \
         \"\"\"Asks the user a question, then tells the secret of the answer.\"\"\"\n    \
         answer = user_interaction_handler({\"type\": \"select\", \"title\": \"Q\", \"prompt\": question, \
         \"options\": [\"eu\", \"us\"], \"default\": None})\n    \
         with open(\"answered.txt\", \"w\") as out:\n        out.write(str(answer))\n    \
         return {\"secret\": f\"the vault code of {answer}\"}\n\n\n\
         def tool_other() -> str:\n    \"\"\"Another tool.\"\"\"\n    return \"other\"\n",
    );
    write(
        &tools.join("slow.py"),
        "import time\n\nTOOL_POLICY = {\"task\": \"optional\"}\n\n\n\
         def tool_slow(seconds: float = 3.0) -> str:\n    \"\"\"Long work.\"\"\"\n    \
         time.sleep(seconds)\n    return \"the private result\"\n",
    );
    tools
}

fn hex_sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A server of [`tools`] with `extra` config, whose static tokens are [`ALICE`]'s and [`BOB`]'s.
fn serve_with_tokens(name: &str, extra: &str) -> (HttpServer, PathBuf) {
    let folder = temp_dir(name);
    let tools = tools(&folder);
    write(&folder.join("tokens.sha256"), format!("{}\n{}\n", hex_sha256(ALICE), hex_sha256(BOB)));
    let config = folder.join("lcp.toml");
    write(&config, format!("[auth]\ntokens_file = \"tokens.sha256\"\n{extra}"));
    let server = HttpServer::start(&[
        tools.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--workspace",
        folder.to_str().unwrap(),
    ]);
    (server, folder)
}

/// A handshake-less request (2026-07-28) of `method` on `name`, from a client that
/// takes elicitation and tasks, as `token`.
fn handshake_less(url: &str, token: Option<&str>, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params["name"].as_str().or(params["taskId"].as_str()).unwrap_or_default().to_string();
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method), ("mcp-name", &name)];
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    post_as(&headers, url, token, None, message).2
}

/// A `tools/call` of `tool_ask_secret` with `extra` params (a retry's state and answers).
fn ask(url: &str, token: Option<&str>, id: u64, question: &str, extra: Value) -> Value {
    let mut params = json!({"name": "tool_ask_secret", "arguments": {"question": question}});
    for (key, value) in extra.as_object().into_iter().flatten() {
        params[key] = value.clone();
    }
    handshake_less(url, token, id, "tools/call", params)
}

fn answer() -> Value {
    json!({"lcp": {"action": "accept", "content": {"answer": "us"}}})
}

#[test]
fn a_request_state_of_another_caller_is_refused() {
    let (server, folder) = serve_with_tokens("callers-state", "");
    let url = &server.url;
    let asked = ask(url, Some(ALICE), 1, "Region?", json!({}))["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].clone();
    let retry = json!({"requestState": state, "inputResponses": answer()});

    // Bob, with Alice's state and an answer: refused, and Alice's call goes on waiting.
    let stolen = ask(url, Some(BOB), 2, "Region?", retry.clone());
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    assert!(stolen["error"]["message"].as_str().unwrap_or_default().contains("another caller"), "{stolen}");
    assert!(stolen.to_string().find("vault code").is_none(), "{stolen}");
    assert!(!folder.join("answered.txt").exists(), "Bob's answer reached Alice's call");

    // Alice's own state, with other arguments: refused too.
    let changed = ask(url, Some(ALICE), 3, "Another question?", retry.clone());
    assert!(changed["error"]["message"].as_str().unwrap_or_default().contains("other arguments"), "{changed}");

    // Alice, as she was asked: her call ends with her secret.
    let done = ask(url, Some(ALICE), 4, "Region?", retry)["result"].clone();
    assert_eq!(done["structuredContent"]["secret"], "the vault code of us", "{done}");
}

#[test]
fn a_parked_call_resumes_only_after_admission() {
    let folder = temp_dir("callers-admission");
    let tools = tools(&folder);
    let config = folder.join("lcp.toml");
    write(&config, "[profiles.asker]\ntools = [\"tool_ask_secret\", \"tool_other\"]\n");
    let server = HttpServer::start(&[
        tools.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--profile",
        "asker",
        "--workspace",
        folder.to_str().unwrap(),
    ]);
    let asked = ask(&server.url, None, 1, "Region?", json!({}))["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");

    // The operator takes the tool out of the profile while the call waits for its answer.
    std::thread::sleep(Duration::from_millis(1100));
    write(&config, "[profiles.asker]\ntools = [\"tool_other\"]\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    let listed = loop {
        let listed = handshake_less(&server.url, None, 2, "tools/list", json!({}));
        let names = listed["result"]["tools"].to_string();
        if !names.contains("tool_ask_secret") || Instant::now() > deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!listed.contains("tool_ask_secret"), "the changed profile was not read: {listed}");

    let retry = json!({"requestState": asked["requestState"], "inputResponses": answer()});
    let refused = ask(&server.url, None, 3, "Region?", retry);
    assert!(refused.get("error").is_some(), "the parked call resumed though its tool is no longer admitted: {refused}");
    assert!(!refused.to_string().contains("vault code"), "{refused}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!folder.join("answered.txt").exists(), "the tool went on after its question");
}

#[test]
fn another_callers_session_is_not_found() {
    let (server, _folder) = serve_with_tokens("callers-session", "");
    let url = &server.url;
    let (status, headers, _) = post(url, Some(ALICE), None, initialize());
    assert_eq!(status, 200);
    let session = header(&headers, "mcp-session-id").to_string();
    assert!(!session.is_empty(), "{headers:?}");
    post(url, Some(ALICE), Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    // Bob names Alice's session: a POST, a GET (its stream) and a DELETE find nothing.
    let (status, _, reply) = post(url, Some(BOB), Some(&session), list.clone());
    assert_eq!(status, 404, "{reply}");
    let address = address_of(url);
    let request = |method: &str, token: &str| {
        format!(
            "{method} /mcp HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             authorization: Bearer {token}\r\nmcp-session-id: {session}\r\nconnection: close\r\n\r\n"
        )
    };
    assert_eq!(exchange(&address, &request("DELETE", BOB)).0, 404, "Bob ended Alice's session");
    let mut stream = TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request("GET", BOB).as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 404", "Bob opened Alice's stream");

    // Alice's session is still hers, whole.
    let (status, _, listed) = post(url, Some(ALICE), Some(&session), list);
    assert_eq!(status, 200, "{listed}");
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
    let (status, _, _) = exchange(&address, &request("DELETE", ALICE));
    assert!(status == 200 || status == 202 || status == 204, "Alice cannot end her session: {status}");
}

/// An issuer's key set on loopback (any path), until dropped.
struct Keys {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Keys {
    fn serve() -> Keys {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let jwks = std::fs::read_to_string(fixture("auth/jwks.json")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = stream.read(&mut [0u8; 4096]);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{jwks}",
                    jwks.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Keys { url, stop, thread: Some(thread) }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const ISSUER: &str = "https://issuer.test/";
const RESOURCE: &str = "https://tools.test/mcp";

/// A token of `subject` with `scope`, signed with the issuer's RSA key.
fn jwt(subject: &str, scope: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims =
        json!({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "exp": now + 600, "nbf": now - 10, "scope": scope});
    let pem = std::fs::read(fixture("auth/rsa.pem")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap();
    let header = jsonwebtoken::Header {
        kid: Some("rsa-1".to_string()),
        ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256)
    };
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

#[test]
fn another_subjects_task_is_not_found() {
    let keys = Keys::serve();
    let extra = format!(
        "issuer = \"{ISSUER}\"\nresource = \"{RESOURCE}\"\njwks_uri = \"{}\"\n\n[auth.scopes]\n\"tools:slow\" = \"slow\"\n\n\
         [profiles.slow]\ntools = [\"tool_slow\"]\n",
        keys.url
    );
    let (server, _folder) = serve_with_tokens("callers-tasks", &extra);
    let url = &server.url;
    let (ada, eve) = (jwt("ada", "tools:slow"), jwt("eve", "tools:slow"));
    let created =
        handshake_less(url, Some(&ada), 1, "tools/call", json!({"name": "tool_slow", "arguments": {"seconds": 2.0}}));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string();

    // Eve, same scope, another subject: no such task, whatever she asks of it.
    for (id, method) in [(2, "tasks/get"), (3, "tasks/update"), (4, "tasks/cancel")] {
        let mut params = json!({"taskId": task});
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let refused = handshake_less(url, Some(&eve), id, method, params);
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("no task"), "{refused}");
    }
    // A static token (no subject, no profile) is another caller too.
    let refused = handshake_less(url, Some(ALICE), 5, "tasks/get", json!({"taskId": task}));
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("no task"), "{refused}");

    // Ada's task was neither cancelled nor shown to anyone else: it ends with her result.
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let got = handshake_less(url, Some(&ada), 6, "tasks/get", json!({"taskId": task}))["result"].clone();
        if got["status"] != "working" || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "the private result", "{done}");
}

#[test]
fn a_token_of_another_profile_cannot_use_a_session_of_its_subject() {
    let keys = Keys::serve();
    let extra = format!(
        "issuer = \"{ISSUER}\"\nresource = \"{RESOURCE}\"\njwks_uri = \"{}\"\n\n[auth.scopes]\n\"tools:slow\" = \"slow\"\n\
         \"tools:other\" = \"other\"\n\n[profiles.slow]\ntools = [\"tool_slow\"]\n\n[profiles.other]\ntools = [\"tool_other\"]\n",
        keys.url
    );
    let (server, _folder) = serve_with_tokens("callers-profile", &extra);
    let url = &server.url;
    let (slow, other) = (jwt("ada", "tools:slow"), jwt("ada", "tools:other"));
    let (status, headers, _) = post(url, Some(&slow), None, initialize());
    assert_eq!(status, 200);
    let session = header(&headers, "mcp-session-id").to_string();
    post(url, Some(&slow), Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let address = address_of(url);
    let request = |method: &str, token: &str| {
        format!(
            "{method} /mcp HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             authorization: Bearer {token}\r\nmcp-session-id: {session}\r\nconnection: close\r\n\r\n"
        )
    };
    // Its stream and its end are refused to a token that chose another profile.
    let (status, _, reply) = exchange(&address, &request("GET", &other));
    assert_eq!(status, 403, "{reply}");
    let (status, _, reply) = exchange(&address, &request("DELETE", &other));
    assert_eq!(status, 403, "{reply}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_, _, listed) = post(url, Some(&slow), Some(&session), list);
    assert_eq!(listed["result"]["tools"][0]["name"], "tool_slow", "{listed}");
}

/// `count` sessions opened and left (each on its own connection); their ids.
fn open_sessions(url: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|_| {
            let (status, headers, reply) = post(url, None, None, initialize());
            assert_eq!(status, 200, "{reply}");
            header(&headers, "mcp-session-id").to_string()
        })
        .collect()
}

/// The status of a `tools/list` in `session`.
fn list_in(url: &str, session: &str) -> u16 {
    post(url, None, Some(session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    post(url, None, Some(session), json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})).0
}

#[test]
fn handshake_less_requests_are_never_refused_for_the_session_cap() {
    let folder = temp_dir("callers-cap-handshake-less");
    let server = HttpServer::start(&[tools(&folder).to_str().unwrap(), "--workspace", folder.to_str().unwrap()]);
    let sessions = open_sessions(&server.url, lcp::mcp::http::MAX_SESSIONS);
    // The cap is reached: requests without a session are served, and cost no session.
    for id in 0..40 {
        let listed = handshake_less(&server.url, None, id, "tools/list", json!({}));
        assert!(listed["result"]["tools"].is_array(), "{listed}");
    }
    assert_eq!(list_in(&server.url, &sessions[0]), 200, "a handshake-less request ended a session");
}

#[test]
fn past_the_session_cap_the_least_recently_used_idle_session_ends() {
    let folder = temp_dir("callers-cap-lru");
    let server = HttpServer::start(&[tools(&folder).to_str().unwrap(), "--workspace", folder.to_str().unwrap()]);
    let url = &server.url;
    let sessions = open_sessions(url, lcp::mcp::http::MAX_SESSIONS);
    // The oldest is used again; the second oldest has a stream open (busy, not idle).
    assert_eq!(list_in(url, &sessions[0]), 200);
    post(url, None, Some(&sessions[1]), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let address = address_of(url);
    let mut stream = TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         mcp-session-id: {}\r\n\r\n",
        sessions[1]
    );
    stream.write_all(get.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the stream of a session");

    // Past the cap, a new session is opened: the least recently used idle one ended.
    let opened = open_sessions(url, 2);
    assert_eq!(list_in(url, &opened[0]), 200);
    assert_eq!(list_in(url, &sessions[2]), 404, "the least recently used idle session goes first");
    assert_eq!(list_in(url, &sessions[3]), 404, "then the next");
    assert_eq!(list_in(url, &sessions[0]), 200, "a session used again is kept");
    assert_eq!(list_in(url, &sessions[1]), 200, "a session with a stream open is kept");
    assert_eq!(list_in(url, &sessions[4]), 200, "only as many end as new ones came");
}

#[test]
fn a_connection_is_closed_after_a_401() {
    let (server, _folder) = serve_with_tokens("callers-401", "");
    let address = address_of(&server.url);
    let body = initialize().to_string();
    // A keep-alive request without a token.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let started = Instant::now();
    let mut reply = Vec::new();
    let ended = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    assert!(reply.to_ascii_lowercase().contains("connection: close"), "{reply}");
    assert!(ended.is_ok(), "the connection was kept open after a 401 ({:?}): {reply}", started.elapsed());
}

/// A connection to `to` from the loopback address `source` (any of 127.0.0.0/8).
fn connect_from(source: Ipv4Addr, to: SocketAddrV4) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let address = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let length = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket, owned by the stream at once; the addresses outlive the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let from = address(source, 0);
        if libc::bind(fd, (&raw const from).cast(), length) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let to = address(*to.ip(), to.port());
        if libc::connect(fd, (&raw const to).cast(), length) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

/// Of `streams`, how many the server answered or closed (refused), the rest being held.
fn refused_of(streams: &[TcpStream]) -> usize {
    std::thread::sleep(Duration::from_millis(500));
    streams
        .iter()
        .filter(|stream| {
            stream.set_nonblocking(true).unwrap();
            let mut buffer = [0u8; 64];
            let refused =
                !matches!((&**stream).read(&mut buffer), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock);
            stream.set_nonblocking(false).unwrap();
            refused
        })
        .count()
}

#[test]
fn unauthenticated_connections_cannot_take_every_slot() {
    let (server, _folder) = serve_with_tokens("callers-slots", "");
    let to: SocketAddrV4 = address_of(&server.url).parse().unwrap();
    let per_peer = lcp::mcp::http::MAX_CONNECTIONS_PER_PEER;
    // One peer holds at most its share.
    let first: Vec<TcpStream> = (0..per_peer + 16).map(|_| TcpStream::connect(to).unwrap()).collect();
    assert_eq!(refused_of(&first), 16, "connections of one peer past its cap");

    // Peers without a token hold every slot they can get...
    let mut held = first;
    for peer in 2..=10u8 {
        for _ in 0..per_peer {
            if let Ok(stream) = connect_from(Ipv4Addr::new(127, 0, 0, peer), to) {
                held.push(stream);
            }
        }
    }
    // ...and a caller with a token is still served, from a peer of its own.
    let mut client = connect_from(Ipv4Addr::new(127, 0, 0, 11), to).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = initialize().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {to}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         authorization: Bearer {ALICE}\r\nmcp-protocol-version: 2025-06-18\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let _ = client.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "a caller with a token was kept out: {reply}");
    drop(held);
}

#[test]
fn two_origin_headers_are_refused() {
    let folder = temp_dir("callers-origin");
    let server = HttpServer::start(&[tools(&folder).to_str().unwrap(), "--workspace", folder.to_str().unwrap()]);
    let address = address_of(&server.url);
    let body = initialize().to_string();
    let request = |origins: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {address}\r\n{origins}content-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let (status, _, reply) = exchange(&address, &request("origin: http://localhost:3000\r\n"));
    assert_eq!(status, 200, "one loopback Origin is served: {reply}");
    let two = "origin: http://localhost:3000\r\norigin: http://attacker.example\r\n";
    let (status, _, reply) = exchange(&address, &request(two));
    assert_eq!(status, 403, "{reply}");
}
