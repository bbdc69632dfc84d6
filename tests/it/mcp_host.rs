//! SPEC §9–10 under `lcp serve`, with the official Python MCP client: what a tool
//! asks the user is an elicitation, `generate_text` is sampling, progress and log
//! records are notifications, results carry images, audio and resources as content
//! blocks. Then the reference's own `user_interactive_tools`, unmodified, and the
//! official MCP conformance suite on `fixtures/mcp/conformance` (served through a
//! profile that gives its tools the names the suite calls).

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::HttpServer;
#[cfg(feature = "external")]
use crate::mcp::MODES;
#[cfg(feature = "external")]
use crate::mcp::session_with;
#[cfg(feature = "external")]
use crate::mcp::{assert_error, assert_missing_capability, assert_ok, call, text};
use crate::support::*;

const HOST: &str = "fixtures/host_objects";
pub(crate) const CONFORMANCE: [&str; 5] =
    ["fixtures/mcp/conformance", "--config", "fixtures/mcp/conformance/lcp.toml", "--profile", "conformance"];

#[cfg(feature = "external")]
fn select() -> Value {
    call("tool_ask", json!({"kind": "select", "title": "Region", "prompt": "Pick one", "options": ["eu", "us"]}))
}

#[cfg(feature = "external")]
#[test]
fn a_user_interaction_is_an_elicitation_accept_gives_the_answer_decline_and_cancel_none() {
    for mode in MODES {
        let content = r#"[{"answer": "us"}, {"name": "Zed", "age": 5}]"#;
        let steps = json!([select(), call("tool_form", json!({}))]);
        let accepted = session_with(mode, &["--elicit", "accept", "--content", content], &[HOST], steps);
        assert_ok(&accepted["results"][0], json!({"answer": "us"}));
        assert_ok(&accepted["results"][1], json!({"answer": {"name": "Zed", "age": 5}}));
        let message = accepted["elicitations"][0].as_str().unwrap();
        assert!(
            message.contains("`tool_ask` (host_objects) asks: Region") && message.contains("Pick one"),
            "{message}"
        );
        assert_eq!(accepted["schemas"][0]["properties"]["answer"]["enum"], json!(["eu", "us"]), "{mode}");
        assert_eq!(
            accepted["schemas"][1]["properties"]["plan"],
            json!({"type": "string", "enum": ["free", "pro"]}),
            "the tool's form is sent as it is"
        );
        for refusal in ["decline", "cancel"] {
            let refused = session_with(mode, &["--elicit", refusal], &[HOST], json!([select()]));
            assert_ok(&refused["results"][0], json!({"answer": null}));
        }
    }
}

#[cfg(feature = "external")]
#[test]
fn a_client_that_cannot_elicit_gets_a_clear_error_in_the_tool() {
    let report = session_with("legacy", &["--elicit", "none"], &[HOST], json!([select()]));
    assert_error(&report["results"][0], &["HostUnavailable", "does not support elicitation"]);
}

#[cfg(feature = "external")]
#[test]
fn a_handshake_less_request_that_needs_an_undeclared_capability_is_refused_with_32021() {
    let steps = json!([select(), call("tool_generate", json!({"prompt": "hi"})), call("tool_form", json!({}))]);
    let report = session_with("auto", &["--elicit", "none"], &[HOST], steps);
    assert_missing_capability(&report["results"][0], "elicitation");
    assert_missing_capability(&report["results"][1], "sampling");
    let message = report["results"][2]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`tool_form` asks the client for elicitation"), "{report}");

    // Over HTTP the response is a 400, with the capability named in the error's data.
    let server = HttpServer::start(&[HOST]);
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "tool_generate", "arguments": {"prompt": "hi"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "tool_generate")];
    let (status, _, answer) = crate::auth::post_as(&headers, &server.url, None, None, body);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}), "{answer}");
    assert_eq!(answer["id"], 7);
}

#[cfg(feature = "external")]
#[test]
fn generate_text_is_sampling_and_a_client_without_sampling_gets_a_clear_error() {
    let steps =
        json!([call("tool_generate", json!({"prompt": "hi"})), call("tool_context_model", json!({"prompt": "ctx"}))]);
    for mode in MODES {
        let sampled = session_with(mode, &["--sample", "the model says"], &[HOST], steps.clone());
        assert_ok(&sampled["results"][0], json!({"text": "the model says", "vision": true}));
        assert_ok(&sampled["results"][1], json!({"text": "the model says"}));
        let request = &sampled["samplings"][0];
        assert_eq!(request["messages"], json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]));
        assert_eq!((&request["systemPrompt"], &request["maxTokens"]), (&json!("Be brief."), &json!(50)));
        let unsampled = session_with(mode, &[], &[HOST], steps.clone());
        match mode {
            "legacy" => assert_error(&unsampled["results"][0], &["HostUnavailable", "does not support sampling"]),
            _ => assert_missing_capability(&unsampled["results"][0], "sampling"),
        }
    }
}

#[cfg(feature = "external")]
#[test]
fn progress_with_a_token_is_notifications_progress_and_without_one_a_log_message() {
    for mode in MODES {
        let steps = json!([{"call": "tool_progress", "arguments": {"steps": 2}, "progress": true}]);
        let report = session_with(mode, &[], &[HOST], steps);
        assert_eq!(report["results"][0]["structuredContent"]["delivered"], json!([true, true]));
        assert_eq!(
            report["progress"],
            json!([{"progress": 1.0, "total": 2.0, "message": "step 1"}, {"progress": 2.0, "total": 2.0, "message": "step 2"}]),
            "{mode}"
        );
        let steps = json!([call("tool_progress", json!({"steps": 1}))]);
        let report = session_with(mode, &["--log-level", "info"], &[HOST], steps);
        assert_eq!(report["progress"], json!([]));
        assert_eq!(
            report["logs"],
            json!([{"level": "info", "logger": "tool_progress", "data": "step 1 (1/1)"}]),
            "{mode}"
        );
    }
}

#[cfg(feature = "external")]
#[test]
fn log_records_are_log_messages_at_the_level_the_client_sets() {
    let record = |level: &str, logger: &str, data: &str| json!({"level": level, "logger": logger, "data": data});
    let debug = record("debug", "fixture.logs", "debug: hello");
    let info = record("info", "fixture.logs", "info: hello");
    let warning = record("warning", "fixture.logs", "warning: hello");
    let error = record("error", "root", "root error: hello");
    let steps = json!([call("tool_log", json!({}))]);
    for mode in MODES {
        let all = session_with(mode, &["--log-level", "debug"], &[HOST], steps.clone());
        assert_eq!(all["logs"], json!([debug, info, warning, error]), "{mode}");
        assert_eq!(all["results"][0]["content"].as_array().unwrap().len(), 1, "records are not stderr text");
        let warnings = session_with(mode, &["--log-level", "warning"], &[HOST], steps.clone());
        assert_eq!(warnings["logs"], json!([warning, error]), "{mode}");
    }
    // Without `logging/setLevel` a handshake session gets info and above; a
    // handshake-less client that names no level asked for none.
    assert_eq!(session_with("legacy", &[], &[HOST], steps.clone())["logs"], json!([info, warning, error]));
    assert_eq!(session_with("auto", &[], &[HOST], steps)["logs"], json!([]));
}

#[cfg(feature = "external")]
#[test]
fn a_string_result_is_its_own_text_and_other_values_json() {
    for mode in MODES {
        let report = session_with(mode, &[], &[HOST], json!([call("tool_log", json!({"message": "plain \"text\""}))]));
        assert_ok(&report["results"][0], json!({"result": "plain \"text\""}));
        assert_eq!(text(&report["results"][0]), "plain \"text\"");
    }
}

#[cfg(feature = "external")]
#[test]
fn images_audio_and_resources_are_content_blocks_after_the_text() {
    let steps = json!([call("test_multiple_content_types", json!({})), call("test_audio_content", json!({}))]);
    for mode in MODES {
        let report = session_with(mode, &[], &CONFORMANCE, steps.clone());
        let mixed = &report["results"][0]["content"];
        assert_eq!(mixed[0], json!({"type": "text", "text": "{\"text\":\"Multiple content types test:\"}"}));
        assert_eq!((&mixed[1]["type"], &mixed[1]["mimeType"]), (&json!("image"), &json!("image/png")), "{mixed}");
        assert!(!mixed[1]["data"].as_str().unwrap().starts_with("data:"), "the URI's data only: {mixed}");
        assert_eq!(
            mixed[2],
            json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}})
        );
        let audio = &report["results"][1]["content"];
        assert_eq!((&audio[0]["type"], &audio[0]["mimeType"]), (&json!("audio"), &json!("audio/wav")), "{audio}");
    }
}

#[cfg(feature = "external")]
/// The folder of one of `lollms-client`'s shipped libraries, in the test environment.
fn reference_library(name: &str) -> String {
    let output = Command::new(test_python())
        .args(["-c", "import lollms_client, os; print(os.path.dirname(lollms_client.__file__))"])
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let package = String::from_utf8_lossy(&output.stdout).trim().to_string();
    format!("{package}/tools_bindings/lcp/default_tools/{name}")
}

#[cfg(feature = "external")]
#[test]
fn the_references_user_interactive_tools_run_unmodified_with_an_eliciting_client() {
    let library = reference_library("user_interactive_tools");
    let workspace = temp_dir("mcp-reference-interactive");
    let serve = [library.as_str(), "--workspace", workspace.to_str().unwrap()];
    let answers = r#"[{"answer": "sk-test-123456789"}, {"answer": "us-east"}, {"answer": "forecasts"}]"#;
    for mode in MODES {
        let steps = json!([call("tool_configure_service_connection", json!({"service_name": "weather_api"}))]);
        let report = session_with(mode, &["--elicit", "accept", "--content", answers], &serve, steps);
        let result = &report["results"][0];
        assert_eq!(result["isError"], false, "{result}");
        assert_eq!(result["structuredContent"]["region"], "us-east", "{result}");
        assert!(text(result).contains("key: sk-t...6789"), "{}", text(result));
        assert_eq!(report["elicitations"].as_array().unwrap().len(), 3, "a secret, a choice, a text");
        assert_eq!(
            report["schemas"][1]["properties"]["answer"]["enum"],
            json!(["eu-west", "us-east", "us-west", "ap-south"])
        );
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(workspace.join("service_connections.json")).unwrap())
                .unwrap();
        assert_eq!(
            saved["weather_api"],
            json!({"api_key": "sk-test-123456789", "region": "us-east", "description": "forecasts"})
        );

        // Its other tool asks to confirm a network request: declined, nothing is sent.
        let steps = json!([call("tool_test_service_connection", json!({"service_name": "weather_api"}))]);
        let report = session_with(mode, &["--elicit", "decline"], &serve, steps);
        assert_error(&report["results"][0], &["Operator denied the network test", "declined"]);
    }
}

#[cfg(feature = "external")]
/// The scenarios of the suite: tools, utilities, prompts, resources and completion.
const SCENARIOS: [&str; 31] = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
];

#[cfg(feature = "external")]
#[test]
fn the_official_conformance_suite_0_1_passes_every_server_scenario() {
    let suite = conformance_suite();
    let server = HttpServer::start(&CONFORMANCE);
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let mut command = Command::new(suite);
        command.args(["server", "--url", &server.url, "--scenario", scenario]).current_dir(root());
        let output = output_within(&mut command, b"", Duration::from_secs(300));
        let report = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        let summary = report.lines().find(|line| line.starts_with("Passed: ")).unwrap_or("no summary").to_string();
        println!("{scenario}: {summary}");
        if !output.status.success() || !summary.contains(", 0 failed") {
            failed.push(format!("{scenario}: {summary}\n{report}"));
        }
    }
    assert!(failed.is_empty(), "scenarios failed:\n{}", failed.join("\n\n"));
}

#[cfg(feature = "external")]
/// Runs the latest suite with `args` against `server`; its report.
pub(crate) fn latest_suite(url: &str, args: &[&str]) -> String {
    let [node, suite] = latest_conformance_suite();
    let mut command = Command::new(node);
    command.arg(suite).args(["server", "--url", url]).args(args).current_dir(root());
    let output = output_within(&mut command, b"", Duration::from_secs(1500));
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

#[cfg(feature = "external")]
/// The scenarios a requirements run scores (every one it ran but those it lists as
/// not scored), each with whether it passed.
fn scored(report: &str) -> Vec<(String, bool)> {
    let (run, unscored) = report.split_once("Not scored for").unwrap_or((report, ""));
    let name = |line: &str| line.split(':').next().unwrap_or_default().trim().to_string();
    let outcome = |line: &str| {
        let line = line.trim();
        line.strip_prefix("✓ ")
            .map(|rest| (name(rest), true))
            .or_else(|| line.strip_prefix("✗ ").map(|rest| (name(rest), false)))
    };
    let unscored: Vec<String> = unscored
        .lines()
        .filter_map(outcome)
        .map(|(scenario, _)| scenario.split(" (").next().unwrap_or_default().to_string())
        .collect();
    run.lines().filter_map(outcome).filter(|(scenario, _)| !unscored.contains(scenario)).collect()
}

#[cfg(feature = "external")]
/// Runs `--requirements REVISION` and checks every scored scenario passed, the
/// `expected` ones among them.
fn requirements_pass(revision: &str, expected: &[&str]) {
    let server = HttpServer::start(&CONFORMANCE);
    requirements_pass_at(&server.url, revision, expected);
}

#[cfg(feature = "external")]
/// [`requirements_pass`] against the server at `url`.
pub(crate) fn requirements_pass_at(url: &str, revision: &str, expected: &[&str]) {
    let report = latest_suite(url, &["--requirements", revision]);
    let scored = scored(&report);
    let failed: Vec<&String> = scored.iter().filter(|(_, passed)| !passed).map(|(scenario, _)| scenario).collect();
    assert!(failed.is_empty(), "{revision}: scored scenarios failed: {failed:?}\n{report}");
    for scenario in expected {
        assert!(scored.iter().any(|(name, passed)| name == scenario && *passed), "{scenario} did not pass:\n{report}");
    }
    println!("{revision}: {} scored scenarios passed", scored.len());
}

#[cfg(feature = "external")]
#[test]
fn the_latest_conformance_suite_passes_every_scored_scenario_of_2025_11_25() {
    requirements_pass(
        "2025-11-25",
        &["prompts-get-with-image", "resources-templates-read", "resources-subscribe", "completion-complete"],
    );
}

#[cfg(feature = "external")]
#[test]
fn the_latest_conformance_suite_passes_every_scored_scenario_of_2026_07_28() {
    requirements_pass(
        "2026-07-28",
        &[
            "server-stateless",
            "caching",
            "input-required-result-multiple-input-requests",
            "input-required-result-multi-round",
            "input-required-result-tampered-state",
            "input-required-result-capability-check",
            "input-required-result-non-tool-request",
            "prompts-get-embedded-resource",
            "sep-2164-resource-not-found",
        ],
    );
}

#[cfg(feature = "external")]
#[test]
fn the_built_in_interaction_library_asks_through_elicitation_and_samples_with_progress() {
    let workspace = temp_dir("mcp-interaction");
    std::fs::write(workspace.join("notes.md"), "# Meeting\n\nWe chose SQLite.\n").unwrap();
    let serve = ["default_tools/interaction", "--workspace", workspace.to_str().unwrap()];
    let steps = json!([
        call("tool_ask_user", json!({"question": "Which database?", "choices": ["staging", "production"]})),
        {"call": "tool_summarize_file", "arguments": {"path": "notes.md"}, "progress": true},
    ]);
    for mode in MODES {
        let client =
            ["--elicit", "accept", "--content", r#"[{"answer": "staging"}]"#, "--sample", "SQLite was chosen."];
        let report = session_with(mode, &client, &serve, steps.clone());
        assert_eq!(report["results"][0]["structuredContent"]["output"], json!({"answered": true, "answer": "staging"}));
        assert_eq!(report["schemas"][0]["properties"]["answer"]["enum"], json!(["staging", "production"]));
        let summary = &report["results"][1]["structuredContent"]["output"];
        assert_eq!(summary["summary"], "SQLite was chosen.", "{mode}: {}", report["results"][1]);
        assert!(
            report["samplings"][0]["messages"][0]["content"]["text"].as_str().unwrap().contains("We chose SQLite.")
        );
        assert_eq!(report["progress"], json!([{"progress": 1.0, "total": 1.0, "message": "summarized part 1 of 1"}]));
    }
}

#[cfg(feature = "external")]
#[test]
fn inline_refs_serves_named_classes_inlined_for_clients_that_cannot_resolve_refs() {
    let dir = temp_dir("mcp-inline-refs");
    let config = dir.join("lcp.toml");
    std::fs::write(&config, "[mcp]\ninline_refs = true\n").unwrap();
    let schema = |serve: &[&str]| {
        let report = session_with("legacy", &[], serve, json!(["list"]));
        let tools = report["results"][0]["tools"].as_array().unwrap().clone();
        let tool = tools.into_iter().find(|tool| tool["name"] == "tool_json_schema_2020_12").unwrap();
        tool["inputSchema"].clone()
    };
    let referenced = schema(&["fixtures/mcp/conformance"]);
    assert_eq!(referenced["properties"]["address"], json!({"$ref": "#/$defs/address"}));
    let inlined = schema(&["fixtures/mcp/conformance", "--config", config.to_str().unwrap()]);
    assert_eq!(inlined["properties"]["address"], referenced["$defs"]["address"]);
    assert!(inlined.get("$defs").is_none(), "{inlined}");
    assert_eq!(inlined["$schema"], "https://json-schema.org/draft/2020-12/schema");
}

/// A handshake-less `tools/call` of `tool` with `arguments` and `extra` params (a
/// client that can elicit).
fn handshake_less_call(id: u64, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    for (key, value) in extra.as_object().into_iter().flatten() {
        params[key] = value.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A handshake-less `tools/call` of `tool_ask` (a select), with `extra` params.
fn ask_call(id: u64, extra: Value) -> Value {
    let select = json!({"kind": "select", "title": "Region", "prompt": "Pick one", "options": ["eu", "us"]});
    handshake_less_call(id, "tool_ask", select, extra)
}

#[test]
fn a_request_state_is_signed_and_a_tampered_or_foreign_one_is_refused() {
    let key = ("LCP_STATE_KEY", "the shared key of two replicas");
    let start = |key: Option<(&str, &str)>| {
        let mut command = Command::new(crate::mcp::lcp_bin());
        command.args(["serve", HOST]).current_dir(root());
        match key {
            Some((name, value)) => command.env(name, value),
            None => command.env_remove("LCP_STATE_KEY"),
        };
        crate::mcp::RawServer::spawn(command)
    };
    let mut server = start(Some(key));
    server.send(ask_call(1, json!({})));
    let asked = server.response(1)["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().expect("a requestState").to_string();
    let (payload, signature) = state.split_once('.').expect("payload.signature");
    assert!(!payload.is_empty() && signature.len() >= 43, "{state}");

    let answer = json!({"lcp": {"action": "accept", "content": {"answer": "us"}}});
    // Changed by one character: refused, the call stays parked.
    let mut tampered = state.clone().into_bytes();
    tampered[2] = if tampered[2] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    server.send(ask_call(2, json!({"requestState": tampered, "inputResponses": answer})));
    let refused = server.response(2);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("integrity check"), "{refused}");

    // Signed by a server with another key: refused as well.
    let mut stranger = start(None);
    stranger.send(ask_call(1, json!({})));
    let foreign = stranger.response(1)["result"]["requestState"].as_str().unwrap().to_string();
    server.send(ask_call(3, json!({"requestState": foreign, "inputResponses": answer})));
    assert_eq!(server.response(3)["error"]["code"], -32602);

    // A replica that shares the key trusts the state: it does not hold the call, so it
    // runs it again, answering its question from the state (SPEC §16).
    let mut replica = start(Some(key));
    replica.send(ask_call(1, json!({"requestState": state, "inputResponses": answer})));
    let elsewhere = replica.response(1)["result"].clone();
    assert_eq!(elsewhere["structuredContent"], json!({"answer": "us"}), "{elsewhere}");

    // The genuine state, on the server holding the call: the call goes on.
    server.send(ask_call(4, json!({"requestState": state, "inputResponses": answer})));
    let done = server.response(4)["result"].clone();
    assert_eq!(done["structuredContent"], json!({"answer": "us"}), "{done}");
}

#[cfg(feature = "external")]
#[test]
fn tool_context_ask_puts_several_questions_at_once_and_roots_are_the_clients() {
    let roots = r#"[{"uri": "file:///work/project", "name": "project"}]"#;
    let client =
        ["--elicit", "accept", "--content", r#"[{"answer": "Ada"}]"#, "--sample", "Roses are red.", "--roots", roots];
    let steps = json!([call("tool_ask_many", json!({})), call("tool_roots", json!({}))]);
    for mode in MODES {
        let report = session_with(mode, &client, &[HOST], steps.clone());
        let asked = &report["results"][0];
        assert_ok(
            asked,
            json!({"who": "Ada", "line": "Roses are red.", "where": [{"uri": "file:///work/project", "name": "project"}]}),
        );
        assert_eq!(report["elicitations"].as_array().map(Vec::len), Some(1), "{mode}: {report}");
        assert_eq!(report["samplings"].as_array().map(Vec::len), Some(1), "{mode}: {report}");
        assert_ok(&report["results"][1], json!({"result": [{"uri": "file:///work/project", "name": "project"}]}));
    }

    // A client that shares no roots and cannot elicit: in a handshake session the tool
    // reads why for each; on the handshake-less protocol the requests it declared the
    // capability for are asked, the others answered at once.
    let client = ["--sample", "Roses are red."];
    let report = session_with("legacy", &client, &[HOST], json!([call("tool_ask_many", json!({}))]));
    let output = &report["results"][0]["structuredContent"];
    assert_eq!(output["line"], "Roses are red.", "{report}");
    assert!(output["who"].as_str().unwrap().contains("does not support elicitation"), "{report}");
    assert!(output["where"].as_str().unwrap().contains("does not support roots/list"), "{report}");
    let report = session_with("auto", &client, &[HOST], json!([call("tool_ask_many", json!({}))]));
    let output = &report["results"][0]["structuredContent"];
    assert_eq!(output["line"], "Roses are red.", "{report}");
    assert!(
        output["who"].as_str().unwrap().contains("did not declare the client capability `elicitation`"),
        "{report}"
    );

    // `lcp call` answers a batch request by request, with its own host.
    let called = lcp_call_in(HOST, "tool_ask_many", &["--args", "{}"]);
    let printed: Value = serde_json::from_slice(&called.stdout).unwrap_or_else(|_| json!(null));
    assert!(printed["output"]["where"].as_str().is_some_and(|why| why.contains("shares no roots")), "{printed}");
}

#[test]
fn an_argument_declared_as_an_mcp_header_is_published_and_checked_against_its_header() {
    let export = stdout_json(&lcp(&["export", "--static", "--format", "mcp", "fixtures/mcp/conformance"]));
    let tools = export["tools"].as_array().unwrap();
    let regional = tools.iter().find(|tool| tool["name"] == "tool_regional").expect("tool_regional is exported");
    assert_eq!(regional["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region", "{regional}");

    let server = HttpServer::start(&CONFORMANCE);
    let call = |id: u64, region: &str, header: Option<&str>| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "test_regional", "arguments": {"region": region},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let mut headers =
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "test_regional")];
        if let Some(header) = header {
            headers.push(("mcp-param-region", header));
        }
        let (status, _, answer) = crate::auth::post_as(&headers, &server.url, None, None, body);
        (status, answer)
    };
    let (status, answer) = call(1, "eu-west", Some("eu-west"));
    assert_eq!((status, answer["result"]["content"][0]["text"].as_str()), (200, Some("Served in eu-west")), "{answer}");
    // `=?base64?…?=` is the Base64 of the value: "Zürich" here.
    let (status, answer) = call(2, "Zürich", Some("=?base64?WsO8cmljaA==?="));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "Served in Zürich");
    for (id, header, needle) in [
        (3, None, "must come in the `Mcp-Param-Region` header"),
        (4, Some("us-east"), "does not match the argument `region`"),
        (5, Some("=?base64?ZXUtd2VzdA?="), "not valid Base64"),
    ] {
        let (status, answer) = call(id, "eu-west", header);
        assert_eq!((status, answer["error"]["code"].clone()), (400, json!(-32020)), "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(needle), "{answer}");
    }

    // A header name that is no token is an error of the declaration.
    let dir = temp_dir("mcp-headers");
    std::fs::write(
        dir.join("regional.py"),
        "TOOL_POLICIES = {\"tool_here\": {\"mcp_headers\": {\"region\": \"Bad Header\"}}}\n\n\
         def tool_here(region: str) -> str:\n    \"\"\"Here.\"\"\"\n    return region\n",
    )
    .unwrap();
    let check = lcp(&["check", dir.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("`mcp_headers` must be a table of parameter names to header names"), "{said}");
}

#[cfg(feature = "external")]
/// The latest suite's pending scenarios lcp serves too: a hand-written JSON Schema
/// 2020-12 (`json_schema_extra`) and arguments in `Mcp-Param` headers.
#[test]
fn the_latest_conformance_suite_passes_the_pending_json_schema_and_custom_header_scenarios() {
    let server = HttpServer::start(&CONFORMANCE);
    for scenario in ["json-schema-2020-12", "http-custom-header-server-validation"] {
        let report = latest_suite(&server.url, &["--scenario", scenario]);
        let summary = report.lines().find(|line| line.starts_with("Passed: ")).unwrap_or("no summary");
        assert!(summary.contains(", 0 failed"), "{scenario}: {summary}\n{report}");
    }
}

#[cfg(feature = "external")]
/// The latest suite's task scenarios (the `io.modelcontextprotocol/tasks` extension,
/// SPEC §16), run against the tools of `fixtures/mcp/conformance/tasks.py`.
pub(crate) const TASK_SCENARIOS: [&str; 9] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

#[cfg(feature = "external")]
#[test]
fn the_latest_conformance_suite_passes_the_task_scenarios() {
    let server = HttpServer::start(&CONFORMANCE);
    scenarios_pass_at(&server.url, &TASK_SCENARIOS);
}

#[test]
fn a_task_tool_that_becomes_a_task_is_an_ordinary_call_until_then() {
    let dir = temp_dir("become-task-mcp");
    std::fs::write(
        dir.join("long.py"),
        "import time\n\nTOOL_POLICY = {\"task\": \"optional\"}\n\n\
         def tool_long(tool_context=None) -> str:\n    \"\"\"Long work.\"\"\"\n    \
         became = tool_context.become_task('working on it')\n    time.sleep(0.3)\n    return f'task: {became}'\n",
    )
    .unwrap();
    let server = HttpServer::start(&[dir.to_str().unwrap()]);
    let post = |body: Value| {
        let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "tool_long")];
        crate::auth::post_as(&headers, &server.url, None, None, body).2
    };
    // A client without the extension gets the whole call as one result.
    let plain = post(handshake_less_call(1, "tool_long", json!({}), json!({})));
    assert_eq!(plain["result"]["content"][0]["text"], "task: False", "{plain}");

    // One with it gets a task at `become_task`, its status what the tool said.
    let mut call = handshake_less_call(2, "tool_long", json!({}), json!({}));
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    let created = post(call)["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let done = loop {
        let get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": task, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
        let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tasks/get"), ("mcp-name", &task)];
        let got = crate::auth::post_as(&headers, &server.url, None, None, get).2["result"].clone();
        if got["status"] == "completed" || std::time::Instant::now() > deadline {
            break got;
        }
        if got["status"] == "working" {
            assert_eq!(got["statusMessage"], "working on it", "{got}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["result"]["content"][0]["text"], "task: True", "{done}");
}

#[test]
fn a_session_that_made_a_task_is_told_each_change_of_it() {
    let mut server = crate::mcp::RawServer::start(&CONFORMANCE);
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "1"},
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}));
    server.response(1);
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "told"}}}));
    let created = server.response(2)["result"].clone();
    let task = created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for id in 3.. {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"taskId": task}}));
        let got = server.response(id)["result"].clone();
        if got["status"] == "completed" || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stdout = server.finish();
    let told: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["method"] == "notifications/tasks")
        .collect();
    let last = told.last().unwrap_or_else(|| panic!("no notifications/tasks:\n{stdout}"));
    assert_eq!(last["params"]["taskId"], task.as_str(), "{last}");
    assert_eq!(last["params"]["status"], "completed", "{last}");
    assert_eq!(last["params"]["result"]["content"][0]["text"], "computed told in 0.3s", "{last}");
}

#[cfg(feature = "external")]
/// Runs each of `scenarios` alone against the server at `url`; checks each ran checks
/// and none failed.
pub(crate) fn scenarios_pass_at(url: &str, scenarios: &[&str]) {
    let mut failed = Vec::new();
    for scenario in scenarios {
        let report = latest_suite(url, &["--scenario", scenario]);
        let summary = report.lines().find(|line| line.starts_with("Passed: ")).unwrap_or("no summary").to_string();
        println!("{scenario}: {summary}");
        if !summary.contains(", 0 failed") || summary.starts_with("Passed: 0/") {
            failed.push(format!("{scenario}: {summary}\n{report}"));
        }
    }
    assert!(failed.is_empty(), "scenarios failed:\n{}", failed.join("\n\n"));
}

/// A handshake-less `tools/call` of the conformance fixture's two-round tool.
fn rounds_call(id: u64, extra: Value) -> Value {
    handshake_less_call(id, "tool_input_required_multi_round", json!({}), extra)
}

#[test]
fn the_rounds_of_a_call_may_be_answered_by_replicas_that_share_the_key() {
    let start = || {
        let mut command = Command::new(crate::mcp::lcp_bin());
        command.args(["serve", "fixtures/mcp/conformance"]).current_dir(root());
        command.env("LCP_STATE_KEY", "one key for every replica of the service");
        crate::mcp::RawServer::spawn(command)
    };
    let (mut first, mut second) = (start(), start());
    first.send(rounds_call(1, json!({})));
    let round1 = first.response(1)["result"].clone();
    assert!(round1["inputRequests"]["step1"].is_object(), "{round1}");

    // The first answer goes to the other replica: it runs the tool again, answers step 1
    // from the state and asks step 2 under a state of its own, which carries both.
    let step1 = json!({"step1": {"action": "accept", "content": {"name": "Ada"}}});
    second.send(rounds_call(1, json!({"requestState": round1["requestState"], "inputResponses": step1})));
    let round2 = second.response(1)["result"].clone();
    assert!(round2["inputRequests"]["step2"].is_object(), "{round2}");

    // And the last one back to the first replica, which holds neither call now.
    let step2 = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    first.send(rounds_call(2, json!({"requestState": round2["requestState"], "inputResponses": step2})));
    let done = first.response(2)["result"].clone();
    assert_eq!(done["content"][0]["text"], "Ada likes blue", "{done}");
}
