//! SPEC §14 through `lcp serve --http` as a gateway: a handshake session's calls of the
//! tools of an MCP server carry what the server asks and tells both ways, to the caller
//! whose call it belongs to, and are cancelled on the server when their client cancels
//! them. The servers are server-everything and the official Python SDK's; the client
//! is the SDK's, or raw HTTP where the wire itself is checked.

use std::path::Path;

use serde_json::{Value, json};

use crate::auth::{header, initialize, post};
use crate::mcp::{HttpServer, MODES};
use crate::sources::{FOLDER, Listening, ask_server_everything_through, hear_chatty_through, servers_config};
use crate::support::*;

#[test]
fn a_sessions_calls_through_the_gateway_carry_what_the_server_asks_and_tells_both_ways() {
    let mark = "gateway-bridged";
    let everything = Listening::start_on_free_port(everything_on, mark);
    let everything_port = everything.port;
    let sdk = Listening::sdk(mark);
    let sdk_port = sdk.port;
    let config = servers_config(
        mark,
        &format!(
            "[mcp_servers.everything]\nurl = \"http://127.0.0.1:{everything_port}/mcp\"\n\n\
             [mcp_servers.crashy]\nurl = \"http://127.0.0.1:{sdk_port}/mcp\"\n"
        ),
    );
    let gateway = HttpServer::start(&["--config", &config, FOLDER]);
    // Elicitation and sampling go to the downstream client and its answers come back;
    // progress reaches it (a handshake session, and the handshake-less protocol).
    for mode in MODES {
        ask_server_everything_through(mode, &["--url", &gateway.url]);
    }
    // The server's log line and progress reports, on the call's own stream.
    hear_chatty_through(&["--url", &gateway.url]);
    drop(gateway);
    drop((everything, sdk));
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

/// A handshake session with the server at `url`: its `Mcp-Session-Id`.
fn open_session(url: &str) -> String {
    let (status, headers, reply) = post(url, None, None, initialize());
    assert_eq!(status, 200, "{reply}");
    let session = header(&headers, "mcp-session-id").to_string();
    assert!(!session.is_empty(), "initialize opens a session");
    let (status, _, _) =
        post(url, None, Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(status, 202);
    session
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// `marker` followed by `suffix`, as the SDK server's `wait_for_cancel` writes it.
fn marked(marker: &str, suffix: &str) -> bool {
    wait_for_file(Path::new(&format!("{marker}.{suffix}")))
}

#[test]
fn a_forwarded_call_is_answered_in_its_session_and_a_cancelled_one_is_cancelled_on_the_server() {
    let mark = "gateway-cancel";
    let upstream = Listening::sdk(mark);
    let port = upstream.port;
    let config = servers_config(mark, &format!("[mcp_servers.crashy]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"));
    let gateway = HttpServer::start(&["--config", &config, FOLDER]);
    let url = gateway.url.clone();
    let session = open_session(&url);

    // A session's call is answered on its request's event stream.
    let (status, headers, reply) = post(&url, None, Some(&session), call(2, "pid", json!({})));
    assert_eq!((status, header(&headers, "content-type")), (200, "text/event-stream"), "{reply}");
    assert_eq!(reply["id"], 2, "{reply}");
    let pid = reply["result"]["structuredContent"]["result"].clone();
    assert!(pid.is_u64(), "{reply}");
    assert!(reply["result"].get("resultType").is_none(), "a session's result keeps its protocol's shape: {reply}");
    // A Python file's tool in the same session: an event stream, as every call's.
    let (status, headers, reply) = post(&url, None, Some(&session), call(3, "tool_folder_only", json!({"x": 4})));
    assert_eq!((status, header(&headers, "content-type")), (200, "text/event-stream"), "{reply}");
    assert_eq!(reply["result"]["structuredContent"], json!({"result": 4}), "{reply}");
    // Arguments are checked against the server's schema before anything is sent.
    let (_, _, reply) = post(&url, None, Some(&session), call(4, "wait_for_cancel", json!({"marker": 5})));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("invalid arguments for `wait_for_cancel`"), "{reply}");

    // Cancelled by its client: the server hears of it, and the request is not answered.
    let marker = temp_dir(mark).join("cancelled").display().to_string();
    let waiting = {
        let (url, session, marker) = (url.clone(), session.clone(), marker.clone());
        std::thread::spawn(move || {
            post(&url, None, Some(&session), call(5, "wait_for_cancel", json!({"marker": marker})))
        })
    };
    assert!(marked(&marker, "started"), "the call never reached the server");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}});
    let (status, _, _) = post(&url, None, Some(&session), cancel);
    assert_eq!(status, 202);
    assert!(marked(&marker, "cancelled"), "the server was never told the call was cancelled");
    let (status, _, reply) = waiting.join().expect("the cancelled call's exchange ends");
    assert_eq!((status, reply), (200, Value::Null), "the cancelled call was answered");

    // The same server process goes on answering, in the same session.
    let (_, _, reply) = post(&url, None, Some(&session), call(7, "pid", json!({})));
    assert_eq!(reply["result"]["structuredContent"]["result"], pid, "{reply}");
    drop(gateway);
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn a_session_used_only_for_forwarded_calls_stays_open_and_an_unused_one_closes_after_session_idle() {
    let mark = "gateway-idle";
    let upstream = Listening::sdk(mark);
    let port = upstream.port;
    let config = servers_config(
        mark,
        &format!("[mcp]\nsession_idle = 2\n\n[mcp_servers.crashy]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"),
    );
    let gateway = HttpServer::start(&["--config", &config, FOLDER]);
    let (used, unused) = (open_session(&gateway.url), open_session(&gateway.url));
    // Three idle times of calls that lcp answers itself, nothing passing through rmcp.
    for id in 0..12 {
        let (status, _, reply) = post(&gateway.url, None, Some(&used), call(id, "pid", json!({})));
        assert_eq!(status, 200, "call {id}: {reply}");
        assert!(reply["result"]["structuredContent"]["result"].is_u64(), "call {id}: {reply}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (status, _, reply) = post(&gateway.url, None, Some(&unused), call(12, "pid", json!({})));
    assert_eq!(status, 404, "the unused session was closed: {reply}");
    drop(gateway);
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[test]
fn a_stdio_servers_questions_and_logs_reach_the_caller_whose_call_asked_them() {
    let mark = "gateway-routed";
    let python = test_python().display().to_string();
    let script = root().join("tests/python/asking_mcp_server.py").display().to_string();
    // Its calls take turns (one stream for all): the second waits for the first.
    let server = format!(
        "command = {python:?}\nargs = [{script:?}]\nenv = {{ LCP_TEST_MARK = {mark:?}, LCP_TEST_OVERLAP_WAIT = \"0\" }}\n"
    );
    two_callers_get_their_own_questions_and_logs(mark, &server, 1, &[]);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

/// Over Streamable HTTP (plain, and with credentials in the URL), the two calls run at
/// once, each told apart by the response stream of its request.
#[test]
fn an_http_servers_questions_and_logs_reach_the_caller_whose_call_asked_them() {
    let mark = "gateway-routed-http";
    let upstream = Listening::sdk_script("tests/python/asking_mcp_server.py", mark);
    let port = upstream.port;
    for url in [format!("http://127.0.0.1:{port}/mcp"), format!("http://user:pass@127.0.0.1:{port}/mcp")] {
        two_callers_get_their_own_questions_and_logs(mark, &format!("url = {url:?}\n"), 2, &[]);
    }
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

/// Over https, the same: the server's certificate is signed by a CA made for the test,
/// which the gateway trusts through `SSL_CERT_FILE`.
#[test]
fn an_https_servers_questions_and_logs_reach_the_caller_whose_call_asked_them() {
    let mark = "gateway-routed-https";
    let tls = certificate_for_loopback(&temp_dir(mark));
    let upstream = Listening::sdk_script_with(
        "tests/python/asking_mcp_server.py",
        mark,
        &[("LCP_TEST_TLS_CERT", &tls.certificate), ("LCP_TEST_TLS_KEY", &tls.key)],
    );
    let url = format!("https://127.0.0.1:{}/mcp", upstream.port);
    let trust = [("SSL_CERT_FILE", tls.authority.as_str())];
    two_callers_get_their_own_questions_and_logs(mark, &format!("url = {url:?}\n"), 2, &trust);
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

/// A certificate for `127.0.0.1` and its key, and the CA that signed it (PEM files).
struct Tls {
    authority: String,
    certificate: String,
    key: String,
}

/// Makes a CA and a server certificate for `127.0.0.1` in `dir`, with `openssl`.
fn certificate_for_loopback(dir: &Path) -> Tls {
    let file = |name: &str| dir.join(name).display().to_string();
    let extensions = dir.join("server.ext");
    std::fs::write(
        &extensions,
        "subjectAltName = IP:127.0.0.1\nbasicConstraints = CA:FALSE\nkeyUsage = digitalSignature, keyEncipherment\n\
         extendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    let openssl = |args: &[&str]| {
        let made = std::process::Command::new(debian_program("openssl")).args(args).output().expect("openssl runs");
        assert!(made.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&made.stderr));
    };
    let (ca_key, ca, key, request, certificate) =
        (file("ca.key"), file("ca.pem"), file("server.key"), file("server.csr"), file("server.pem"));
    let extensions = extensions.display().to_string();
    let subject = "/CN=lcp test CA";
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", subject, "-keyout", &ca_key, "-out",
        &ca,
    ]);
    openssl(&["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", &key, "-out", &request]);
    openssl(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-CAcreateserial",
        "-in",
        &request,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-extfile",
        &extensions,
        "-out",
        &certificate,
    ]);
    Tls { authority: ca, certificate, key }
}

/// Two clients call the tool `ask` of the server `[mcp_servers.asker]` (`server`: the
/// table's body) through one gateway at once, each answering its questions with its
/// own name: each is asked only its own question, hears only its own logs, and its
/// result carries its own answer and how many of the server's calls were in progress
/// at once (`at_once`: 2 when they overlap, 1 when they take turns). The gateway runs
/// with `env` added.
fn two_callers_get_their_own_questions_and_logs(mark: &str, server: &str, at_once: usize, env: &[(&str, &str)]) {
    let config = servers_config(mark, &format!("[mcp_servers.asker]\n{server}"));
    let gateway = HttpServer::start_with("127.0.0.1:0", &["--config", &config, FOLDER], env);
    let client = |who: &str| {
        let mut command = std::process::Command::new(test_python());
        command
            .arg(root().join("tests/python/mcp_client_session.py"))
            .args(["--mode", "legacy", "--elicit", "accept", "--log-level", "info"])
            .args(["--content", &json!([{"name": who}]).to_string(), "--url", &gateway.url])
            .current_dir(root());
        let steps = json!([{"call": "ask", "arguments": {"tag": who}}]).to_string();
        std::thread::spawn(move || output_within(&mut command, steps.as_bytes(), std::time::Duration::from_secs(120)))
    };
    let (first, second) = (client("alice"), client("bob"));
    for (who, output) in [("alice", first.join().unwrap()), ("bob", second.join().unwrap())] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{who}'s client failed ({server}): {stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
        let result = &report["results"][0];
        let expected = format!("{who} was answered by {who} ({at_once} at once)");
        assert_eq!(result["content"][0]["text"], expected, "{who}: {report}");
        let asked = report["elicitations"].to_string();
        assert!(asked.contains(&format!("who asked for {who}?")), "{who} was asked another's question: {asked}");
        let other = if who == "alice" { "bob" } else { "alice" };
        assert!(!asked.contains(other), "{who} was asked {other}'s question: {asked}");
        let logs = report["logs"].to_string();
        assert!(logs.contains(&format!("working for {who}")), "{who} did not hear its own log ({server}): {logs}");
        assert!(!logs.contains(&format!("working for {other}")), "{who} heard {other}'s log: {logs}");
    }
    drop(gateway);
}
