//! SPEC §20: `lcp audit`, through the binary. `fixtures/audit/`: `transitive/` (a
//! library folder: helpers in a sibling module, aliases, a dispatch table, a partial,
//! a decorator, a class), `pure/`, `drift/` (declarations the code breaks, docstrings
//! that say otherwise), `unknown/` (packages without a table), `misc/` (a tool per
//! capability), `config/` (`[[tools]]` entries). The inference rules themselves are
//! unit tests in `src/host/audit/tests.rs`.

use serde_json::Value;

use crate::support::*;

fn audit_json(args: &[&str]) -> Value {
    let mut all = vec!["audit", "--format", "json"];
    all.extend(args);
    let output = lcp(&all);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    stdout_json(&output)
}

fn tool<'v>(audit: &'v Value, name: &str) -> &'v Value {
    audit["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no {name}"))
}

fn capability_names(tool: &Value) -> Vec<&str> {
    tool["capabilities"].as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn a_network_call_in_a_sibling_helper_two_calls_deep_is_found_with_its_chain() {
    let audit = audit_json(&["fixtures/audit"]);
    let fetch = tool(&audit, "tool_fetch");
    assert_eq!(fetch["library"], "transitive");
    let network = &fetch["capabilities"]["network"][0];
    assert_eq!(network["file"], "fixtures/audit/transitive/_helpers.py");
    assert_eq!(network["line"], 11);
    assert_eq!(network["via"], "requests.get");
    assert_eq!(network["chain"], serde_json::json!(["tool_fetch", "_helpers.download", "_helpers._get"]));
    assert_eq!(capability_names(fetch), ["network"]);
}

#[test]
fn every_transitive_form_of_the_fixture_is_followed() {
    let audit = audit_json(&["fixtures/audit"]);
    let expected: &[(&str, &[&str])] = &[
        ("tool_fetch_via_module", &["network"]),
        ("tool_list_processes", &["subprocess"]),
        ("tool_run_check", &["subprocess"]),
        ("tool_dispatch", &["fs_write"]),
        ("tool_describe", &[]),
        ("tool_later", &["fs_write"]),
        ("tool_add_one", &["fs_write"]),
        ("tool_save", &["fs_write"]),
        ("tool_word_count", &[]),
        ("tool_hypotenuse", &[]),
        ("tool_evaluate", &["dynamic"]),
        ("tool_plugin", &["dynamic"]),
        ("tool_attribute", &["dynamic"]),
        ("tool_restore", &["dynamic"]),
        ("tool_home", &["env"]),
        ("tool_setting", &["fs_read", "env"]),
        ("tool_pid", &["native"]),
        ("tool_map", &["fs_read", "native"]),
        ("tool_read", &["fs_read"]),
        ("tool_write", &["fs_write"]),
        ("tool_connect", &["network"]),
        ("tool_listing", &["fs_read"]),
    ];
    for (name, capabilities) in expected {
        assert_eq!(capability_names(tool(&audit, name)), *capabilities, "{name}");
    }
    let run = &tool(&audit, "tool_run_check")["capabilities"]["subprocess"][0];
    assert_eq!(run["via"], "os.system", "`from os import system as run` is os.system");
}

#[test]
fn an_unknown_package_call_is_listed_not_taken_as_pure() {
    let audit = audit_json(&["fixtures/audit/unknown"]);
    assert_eq!(tool(&audit, "tool_convert")["unknown"], serde_json::json!(["acme_vendor_sdk.convert"]));
    assert_eq!(tool(&audit, "tool_send")["unknown"], serde_json::json!(["northwind.client.Client"]));
}

#[test]
fn a_read_only_tool_that_writes_is_drift_and_deny_drift_exits_1() {
    let output = lcp(&["audit", "fixtures/audit/drift", "--deny-drift", "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let audit = stdout_json(&output);
    let tidy = tool(&audit, "tool_tidy");
    let drift: Vec<(&str, &str)> = tidy["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["declaration"].as_str().unwrap(), d["capability"].as_str().unwrap()))
        .collect();
    assert_eq!(drift, [("read_only", "fs_write"), ("destructive", "fs_write")]);
    assert_eq!(tidy["drift"][0]["line"], 25);
    assert_eq!(tidy["declared"]["read_only"], true);
    assert_eq!(tool(&audit, "tool_peek")["drift"][0]["declaration"], "open_world");
    assert_eq!(tool(&audit, "tool_file_size")["drift"], serde_json::json!([]));

    let plain = lcp(&["audit", "fixtures/audit/drift"]);
    assert_eq!(plain.status.code(), Some(0), "without --deny-drift, drift is reported, not failed");
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(text.contains("drift: `tool_tidy` declares read_only but"), "{text}");

    let clean = lcp(&["audit", "fixtures/audit/pure", "--deny-drift"]);
    assert_eq!(clean.status.code(), Some(0), "{}", String::from_utf8_lossy(&clean.stdout));
}

#[test]
fn a_config_tool_is_audited_from_its_module_or_by_its_table() {
    let audit = audit_json(&["fixtures/audit/pure", "--config", "fixtures/audit/config/lcp.toml"]);
    assert_eq!(capability_names(tool(&audit, "file_size")), ["fs_read"]);
    let wipe = tool(&audit, "wipe");
    assert_eq!(capability_names(wipe), ["fs_read", "fs_write"]);
    assert_eq!(wipe["capabilities"]["fs_write"][0]["chain"], serde_json::json!(["wipe"]));
    assert_eq!(wipe["drift"][0]["declaration"], "read_only");
    assert_eq!(tool(&audit, "notify")["unknown"], serde_json::json!(["vendorpkg.api.send"]));
}

#[test]
fn a_baseline_reports_what_a_change_gained() {
    let folder = std::env::temp_dir().join(format!("lcp-audit-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let baseline = folder.join("before.json");
    let before = serde_json::json!({"tools": [
        {"name": "tool_fetch", "capabilities": {}},
        {"name": "tool_list_processes", "capabilities": {"subprocess": []}},
    ]});
    std::fs::write(&baseline, before.to_string()).unwrap();
    let baseline = baseline.to_str().unwrap();

    let output = lcp(&["audit", "fixtures/audit", "--baseline", baseline]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("`tool_fetch` gained `network` at fixtures/audit/transitive/_helpers.py:11"), "{text}");
    assert!(!text.contains("`tool_list_processes` gained"), "{text}");

    let audit = audit_json(&["fixtures/audit", "--baseline", baseline]);
    assert_eq!(tool(&audit, "tool_fetch")["gained"]["network"][0]["line"], 11);
    assert_eq!(tool(&audit, "tool_list_processes")["gained"], serde_json::json!({}));

    std::fs::write(folder.join("bad.json"), "{\"not\": 1}").unwrap();
    let bad = lcp(&["audit", "fixtures/audit", "--baseline", folder.join("bad.json").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn sarif_output_is_valid_2_1_0_shape() {
    let output = lcp(&["audit", "fixtures/audit", "--format", "sarif"]);
    assert!(output.status.success());
    let sarif = stdout_json(&output);
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "lcp audit");
    let rules: Vec<&str> =
        run["tool"]["driver"]["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut unique = rules.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), rules.len(), "rule ids are unique");
    let results = run["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["ruleId"] == "drift/read_only" && r["level"] == "error"));
    assert!(results.iter().any(|r| r["ruleId"] == "unknown" && r["level"] == "warning"));
    for result in results {
        assert!(rules.contains(&result["ruleId"].as_str().unwrap()), "{result}");
        assert!(["note", "warning", "error"].contains(&result["level"].as_str().unwrap()));
        assert!(!result["message"]["text"].as_str().unwrap().is_empty());
        let location = &result["locations"][0]["physicalLocation"];
        let uri = location["artifactLocation"]["uri"].as_str().unwrap();
        assert!(uri.starts_with("fixtures/audit/") && !uri.contains('\\'), "{uri}");
        assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn the_text_table_fits_the_terminal_width() {
    let output = lcp_with_env(&["audit", "fixtures/audit"], &[("COLUMNS", "90")]);
    let text = String::from_utf8_lossy(&output.stdout);
    let table: Vec<&str> = text.lines().take_while(|line| !line.starts_with("drift:")).collect();
    assert!(table[0].starts_with("TOOL"), "{text}");
    for line in &table {
        assert!(line.chars().count() <= 90, "{line}");
    }
}

#[test]
fn the_built_in_tools_agree_with_their_declarations_and_call_nothing_unknown() {
    let audit = audit_json(&[]);
    for tool in audit["tools"].as_array().unwrap() {
        assert_eq!(tool["unknown"], serde_json::json!([]), "{}", tool["name"]);
        assert_eq!(tool["drift"], serde_json::json!([]), "{}", tool["name"]);
    }
    // `_connect(path, read_only=True)` runs only its `if read_only:` branch: a URI with
    // `mode=ro`, read; the read-write connection is the other branch's.
    let query = tool(&audit, "tool_execute_query");
    assert_eq!(capability_names(query), ["fs_read"], "{query}");
    assert!(capability_names(tool(&audit, "tool_execute_statement")).contains(&"fs_write"));
    let shell = tool(&audit, "tool_run_command");
    assert!(capability_names(shell).contains(&"subprocess"));
    assert_eq!(capability_names(tool(&audit, "tool_text_statistics")), Vec::<&str>::new());
    assert!(capability_names(tool(&audit, "tool_write_file")).contains(&"fs_write"));
    assert!(!capability_names(tool(&audit, "tool_read_file")).contains(&"fs_write"));
}

/// `lcp call TOOL fixtures/infer --args ARGS`, with the folder's config (`[sandbox]
/// infer = true`) when `infer`, and without a config otherwise: the result.
fn infer_call(tool: &str, args: serde_json::Value, infer: bool) -> Value {
    let args = args.to_string();
    let mut all = vec!["call", tool, "fixtures/infer", "--args", &args];
    if infer {
        all.extend(["--config", "fixtures/infer/lcp.toml"]);
    }
    let output = lcp(&all);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!("{tool}: stdout is not JSON ({err}): {}", String::from_utf8_lossy(&output.stderr))
    });
    assert_eq!(result["ok"], true, "{tool}: {result}");
    result
}

/// The network namespace of this process: a tool's is another only in a worker whose
/// sandbox keeps `open_world: false`.
fn host_network() -> String {
    std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string()
}

#[test]
fn sandbox_infer_confines_a_tool_that_declares_nothing_to_what_its_code_can_do() {
    let host = host_network();
    let file = temp_dir("infer-read").join("text.txt");
    std::fs::write(&file, "hello").unwrap();
    let read = |infer| infer_call("tool_reader", serde_json::json!({"path": file}), infer);
    // Its code only reads: inferred read-only and offline, in a network of its own.
    let confined = read(true);
    assert_eq!(confined["output"]["text"], "hello", "{confined}");
    assert_ne!(confined["output"]["network"], host.as_str(), "{confined}");
    // Without `[sandbox] infer`, nothing is inferred.
    assert_eq!(read(false)["output"]["network"], host.as_str());
    // A declaration wins over inference, even one that allows more than the code does.
    assert_eq!(infer_call("tool_declared_open", serde_json::json!({}), true)["output"], host.as_str());
    // A tool that writes still writes, and is still kept offline.
    let saved = temp_dir("infer-write").join("saved.txt");
    let result = infer_call("tool_saver", serde_json::json!({"path": saved, "text": "kept"}), true);
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "kept");
    assert_ne!(result["output"], host.as_str(), "{result}");
    // Code static reading cannot bound is never confined by inference.
    assert_eq!(infer_call("tool_evaluate", serde_json::json!({"expression": "1 + 1"}), true)["output"], host.as_str());
}

#[test]
fn listings_carry_each_tools_capabilities_and_the_declarations_inferred() {
    let config = ["--config", "fixtures/infer/lcp.toml", "fixtures/infer"];
    let manifest = stdout_json(&lcp(&[&["export", "--format", "manifest"][..], &config].concat()));
    let reader = tool(&manifest, "tool_reader");
    assert_eq!(reader["capabilities"], serde_json::json!({"can": ["fs_read"], "unknown": []}), "{reader}");
    assert_eq!(reader["policy"]["inferred"], serde_json::json!(["read_only", "open_world"]), "{reader}");
    assert_eq!(reader["policy"]["declared"], serde_json::json!({}), "inferred is not declared: {reader}");
    let saver = tool(&manifest, "tool_saver");
    assert_eq!(saver["capabilities"]["can"], serde_json::json!(["fs_read", "fs_write"]), "{saver}");
    assert_eq!(saver["policy"]["inferred"], serde_json::json!(["open_world"]), "{saver}");
    let evaluate = tool(&manifest, "tool_evaluate");
    assert_eq!(evaluate["capabilities"]["can"], serde_json::json!(["fs_read", "dynamic"]), "{evaluate}");
    assert!(evaluate["policy"].get("inferred").is_none(), "{evaluate}");

    let mcp = stdout_json(&lcp(&[&["export", "--format", "mcp"][..], &config].concat()));
    let meta = &tool(&mcp, "tool_reader")["_meta"];
    assert_eq!(meta["lcp/capabilities"]["can"], serde_json::json!(["fs_read"]), "{meta}");
    assert_eq!(meta["lcp/inferred"], serde_json::json!(["read_only", "open_world"]), "{meta}");

    let list = String::from_utf8(lcp(&[&["list", "--wide"][..], &config].concat()).stdout).unwrap();
    let row = |name: &str| list.lines().find(|line| line.starts_with(name)).unwrap_or_else(|| panic!("{list}"));
    assert!(row("tool_saver").contains("fs_read, fs_write"), "{list}");
    assert!(row("tool_reader").contains("(inferred)"), "{list}");

    // `lcp serve` lists them too.
    let mut server = crate::mcp::RawServer::start(&config);
    server.initialize();
    server.send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = server.response(2)["result"]["tools"].clone();
    let reader = listed.as_array().unwrap().iter().find(|t| t["name"] == "tool_reader").expect("listed");
    assert_eq!(reader["_meta"]["lcp/capabilities"]["can"], serde_json::json!(["fs_read"]), "{reader}");
    assert_eq!(reader["_meta"]["lcp/inferred"], serde_json::json!(["read_only", "open_world"]), "{reader}");
    drop(server);

    // Without `[sandbox] infer` the capabilities are still shown, and nothing is inferred.
    let plain = stdout_json(&lcp(&["export", "--format", "manifest", "fixtures/infer"]));
    assert_eq!(tool(&plain, "tool_reader")["capabilities"]["can"], serde_json::json!(["fs_read"]));
    assert!(tool(&plain, "tool_reader")["policy"].get("inferred").is_none());
}
