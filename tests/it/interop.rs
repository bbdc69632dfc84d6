//! SPEC §5, arguments as real clients send them: OpenAI's strict mode sends `null` for
//! every optional parameter it leaves out, and some clients (the MCP Inspector CLI)
//! send arrays and objects as JSON text. Through `lcp call` and `lcp serve`.
//! Fixture: `fixtures/interop/args.py`.

use serde_json::json;

#[cfg(feature = "external")]
use crate::mcp::MODES;
#[cfg(feature = "external")]
use crate::mcp::session;
#[cfg(feature = "external")]
use crate::mcp::{assert_ok, call};
use crate::support::*;

const FOLDER: &str = "fixtures/interop";

#[cfg(feature = "external")]
#[test]
fn null_for_an_optional_parameter_that_is_not_nullable_means_not_given() {
    let args = json!({"tags": ["a", "b", "c", "d"], "root": null, "limit": null, "note": null}).to_string();
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_tags", &["--args", &args]));
    assert_eq!(result["output"], json!({"tags": ["a", "b", "c"], "root": ".", "note": null}), "{result}");
    // A required parameter's null is still an error.
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_tags", &["--args", r#"{"tags": null}"#]));
    assert!(result["error"].as_str().unwrap().contains("`tags`"), "{result}");
    for mode in MODES {
        let report = session(mode, "none", &[FOLDER], json!([call("tool_tags", json!({"tags": ["x"], "root": null}))]));
        assert_ok(&report["results"][0], json!({"tags": ["x"], "root": ".", "note": null}));
    }
}

#[cfg(feature = "external")]
#[test]
fn a_string_that_is_the_json_text_of_a_valid_array_or_object_is_decoded_first() {
    let args = json!({"tags": "[\"a\", \"b\"]"}).to_string();
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_tags", &["--args", &args]));
    assert_eq!(result["output"]["tags"], json!(["a", "b"]), "{result}");
    let args = json!({"point": "{\"x\": 1, \"y\": 2}"}).to_string();
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_point", &["--args", &args]));
    assert_eq!(result["output"], json!({"sum": 3}), "{result}");
    // Text that is no valid value is reported as the string it is.
    let args = json!({"tags": "[1, 2]"}).to_string();
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_tags", &["--args", &args]));
    assert!(result["error"].as_str().unwrap().contains("got string"), "{result}");
    for mode in MODES {
        let report = session(mode, "none", &[FOLDER], json!([call("tool_tags", json!({"tags": "[\"z\"]"}))]));
        assert_ok(&report["results"][0], json!({"tags": ["z"], "root": ".", "note": null}));
    }
}

#[cfg(feature = "external")]
#[test]
fn the_inspector_shows_the_real_error_of_a_failing_tool_with_an_output_schema() {
    // An error result carries no structured content (SPEC §5): the TypeScript SDK
    // checks it against the output schema and would throw the result away.
    let serve = [crate::mcp::lcp_bin(), "serve", FOLDER];
    let (_, failed) =
        crate::mcp::inspector_run(&serve, &["--method", "tools/call", "--tool-name", "tool_failing_summary"]);
    assert_eq!(failed["isError"], true, "{failed}");
    assert!(failed.get("structuredContent").is_none(), "{failed}");
    let text = failed["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("ValueError: the summary service is down"), "{failed}");
}

#[cfg(feature = "external")]
#[test]
fn the_inspectors_stringified_array_arguments_are_decoded() {
    let serve = [crate::mcp::lcp_bin(), "serve", FOLDER];
    let called = crate::mcp::inspector_cli(
        &serve,
        &["--method", "tools/call", "--tool-name", "tool_tags", "--tool-arg", r#"tags=["a","b"]"#],
    );
    assert_ok(&called, json!({"tags": ["a", "b"], "root": ".", "note": null}));
}

#[test]
fn strict_with_a_format_that_has_no_strict_mode_is_a_usage_error() {
    for format in ["anthropic", "gemini", "mcp", "manifest"] {
        let output = lcp(&["export", "--format", format, "--strict", FOLDER]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{format}: {stderr}");
        assert!(stderr.contains("openai and openai-responses have it"), "{stderr}");
    }
    for format in ["openai", "openai-responses"] {
        assert!(lcp(&["export", "--format", format, "--strict", FOLDER]).status.success(), "{format}");
    }
}

#[test]
fn deleting_a_session_that_does_not_exist_is_404() {
    let server = crate::mcp::HttpServer::start(&[FOLDER]);
    let address = crate::auth::address_of(&server.url);
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {address}\r\nmcp-session-id: made-up\r\nmcp-protocol-version: 2025-06-18\r\nconnection: close\r\n\r\n"
    );
    let (status, _, body) = crate::auth::exchange(&address, &request);
    assert_eq!(status, 404, "{body}");
    let session = {
        let (_, headers, _) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
        crate::auth::header(&headers, "mcp-session-id").to_string()
    };
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: {address}\r\nmcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\nconnection: close\r\n\r\n"
    );
    let (status, _, body) = crate::auth::exchange(&address, &request);
    assert!(status == 200 || status == 202 || status == 204, "a real session is closed: {status} {body}");
}

#[test]
fn a_libraries_table_that_names_no_library_is_a_warning_naming_the_closest() {
    let dir = temp_dir("interop-libraries");
    let config = dir.join("lcp.toml");
    write(&config, "[libraries.Args]\nkey = 1\n\n[libraries.args]\nkey = 2\n");
    let output = lcp(&["check", FOLDER, "--config", config.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: `libraries.Args` names no library") && stderr.contains("did you mean `args`?"),
        "{stderr}"
    );
    assert!(!stderr.contains("`libraries.args`"), "{stderr}");
    // At the table's name.
    assert!(stderr.contains("lcp.toml:1:12: warning: `libraries.Args`"), "{stderr}");
}

#[test]
fn an_unknown_argument_is_told_the_closest_parameter() {
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_tags", &["--args", r#"{"tags": [], "limt": 2}"#]));
    assert!(result["error"].as_str().unwrap().contains("unknown parameter `limt`; did you mean `limit`?"), "{result}");
}

#[test]
fn counts_are_said_in_the_singular_for_one_and_helper_modules_are_no_libraries() {
    // `rich/inventory/` is one library of three files, one a helper module with no tool.
    let listed = lcp(&["list", "--static", "fixtures/rich"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(table.trim_end().ends_with("6 tools in 2 libraries"), "{table}");
    let checked = lcp(&["check", FOLDER]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(stderr.contains("1 library, 4 tools, 0 errors, 0 warnings"), "{stderr}");
}

#[test]
fn the_server_is_named_and_instructs_as_the_config_says_else_from_its_libraries() {
    let server = crate::mcp::HttpServer::start(&["fixtures/rich"]);
    let (_, _, reply) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
    assert_eq!(reply["result"]["serverInfo"]["name"], "lcp", "{reply}");
    let instructions = reply["result"]["instructions"].as_str().unwrap_or_else(|| panic!("{reply}"));
    assert_eq!(instructions, "Inventory: Tracks items in a small warehouse.", "units.py has no TOOL_LIBRARY_DESC");

    let dir = temp_dir("interop-mcp-name");
    let config = dir.join("lcp.toml");
    write(&config, "[mcp]\nname = \"warehouse\"\ninstructions = \"Count before you move stock.\"\n");
    let server = crate::mcp::HttpServer::start(&["fixtures/rich", "--config", config.to_str().unwrap()]);
    let (_, _, reply) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
    assert_eq!(reply["result"]["serverInfo"]["name"], "warehouse", "{reply}");
    assert_eq!(reply["result"]["instructions"], "Count before you move stock.", "{reply}");
}

#[test]
fn a_broken_file_dropped_into_a_served_folder_is_reported_on_stderr_and_as_a_log_message() {
    let folder = temp_dir("interop-broken-drop");
    write(&folder.join("good.py"), "def tool_good() -> int:\n    \"\"\"One.\"\"\"\n    return 1\n");
    let mut server = crate::mcp::RawServer::start(&[folder.to_str().unwrap()]);
    server.initialize();
    write(&folder.join("broken.py"), "def tool_broken(:\n");
    // Each listing looks again where there are no change notifications; bounded.
    for id in 2..60 {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        server.response(id);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (stdout, stderr) = server.finish_with_stderr();
    assert!(stderr.lines().any(|line| line.contains("broken.py:1:") && line.contains(": error: ")), "{stderr}");
    let logged = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|message| message["method"] == "notifications/message")
        .unwrap_or_else(|| panic!("no log message: {stdout}"));
    assert_eq!(logged["params"]["level"], "error", "{logged}");
    assert!(logged["params"]["data"].as_str().unwrap().contains("broken.py:1:"), "{logged}");
}

#[test]
fn a_listing_right_after_a_change_waits_for_its_rescan() {
    let folder = temp_dir("interop-pending");
    write(&folder.join("first.py"), "def tool_first() -> int:\n    \"\"\"One.\"\"\"\n    return 1\n");
    let server = crate::mcp::HttpServer::start(&[folder.to_str().unwrap()]);
    let (_, headers, _) = crate::auth::post(&server.url, None, None, crate::auth::initialize());
    let session = crate::auth::header(&headers, "mcp-session-id").to_string();
    for round in 0..5 {
        let name = format!("tool_added_{round}");
        write(
            &folder.join(format!("added_{round}.py")),
            format!("def {name}() -> int:\n    \"\"\"New.\"\"\"\n    return 2\n"),
        );
        // Well within the 50 ms a change is left to settle.
        std::thread::sleep(std::time::Duration::from_millis(10));
        let list = json!({"jsonrpc": "2.0", "id": 10 + round, "method": "tools/list"});
        let (_, _, listed) = crate::auth::post(&server.url, None, Some(&session), list);
        let names: Vec<&str> =
            listed["result"]["tools"].as_array().unwrap().iter().filter_map(|tool| tool["name"].as_str()).collect();
        assert!(names.contains(&name.as_str()), "round {round}: {names:?}");
    }
}

#[cfg(feature = "external")]
#[test]
fn a_returned_typeddict_with_an_extra_key_is_checked_as_pydantic_checks_it() {
    let result = stdout_json(&lcp_call_in(FOLDER, "tool_labelled_point", &[]));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["output"], json!({"x": 1, "y": 2}), "the extra key is dropped");
    for mode in MODES {
        let report = session(mode, "none", &[FOLDER], json!([call("tool_labelled_point", json!({}))]));
        assert_ok(&report["results"][0], json!({"x": 1, "y": 2}));
    }
}
