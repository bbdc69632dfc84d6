//! `lcp serve`: the MCP server end to end, with the official Python MCP client
//! (`tests/python/mcp_client_*.py`, pinned in `requirements.txt`) and the MCP
//! Inspector CLI. `legacy` sessions use the `initialize` handshake; `auto` sessions
//! probe `server/discover` and use the handshake-less protocol (2026-07-28).
//! Fixtures: `fixtures/mcp/`, one folder per behaviour.

use std::io::{BufRead, BufReader, Write};
#[cfg(feature = "external")]
use std::process::Output;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// How long any one client run may take on a loaded machine before it fails.
const LIMIT: Duration = Duration::from_secs(600);
#[cfg(feature = "external")]
pub(crate) const MODES: [&str; 2] = ["legacy", "auto"];

pub(crate) fn lcp_bin() -> &'static str {
    env!("CARGO_BIN_EXE_lcp")
}

#[cfg(feature = "external")]
/// One session of `tests/python/mcp_client_session.py` against `lcp serve SERVE`
/// over stdio (or over HTTP when `serve` is `["--url", URL]`); its JSON report.
pub(crate) fn session(mode: &str, elicit: &str, serve: &[&str], steps: Value) -> Value {
    session_with(mode, &["--elicit", elicit], serve, steps)
}

#[cfg(feature = "external")]
/// [`session`] with more of the client's options (`--content`, `--sample`, `--log-level`).
pub(crate) fn session_with(mode: &str, client: &[&str], serve: &[&str], steps: Value) -> Value {
    let mut command = Command::new(test_python());
    command.arg(root().join("tests/python/mcp_client_session.py")).args(["--mode", mode]).args(client);
    match serve {
        ["--url", url] => command.args(["--url", url]),
        serve => command.args(["--", lcp_bin(), "serve"]).args(serve),
    };
    report(output_within(command.current_dir(root()), steps.to_string().as_bytes(), LIMIT))
}

#[cfg(feature = "external")]
fn report(output: Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed ({}):\n{stderr}", output.status);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("the client's report is not JSON ({err}); stderr:\n{stderr}"))
}

#[cfg(feature = "external")]
pub(crate) fn call(name: &str, arguments: Value) -> Value {
    json!({ "call": name, "arguments": arguments })
}

#[cfg(feature = "external")]
pub(crate) fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

#[cfg(feature = "external")]
pub(crate) fn assert_ok(result: &Value, structured: Value) {
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], structured, "{result}");
}

#[cfg(feature = "external")]
/// A handshake-less request refused for a client capability it did not declare
/// (SPEC §16): `MissingRequiredClientCapabilityError`, naming it.
pub(crate) fn assert_missing_capability(result: &Value, capability: &str) {
    assert_eq!(result["error"]["code"], -32021, "{result}");
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(capability) && message.contains("did not declare"), "{result}");
}

#[cfg(feature = "external")]
pub(crate) fn assert_error(result: &Value, needles: &[&str]) {
    assert_eq!(result["isError"], true, "{result}");
    for needle in needles {
        assert!(text(result).contains(needle), "`{needle}` is not in {}", text(result));
    }
}

#[cfg(feature = "external")]
#[test]
fn both_lifecycles_list_the_registrys_mcp_export() {
    let export = stdout_json(&lcp(&["export", "--format", "mcp", "--static", "fixtures/mcp/results"]));
    for mode in MODES {
        let report = session(mode, "none", &["fixtures/mcp/results"], json!(["list"]));
        assert_eq!(report["results"][0]["tools"], export["tools"], "{mode}");
        assert_eq!(report["server_info"]["name"], "lcp");
        assert_eq!(report["capabilities"]["tools"]["listChanged"], true);
        let handshake_less = report["protocol_version"] == "2026-07-28";
        assert_eq!(handshake_less, mode == "auto", "{mode}: {}", report["protocol_version"]);
    }
}

#[cfg(feature = "external")]
#[test]
fn tools_list_shows_the_descriptions_prompt_providers_give_on_every_list() {
    let report = session("legacy", "none", &["fixtures/runtime/providers"], json!(["list", "list"]));
    let description = |list: usize, name: &str| {
        let tools = report["results"][list]["tools"].as_array().unwrap();
        tools.iter().find(|tool| tool["name"] == name).unwrap()["description"].as_str().unwrap().to_string()
    };
    for list in [0, 1] {
        assert!(description(list, "tool_greet").starts_with("Greets someone (dynamic description"), "{report}");
        assert_eq!(description(list, "tool_broken"), "Static description of the broken one.");
    }
}

#[test]
fn a_tool_mcp_cannot_name_is_left_out_of_tools_list_with_an_error() {
    let dir = temp_dir("mcp-unnamable");
    let code = "def tool_ok() -> str:\n    \"\"\"Fine.\"\"\"\n    return 'ok'\n\n\ndef tool_café() -> str:\n    \"\"\"Not ASCII.\"\"\"\n    return 'no'\n";
    write(&dir.join("names.py"), code);
    let mut server = RawServer::start(&[dir.to_str().unwrap()]);
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<Value> =
        server.response(2)["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, ["tool_ok"]);
    let (_, stderr) = server.finish_with_stderr();
    assert!(stderr.contains("error: tool `tool_café` cannot be exported to mcp: its name has `é`"), "{stderr}");
}

#[cfg(feature = "external")]
#[test]
fn results_carry_the_output_as_json_text_and_structured_content() {
    for mode in MODES {
        let steps =
            json!([call("tool_add", json!({"a": 2, "b": 3})), call("tool_point", json!({"x": 1.5, "y": -2.5}))]);
        let report = session(mode, "none", &["fixtures/mcp/results"], steps);
        let [add, point] = [&report["results"][0], &report["results"][1]];
        assert_ok(add, json!({"result": 5}));
        assert_eq!(text(add), "5");
        assert_ok(point, json!({"x": 1.5, "y": -2.5}));
        assert_eq!(serde_json::from_str::<Value>(text(point)).unwrap(), json!({"x": 1.5, "y": -2.5}));
    }
}

#[cfg(feature = "external")]
#[test]
fn a_failing_tool_is_an_error_result_saying_what_went_wrong() {
    let steps = json!([
        call("tool_raise", json!({"message": "boom"})),
        call("tool_reported_failure", json!({})),
        call("tool_exit", json!({"code": 3})),
        call("tool_add", json!({"a": 1, "b": 2})),
    ]);
    for mode in MODES {
        let results = &session(mode, "none", &["fixtures/mcp/results"], steps.clone())["results"];
        assert_error(&results[0], &["ValueError", "boom", "Traceback"]);
        assert_error(&results[1], &["the disk is full"]);
        // An error result carries no structured content (SPEC §5), whatever the tool returned.
        for failed in [&results[0], &results[1], &results[2]] {
            assert!(failed.get("structuredContent").is_none_or(Value::is_null), "{failed}");
        }
        assert_error(&results[2], &["SystemExit"]);
        // `sys.exit` ended the call, not the server.
        assert_ok(&results[3], json!({"result": 3}));
    }
}

#[cfg(feature = "external")]
#[test]
fn invalid_arguments_are_an_error_result_naming_every_problem() {
    let steps = json!([call("tool_add", json!({"a": "two"})), call("tool_add", json!({"a": 1, "b": 2, "c": 3})),]);
    for mode in MODES {
        let results = &session(mode, "none", &["fixtures/mcp/results"], steps.clone())["results"];
        assert_error(&results[0], &["`a`", "`b`"]);
        assert_error(&results[1], &["`c`"]);
    }
}

#[cfg(feature = "external")]
#[test]
fn an_unknown_tool_is_a_protocol_error_naming_the_closest_tools() {
    for mode in MODES {
        let report = session(mode, "none", &["fixtures/mcp/results"], json!([call("tool_ad", json!({}))]));
        let error = &report["results"][0]["error"];
        assert_eq!(error["code"], -32602, "{error}");
        assert!(error["message"].as_str().unwrap().contains("did you mean `tool_add`"), "{error}");
    }
}

#[cfg(feature = "external")]
#[test]
fn nothing_a_tool_prints_reaches_the_protocol_stream() {
    let printed = ["print() to stdout", "sys.stdout.write", "os.write to fd 1", "a subprocess writing to its stdout"];
    for mode in MODES {
        let steps = json!([call("tool_noisy", json!({"text": "one"})), call("tool_noisy", json!({"text": "two"}))]);
        let results = &session(mode, "none", &["fixtures/mcp/printing"], steps)["results"];
        assert_ok(&results[0], json!({"echo": "one"}));
        assert_ok(&results[1], json!({"echo": "two"}));
        // What the tool printed comes back inside the result, as more text.
        let stdout = results[1]["content"][1]["text"].as_str().unwrap_or_default();
        assert!(stdout.starts_with("[the tool printed to stdout]"), "{}", results[1]);
        for line in printed {
            assert!(stdout.contains(line), "`{line}` is missing from {stdout}");
        }
    }
    // Byte for byte: every line on the server's real stdout is a JSON-RPC message.
    let mut server = RawServer::start(&["fixtures/mcp/printing"]);
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tool_noisy", "arguments": {"text": "raw"}}}));
    let response = server.response(2);
    assert_eq!(response["result"]["structuredContent"], json!({"echo": "raw"}));
    for line in server.finish().lines() {
        let message: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not a protocol message: {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

#[cfg(feature = "external")]
#[test]
fn libraries_with_a_same_named_helper_module_each_see_their_own() {
    let steps = json!([call("tool_alpha_helper", json!({})), call("tool_beta_helper", json!({}))]);
    for mode in MODES {
        let results = &session(mode, "none", &["fixtures/mcp/helpers"], steps.clone())["results"];
        assert_ok(&results[0], json!({"result": "alpha helper"}));
        assert_ok(&results[1], json!({"result": "beta helper"}));
    }
}

#[cfg(feature = "external")]
#[test]
fn init_tools_library_runs_once_across_calls_with_the_config_file() {
    let dir = temp_dir("mcp-config");
    let config = dir.join("lcp.toml");
    write(&config, "autonomy_level = \"safe\"\n\n[libraries.counted]\nkey = \"value\"\n");
    let steps = json!([
        call("tool_init_state", json!({})),
        call("tool_init_state", json!({})),
        call("tool_init_state", json!({}))
    ]);
    for mode in MODES {
        let report =
            session(mode, "none", &["fixtures/mcp/init_once", "--config", config.to_str().unwrap()], steps.clone());
        for result in report["results"].as_array().unwrap() {
            assert_ok(result, json!({"init_calls": 1, "config": {"key": "value", "autonomy_level": "safe"}}));
        }
    }
}

#[cfg(feature = "external")]
#[test]
fn a_confirmation_is_an_elicitation_accept_allows_and_decline_rejects() {
    let steps = json!([call("tool_delete", json!({"name": "notes.txt"}))]);
    for mode in MODES {
        let accepted = session(mode, "accept", &["fixtures/mcp/confirm"], steps.clone());
        assert_ok(&accepted["results"][0], json!({"deleted": "notes.txt", "decision": "allow"}));
        let message =
            accepted["elicitations"][0].as_str().unwrap_or_else(|| panic!("{mode}: no elicitation: {accepted}"));
        assert!(message.contains("Delete notes.txt for good?") && message.contains("delete a file"), "{message}");

        let declined = session(mode, "decline", &["fixtures/mcp/confirm"], steps.clone());
        assert_error(&declined["results"][0], &["not deleted", "declined"]);
        assert_eq!(declined["elicitations"].as_array().unwrap().len(), 1);
    }
}

#[cfg(feature = "external")]
#[test]
fn a_client_that_cannot_elicit_gets_reject_with_a_reason_unless_yes() {
    let steps = json!([call("tool_delete", json!({"name": "notes.txt"}))]);
    for mode in MODES {
        let refused = session(mode, "none", &["fixtures/mcp/confirm"], steps.clone());
        match mode {
            "legacy" => assert_error(&refused["results"][0], &["not deleted", "elicitation", "--yes"]),
            // A handshake-less request declares its client's capabilities (SPEC §16).
            _ => assert_missing_capability(&refused["results"][0], "elicitation"),
        }
        let allowed = session(mode, "none", &["fixtures/mcp/confirm", "--yes"], steps.clone());
        assert_ok(&allowed["results"][0], json!({"deleted": "notes.txt", "decision": "allow"}));
    }
}

#[cfg(feature = "external")]
#[test]
fn a_file_dropped_into_a_served_folder_sends_list_changed_and_is_callable() {
    for http in [false, true] {
        for mode in MODES {
            let folder = temp_dir("mcp-dropped");
            let server = http.then(|| HttpServer::start(&[folder.to_str().unwrap()]));
            let mut command = Command::new(test_python());
            command
                .arg(root().join("tests/python/mcp_client_list_changed.py"))
                .args(["--mode", mode, "--drop", "fixtures/mcp/dropped/late_tool.py", "--into"])
                .arg(&folder)
                .args(["--call", "tool_late", "--arguments", r#"{"x": 21}"#])
                .current_dir(root());
            match &server {
                Some(server) => command.args(["--url", &server.url]),
                None => command.args(["--", lcp_bin(), "serve"]).arg(&folder),
            };
            let report = report(output_within(&mut command, b"", LIMIT));
            assert_eq!(report["before"], json!([]), "{mode}, http: {http}");
            assert_eq!(report["after_drop"], json!(["tool_late"]), "{mode}, http: {http}");
            assert_ok(&report["call"], json!({"result": 42}));
            assert_eq!(report["after_remove"], json!([]), "{mode}, http: {http}");
        }
    }
}

#[cfg(feature = "external")]
#[test]
fn output_over_the_limit_is_cut_with_a_marker() {
    let steps = json!([call("tool_big", json!({"size": 5000})), call("tool_big", json!({"size": 10}))]);
    let results = &session("auto", "none", &["fixtures/mcp/results", "--max-output", "1000"], steps)["results"];
    // A string is its own text: 5000 bytes, no quotes.
    assert!(text(&results[0]).contains("[output cut: 1000 of 5000 bytes shown"), "{}", text(&results[0]));
    assert!(text(&results[0]).len() < 1200);
    assert_eq!(results[0]["structuredContent"], Value::Null);
    // `tool_big` has an output schema (`-> str`): a cut result cannot match it.
    assert_eq!(results[0]["isError"], true);
    assert_ok(&results[1], json!({"result": "xxxxxxxxxx"}));
}

#[cfg(feature = "external")]
#[test]
fn a_call_over_the_timeout_is_an_error_result() {
    let steps = json!([call("tool_sleep", json!({"seconds": 60})), call("tool_add", json!({"a": 1, "b": 1}))]);
    let results = &session("auto", "none", &["fixtures/mcp/results", "--timeout", "2"], steps)["results"];
    assert_error(&results[0], &["timed out"]);
    assert_ok(&results[1], json!({"result": 2}));
}

#[test]
fn calls_run_side_by_side() {
    let flag = temp_dir("mcp-rendezvous").join("flag");
    let flag = flag.to_str().unwrap();
    let mut server = RawServer::start(&["fixtures/mcp/concurrency"]);
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tool_wait_for", "arguments": {"path": flag}}}));
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "tool_create", "arguments": {"path": flag}}}));
    assert_eq!(server.response(3)["result"]["structuredContent"], json!({"result": "created"}));
    assert_eq!(server.response(2)["result"]["structuredContent"], json!({"result": "found"}));
}

#[test]
fn a_cancelled_call_gets_no_response_and_the_server_goes_on() {
    let mut server = RawServer::start(&["fixtures/mcp/results"]);
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tool_sleep", "arguments": {"seconds": 2}}}));
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}));
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "tool_add", "arguments": {"a": 1, "b": 2}}}));
    assert_eq!(server.response(3)["result"]["structuredContent"], json!({"result": 3}));
    let stdout = server.finish();
    assert!(!stdout.contains("\"id\":2"), "the cancelled call was answered: {stdout}");
}

#[cfg(feature = "external")]
#[test]
fn http_serves_both_lifecycles_with_elicitation() {
    let server = HttpServer::start(&["fixtures/mcp/results", "fixtures/mcp/confirm"]);
    let steps = json!(["list", call("tool_add", json!({"a": 20, "b": 22})), call("tool_delete", json!({"name": "x"}))]);
    for mode in MODES {
        let report = session(mode, "accept", &["--url", &server.url], steps.clone());
        assert_eq!(report["results"][0]["tools"][0]["name"], "tool_add", "{mode}");
        assert_ok(&report["results"][1], json!({"result": 42}));
        assert_ok(&report["results"][2], json!({"deleted": "x", "decision": "allow"}));
        assert_eq!(report["elicitations"].as_array().unwrap().len(), 1, "{mode}");
    }
}

#[test]
fn http_on_loopback_refuses_other_hosts_other_sites_and_other_paths() {
    let server = HttpServer::start(&["fixtures/mcp/results"]);
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp");
    let status = |path: &str, headers: &str| http_status(address, path, headers);
    assert_eq!(status("/mcp", ""), 200);
    assert_eq!(status("/mcp", "Origin: http://localhost:6274\r\n"), 200);
    assert_eq!(status("/mcp", "Origin: http://evil.example\r\n"), 403);
    assert_eq!(status("/mcp", "Host: evil.example\r\n"), 403);
    assert_eq!(status("/other", ""), 404);
}

/// The status of an `initialize` POST to `http://ADDRESS/PATH` with extra headers
/// (a `Host` among them replaces the real one).
fn http_status(address: &str, path: &str, headers: &str) -> u16 {
    use std::io::Read;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let host = if headers.contains("Host:") { String::new() } else { format!("Host: {address}\r\n") };
    let request = format!(
        "POST {path} HTTP/1.1\r\n{host}{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(address).expect("the server accepts connections");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).expect("an HTTP status line");
    let status = String::from_utf8_lossy(&head[9..12]).into_owned();
    status.parse().unwrap_or_else(|_| panic!("not an HTTP status line: {}", String::from_utf8_lossy(&head)))
}

#[cfg(feature = "external")]
#[test]
fn the_inspector_cli_lists_and_calls_tools_over_stdio() {
    let serve = [lcp_bin(), "serve", "fixtures/mcp/results"];
    let listed = inspector_cli(&serve, &["--method", "tools/list"]);
    assert_eq!(listed["tools"][0]["name"], "tool_add");
    let called =
        inspector_cli(&serve, &["--method", "tools/call", "--tool-name", "tool_add", "--tool-arg", "a=2", "b=3"]);
    assert_ok(&called, json!({"result": 5}));
}

#[cfg(feature = "external")]
#[test]
fn the_inspector_cli_lists_and_calls_tools_over_http() {
    let server = HttpServer::start(&["fixtures/mcp/results"]);
    let target = [server.url.as_str(), "--transport", "http"];
    let listed = inspector_cli(&target, &["--method", "tools/list"]);
    assert_eq!(listed["tools"][0]["name"], "tool_add");
    let called =
        inspector_cli(&target, &["--method", "tools/call", "--tool-name", "tool_add", "--tool-arg", "a=2", "b=3"]);
    assert_ok(&called, json!({"result": 5}));
}

#[cfg(feature = "external")]
#[test]
fn tools_run_in_the_workspace() {
    let workspace = temp_dir("mcp-workspace");
    let serve = ["fixtures/mcp/results", "--workspace", workspace.to_str().unwrap()];
    let report = session("auto", "none", &serve, json!([call("tool_cwd", json!({}))]));
    let cwd = report["results"][0]["structuredContent"]["result"].as_str().unwrap_or_default().to_string();
    assert_eq!(std::fs::canonicalize(&cwd).unwrap(), std::fs::canonicalize(&workspace).unwrap(), "{report}");
}

#[cfg(feature = "external")]
#[test]
fn a_tool_that_changes_directory_does_not_move_later_calls_with_or_without_a_workspace() {
    let workspace = temp_dir("mcp-wander");
    let steps = json!([
        call("tool_cwd", json!({})),
        call("tool_wander_and_fail", json!({})),
        call("tool_wander_and_fail", json!({})),
        call("tool_cwd", json!({})),
    ]);
    let cwd = |report: &Value, i: usize| {
        let text = report["results"][i]["structuredContent"]["result"].as_str().unwrap_or_default().to_string();
        std::fs::canonicalize(&text).unwrap_or_else(|err| panic!("{text:?}: {err}: {report}"))
    };
    let moved = session("auto", "none", &["fixtures/runtime/workspace"], steps.clone());
    assert_eq!((cwd(&moved, 0), cwd(&moved, 3)), (root().canonicalize().unwrap(), root().canonicalize().unwrap()));
    let serve = ["fixtures/runtime/workspace", "--workspace", workspace.to_str().unwrap()];
    let moved = session("auto", "none", &serve, steps);
    assert_eq!(cwd(&moved, 3), workspace.canonicalize().unwrap(), "{moved}");
}

#[test]
fn a_bad_config_file_is_a_usage_error() {
    let dir = temp_dir("mcp-bad-config");
    let cases =
        [("bad.toml", "autonomy_level = \n", "invalid TOML"), ("bad.json", "{\"typo\": 1}", "unknown key `typo`")];
    for (name, contents, message) in cases {
        let path = dir.join(name);
        write(&path, contents);
        let output = lcp(&["serve", "fixtures/mcp/results", "--config", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(message),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let output = lcp(&["serve", "fixtures/mcp/results", "--config", "no/such/file.toml"]);
    assert_eq!(output.status.code(), Some(2));
}

#[cfg(feature = "external")]
/// `mcp-inspector --cli TARGET ARGS`: its JSON output.
pub(crate) fn inspector_cli(target: &[&str], args: &[&str]) -> Value {
    let (succeeded, output) = inspector_run(target, args);
    assert!(succeeded, "inspector failed: {output}");
    output
}

#[cfg(feature = "external")]
/// What the MCP Inspector CLI printed (JSON), and whether it exited successfully (it
/// does not for a tool result with `isError`).
pub(crate) fn inspector_run(target: &[&str], args: &[&str]) -> (bool, Value) {
    let home = target_dir().join("inspector/home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = Command::new(inspector());
    // HOME: the inspector keeps a catalog there; it must not touch the real one.
    command.arg("--cli").args(target).args(args).env("HOME", &home).current_dir(root());
    let output = output_within(&mut command, b"", LIMIT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let printed = serde_json::from_str(&stdout).unwrap_or_else(|err| {
        panic!("inspector output is not JSON ({err}): {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    });
    (output.status.success(), printed)
}

/// `lcp serve --http 127.0.0.1:0 ARGS`, stopped when dropped.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// What it printed on stderr up to the line naming its address.
    stderr: String,
}

impl HttpServer {
    pub(crate) fn start(args: &[&str]) -> HttpServer {
        HttpServer::start_on("127.0.0.1:0", args)
    }

    /// `lcp serve --http ADDRESS ARGS`.
    pub(crate) fn start_on(address: &str, args: &[&str]) -> HttpServer {
        HttpServer::start_with(address, args, &[])
    }

    /// `lcp serve --http ADDRESS ARGS` with `env` added to its environment.
    pub(crate) fn start_with(address: &str, args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut child = Command::new(lcp_bin())
            .args(["serve", "--http", address])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lcp serve starts");
        let lines = lines_of(child.stderr.take().unwrap());
        let mut stderr = String::new();
        let url = loop {
            let line = lines.recv_timeout(LIMIT).expect("lcp serve --http names its address on stderr");
            if let Some(url) = line.strip_prefix("lcp: serving MCP at ") {
                break url.to_string();
            }
            stderr.push_str(&line);
            stderr.push('\n');
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.into_iter().for_each(drop));
        HttpServer { child, url, stderr }
    }

    /// What the server printed on stderr before it named its address.
    pub(crate) fn stderr_seen(&self) -> &str {
        &self.stderr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// `lcp serve ARGS` spoken to in raw JSON-RPC lines, to see its stdout byte for byte.
pub(crate) struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl RawServer {
    pub(crate) fn start(args: &[&str]) -> RawServer {
        let mut command = Command::new(lcp_bin());
        command.arg("serve").args(args).current_dir(root());
        RawServer::spawn(command)
    }

    /// `command` (an `lcp serve` over stdio) spoken to in raw JSON-RPC lines.
    pub(crate) fn spawn(mut command: Command) -> RawServer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lcp serve starts");
        let stdin = child.stdin.take();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        RawServer { child, stdin, stdout, stderr, seen: Vec::new() }
    }

    pub(crate) fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        self.response(1);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Calls a tool without arguments and returns the call's `result`.
    pub(crate) fn call(&mut self, id: u64, tool: &str) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}),
        );
        self.response(id)["result"].clone()
    }

    pub(crate) fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").and_then(|()| stdin.flush()).expect("the server reads stdin");
    }

    /// The response to request `id`, whenever it came.
    pub(crate) fn response(&mut self, id: u64) -> Value {
        loop {
            let seen = self.seen.iter().map(|line| serde_json::from_str::<Value>(line));
            if let Some(message) = seen.flatten().find(|message| message["id"] == id) {
                return message;
            }
            let line =
                self.stdout.recv_timeout(LIMIT).unwrap_or_else(|_| panic!("no response to {id}: {:?}", self.seen));
            assert!(serde_json::from_str::<Value>(&line).is_ok(), "not a protocol message: {line}");
            self.seen.push(line);
        }
    }

    /// Closes stdin and returns everything the server wrote on stdout.
    pub(crate) fn finish(self) -> String {
        self.finish_with_stderr().0
    }

    /// Closes stdin and returns everything the server wrote on stdout and on stderr.
    pub(crate) fn finish_with_stderr(mut self) -> (String, String) {
        drop(self.stdin.take());
        while let Ok(line) = self.stdout.recv_timeout(LIMIT) {
            self.seen.push(line);
        }
        let _ = self.child.wait();
        let stderr: Vec<String> = std::iter::from_fn(|| self.stderr.recv_timeout(LIMIT).ok()).collect();
        (self.seen.join("\n"), stderr.join("\n"))
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// The lines of a child's stream, read on a thread.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

// SPEC §11–§12 over MCP: profiles, declarations, the host's policy, output schemas
// and docs, through the official client. Fixtures: `fixtures/profiles/`, `fixtures/policy/`.

#[cfg(feature = "external")]
#[test]
fn a_profile_serves_its_tools_under_their_aliases_and_only_those() {
    let workspace = temp_dir("mcp-profile");
    write(&workspace.join("todo.txt"), "buy milk");
    let serve = [
        "fixtures/profiles/tools",
        "--config",
        "fixtures/profiles/lcp.toml",
        "--profile",
        "short",
        "--workspace",
        workspace.to_str().unwrap(),
    ];
    let steps =
        json!(["list", call("read", json!({"name": "todo.txt"})), call("tool_read_note", json!({"name": "todo.txt"}))]);
    let export = stdout_json(&lcp(&[
        "export",
        "--format",
        "mcp",
        "--static",
        "fixtures/profiles/tools",
        "--config",
        "fixtures/profiles/lcp.toml",
        "--profile",
        "short",
    ]));
    for mode in MODES {
        let results = &session(mode, "none", &serve, steps.clone())["results"];
        assert_eq!(results[0]["tools"], export["tools"], "{mode}");
        let names: Vec<&str> =
            results[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["read", "write"], "{mode}");
        assert_ok(&results[1], json!({"result": "buy milk"}));
        let error = &results[2]["error"];
        assert_eq!(error["code"], -32602, "{error}");
        assert!(error["message"].as_str().unwrap().contains("not a tool of profile `short`"), "{error}");
    }
}

#[cfg(feature = "external")]
#[test]
fn tools_list_carries_annotations_and_output_schemas_and_results_match_them() {
    let serve = ["fixtures/policy/declared", "fixtures/policy/outputs"];
    let export = stdout_json(&lcp(&[
        "export",
        "--format",
        "mcp",
        "--static",
        "fixtures/policy/declared",
        "fixtures/policy/outputs",
    ]));
    let steps = json!([
        "list",
        call("tool_double", json!({"n": 21})),
        call("tool_point", json!({"x": 1.0, "y": 2.0})),
        call("tool_maybe_counts", json!({})),
        call("tool_lies", json!({"n": 3})),
    ]);
    for mode in MODES {
        let results = &session(mode, "none", &serve, steps.clone())["results"];
        assert_eq!(results[0]["tools"], export["tools"], "{mode}");
        let tools = results[0]["tools"].as_array().unwrap();
        let delete = tools.iter().find(|t| t["name"] == "tool_delete").unwrap();
        assert_eq!(delete["annotations"]["destructiveHint"], true, "{mode}");
        assert!(tools.iter().find(|t| t["name"] == "tool_plain").unwrap().get("annotations").is_none());
        let double = tools.iter().find(|t| t["name"] == "tool_double").unwrap();
        assert_eq!(double["outputSchema"]["properties"]["result"], json!({"type": "integer"}));
        // The client checks each structuredContent against the tool's outputSchema.
        assert_ok(&results[1], json!({"result": 42}));
        assert_ok(&results[2], json!({"x": 1.0, "y": 2.0}));
        assert_ok(&results[3], json!({"result": {"a": 1}}));
        assert_error(&results[4], &["breaks its return annotation `int`", "the result: expected integer"]);
    }
}

#[cfg(feature = "external")]
#[test]
fn a_call_the_policy_forbids_is_refused_and_an_edited_config_applies_to_the_next_call() {
    for mode in MODES {
        let dir = temp_dir("mcp-policy");
        let config = dir.join("lcp.toml");
        write(&config, "");
        let strict = std::fs::read_to_string(root().join("fixtures/policy/strict.toml")).unwrap();
        let serve =
            ["fixtures/policy/declared", "--config", config.to_str().unwrap(), "--workspace", dir.to_str().unwrap()];
        let steps = json!([
            "list",
            call("tool_delete", json!({"path": "first"})),
            {"write": config.to_str().unwrap(), "text": strict},
            call("tool_delete", json!({"path": "second"})),
            "list",
        ]);
        let results = &session(mode, "none", &serve, steps)["results"];
        let names = |i: usize| -> Vec<String> {
            results[i]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(names(0), ["tool_count", "tool_delete", "tool_fetch", "tool_plain"], "{mode}");
        assert_ok(&results[1], json!({"deleted": "first"}));
        assert_error(&results[3], &["`allow_destructive = false` refuses `tool_delete`"]);
        assert_eq!(names(4), ["tool_count", "tool_plain"], "{mode}");
        // The refused call ran no code: the marker still holds the first call's path.
        assert_eq!(std::fs::read_to_string(dir.join("delete-ran.txt")).unwrap(), "first", "{mode}");
    }
}

#[cfg(feature = "external")]
#[test]
fn docs_of_the_profile_and_its_tools_are_resources_read_when_asked() {
    let serve = ["fixtures/profiles/tools", "--config", "fixtures/profiles/lcp.toml", "--profile", "writer"];
    let steps = json!([
        "resources",
        {"read": "docs://profiles/writer"},
        {"read": "docs://tools/tool_read_note"},
        {"read": "docs://tools/tool_stamp"},
    ]);
    for mode in MODES {
        let report = session(mode, "none", &serve, steps.clone());
        assert!(report["capabilities"]["resources"].is_object(), "{mode}: {}", report["capabilities"]);
        let results = &report["results"];
        let uris: Vec<&str> =
            results[0]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
        assert_eq!(uris, ["docs://profiles/writer", "docs://tools/tool_read_note"], "{mode}");
        assert_eq!(results[0]["resources"][0]["mimeType"], "text/markdown");
        let text = |i: usize| results[i]["contents"][0]["text"].as_str().unwrap_or_default().to_string();
        assert!(text(1).starts_with("# The writer profile"), "{mode}: {}", results[1]);
        assert!(text(2).starts_with("# tool_read_note"), "{mode}: {}", results[2]);
        assert!(results[3]["error"]["message"].as_str().unwrap().contains("no resource"), "{mode}: {}", results[3]);
    }
}

#[cfg(feature = "external")]
#[test]
fn docs_tools_index_the_docs_and_read_only_what_they_list() {
    let dir = temp_dir("mcp-docs-tools");
    let fixture = std::fs::read_to_string(root().join("fixtures/profiles/lcp.toml")).unwrap();
    write(&dir.join("lcp.toml"), format!("{fixture}\n[mcp]\ndocs_tools = true\n"));
    write(&dir.join("docs/writer.md"), "# The writer profile\n");
    write(&dir.join("secret.txt"), "not documentation\n");
    let tool_doc = root().join("fixtures/profiles/tools/docs/read_note.md");
    let (config, tools) = (dir.join("lcp.toml"), root().join("fixtures/profiles/tools"));
    let serve = [tools.to_str().unwrap(), "--config", config.to_str().unwrap(), "--profile", "writer"];
    let steps = json!([
        "list",
        call("docs_index", json!({})),
        call("resolve_doc", json!({"path": "docs/writer.md"})),
        call("resolve_doc", json!({"path": tool_doc.to_str().unwrap()})),
        call("resolve_doc", json!({"path": "secret.txt"})),
        call("resolve_doc", json!({"path": "docs/../secret.txt"})),
    ]);
    for mode in MODES {
        let results = &session(mode, "none", &serve, steps.clone())["results"];
        let tools = results[0]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.ends_with(&["docs_index", "resolve_doc"]), "{mode}: {names:?}");
        assert_eq!(tools[names.len() - 1]["annotations"]["readOnlyHint"], true, "{mode}");
        // The client checks structuredContent against docs_index's outputSchema.
        assert_ok(
            &results[1],
            json!({
                "tool_docs": {"tool_read_note": tool_doc.to_str().unwrap()},
                "profile_docs": {"writer": "docs/writer.md"},
            }),
        );
        assert_eq!(text(&results[2]), "# The writer profile\n", "{mode}");
        assert!(text(&results[3]).starts_with("# tool_read_note"), "{mode}: {}", results[3]);
        for refused in &results.as_array().unwrap()[4..] {
            assert_error(refused, &["reads only the paths docs_index lists"]);
        }
    }
    let without = ["fixtures/profiles/tools", "--config", "fixtures/profiles/lcp.toml", "--profile", "writer"];
    let results = &session("legacy", "none", &without, json!(["list", call("docs_index", json!({}))]))["results"];
    let names: Vec<&str> =
        results[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"docs_index"), "{names:?}");
    assert!(results[1]["error"]["message"].as_str().unwrap().contains("docs_index"), "{}", results[1]);
}

#[cfg(feature = "external")]
#[test]
fn an_edited_tool_file_declaration_applies_to_the_next_call() {
    let tool = |destructive: &str| {
        format!(
            "TOOL_POLICY = {{\"destructive\": {destructive}}}\n\n\ndef tool_touch() -> str:\n    \"\"\"Touches.\"\"\"\n    return \"touched\"\n"
        )
    };
    for mode in MODES {
        let dir = temp_dir("mcp-policy-edit");
        let (folder, config) = (dir.join("tools"), dir.join("lcp.toml"));
        write(&folder.join("touch.py"), tool("False"));
        write(&config, "[policy]\nallow_destructive = false\n");
        let serve = [folder.to_str().unwrap(), "--config", config.to_str().unwrap()];
        let steps = json!([
            call("tool_touch", json!({})),
            {"write": folder.join("touch.py").to_str().unwrap(), "text": tool("True")},
            call("tool_touch", json!({})),
        ]);
        let results = &session(mode, "none", &serve, steps)["results"];
        assert_ok(&results[0], json!({"result": "touched"}));
        assert_error(&results[2], &["`allow_destructive = false` refuses `tool_touch`"]);
    }
}
