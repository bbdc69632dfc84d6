//! SPEC §14, tool sources: tools defined in the config file (`[[tools]]`), beside the
//! Python files, through listing, every export, `lcp call` (workers and in-process),
//! `lcp test` and `lcp serve` with the official Python client. Fixture:
//! `fixtures/sources/config_tools/` (its `lcp.toml`, the `lib/helpers.py` module it
//! names, and a `tools/` folder with a tool the config shadows).

use serde_json::{Value, json};

#[cfg(feature = "external")]
use crate::mcp::MODES;
#[cfg(feature = "external")]
use crate::mcp::assert_error;
#[cfg(feature = "external")]
use crate::mcp::session;
use crate::support::*;

const CONFIG: &str = "fixtures/sources/config_tools/lcp.toml";
pub(crate) const FOLDER: &str = "fixtures/sources/config_tools/tools";

fn manifest() -> Value {
    stdout_json(&lcp(&["export", "--format", "manifest", "--config", CONFIG, FOLDER]))
}

fn tool<'m>(manifest: &'m Value, name: &str) -> &'m Value {
    let tools = manifest["tools"].as_array().expect("a tools list");
    tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no {name} in {manifest}"))
}

#[cfg(feature = "external")]
fn called(tool: &str, args: Value, extra: &[&str]) -> Value {
    let args = args.to_string();
    let mut command = vec!["call", tool, "--config", CONFIG, "--args", &args];
    command.extend_from_slice(extra);
    command.push(FOLDER);
    stdout_json(&lcp(&command))
}

#[test]
fn config_tools_are_listed_from_their_annotations_without_importing_anything() {
    let manifest = manifest();
    let greet = tool(&manifest, "greet");
    assert_eq!(greet["source"], "config");
    assert_eq!(greet["description"], "Greets someone, in a style");
    assert_eq!(
        greet["parameters"],
        json!({
            "type": "object",
            "properties": {
                "who": {"type": "string", "description": "Who to greet"},
                "style": {"type": "string", "enum": ["plain", "loud"], "default": "plain"},
                "times": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 1},
            },
            "required": ["who"],
            "additionalProperties": false,
        })
    );
    assert_eq!(greet["output_schema"], json!({"type": "string"}));
    assert_eq!(greet["policy"]["declared"], json!({"read_only": true}));
    assert_eq!(greet["line"], 17, "the line of its [[tools]] entry");
    let join = tool(&manifest, "join_words");
    assert_eq!(join["parameters"]["properties"]["words"], json!({"type": "array", "items": {"type": "string"}}));
    let size = tool(&manifest, "file_size");
    assert_eq!(size["policy"]["grade"], json!({"w": 1, "d": 0}), "grade_w and effects_ceiling");
    assert_eq!(size["output_schema"], json!({"type": "integer"}));
    assert_eq!(tool(&manifest, "tool_folder_only")["source"], "file");
    // `--static` imports nothing, so a module that cannot be imported lists all the same.
    assert_eq!(tool(&manifest, "not_importable")["source"], "config");
}

#[test]
fn a_config_tool_wins_the_bare_name_and_the_shadowed_tool_is_reported_with_both_sources() {
    let manifest = manifest();
    let shadowed = tool(&manifest, "tool_shadowed");
    assert_eq!(shadowed["source"], "config");
    let names: Vec<&Value> = manifest["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert_eq!(names.iter().filter(|n| **n == "tool_shadowed").count(), 1, "{names:?}");
    let warnings: Vec<&Value> = manifest["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["message"].as_str().unwrap_or_default().contains("shadowed"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0];
    assert_eq!(warning["level"], "warning");
    assert!(warning["path"].as_str().unwrap().ends_with("tools/shadow.py"), "{warning}");
    let message = warning["message"].as_str().unwrap();
    assert!(message.contains("(file source) is shadowed by `tool_shadowed` of the config source"), "{message}");
    assert!(message.contains("config_tools/lcp.toml:44"), "{message}");

    let listed = lcp(&["list", "--config", CONFIG, FOLDER]);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let row = stdout.lines().find(|line| line.starts_with("greet ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("config:fixtures/sources/config_tools/lcp.toml:17"), "{row}");
    assert!(String::from_utf8_lossy(&listed.stderr).contains("is shadowed by"), "the warning is printed");
}

#[cfg(feature = "external")]
#[test]
fn a_config_tool_call_imports_its_module_and_passes_arguments_by_name_or_by_position() {
    for extra in [&[][..], &["--in-process"][..]] {
        // `helpers.greet(who, style, times)` takes its arguments by name; a default fills
        // what the call leaves out.
        let result = called("greet", json!({"who": "ada", "times": 2}), extra);
        assert_eq!(result["output"], "hello ada hello ada", "{extra:?}: {result}");
        let result = called("greet", json!({"who": "ada", "style": "loud"}), extra);
        assert_eq!(result["output"], "HELLO ADA", "{extra:?}: {result}");
        // `os.path.getsize(filename)` has no parameter `path`: by position.
        let result = called("file_size", json!({"path": "fixtures/sources/config_tools/lib/helpers.py"}), extra);
        let size = std::fs::metadata(root().join("fixtures/sources/config_tools/lib/helpers.py")).unwrap().len();
        assert_eq!(result["output"], json!(size), "{extra:?}: {result}");
        // The config's tool, not the folder's.
        assert_eq!(called("tool_shadowed", json!({"who": "x"}), extra)["output"], "hello x", "{extra:?}");
        assert_eq!(called("tool_folder_only", json!({"x": 4}), extra)["output"], 4, "{extra:?}");
    }
}

#[cfg(feature = "external")]
#[test]
fn a_config_tool_gets_the_host_objects_its_function_names() {
    let workspace = temp_dir("config-tool-workspace");
    let workspace_text = workspace.display().to_string();
    let result = called("where_am_i", json!({}), &["--workspace", &workspace_text]);
    assert_eq!(result["ok"], true, "{result}");
    let reported = std::fs::canonicalize(result["output"].as_str().unwrap()).unwrap();
    assert_eq!(reported, std::fs::canonicalize(&workspace).unwrap());
}

#[cfg(feature = "external")]
#[test]
fn a_module_that_does_not_import_or_lacks_the_function_is_a_failed_call_saying_so() {
    let result = called("not_importable", json!({}), &[]);
    assert_eq!(result["ok"], false, "{result}");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("the module `no_such_module_anywhere` could not be imported"), "{error}");
    assert!(error.contains("No module named 'no_such_module_anywhere'"), "{error}");
    let result = called("no_such_function", json!({}), &[]);
    assert_eq!(result["error"], "the module `helpers` has no function `missing`", "{result}");
    // Arguments are checked against the declared schema before anything is imported.
    let result = called("greet", json!({"who": "ada", "style": "quiet"}), &[]);
    assert_eq!(result["ok"], false, "{result}");
    assert!(result["error"].as_str().unwrap().contains("style"), "{result}");
}

#[cfg(feature = "external")]
#[test]
fn config_tools_are_served_over_mcp_and_tested_by_the_test_lane() {
    for mode in MODES {
        let serve = ["--config", CONFIG, FOLDER];
        let steps = json!(["list", {"call": "greet", "arguments": {"who": "mcp"}}, {"call": "not_importable", "arguments": {}}]);
        let report = session(mode, "none", &serve, steps);
        let results = report["results"].as_array().unwrap();
        let listed: Vec<&Value> = results[0]["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
        assert!(listed.contains(&&json!("greet")) && listed.contains(&&json!("file_size")), "{mode}: {listed:?}");
        assert_eq!(results[1]["isError"], false, "{mode}: {}", results[1]);
        assert_eq!(results[1]["structuredContent"], json!({"result": "hello mcp"}), "{mode}: {}", results[1]);
        assert_error(&results[2], &["could not be imported"]);
    }
    let tested = lcp(&["test", "--config", CONFIG, "--tool", "join_words", FOLDER]);
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(tested.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&tested.stderr));
    assert!(stdout.contains("join_words"), "{stdout}");
}

#[test]
fn a_bad_config_tool_is_reported_at_its_entry() {
    let dir = temp_dir("config-tool-errors");
    let config = dir.join("lcp.toml");
    write(
        &config,
        "[[tools]]\nname = \"ok\"\nmodule = \"m\"\nfunction = \"f\"\n\n[[tools]]\nname = \"bad\"\nmodule = \"m\"\nfunction = \"f\"\nargs = [{ name = \"x\", type = \"int) -> None:\\n    pass\\ndef g(y: int\" }]\n",
    );
    let config = config.display().to_string();
    let checked = lcp(&["check", "--config", &config, FOLDER]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(!checked.status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("`bad`")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("lcp.toml:6:1: error: `[[tools]]` `bad`: `args[0].type`"), "{line}");
    assert!(line.contains("is not an annotation"), "{line}");
    let written = lcp(&["export", "--format", "manifest", "--config", &config, FOLDER]);
    let names: Vec<Value> =
        stdout_json(&written)["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert!(names.contains(&json!("ok")) && !names.contains(&json!("bad")), "{names:?}");

    write(&dir.join("lcp.toml"), "[[tools]]\nname = \"x\"\nmodule = \"m\"\nfunction = \"f\"\ncolour = 1\n");
    let listed = lcp(&["list", "--config", &config, FOLDER]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(!listed.status.success());
    assert!(stderr.contains("lcp.toml:5:1: `[[tools]]` `x`: unknown key `colour`"), "{stderr}");
}

// MCP servers as sources: the official server-everything, the SDK's own server with a
// tool that crashes it, `lcp serve` itself, and servers that never start.

/// A config file of `[mcp_servers]` tables (TOML text) in a folder of its own.
pub(crate) fn servers_config(name: &str, tables: &str) -> String {
    let dir = temp_dir(name);
    let config = dir.join("lcp.toml");
    write(&config, tables);
    config.display().to_string()
}

#[cfg(feature = "external")]
/// server-everything as `[mcp_servers.everything]`, its processes marked with `mark`.
fn everything(prefix: &str, mark: &str) -> String {
    format!(
        "[mcp_servers.everything]\ncommand = {:?}\nprefix = {prefix:?}\nenv = {{ LCP_TEST_MARK = {mark:?} }}\n",
        everything_server().display().to_string()
    )
}

#[cfg(feature = "external")]
/// The official Python SDK's server of `tests/python/crashing_mcp_server.py` as
/// `[mcp_servers.NAME]`, its processes marked with `mark`.
fn sdk_server(name: &str, mark: &str) -> String {
    let python = test_python().display().to_string();
    let script = root().join("tests/python/crashing_mcp_server.py").display().to_string();
    format!("[mcp_servers.{name}]\ncommand = {python:?}\nargs = [{script:?}]\nenv = {{ LCP_TEST_MARK = {mark:?} }}\n")
}

#[cfg(feature = "external")]
#[test]
fn an_mcp_servers_tools_keep_their_schemas_and_take_their_grade_from_their_annotations() {
    let config = servers_config(
        "mcp-everything",
        &format!(
            "{}\n[mcp_servers.everything.tools.echo]\ngrade = {{ w = 0, d = 0 }}\n",
            everything("ev_", "mcp-everything")
        ),
    );
    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", "--config", &config, FOLDER]));
    let tools: Vec<&Value> =
        manifest["tools"].as_array().unwrap().iter().filter(|t| t["source"] == "mcp:everything").collect();
    assert!(tools.len() >= 10, "{tools:?}");
    let sum = tools.iter().find(|t| t["name"] == "ev_get-sum").expect("ev_get-sum");
    assert_eq!(sum["parameters"]["required"], json!(["a", "b"]), "{sum}");
    let echo = tools.iter().find(|t| t["name"] == "ev_echo").expect("ev_echo");
    assert_eq!(echo["policy"]["grade"], json!({"w": 0, "d": 0}), "the per-tool table wins: {echo}");
    let structured = tools.iter().find(|t| t["name"] == "ev_get-structured-content").expect("structured");
    assert!(structured["output_schema"]["properties"].is_object(), "its output schema is kept: {structured}");
    // Every other tool's grade is §14's reading of its annotations, as the MCP export shows them.
    let exported = stdout_json(&lcp(&["export", "--format", "mcp", "--config", &config, FOLDER]));
    for tool in tools.iter().filter(|t| t["name"] != "ev_echo") {
        let listed = exported["tools"].as_array().unwrap().iter().find(|t| t["name"] == tool["name"]).unwrap();
        let hints = &listed["annotations"];
        let d = if hints["readOnlyHint"] == true {
            0
        } else if hints["destructiveHint"] == false {
            2
        } else {
            3
        };
        let w = if hints["openWorldHint"] == false { 1 } else { 3 };
        assert_eq!(tool["policy"]["grade"], json!({"w": w, "d": d}), "{}: {hints}", tool["name"]);
    }
    // Every export takes them: OpenAI strict and Gemini lower their schemas like any other.
    for format in [&["--format", "openai", "--strict"][..], &["--format", "gemini"][..], &["--format", "anthropic"][..]]
    {
        let mut args = vec!["export"];
        args.extend_from_slice(format);
        args.extend_from_slice(&["--config", &config, FOLDER]);
        let written = lcp(&args);
        let text = String::from_utf8_lossy(&written.stdout);
        assert!(text.contains("ev_get-sum"), "{format:?}: {}", String::from_utf8_lossy(&written.stderr));
    }
    assert!(processes_marked("mcp-everything").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn an_mcp_servers_tools_are_called_through_lcp_call_and_lcp_serve_with_results_as_the_server_sent_them() {
    let config = servers_config("mcp-everything-calls", &everything("", "mcp-everything-calls"));
    let result = stdout_json(&lcp(&[
        "call",
        "get-structured-content",
        "--config",
        &config,
        "--args",
        r#"{"location": "New York"}"#,
        FOLDER,
    ]));
    assert_eq!(result["ok"], true, "{result}");
    let structured = &result["output"]["structuredContent"];
    assert!(structured["temperature"].is_number(), "{result}");
    assert_eq!(result["output"]["content"][0]["type"], "text");
    let refused = stdout_json(&lcp(&["call", "get-sum", "--config", &config, "--args", r#"{"a": "x"}"#, FOLDER]));
    assert_eq!(refused["ok"], false);
    assert!(
        refused["error"].as_str().unwrap().contains("missing required parameter `b`"),
        "checked before it is sent: {refused}"
    );
    for mode in MODES {
        let steps = json!([
            {"call": "get-sum", "arguments": {"a": 2, "b": 3}},
            {"call": "get-tiny-image", "arguments": {}},
            {"call": "tool_folder_only", "arguments": {"x": 7}},
        ]);
        let report = session(mode, "none", &["--config", &config, FOLDER], steps);
        let results = report["results"].as_array().unwrap();
        assert_eq!(results[0]["content"][0]["text"], "The sum of 2 and 3 is 5.", "{mode}: {}", results[0]);
        let kinds: Vec<&Value> = results[1]["content"].as_array().unwrap().iter().map(|b| &b["type"]).collect();
        assert!(kinds.contains(&&json!("image")), "{mode}: the image block as sent: {}", results[1]);
        assert_eq!(results[2]["structuredContent"], json!({"result": 7}), "{mode}: the files' tools beside them");
    }
    assert!(processes_marked("mcp-everything-calls").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn a_server_that_crashes_mid_call_fails_that_call_and_the_next_call_starts_it_again() {
    let config = servers_config("mcp-crashy", &sdk_server("crashy", "mcp-crashy"));
    for mode in MODES {
        let steps = json!([{"call": "pid", "arguments": {}}, {"call": "crash", "arguments": {}}, {"call": "pid", "arguments": {}}]);
        let report = session(mode, "none", &["--config", &config, FOLDER], steps);
        let results = report["results"].as_array().unwrap();
        let first = results[0]["structuredContent"]["result"].as_u64().unwrap_or_else(|| panic!("{}", results[0]));
        assert_error(&results[1], &["`crash` of the MCP server `crashy` failed", "it ended during the call"]);
        let second = results[2]["structuredContent"]["result"].as_u64().unwrap_or_else(|| panic!("{}", results[2]));
        assert_ne!(first, second, "{mode}: a new server process");
    }
    assert!(processes_marked("mcp-crashy").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn a_server_that_cannot_start_or_never_answers_is_skipped_within_its_timeout_and_the_others_are_listed() {
    let marker = "lcp-never-answers-98.125";
    let config = servers_config(
        "mcp-faults",
        &format!(
            "[mcp_servers.silent]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 97.5 # {marker}\"]\nstartup_timeout = 2\nenv = {{ LCP_TEST_MARK = \"mcp-faults\" }}\n\n[mcp_servers.missing]\ncommand = \"/no/such/server\"\n\n{}",
            everything("ev_", "mcp-faults")
        ),
    );
    let started = std::time::Instant::now();
    let listed = lcp(&["list", "--config", &config, FOLDER]);
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "{stderr}");
    assert!(stdout.contains("ev_get-sum") && stdout.contains("tool_folder_only"), "{stdout}");
    assert!(
        stderr.contains("MCP server `silent`: it is skipped: it did not start and list its tools within 2s"),
        "{stderr}"
    );
    assert!(stderr.contains("MCP server `missing`: it is skipped: `/no/such/server` could not be started"), "{stderr}");
    assert_eq!(stderr.matches("MCP server `").count(), 2, "one diagnostic each: {stderr}");
    // In parallel: the silent server's timeout, not the sum of every server's start.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    assert!(processes_marked("mcp-faults").is_empty(), "the silent server (and every other) was ended");

    let listed = lcp(&["list", "--static", "--config", &config, FOLDER]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains("the MCP servers `silent`, `missing`, `everything` are not started (--static)"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("ev_"), "their tools are left out");
}

#[test]
fn lcp_serve_is_a_source_too_and_a_files_tool_wins_a_name_a_server_also_has() {
    let lcp_bin = crate::mcp::lcp_bin();
    let upstream = root().join(FOLDER).display().to_string();
    let config = servers_config(
        "mcp-lcp-upstream",
        &format!("[mcp_servers.inner]\ncommand = {lcp_bin:?}\nargs = [\"serve\", {upstream:?}]\n"),
    );
    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", "--config", &config, FOLDER]));
    let sources: Vec<(&Value, &Value)> =
        manifest["tools"].as_array().unwrap().iter().map(|t| (&t["name"], &t["source"])).collect();
    assert!(sources.contains(&(&json!("tool_folder_only"), &json!("file"))), "{sources:?}");
    assert!(!sources.iter().any(|(_, source)| **source == "mcp:inner"), "every inner tool is shadowed: {sources:?}");
    let shadowed: Vec<&str> = manifest["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["message"].as_str())
        .filter(|m| m.contains("(mcp:inner source) is shadowed by"))
        .collect();
    assert_eq!(shadowed.len(), 2, "{shadowed:?}");
    assert!(shadowed[0].contains("of the file source at"), "{shadowed:?}");

    // With a prefix nothing is shadowed, and a call goes through both servers.
    let config = servers_config(
        "mcp-lcp-upstream-prefixed",
        &format!("[mcp_servers.inner]\ncommand = {lcp_bin:?}\nargs = [\"serve\", {upstream:?}]\nprefix = \"inner_\"\n"),
    );
    let result =
        stdout_json(&lcp(&["call", "inner_tool_folder_only", "--config", &config, "--args", r#"{"x": 5}"#, FOLDER]));
    assert_eq!(result["output"]["structuredContent"], json!({"result": 5}), "{result}");
}

#[cfg(feature = "external")]
#[test]
fn a_desktop_assistants_servers_are_read_from_its_config_after_the_files_own_and_policy_and_profiles_apply() {
    let dir = temp_dir("mcp-host-configs");
    let claude = dir.join("claude_desktop_config.json");
    let server = everything_server().display().to_string();
    write(
        &claude,
        json!({"mcpServers": {
            "desktop-everything": {"command": server, "args": [], "env": {"LCP_TEST_MARK": "mcp-host-configs"}},
            "off": {"command": "/no/such/server", "disabled": true},
        }})
        .to_string(),
    );
    let vscode = dir.join("mcp.json");
    write(&vscode, json!({"servers": {"editor-everything": {"type": "stdio", "command": server, "env": {"LCP_TEST_MARK": "mcp-host-configs"}}}}).to_string());
    let config = dir.join("lcp.toml");
    write(
        &config,
        format!(
            "{}\n[mcp]\nhost_configs = [\"claude_desktop_config.json\", \"mcp.json\"]\n\n[policy]\nmax_grade = {{ d = 0 }}\n\n[profiles.sums]\ntools = [\"ev_get-sum\"]\n",
            everything("ev_", "mcp-host-configs")
        ),
    );
    let config = config.display().to_string();
    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", "--config", &config, FOLDER]));
    let tools = manifest["tools"].as_array().unwrap();
    let source_of = |name: &str| tools.iter().find(|t| t["name"] == name).map(|t| t["source"].clone());
    assert_eq!(source_of("ev_get-sum"), Some(json!("mcp:everything")));
    // The config's own server has a prefix, so the desktop's keeps the bare names, and
    // the editor's, read after it, loses each of them to it.
    assert_eq!(source_of("get-sum"), Some(json!("mcp:desktop-everything")), "{tools:?}");
    let shadowed = manifest["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["message"].as_str())
        .filter(|m| {
            m.contains("(mcp:editor-everything source) is shadowed by")
                && m.contains("of the mcp:desktop-everything source")
        })
        .count();
    assert!(shadowed >= 10, "the editor's server lost every name to the desktop's: {shadowed}");
    // `max_grade.d = 0` leaves out every tool that may change anything.
    assert!(source_of("ev_toggle-simulated-logging").is_none(), "d = 2 is over the policy's ceiling");
    let refused =
        stdout_json(&lcp(&["call", "ev_toggle-simulated-logging", "--config", &config, "--args", "{}", FOLDER]));
    assert_eq!(refused["ok"], false);
    assert!(refused["error"].as_str().unwrap().contains("max_grade.d = 0"), "{refused}");
    // A profile selects server tools like any others.
    let listed = lcp(&["list", "--config", &config, "--profile", "sums", FOLDER]);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(stdout.contains("ev_get-sum") && !stdout.contains("ev_echo"), "{stdout}");
    // `lcp test` calls them too.
    let tested = lcp(&["test", "--config", &config, "--tool", "ev_get-sum", FOLDER]);
    assert!(tested.status.success(), "{}", String::from_utf8_lossy(&tested.stdout));
    assert!(processes_marked("mcp-host-configs").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
/// A session of lcp's client (mode `mode`) with `lcp serve SERVE` (or the `--url` of
/// one), whose server-everything (unprefixed) asks the client (elicitation), its model
/// (sampling) and reports progress during three calls: each reaches the client, and
/// its answers go back.
pub(crate) fn ask_server_everything_through(mode: &str, serve: &[&str]) {
    let form = json!([{"name": "Ada", "email": "ada@example.com", "age": 36, "favoriteColor": "red"}]).to_string();
    let steps = json!([
        {"call": "trigger-elicitation-request", "arguments": {}},
        {"call": "trigger-sampling-request", "arguments": {"prompt": "say hi"}},
        {"call": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2}, "progress": true},
    ]);
    let client = ["--elicit", "accept", "--content", form.as_str(), "--sample", "hi from the model"];
    let report = crate::mcp::session_with(mode, &client, serve, steps);
    let results = report["results"].as_array().unwrap();
    // The server's elicitation was the downstream client's to answer, and its answer went back.
    assert_eq!(report["elicitations"].as_array().map(Vec::len), Some(1), "{mode}: {report}");
    let answered = results[0].to_string();
    assert!(answered.contains("ada@example.com"), "{mode}: {answered}");
    // Its sampling request went to the downstream client's model, and the text came back.
    assert_eq!(report["samplings"][0]["systemPrompt"], "You are a helpful test server.", "{mode}: {report}");
    assert!(results[1].to_string().contains("hi from the model"), "{mode}: {}", results[1]);
    // Its progress reached the client that asked for it.
    let progress = report["progress"].as_array().unwrap();
    assert_eq!(progress.len(), 2, "{mode}: {progress:?}");
    assert_eq!(progress[1]["progress"], 2.0, "{mode}: {progress:?}");
}

#[cfg(feature = "external")]
/// A call of the SDK server's `chatty` through `lcp serve SERVE` (or the `--url` of
/// one): its log line and its two progress reports reach lcp's client, and its result
/// comes back.
pub(crate) fn hear_chatty_through(serve: &[&str]) {
    let report = crate::mcp::session_with(
        "legacy",
        &["--log-level", "info"],
        serve,
        json!([{"call": "chatty", "arguments": {}, "progress": true}]),
    );
    assert_eq!(report["logs"], json!([{"level": "info", "logger": "root", "data": "chatty is working"}]), "{report}");
    let messages: Vec<&Value> = report["progress"].as_array().unwrap().iter().map(|p| &p["message"]).collect();
    assert_eq!(messages, [&json!("half way"), &json!("done")], "{report}");
    assert!(crate::mcp::text(&report["results"][0]).contains("said it all"), "{report}");
}

#[cfg(feature = "external")]
#[test]
fn what_a_server_asks_or_tells_during_a_call_reaches_lcps_own_client() {
    let config = servers_config("mcp-bridged", &everything("", "mcp-bridged"));
    for mode in MODES {
        ask_server_everything_through(mode, &["--config", &config, FOLDER]);
    }
    let config = servers_config("mcp-chatty", &sdk_server("chatty", "mcp-chatty"));
    hear_chatty_through(&["--config", &config, FOLDER]);
    assert!(processes_marked("mcp-bridged").is_empty() && processes_marked("mcp-chatty").is_empty());
}

#[cfg(feature = "external")]
#[test]
fn a_streamable_http_server_is_a_source_with_its_url_from_the_environment() {
    let upstream = crate::mcp::HttpServer::start(&[FOLDER]);
    let config = servers_config(
        "mcp-http-upstream",
        "[mcp_servers.remote]\ntransport = \"http\"\nurl = \"${LCP_TEST_UPSTREAM_URL}\"\nheaders = { X-Caller = \"lcp-test\" }\nprefix = \"remote_\"\n\n[mcp_servers.gone]\nurl = \"http://127.0.0.1:9/mcp\"\nstartup_timeout = 5\n",
    );
    let env = [("LCP_TEST_UPSTREAM_URL", upstream.url.as_str())];
    let args = ["call", "remote_tool_folder_only", "--config", &config, "--args", r#"{"x": 9}"#, FOLDER];
    let called = lcp_with_env(&args, &env);
    let result = stdout_json(&called);
    assert_eq!(result["output"]["structuredContent"], json!({"result": 9}), "{result}");
    let stderr = String::from_utf8_lossy(&called.stderr);
    assert!(
        stderr.contains("MCP server `gone`: it is skipped: `http://127.0.0.1:9/mcp` did not initialize"),
        "{stderr}"
    );
    // Without the variable the config itself is refused, naming it.
    let listed = lcp(&["list", "--config", &config, FOLDER]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains("`mcp_servers.remote`: `url`: `${LCP_TEST_UPSTREAM_URL}` is not set in lcp's environment"),
        "{stderr}"
    );
}

#[cfg(feature = "external")]
/// An MCP server over Streamable HTTP on `127.0.0.1:port`, its processes marked with
/// `mark`, once it listens; ended when dropped.
pub(crate) struct Listening {
    child: std::process::Child,
    pub(crate) port: u16,
}

#[cfg(feature = "external")]
impl Listening {
    pub(crate) fn start(mut command: std::process::Command, port: u16, mark: &str) -> Listening {
        let child = Listening::quiet(&mut command, mark).spawn().expect("the server starts");
        let mut server = Listening { child, port };
        listens(&mut server.child, port, "the server").unwrap_or_else(|ended| panic!("{ended}"));
        server
    }

    /// A server told its port (`command_on(port)`), started on a free one
    /// ([`listening_on_free_port`]).
    pub(crate) fn start_on_free_port(command_on: impl Fn(u16) -> std::process::Command, mark: &str) -> Listening {
        let spawn = |port| Listening::quiet(&mut command_on(port), mark).spawn().expect("the server starts");
        let (child, port) = listening_on_free_port("the server", spawn);
        Listening { child, port }
    }

    /// `command` marked `mark`, with no input and its output dropped.
    fn quiet<'c>(command: &'c mut std::process::Command, mark: &str) -> &'c mut std::process::Command {
        command
            .env("LCP_TEST_MARK", mark)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
    }

    /// `tests/python/crashing_mcp_server.py` (the SDK's own server) on a port it binds
    /// itself.
    pub(crate) fn sdk(mark: &str) -> Listening {
        Listening::sdk_script("tests/python/crashing_mcp_server.py", mark)
    }

    /// `tests/python/crashing_mcp_server.py` on `port` (the port a server that ended
    /// had: a client of that address finds the new one there).
    pub(crate) fn sdk_on(port: u16, mark: &str) -> Listening {
        let mut command = std::process::Command::new(test_python());
        command.arg(root().join("tests/python/crashing_mcp_server.py")).env("LCP_TEST_HTTP_PORT", port.to_string());
        Listening::start(command, port, mark)
    }

    /// The SDK's server of `script` (under the checkout) on a port it binds itself
    /// (`LCP_TEST_HTTP_PORT=0`), read from the address its log says it runs on.
    pub(crate) fn sdk_script(script: &str, mark: &str) -> Listening {
        Listening::sdk_script_with(script, mark, &[])
    }

    /// [`Listening::sdk_script`] with `env` set too (`LCP_TEST_TLS_CERT` ... for https).
    pub(crate) fn sdk_script_with(script: &str, mark: &str, env: &[(&str, &str)]) -> Listening {
        use std::io::BufRead;
        let mut child = std::process::Command::new(test_python())
            .arg(root().join(script))
            .env("LCP_TEST_HTTP_PORT", "0")
            .env("LCP_TEST_MARK", mark)
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (said, port) = std::sync::mpsc::channel();
        // Read to its end, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let address = line.split_once("Uvicorn running on ").map(|(_, rest)| rest);
                let rest = address.and_then(|rest| {
                    ["http://127.0.0.1:", "https://127.0.0.1:"].iter().find_map(|scheme| rest.strip_prefix(scheme))
                });
                let bound = rest.and_then(|rest| {
                    rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|port| port.parse::<u16>().ok())
                });
                if let Some(bound) = bound {
                    let _ = said.send(bound);
                }
            }
        });
        let mut server = Listening { child, port: 0 };
        server.port = port.recv_timeout(std::time::Duration::from_secs(60)).expect("the server says where it listens");
        server
    }
}

#[cfg(feature = "external")]
impl Drop for Listening {
    fn drop(&mut self) {
        crate::support::stop(&mut self.child);
    }
}

#[cfg(feature = "external")]
#[test]
fn what_a_streamable_http_server_asks_during_a_call_is_answered_by_lcps_own_client() {
    let mark = "mcp-http-bridged";
    let upstream = Listening::start_on_free_port(everything_on, mark);
    let port = upstream.port;
    let config = servers_config(mark, &format!("[mcp_servers.everything]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"));
    for mode in MODES {
        ask_server_everything_through(mode, &["--config", &config, FOLDER]);
    }
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn a_streamable_http_servers_calls_carry_progress_logs_and_cancellation_and_outlive_its_restart() {
    let mark = "mcp-http-crashy";
    let mut upstream = Listening::sdk(mark);
    let port = upstream.port;
    let config = servers_config(mark, &format!("[mcp_servers.crashy]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"));
    // What the server tells during the call, on the call's own event stream, reaches
    // lcp's client as it would from a stdio server.
    hear_chatty_through(&["--config", &config, FOLDER]);

    let mut server = crate::mcp::RawServer::start(&["--config", &config, FOLDER]);
    server.initialize();
    let before = cancel_on_the_server(&mut server, mark);
    // A server that dies during a call fails that call alone; started again, it is
    // called in a session of its own.
    let crashed = server.call(5, "crash");
    assert_error(&crashed, &["`crash` of the MCP server `crashy` failed", "it ended during the call"]);
    drop(upstream);
    upstream = Listening::sdk_on(port, mark);
    let after = server.call(6, "pid")["structuredContent"]["result"].clone();
    assert!(after.is_u64() && after != before, "a new server process answers: {after} after {before}");
    let stdout = server.finish();
    assert!(!stdout.contains("\"id\":3"), "the cancelled call was answered: {stdout}");
    drop(upstream);
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

// Virtual tools: declared in the config, implemented by the embedding host.

#[test]
fn a_virtual_tool_is_listed_only_while_the_host_supplies_it_and_a_withdrawn_one_is_a_clean_failed_call() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use lcp::discovery::registry::{Options, Registry, Sources};
    use lcp::host::config::Config;
    use lcp::runtime::{CallOptions, Isolation, Outcome, Runtime, RuntimeConfig, ToolResult, VirtualTool};

    let dir = temp_dir("virtual-tools");
    let config_path = dir.join("lcp.toml");
    write(
        &config_path,
        "[[virtual_tools]]\nname = \"lookup\"\ndescription = \"Looks a key up in the host's table\"\nreturns = \"str\"\nargs = [{ name = \"key\", type = \"Literal['a', 'b']\" }]\n\n[[virtual_tools]]\nname = \"never_there\"\n",
    );
    let config = Config::read(&config_path).expect("the config reads");
    let mut registry =
        Registry::load(&Sources { folders: vec![root().join(FOLDER)], files: vec![] }, &Options::default());
    let (libraries, diagnostics) = config.defined_libraries(&registry.options().injected);
    registry.define(libraries, diagnostics);
    let runtime = Runtime::new(RuntimeConfig { isolation: Isolation::InProcess, ..RuntimeConfig::default() }).unwrap();
    // Without a resolver, no virtual tool is shown.
    assert!(runtime.resolvable(&registry).tool("lookup").is_none());

    let supplied = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let (supplying, counting) = (Arc::clone(&supplied), Arc::clone(&calls));
    runtime.set_resolver(Arc::new(move |name: &str| {
        let counting = Arc::clone(&counting);
        let lookup: VirtualTool = Arc::new(move |args, _: &CallOptions| {
            counting.fetch_add(1, Ordering::SeqCst);
            ToolResult {
                outcome: Outcome::Returned,
                output: json!(format!("value of {}", args["key"])),
                ..ToolResult::failure(String::new())
            }
        });
        (name == "lookup" && supplying.load(Ordering::SeqCst)).then_some(lookup)
    }));
    let shown = runtime.resolvable(&registry);
    assert!(shown.tool("lookup").is_some() && shown.tool("never_there").is_none(), "hidden while unresolvable");
    assert_eq!(shown.tool("lookup").unwrap().0.origin.source(), "virtual");
    let exported = lcp::export::export(&shown, &Default::default(), lcp::export::Format::Mcp { inline_refs: false });
    let names: Vec<&Value> = exported.0["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert!(names.contains(&&json!("lookup")) && !names.contains(&&json!("never_there")), "{names:?}");

    let result = runtime.call(&shown, "lookup", &json!({"key": "a"}), &CallOptions::default());
    assert_eq!(result.output, json!("value of \"a\""), "{result:?}");
    let refused = runtime.call(&shown, "lookup", &json!({"key": "z"}), &CallOptions::default());
    assert!(!refused.ok() && calls.load(Ordering::SeqCst) == 1, "checked against its schema first: {refused:?}");

    supplied.store(false, Ordering::SeqCst);
    let withdrawn = runtime.call(&shown, "lookup", &json!({"key": "a"}), &CallOptions::default());
    assert_eq!(withdrawn.outcome, Outcome::Refused);
    assert!(
        withdrawn.error.as_deref().unwrap().contains("`lookup` is a virtual tool the host cannot supply now"),
        "{withdrawn:?}"
    );
    assert!(runtime.resolvable(&registry).tool("lookup").is_none());

    // The command line has no resolver: `lcp check` says so once, listings leave them out.
    let config_text = config_path.display().to_string();
    let checked = lcp(&["check", "--config", &config_text, FOLDER]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "{stderr}");
    assert_eq!(stderr.matches("the virtual tools `lookup`, `never_there` are hidden").count(), 1, "{stderr}");
    let listed = lcp(&["list", "--config", &config_text, FOLDER]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("lookup"));
}

#[cfg(feature = "external")]
#[test]
fn a_servers_list_changed_reaches_lcps_clients_with_its_new_tools() {
    let inner = temp_dir("list-changed-inner");
    let outer = temp_dir("list-changed-outer");
    let lcp_bin = crate::mcp::lcp_bin();
    let config = servers_config(
        "list-changed-config",
        &format!("[mcp_servers.inner]\ncommand = {lcp_bin:?}\nargs = [\"serve\", {:?}]\n", inner.display().to_string()),
    );
    for mode in MODES {
        let mut command = std::process::Command::new(test_python());
        command
            .arg(root().join("tests/python/mcp_client_list_changed.py"))
            .args(["--mode", mode, "--drop", "fixtures/mcp/dropped/late_tool.py", "--into"])
            .arg(&inner)
            .args(["--call", "tool_late", "--arguments", r#"{"x": 21}"#, "--", lcp_bin, "serve", "--config", &config])
            .arg(&outer)
            .current_dir(root());
        let output = output_within(&mut command, b"", std::time::Duration::from_secs(600));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{mode}: {stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"));
        assert_eq!(report["before"], json!([]), "{mode}");
        assert_eq!(report["after_drop"], json!(["tool_late"]), "{mode}: the inner server's new tool");
        assert_eq!(report["call"]["structuredContent"], json!({"result": 42}), "{mode}: {}", report["call"]);
        assert_eq!(report["after_remove"], json!([]), "{mode}");
    }
}

#[cfg(feature = "external")]
#[test]
fn a_server_tool_a_format_cannot_take_is_left_out_of_that_format_alone_naming_its_server() {
    let config = servers_config("mcp-formats", &sdk_server("crashy", "mcp-formats"));
    let exported = |format: &[&str]| {
        let mut args = vec!["export"];
        args.extend_from_slice(format);
        args.extend_from_slice(&["--config", &config, FOLDER]);
        let written = lcp(&args);
        (String::from_utf8_lossy(&written.stdout).into_owned(), String::from_utf8_lossy(&written.stderr).into_owned())
    };
    // `files.count`: a dot, which OpenAI refuses in a name; the server's other tools stay.
    let (openai, stderr) = exported(&["--format", "openai"]);
    assert!(!openai.contains("files.count") && openai.contains("\"tally\"") && openai.contains("\"pid\""), "{openai}");
    assert!(
        stderr.contains("tool `files.count` of the MCP server `crashy` cannot be exported to openai: its name has `.`"),
        "{stderr}"
    );
    // `tally`: an open mapping, which OpenAI's strict mode cannot express.
    let (strict, stderr) = exported(&["--format", "openai", "--strict"]);
    assert!(!strict.contains("\"tally\"") && strict.contains("\"pid\""), "{strict}");
    assert!(
        stderr.contains("tool `tally` of the MCP server `crashy` cannot be exported to openai --strict: parameters.counts is an open mapping"),
        "{stderr}"
    );
    // Formats that take them carry both.
    for format in ["gemini", "mcp"] {
        let (text, stderr) = exported(&["--format", format]);
        assert!(text.contains("\"files.count\"") && text.contains("\"tally\""), "{format}: {text}\n{stderr}");
        assert!(!stderr.contains("crashy"), "{format}: {stderr}");
    }
    assert!(processes_marked("mcp-formats").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
/// Through `server` (an `lcp serve` of the SDK server, initialized): `pid` (request 2),
/// then `wait_for_cancel` (request 3), cancelled by lcp's client once it runs, then
/// `pid` again (request 4). The server hears of the cancellation (its handler was
/// cancelled: it writes the marker then), and only that call ended: the same server
/// process answers the next one. Its pid.
fn cancel_on_the_server(server: &mut crate::mcp::RawServer, mark: &str) -> Value {
    let before = server.call(2, "pid")["structuredContent"]["result"].clone();
    assert!(before.is_u64(), "{before}");
    let marker = temp_dir(mark).join("call").display().to_string();
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "wait_for_cancel", "arguments": {"marker": marker}}}));
    assert!(wait_for_file(std::path::Path::new(&format!("{marker}.started"))), "the call never reached the server");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}));
    assert!(
        wait_for_file(std::path::Path::new(&format!("{marker}.cancelled"))),
        "the server was never told the call was cancelled"
    );
    assert_eq!(server.call(4, "pid")["structuredContent"]["result"], before, "the server was not restarted");
    before
}

#[cfg(feature = "external")]
#[test]
fn a_call_cancelled_by_lcps_client_is_cancelled_on_the_server_and_the_server_goes_on() {
    let config = servers_config("mcp-cancelled", &sdk_server("crashy", "mcp-cancelled"));
    let mut server = crate::mcp::RawServer::start(&["--config", &config, FOLDER]);
    server.initialize();
    cancel_on_the_server(&mut server, "mcp-cancelled");
    let stdout = server.finish();
    assert!(!stdout.contains("\"id\":3"), "the cancelled call was answered: {stdout}");
    assert!(processes_marked("mcp-cancelled").is_empty(), "no server is left running");
}

/// A stdio server's messages name no call: its calls take turns. One stopped before its
/// answer keeps the turn until the server has read the cancel notice, so what the
/// server sends for it meanwhile reaches no other call.
#[cfg(feature = "external")]
#[test]
fn what_a_server_sends_for_a_call_stopped_before_its_answer_reaches_no_other_call() {
    let mark = "mcp-stopped-late";
    let config = servers_config(mark, &sdk_server("crashy", mark));
    let mut server = crate::mcp::RawServer::start(&["--config", &config, FOLDER]);
    server.initialize();
    let dir = temp_dir(mark);
    let call = |id: u64, marker: &str, seconds: f64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "block_then_log",
            "arguments": {"marker": dir.join(marker).display().to_string(), "seconds": seconds}}})
    };
    // A call not stopped: its log reaches the client.
    server.send(call(2, "heard", 0.0));
    assert_eq!(server.response(2)["result"]["isError"], false);
    // Stopped while the server reads nothing: it logs before it reads the cancel notice.
    server.send(call(3, "stopped", 1.0));
    assert!(wait_for_file(&dir.join("stopped.started")), "the call never reached the server");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}));
    assert!(server.call(4, "pid")["structuredContent"]["result"].is_u64());
    let stdout = server.finish();
    assert!(stdout.contains("late log from heard"), "a call's own log is relayed: {stdout}");
    assert!(!stdout.contains("late log from stopped"), "a stopped call's log reached the next call: {stdout}");
    assert!(processes_marked(mark).is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn server_filesystems_tools_are_graded_from_their_annotations_governed_by_policy_and_called() {
    let dir = temp_dir("mcp-filesystem");
    let allowed = dir.join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    write(&allowed.join("notes.txt"), "hello from a file");
    let tables = format!(
        "[mcp_servers.files]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ LCP_TEST_MARK = \"mcp-filesystem\" }}\n",
        filesystem_server().display().to_string(),
        allowed.display().to_string()
    );
    let config = servers_config("mcp-filesystem-config", &tables);
    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", "--config", &config, FOLDER]));
    let grade = |name: &str| tool(&manifest, name)["policy"]["grade"].clone();
    assert_eq!(grade("read_text_file"), json!({"w": 1, "d": 0}), "readOnlyHint, openWorldHint: false");
    assert_eq!(grade("create_directory"), json!({"w": 1, "d": 2}), "destructiveHint: false");
    assert_eq!(grade("write_file"), json!({"w": 1, "d": 3}), "destructiveHint: true");
    assert_eq!(tool(&manifest, "write_file")["source"], "mcp:files");
    // Its annotations are the server's word: lcp's workers do not run it, so lcp
    // vouches for none of them (SPEC §18), and says whose word they are.
    assert!(tool(&manifest, "read_text_file")["policy"].get("enforced").is_none(), "{manifest}");
    let exported = stdout_json(&lcp(&["export", "--format", "mcp", "--config", &config, FOLDER]));
    let listed = exported["tools"].as_array().unwrap().iter().find(|t| t["name"] == "read_text_file").unwrap();
    assert_eq!(listed["annotations"]["readOnlyHint"], true, "{listed}");
    assert!(listed.get("_meta").is_none_or(|meta| meta.get("lcp/enforced").is_none()), "{listed}");
    let list = String::from_utf8(lcp(&["list", "--wide", "--config", &config, FOLDER]).stdout).unwrap();
    let row = list.lines().find(|line| line.starts_with("read_text_file")).expect("listed");
    assert!(row.contains("[declared by the server: read_only, open_world: false]"), "{row}");

    let notes = allowed.join("notes.txt").display().to_string();
    let read = stdout_json(&lcp(&[
        "call",
        "read_text_file",
        "--config",
        &config,
        "--args",
        &json!({"path": notes}).to_string(),
        FOLDER,
    ]));
    assert_eq!(read["ok"], true, "{read}");
    assert_eq!(read["output"]["content"][0]["text"], "hello from a file", "{read}");

    // The host's policy stands in front of a server's tools as of any other.
    let guarded = format!("{tables}\n[policy]\nallow_destructive = false\n");
    let guarded = servers_config("mcp-filesystem-guarded", &guarded);
    let made = allowed.join("made").display().to_string();
    let written = allowed.join("written.txt");
    for mode in MODES {
        let steps = json!([
            {"call": "create_directory", "arguments": {"path": made}},
            {"call": "write_file", "arguments": {"path": written.display().to_string(), "content": "x"}},
            {"call": "read_text_file", "arguments": {"path": "/etc/hostname"}},
        ]);
        let report = session(mode, "none", &["--config", &guarded, FOLDER], steps);
        let results = report["results"].as_array().unwrap();
        assert_eq!(results[0]["isError"], false, "{mode}: {}", results[0]);
        assert_error(&results[1], &["the host's policy `allow_destructive = false` refuses `write_file`"]);
        // The server's own refusal comes back as it sent it.
        assert_eq!(results[2]["isError"], true, "{mode}: {}", results[2]);
        assert!(crate::mcp::text(&results[2]).contains("outside allowed directories"), "{mode}: {}", results[2]);
    }
    assert!(allowed.join("made").is_dir(), "create_directory ran on the server");
    assert!(!written.exists(), "the refused call never reached the server");
    assert!(processes_marked("mcp-filesystem").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn the_inspector_lists_and_calls_a_servers_tools_through_lcp_serve() {
    let config = servers_config("mcp-inspected", &everything("ev_", "mcp-inspected"));
    // The Inspector takes `--config` for its own: lcp's command line reaches it as one word.
    let command = format!("exec {:?} serve --config {config:?} {FOLDER}", crate::mcp::lcp_bin());
    let serve = ["sh", "-c", command.as_str()];
    let listed = crate::mcp::inspector_cli(&serve, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"ev_get-sum") && names.contains(&"tool_folder_only"), "{names:?}");
    let called = crate::mcp::inspector_cli(
        &serve,
        &["--method", "tools/call", "--tool-name", "ev_get-sum", "--tool-arg", "a=2", "b=3"],
    );
    assert_eq!(crate::mcp::text(&called), "The sum of 2 and 3 is 5.", "{called}");
    assert!(processes_marked("mcp-inspected").is_empty(), "no server is left running");
}

#[cfg(feature = "external")]
#[test]
fn servers_are_stopped_with_lcp_by_closing_their_input_as_mcp_ends_a_stdio_server() {
    let marker = temp_dir("mcp-stopped").join("exited");
    let table = sdk_server("crashy", "mcp-stopped")
        .replace("env = { ", &format!("env = {{ LCP_TEST_EXIT_MARKER = {:?}, ", marker.display().to_string()));
    let config = servers_config("mcp-stopped-config", &table);
    for command in [&["list"][..], &["export", "--format", "mcp"][..]] {
        let _ = std::fs::remove_file(&marker);
        let mut args = command.to_vec();
        args.extend_from_slice(&["--config", &config, FOLDER]);
        let output = lcp(&args);
        assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
        // Its exit handlers ran: it ended by itself, not by a signal.
        assert_eq!(
            std::fs::read_to_string(&marker).ok().as_deref(),
            Some("exited by itself"),
            "{command:?}: the server was not let to exit"
        );
    }
    assert!(processes_marked("mcp-stopped").is_empty(), "no server is left running");
}
