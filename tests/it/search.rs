//! SPEC §21: `lcp search` and `lcp export --defer`.

use std::io::Write;
#[cfg(feature = "external")]
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

#[cfg(feature = "external")]
use crate::support::test_python;
use crate::support::{lcp, lcp_with_env, stdout_json, temp_dir, write};

const CATALOG: &str = "fixtures/search/catalog";

fn names(tools: &Value) -> Vec<String> {
    tools.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_string()).collect()
}

/// Every function tool of a deferred document, namespaces' included, by name.
fn functions(document: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for item in document.as_array().unwrap() {
        match item["type"].as_str() {
            Some("namespace") => out.extend(item["tools"].as_array().unwrap().iter().cloned()),
            Some("tool_search" | "tool_search_tool_bm25_20251119") => {}
            _ => out.push(item.clone()),
        }
    }
    out
}

/// A folder of `files` libraries of `per_file` tools each.
fn generated_catalog(name: &str, files: usize, per_file: usize) -> std::path::PathBuf {
    let dir = temp_dir(name);
    for file in 0..files {
        let mut text = String::new();
        for tool in 0..per_file {
            text.push_str(&format!(
                "def tool_f{file}_{tool}(x: int) -> int:\n    \"\"\"Tool {tool}.\"\"\"\n    return x\n\n"
            ));
        }
        write(&dir.join(format!("lib{file}.py")), text);
    }
    dir
}

/// The source of a one-line tool `name(x: int) -> int`, described as `Does NAME.`.
fn tool_source(name: &str) -> String {
    format!("def {name}(x: int) -> int:\n    \"\"\"Does {name}.\"\"\"\n    return x\n\n")
}

#[test]
fn search_json_is_tools_with_name_score_library_and_description_best_first() {
    let output = lcp(&["search", "convert 100 dollars to euros", CATALOG, "--static", "--format", "json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let found = stdout_json(&output);
    let tools = found["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "tool_convert_currency");
    assert_eq!(tools[0]["library"], "money");
    assert!(tools[0]["description"].as_str().unwrap().starts_with("Convert an amount of money"));
    for tool in tools {
        let keys: Vec<&str> = tool.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "score", "library", "description"]);
    }
    let scores: Vec<f64> = tools.iter().map(|tool| tool["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|pair| pair[0] >= pair[1]), "{scores:?}");
}

#[test]
fn search_limit_caps_the_tools_returned() {
    let output = lcp(&["search", "file", CATALOG, "--static", "--format", "json", "--limit", "2"]);
    assert_eq!(stdout_json(&output)["tools"].as_array().unwrap().len(), 2);
}

#[test]
fn search_queries_answers_one_json_line_per_query_in_order() {
    let dir = temp_dir("search-queries");
    let queries = dir.join("queries.txt");
    write(&queries, "send an email\n\nweather forecast in Paris\n");
    let output = lcp(&["search", "--queries", queries.to_str().unwrap(), CATALOG, "--static", "--limit", "3"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(names(&lines[0]["tools"])[0], "tool_send_email");
    assert_eq!(lines[1], serde_json::json!({"tools": []}));
    assert_eq!(names(&lines[2]["tools"])[0], "tool_get_weather_forecast");
    assert!(lines.iter().all(|line| line["tools"].as_array().unwrap().len() <= 3));
}

#[test]
fn a_librarys_docstring_summary_finds_its_tools() {
    let dir = temp_dir("search-library-summary");
    let docstring = "\"\"\"Zanzibar harbour\nschedules.\n\nQuokka details further down.\n\"\"\"\n";
    write(&dir.join("ferries.py"), format!("{docstring}{}", tool_source("tool_depart")));
    write(&dir.join("other.py"), tool_source("tool_other"));
    let found = |query: &str| {
        let output = lcp(&["search", query, dir.to_str().unwrap(), "--static", "--format", "json"]);
        names(&stdout_json(&output)["tools"])
    };
    assert_eq!(found("zanzibar schedules"), ["tool_depart"]);
    assert!(found("quokka").is_empty(), "only the docstring's first paragraph is read");
}

#[test]
fn search_queries_of_an_empty_file_print_nothing_and_an_empty_query_or_a_limit_below_one_is_refused() {
    let dir = temp_dir("search-no-queries");
    let queries = dir.join("queries.txt");
    write(&queries, "");
    let output = lcp(&["search", "--queries", queries.to_str().unwrap(), CATALOG, "--static"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    let output = lcp(&["search", "weather", CATALOG, "--static", "--limit", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`0` is not a whole number of 1 or more"));
    assert!(output.stdout.is_empty());
    let output = lcp(&["search", "weather", CATALOG, "--static", "--limit", "99999999999999999999999"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`99999999999999999999999` is too large"));
    // --queries writes JSON lines; asking it for a table is refused, asking for JSON is not.
    let output = lcp(&["search", "--queries", queries.to_str().unwrap(), CATALOG, "--static", "--format", "text"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--format text is for one query"));
    let output = lcp(&["search", "--queries", queries.to_str().unwrap(), CATALOG, "--static", "--format", "json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // As `search_tools` refuses an empty query.
    for blank in ["", "  "] {
        let output = lcp(&["search", blank, CATALOG, "--static"]);
        assert_eq!(output.status.code(), Some(2), "{blank:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("the query is empty"), "{blank:?}");
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn search_queries_from_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["search", "--queries", "-", CATALOG, "--static"])
        .current_dir(crate::support::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"geocode an address\n").unwrap();
    let output = child.wait_with_output().unwrap();
    let line: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(names(&line["tools"])[0], "tool_geocode_address");
}

#[test]
fn search_text_is_a_table_fitted_to_the_terminal() {
    let output = lcp_with_env(&["search", "weather forecast", CATALOG, "--static"], &[("COLUMNS", "50")]);
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("TOOL") && lines[0].contains("SCORE") && lines[0].contains("DESCRIPTION"), "{text}");
    assert!(lines[1].starts_with("tool_get_weathe"), "{text}");
    assert!(lines.iter().all(|line| line.chars().count() <= 50), "{text}");
    let wide = String::from_utf8(lcp(&["search", "weather forecast", CATALOG, "--static"]).stdout).unwrap();
    assert!(wide.lines().any(|line| line.chars().count() > 50), "{wide}");
}

#[test]
fn search_returns_only_the_tools_the_profile_shows() {
    let args = ["search", "weather email", CATALOG, "--static", "--format", "json"];
    let all = names(&stdout_json(&lcp(&args))["tools"]);
    assert!(all.contains(&"tool_get_weather_forecast".to_string()), "{all:?}");
    let output = lcp(&[&args[..], &["--profile", "tool_send_email,tool_file_hash"]].concat());
    assert_eq!(names(&stdout_json(&output)["tools"]), ["tool_send_email"]);
}

#[test]
fn search_without_a_query_is_a_usage_error() {
    let output = lcp(&["search"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn defer_anthropic_marks_every_tool_deferred_and_adds_the_bm25_tool_search() {
    let plain = stdout_json(&lcp(&["export", CATALOG, "--static", "--format", "anthropic"]));
    let args =
        ["export", CATALOG, "--static", "--format", "anthropic", "--defer", "--always-loaded", "tool_send_email"];
    let deferred = stdout_json(&lcp(&args));
    let items = deferred.as_array().unwrap();
    let search: Vec<&Value> = items.iter().filter(|item| item.get("type").is_some()).collect();
    assert_eq!(
        search,
        [&serde_json::json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})]
    );
    let tools = functions(&deferred);
    assert_eq!(names(&Value::Array(tools.clone())), names(&plain), "every tool exactly once, in order");
    for (tool, before) in tools.iter().zip(plain.as_array().unwrap()) {
        let loaded = tool["name"] == "tool_send_email";
        assert_eq!(tool.get("defer_loading"), if loaded { None } else { Some(&Value::Bool(true)) }, "{tool}");
        let mut without = tool.clone();
        without.as_object_mut().unwrap().remove("defer_loading");
        assert_eq!(&without, before);
    }
}

#[test]
fn defer_anthropic_refuses_more_tools_than_the_api_takes() {
    let dir = generated_catalog("defer-too-many", 11, 910);
    let output = lcp(&["export", dir.to_str().unwrap(), "--static", "--format", "anthropic", "--defer"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("10010 tools to defer, above the API's limit of 10000"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn defer_openai_responses_groups_tools_in_a_namespace_per_library() {
    let plain = stdout_json(&lcp(&["export", CATALOG, "--static", "--format", "openai-responses"]));
    let args = [
        "export",
        CATALOG,
        "--static",
        "--format",
        "openai-responses",
        "--defer",
        "--always-loaded",
        "tool_send_email",
    ];
    let deferred = stdout_json(&lcp(&args));
    let items = deferred.as_array().unwrap();
    assert_eq!(items.last().unwrap(), &serde_json::json!({"type": "tool_search"}));
    assert_eq!(items[0]["name"], "tool_send_email");
    assert_eq!(items[0].get("defer_loading"), None);
    let namespaces: Vec<&Value> = items.iter().filter(|item| item["type"] == "namespace").collect();
    let namespace_names: Vec<&str> = namespaces.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(namespace_names, ["files", "geo", "mail", "money", "twins", "weather"]);
    for namespace in &namespaces {
        for tool in namespace["tools"].as_array().unwrap() {
            assert_eq!(tool["defer_loading"], true, "{tool}");
            assert_eq!(tool["type"], "function");
        }
    }
    let weather = namespaces.iter().find(|n| n["name"] == "weather").unwrap();
    assert_eq!(weather["description"], "Weather: current conditions and forecasts for a place.");
    let geo = namespaces.iter().find(|n| n["name"] == "geo").unwrap();
    assert_eq!(geo["description"], "Places on the map.", "the module docstring, without TOOL_LIBRARY_DESC");
    let mut exported = names(&Value::Array(functions(&deferred)));
    let mut expected = names(&plain);
    exported.sort();
    expected.sort();
    assert_eq!(exported, expected, "every tool exactly once");
}

#[test]
fn defer_openai_responses_splits_a_library_above_fifty_tools() {
    let dir = generated_catalog("defer-split", 1, 120);
    let output = lcp(&["export", dir.to_str().unwrap(), "--static", "--format", "openai-responses", "--defer"]);
    let deferred = stdout_json(&output);
    let sizes: Vec<(String, usize)> = deferred
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "namespace")
        .map(|n| (n["name"].as_str().unwrap().to_string(), n["tools"].as_array().unwrap().len()))
        .collect();
    assert_eq!(sizes, [("lib0".to_string(), 50), ("lib0_2".to_string(), 50), ("lib0_3".to_string(), 20)]);
    let name = regex_lite::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
    assert!(sizes.iter().all(|(n, _)| name.is_match(n)));
    assert_eq!(functions(&deferred).len(), 120);
}

#[test]
fn defer_openai_responses_keeps_a_library_folder_in_one_namespace_described_by_its_docstring() {
    let dir = temp_dir("defer-folders");
    let docstring = "\"\"\"\n    Maps and places.\n    More about them.\n\n    Details.\n\"\"\"\n\n";
    write(&dir.join("atlas/atlas.py"), format!("{docstring}{}", tool_source("tool_find_place")));
    write(&dir.join("atlas/extra.py"), tool_source("tool_route"));
    write(&dir.join("beta/util.py"), tool_source("tool_beta_one"));
    write(
        &dir.join("gamma.py"),
        format!("\"\"\"Gamma things.\"\"\"\nTOOL_LIBRARY_NAME = \"\"\n{}", tool_source("tool_gamma")),
    );
    write(
        &dir.join("delta.py"),
        format!(
            "\"\"\"Delta docstring.\"\"\"\nTOOL_LIBRARY_DESC = \"Delta, as it says.\"\n{}",
            tool_source("tool_delta")
        ),
    );
    let output = lcp(&["export", dir.to_str().unwrap(), "--static", "--format", "openai-responses", "--defer"]);
    let deferred = stdout_json(&output);
    let namespaces: Vec<(&str, &str, Vec<String>)> = deferred
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "namespace")
        .map(|n| (n["name"].as_str().unwrap(), n["description"].as_str().unwrap(), names(&n["tools"])))
        .collect();
    assert_eq!(
        namespaces,
        [
            (
                "atlas",
                "Maps and places. More about them.",
                vec!["tool_find_place".to_string(), "tool_route".to_string()]
            ),
            ("beta", "Tools: tool_beta_one (Does tool_beta_one.)", vec!["tool_beta_one".to_string()]),
            ("delta", "Delta, as it says.", vec!["tool_delta".to_string()]),
            ("gamma", "Gamma things.", vec!["tool_gamma".to_string()]),
        ]
    );
}

#[test]
fn defer_openai_responses_names_a_namespace_apart_from_a_tool_always_loaded() {
    let dir = temp_dir("defer-namespace-apart");
    write(
        &dir.join("pings.py"),
        format!("TOOL_LIBRARY_NAME = \"tool_ping\"\n{}{}", tool_source("tool_ping"), tool_source("tool_pong")),
    );
    let args = ["export", dir.to_str().unwrap(), "--static", "--format", "openai-responses", "--defer"];
    let deferred = stdout_json(&lcp(&[&args[..], &["--always-loaded", "tool_ping"]].concat()));
    let items = deferred.as_array().unwrap();
    let top: Vec<(&str, &str)> =
        items.iter().map(|item| (item["type"].as_str().unwrap(), item["name"].as_str().unwrap_or(""))).collect();
    assert_eq!(top, [("function", "tool_ping"), ("namespace", "tool_ping_2"), ("tool_search", "")]);
    // Without a tool of that name beside it, the namespace keeps the library's name.
    let deferred = stdout_json(&lcp(&args));
    assert_eq!(deferred[0]["name"], "tool_ping");
    assert_eq!(names(&deferred[0]["tools"]), ["tool_ping", "tool_pong"]);
}

#[test]
fn defer_with_every_tool_always_loaded_adds_no_search_tool_and_says_so() {
    for format in ["anthropic", "openai-responses"] {
        let plain = lcp(&["export", CATALOG, "--static", "--format", format]);
        let every = names(&stdout_json(&plain)).join(",");
        let output = lcp(&["export", CATALOG, "--static", "--format", format, "--defer", "--always-loaded", &every]);
        assert!(output.status.success(), "{format}");
        assert_eq!(stdout_json(&output), stdout_json(&plain), "{format}: the plain export");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(
                "warning: --defer: every tool is always loaded, so nothing is deferred and no tool search tool is added"
            ),
            "{format}: {stderr}"
        );
    }
    // Tools left out (refused by strict mode) are not always loaded: nothing to warn of.
    let dir = temp_dir("defer-refused");
    write(
        &dir.join("loose.py"),
        "def tool_loose(options: dict) -> int:\n    \"\"\"Takes anything.\"\"\"\n    return 1\n",
    );
    let output =
        lcp(&["export", dir.to_str().unwrap(), "--static", "--format", "openai-responses", "--strict", "--defer"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tool_loose"), "the tool is refused: {stderr}");
    assert!(!stderr.contains("--defer"), "{stderr}");
    // A catalog with no tool has nothing to warn of.
    let empty = temp_dir("defer-empty");
    let output = lcp(&["export", empty.to_str().unwrap(), "--static", "--format", "anthropic", "--defer"]);
    assert_eq!(stdout_json(&output), serde_json::json!([]));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("--defer"));
}

#[test]
fn defer_is_refused_for_a_format_without_tool_search() {
    let output = lcp(&["export", CATALOG, "--static", "--format", "gemini", "--defer"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("gemini has not"));
}

#[cfg(feature = "external")]
#[test]
fn defer_exports_validate_with_the_official_sdk_types() {
    for format in ["anthropic", "openai-responses"] {
        let args = ["export", CATALOG, "--static", "--format", format, "--defer", "--always-loaded", "tool_read_text"];
        let output = lcp(&args);
        assert!(output.status.success());
        let mut child = Command::new(test_python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/search/sdk_types.py"))
            .arg(format)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&output.stdout).unwrap();
        let checked = child.wait_with_output().unwrap();
        let report = String::from_utf8_lossy(&checked.stdout);
        assert!(checked.status.success(), "{format}: {}{report}", String::from_utf8_lossy(&checked.stderr));
        let expected = match format {
            "anthropic" => ["ToolSearchToolBm25_20251119Param", "ToolParam"].as_slice(),
            _ => ["FunctionTool", "NamespaceTool", "  ToolFunction", "ToolSearchTool"].as_slice(),
        };
        for kind in expected {
            assert!(report.lines().any(|line| line == *kind), "{format}: no {kind:?} in {report}");
        }
    }
}

// MCP `search_tools` (SPEC §21), with the official Python client in both lifecycles.

/// A config file in a folder of its own holding `text`, with the catalog's path.
fn served_config(name: &str, text: &str) -> (std::path::PathBuf, String) {
    let dir = temp_dir(name);
    write(&dir.join("lcp.toml"), text);
    (dir.join("lcp.toml"), crate::support::root().join(CATALOG).to_str().unwrap().to_string())
}

#[cfg(feature = "external")]
/// The names of a `tools/list` result.
fn listed(result: &Value) -> Vec<String> {
    names(&result["tools"])
}

#[cfg(feature = "external")]
/// The names `search_tools` returned, checking the shape of each entry.
fn found(result: &Value) -> Vec<String> {
    assert_eq!(result["isError"], false, "{result}");
    let structured = &result["structuredContent"];
    let copy: Value = serde_json::from_str(crate::mcp::text(result)).unwrap();
    assert_eq!(&copy, structured, "the text content is a copy of structuredContent");
    for tool in structured["tools"].as_array().unwrap() {
        let keys: Vec<&str> = tool.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "description", "inputSchema"], "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    names(&structured["tools"])
}

#[cfg(feature = "external")]
fn search(query: &str, limit: Option<u64>) -> Value {
    match limit {
        Some(limit) => crate::mcp::call("search_tools", serde_json::json!({"query": query, "limit": limit})),
        None => crate::mcp::call("search_tools", serde_json::json!({"query": query})),
    }
}

#[cfg(feature = "external")]
#[test]
fn search_tools_on_lists_only_itself_and_always_list_and_every_tool_stays_callable() {
    let (config, catalog) = served_config(
        "search-tools-on",
        "[mcp]\ntool_search = true\nalways_list = [\"tool_read_text\", \"tool_not_here\"]\n",
    );
    let serve = [catalog.as_str(), "--config", config.to_str().unwrap()];
    let steps = serde_json::json!([
        "list",
        search("convert 100 dollars to euros", None),
        search("file", Some(1)),
        crate::mcp::call("tool_convert_currency", serde_json::json!({"amount": 2.0, "source": "USD", "target": "EUR"})),
    ]);
    for mode in crate::mcp::MODES {
        let results = &crate::mcp::session(mode, "none", &serve, steps.clone())["results"];
        assert_eq!(listed(&results[0]), ["tool_read_text", "search_tools"], "{mode}");
        let search_tool = &results[0]["tools"][1];
        assert_eq!(search_tool["inputSchema"]["required"], serde_json::json!(["query"]), "{mode}");
        assert_eq!(search_tool["inputSchema"]["properties"]["limit"]["default"], 5, "{mode}");
        assert_eq!(search_tool["annotations"]["readOnlyHint"], true, "{mode}");
        let first = found(&results[1]);
        assert_eq!(first[0], "tool_convert_currency", "{mode}");
        assert!(first.len() <= 5, "{mode}: {first:?}");
        let hit = &results[1]["structuredContent"]["tools"][0];
        assert!(hit["description"].as_str().unwrap().starts_with("Convert an amount of money"), "{mode}: {hit}");
        assert!(hit["inputSchema"]["properties"]["amount"].is_object(), "{mode}: {hit}");
        assert_eq!(found(&results[2]).len(), 1, "{mode}");
        // Not listed, found by search, called by name.
        assert_eq!(results[3]["isError"], false, "{mode}: {}", results[3]);
    }
}

#[cfg(feature = "external")]
#[test]
fn search_tools_bad_input_is_a_tool_error_saying_what_is_wrong() {
    let (config, catalog) = served_config("search-tools-bad", "[mcp]\ntool_search = true\n");
    let serve = [catalog.as_str(), "--config", config.to_str().unwrap()];
    let steps = serde_json::json!([
        crate::mcp::call("search_tools", serde_json::json!({})),
        search("weather", Some(51)),
        search("weather", Some(0)),
        crate::mcp::call("search_tools", serde_json::json!({"query": "weather", "top": 3})),
    ]);
    let results = &crate::mcp::session("legacy", "none", &serve, steps)["results"];
    crate::mcp::assert_error(&results[0], &["needs `query`"]);
    crate::mcp::assert_error(&results[1], &["`limit` is 51", "from 1 to 50"]);
    crate::mcp::assert_error(&results[2], &["`limit` is 0"]);
    crate::mcp::assert_error(&results[3], &["`top` is not one of its arguments"]);
}

#[cfg(feature = "external")]
#[test]
fn search_tools_follows_the_threshold_unless_tool_search_says() {
    // The catalog has 13 tools.
    let cases = [
        ("[mcp]\ntool_search_threshold = 12\n", true),
        ("[mcp]\ntool_search_threshold = 13\n", false),
        ("", false),
        ("[mcp]\ntool_search = false\ntool_search_threshold = 1\n", false),
        ("[mcp]\ntool_search = true\ntool_search_threshold = 100\n", true),
    ];
    for (text, on) in cases {
        let (config, catalog) = served_config("search-tools-threshold", text);
        let serve = [catalog.as_str(), "--config", config.to_str().unwrap()];
        let steps = serde_json::json!(["list", search("send an email", None)]);
        let results = &crate::mcp::session("legacy", "none", &serve, steps)["results"];
        let names = listed(&results[0]);
        if on {
            assert_eq!(names, ["search_tools"], "{text:?}");
            assert_eq!(found(&results[1])[0], "tool_send_email", "{text:?}");
        } else {
            assert_eq!(names.len(), 13, "{text:?}: {names:?}");
            let message = results[1]["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("unknown tool `search_tools`"), "{text:?}: {}", results[1]);
        }
    }
}

#[cfg(feature = "external")]
#[test]
fn search_tools_returns_only_what_the_profile_shows_under_its_aliases() {
    let (config, catalog) = served_config(
        "search-tools-profile",
        "[mcp]\ntool_search = true\n\n[profiles.mail.tools]\nmail = \"tool_send_email\"\nhash = \"tool_file_hash\"\n",
    );
    let serve = [catalog.as_str(), "--config", config.to_str().unwrap(), "--profile", "mail"];
    let steps = serde_json::json!([
        "list",
        search("weather forecast send email", Some(50)),
        crate::mcp::call("tool_get_weather_forecast", serde_json::json!({"city": "Paris"})),
    ]);
    for mode in crate::mcp::MODES {
        let results = &crate::mcp::session(mode, "none", &serve, steps.clone())["results"];
        assert_eq!(listed(&results[0]), ["search_tools"], "{mode}");
        assert_eq!(found(&results[1]), ["mail"], "{mode}");
        assert!(results[2]["error"]["message"].as_str().unwrap_or_default().contains("tool_get_weather_forecast"));
    }
}

#[cfg(feature = "external")]
#[test]
fn search_tools_index_is_updated_after_a_file_is_added_changed_or_removed_under_serve() {
    let dir = temp_dir("search-tools-rebuild");
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for file in std::fs::read_dir(crate::support::root().join(CATALOG)).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, tools.join(file.file_name().unwrap())).unwrap();
    }
    let config = dir.join("lcp.toml");
    write(&config, "[mcp]\ntool_search = true\n");
    let added = tools.join("tide.py");
    let tide = "def tool_tide_table(harbour: str) -> str:\n    \"\"\"High and low tide times for a harbour.\"\"\"\n    return harbour\n";
    let serve = [tools.to_str().unwrap(), "--config", config.to_str().unwrap()];
    let steps = serde_json::json!([
        search("tide times harbour", None),
        {"write": added.to_str().unwrap(), "text": tide},
        search("tide times harbour", None),
        crate::mcp::call("tool_tide_table", serde_json::json!({"harbour": "Brest"})),
        {"write": tools.join("mail.py").to_str().unwrap(), "text": "def tool_post_letter(to: str) -> str:\n    \"\"\"Posts a paper letter.\"\"\"\n    return to\n"},
        search("send an email", Some(50)),
        {"remove": tools.join("twins.py").to_str().unwrap()},
        search("twin", Some(50)),
    ]);
    for mode in crate::mcp::MODES {
        let _ = std::fs::remove_file(&added);
        std::fs::copy(crate::support::root().join(CATALOG).join("mail.py"), tools.join("mail.py")).unwrap();
        std::fs::copy(crate::support::root().join(CATALOG).join("twins.py"), tools.join("twins.py")).unwrap();
        let results = &crate::mcp::session(mode, "none", &serve, steps.clone())["results"];
        assert!(!found(&results[0]).contains(&"tool_tide_table".to_string()), "{mode}");
        assert_eq!(found(&results[2]).first().map(String::as_str), Some("tool_tide_table"), "{mode}");
        assert_eq!(results[3]["isError"], false, "{mode}: {}", results[3]);
        let after = found(&results[5]);
        assert!(!after.contains(&"tool_send_email".to_string()), "{mode}: a removed tool is not found: {after:?}");
        let twins = found(&results[7]);
        assert!(twins.iter().all(|name| !name.starts_with("tool_twin")), "{mode}: a removed file's tools: {twins:?}");
    }
}

#[cfg(feature = "external")]
#[test]
fn search_tools_over_http() {
    let (config, catalog) = served_config("search-tools-http", "[mcp]\ntool_search = true\n");
    let server = crate::mcp::HttpServer::start(&[catalog.as_str(), "--config", config.to_str().unwrap()]);
    let steps = serde_json::json!([
        "list",
        search("geocode an address", None),
        crate::mcp::call("tool_geocode_address", serde_json::json!({"address": "1 rue de Rivoli"})),
    ]);
    for mode in crate::mcp::MODES {
        let results = &crate::mcp::session(mode, "none", &["--url", &server.url], steps.clone())["results"];
        assert_eq!(listed(&results[0]), ["search_tools"], "{mode}");
        assert_eq!(found(&results[1])[0], "tool_geocode_address", "{mode}");
        assert_eq!(results[2]["isError"], false, "{mode}: {}", results[2]);
    }
}

#[test]
fn check_warns_of_always_loaded_and_always_list_names_that_name_no_tool() {
    let text =
        "[export]\nalways_loaded = [\"tool_nope\", \"tool_send_email\"]\n[mcp]\nalways_list = [\"tool_sendemail\"]\n";
    let (config, _) = served_config("always-names", text);
    let output = lcp(&["check", CATALOG, "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "warnings only");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: `export.always_loaded` names no tool: unknown tool `tool_nope`"), "{stderr}");
    // Each at its entry of the list.
    assert!(stderr.contains("lcp.toml:2:18: warning: `export.always_loaded` names no tool"), "{stderr}");
    assert!(stderr.contains("lcp.toml:4:16: warning: `mcp.always_list` names no tool"), "{stderr}");
    assert!(
        stderr.contains(
            "`mcp.always_list` names no tool: unknown tool `tool_sendemail`; did you mean `tool_send_email`?"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("`tool_send_email`,"), "{stderr}");
    assert!(stderr.contains("2 warnings"), "{stderr}");
}

#[test]
fn export_always_loaded_in_the_config_keeps_tools_undeferred_with_the_flag() {
    let (config, _) = served_config("export-always-loaded", "[export]\nalways_loaded = [\"tool_send_email\"]\n");
    let config = config.to_str().unwrap();
    let deferred = |extra: &[&str]| {
        let args =
            [&["export", CATALOG, "--static", "--format", "anthropic", "--defer", "--config", config], extra].concat();
        let document = stdout_json(&lcp(&args));
        let mut loaded: Vec<String> = functions(&document)
            .iter()
            .filter(|tool| tool.get("defer_loading").is_none())
            .map(|tool| tool["name"].as_str().unwrap().to_string())
            .collect();
        loaded.sort();
        loaded
    };
    assert_eq!(deferred(&[]), ["tool_send_email"]);
    assert_eq!(deferred(&["--always-loaded", "tool_read_text"]), ["tool_read_text", "tool_send_email"]);
    assert_eq!(
        deferred(&["--always-loaded", "tool_read_text, tool_file_hash"]),
        ["tool_file_hash", "tool_read_text", "tool_send_email"]
    );
    // Without --defer, the export is as without the key.
    let with = lcp(&["export", CATALOG, "--static", "--format", "anthropic", "--config", config]);
    assert_eq!(with.stdout, lcp(&["export", CATALOG, "--static", "--format", "anthropic"]).stdout);
}

#[test]
fn export_warns_of_always_loaded_names_that_name_no_tool_it_shows_and_says_why() {
    let text = "[export]\nalways_loaded = [\"tool_nope\"]\n[profiles.p.tools]\nmail = \"tool_send_email\"\nread = \"tool_read_text\"\n";
    let (config, _) = served_config("always-loaded-unshown", text);
    let config = config.to_str().unwrap();
    let export = |profile: &[&str], named: &str| {
        let args = [
            &["export", CATALOG, "--static", "--format", "anthropic", "--defer", "--config", config][..],
            profile,
            &["--always-loaded", named],
        ]
        .concat();
        let output = lcp(&args);
        assert!(output.status.success(), "warnings only: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let said = export(&[], "tool_send_email,,tool_sendmail");
    let warned = |given: &str, name: &str| format!("warning: {given} `{name}` names no tool of this export");
    assert!(said.contains(&warned("--always-loaded", "tool_sendmail")), "{said}");
    assert!(said.contains("no tool has that name; did you mean `tool_send_email`?"), "{said}");
    assert!(said.contains(&warned("`export.always_loaded`", "tool_nope")), "{said}");
    assert!(!said.contains("``"), "an empty name between commas is no name: {said}");
    assert_eq!(said.matches("warning:").count(), 2, "{said}");
    // Under a profile: a tool shown under its alias, and one the profile leaves out.
    let said = export(&["--profile", "p"], "tool_send_email,tool_file_hash,mail");
    assert!(said.contains(&warned("--always-loaded", "tool_send_email")), "{said}");
    assert!(said.contains("the tool is shown as `mail`"), "{said}");
    assert!(said.contains(&warned("--always-loaded", "tool_file_hash")), "{said}");
    assert!(said.contains("the profile leaves the tool out"), "{said}");
    assert!(!said.contains("`mail` names"), "{said}");
    // A tool the policy leaves out: with the policy's rule.
    let (policy, _) = served_config("always-loaded-refused", "[policy]\nallow_destructive = false\n");
    let args =
        ["export", CATALOG, "--static", "--format", "anthropic", "--defer", "--always-loaded", "tool_send_email"];
    let output = lcp(&[&args[..], &["--config", policy.to_str().unwrap()]].concat());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains(&warned("--always-loaded", "tool_send_email")), "{said}");
    assert!(said.contains("the policy leaves the tool out (the host's policy `allow_destructive = false`"), "{said}");
}

#[test]
fn search_config_keys_are_checked_and_an_unknown_one_is_named_with_the_nearest() {
    let cases = [
        ("[mcp]\ntool_serch = true\n", "`mcp`: unknown key `tool_serch`; expected inline_refs"),
        ("[mcp]\ntool_serch = true\n", "did you mean `tool_search`?"),
        ("[mcp]\ntool_search = 1\n", "`mcp.tool_search` is 1; expected true or false"),
        ("[mcp]\ntool_search_threshold = -3\n", "`mcp.tool_search_threshold` is -3"),
        ("[mcp]\nalways_list = [\"tool_x\", 3]\n", "`mcp.always_list` entries are tool names (strings), not 3"),
        (
            "[export]\nalways_load = []\n",
            "`export`: unknown key `always_load`; expected always_loaded; did you mean `always_loaded`?",
        ),
        (
            "[export]\nalways_loaded = \"tool_x\"\n",
            "`export.always_loaded` is \"tool_x\"; expected a list of tool names",
        ),
    ];
    for (text, expected) in cases {
        let (config, _) = served_config("search-config-keys", text);
        let output = lcp(&["list", CATALOG, "--static", "--config", config.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{text:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("lcp.toml:2:") && stderr.contains(expected), "{text:?}: {stderr}");
    }
}
