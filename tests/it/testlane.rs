//! SPEC §13: `lcp test`. `fixtures/testlane/lane/`: tools that pass (with examples or a
//! generated payload), one that crashes, one that breaks its return annotation, one
//! whose example is invalid; `fixtures/testlane/confirm/`: a tool that asks first.

use serde_json::{Value, json};

use crate::support::*;

fn outcomes(args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut all = vec!["test", "--format", "json"];
    all.extend(args);
    let output = lcp(&all);
    (output.status.code(), stdout_json(&output).as_array().unwrap().clone())
}

fn of<'o>(outcomes: &'o [Value], tool: &str) -> Vec<&'o Value> {
    outcomes.iter().filter(|o| o["tool"] == tool).collect()
}

#[test]
fn every_tool_is_called_and_any_failure_exits_1() {
    let (code, outcomes) = outcomes(&["fixtures/testlane/lane"]);
    assert_eq!(code, Some(1));
    for tool in ["tool_greet", "tool_count_lines", "tool_repeat", "tool_scratch"] {
        for outcome in of(&outcomes, tool) {
            assert_eq!(outcome["ok"], true, "{outcome}");
            assert!(outcome.get("error").is_none(), "{outcome}");
            assert!(outcome["seconds"].as_f64().unwrap() >= 0.0, "{outcome}");
        }
    }
    let crash = of(&outcomes, "tool_crash")[0];
    assert_eq!(crash["ok"], false);
    assert!(crash["error"].as_str().unwrap().contains("ZeroDivisionError"), "{crash}");
    let wrong = of(&outcomes, "tool_wrong_type")[0];
    assert_eq!(wrong["ok"], false);
    assert!(wrong["error"].as_str().unwrap().contains("breaks its return annotation `int`"), "{wrong}");
    assert!(wrong["error"].as_str().unwrap().contains("the result: expected integer, got string \"0\""), "{wrong}");
}

#[test]
fn payloads_are_the_examples_else_one_generated_from_the_schema() {
    let (_, outcomes) = outcomes(&[
        "fixtures/testlane/lane",
        "--tool",
        "tool_greet",
        "--tool",
        "tool_repeat",
        "--tool",
        "tool_count_lines",
    ]);
    let greet: Vec<(&Value, &Value)> =
        of(&outcomes, "tool_greet").iter().map(|o| (&o["source"], &o["payload"])).collect();
    assert_eq!(
        greet,
        [(&json!("example"), &json!({"name": "Ada"})), (&json!("example"), &json!({"name": "Grace", "style": "loud"}))]
    );
    let repeat = of(&outcomes, "tool_repeat")[0];
    assert_eq!((&repeat["source"], &repeat["payload"]), (&json!("generated"), &json!({"text": "", "times": 0})));
    // `$files` seeds the scratch workspace and is not an argument.
    let count = of(&outcomes, "tool_count_lines")[0];
    assert_eq!((&count["payload"], &count["ok"]), (&json!({"path": "notes.txt"}), &json!(true)));
    assert_eq!(outcomes.len(), 4, "only the tools named with --tool run");
}

#[test]
fn a_payload_that_breaks_the_input_schema_is_a_failure_before_the_call() {
    let (code, outcomes) = outcomes(&["fixtures/testlane/lane", "--tool", "tool_bad_example"]);
    assert_eq!(code, Some(1));
    let error = outcomes[0]["error"].as_str().unwrap();
    assert!(error.contains("the example payload is not valid") && error.contains("`x`: expected integer"), "{error}");
}

#[test]
fn each_call_runs_in_a_fresh_scratch_workspace_removed_after() {
    let dir = temp_dir("testlane-record");
    let record = dir.join("cwds.txt");
    // The tool records where it ran in a folder outside its workspaces, made writable.
    let config = dir.join("lcp.toml");
    std::fs::write(&config, format!("[sandbox]\nwritable = [{:?}]\n", dir.to_str().unwrap())).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["test", "fixtures/testlane/lane", "--tool", "tool_scratch", "--config", config.to_str().unwrap()])
        .env("LCP_TEST_RECORD", &record)
        .current_dir(root())
        .output()
        .unwrap();
    // Both examples pass only if neither sees the file the other leaves behind.
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    let cwds: Vec<String> = std::fs::read_to_string(&record).unwrap().lines().map(str::to_string).collect();
    assert_eq!(cwds.len(), 2);
    assert_ne!(cwds[0], cwds[1]);
    for cwd in &cwds {
        assert!(!std::path::Path::new(cwd).exists(), "{cwd} was not removed");
    }
    assert!(!root().join("left-behind.txt").exists());
}

#[test]
fn confirmations_are_refused_unless_yes() {
    let (code, refused) = outcomes(&["fixtures/testlane/confirm", "--tool", "tool_erase"]);
    assert_eq!(code, Some(0));
    assert_eq!(refused[0]["ok"], true);
    assert!(refused[0]["note"].as_str().unwrap().contains("confirmation refused"), "{}", refused[0]);
    assert!(refused[0]["note"].as_str().unwrap().contains("not erased"), "{}", refused[0]);
    let (code, allowed) = outcomes(&["fixtures/testlane/confirm", "--tool", "tool_erase", "--yes"]);
    assert_eq!(code, Some(0));
    assert_eq!(allowed[0]["ok"], true);
    assert!(allowed[0].get("note").is_none(), "{}", allowed[0]);
}

#[test]
fn a_call_over_the_timeout_fails() {
    let (code, outcomes) = outcomes(&["fixtures/testlane/confirm", "--tool", "tool_slow", "--timeout", "1"]);
    assert_eq!(code, Some(1));
    assert!(outcomes[0]["error"].as_str().unwrap().contains("timed out"), "{}", outcomes[0]);
}

#[test]
fn the_text_report_has_one_line_per_call_and_a_count() {
    let output = lcp(&["test", "fixtures/testlane/lane", "--tool", "tool_greet", "--tool", "tool_crash"]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("TOOL") && lines[0].contains("SOURCE") && lines[0].contains("RESULT"), "{text}");
    assert!(lines[1].starts_with("tool_greet") && lines[1].contains("example") && lines[1].contains(" ok "), "{text}");
    assert!(
        lines[3].starts_with("tool_crash")
            && lines[3].contains("generated")
            && lines[3].contains("error: ZeroDivisionError"),
        "{text}"
    );
    assert_eq!(lines[4], "3 calls, 2 passed, 1 failed");
}

#[test]
fn an_unknown_tool_is_a_usage_error() {
    let output = lcp(&["test", "fixtures/testlane/lane", "--tool", "tool_gret"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("did you mean `tool_greet`"));
}

#[test]
fn the_profile_chooses_the_tools_and_names_them() {
    let (code, outcomes) = outcomes(&[
        "fixtures/profiles/tools",
        "--config",
        "fixtures/profiles/lcp.toml",
        "--profile",
        "none",
        "--extra-tools",
        "tool_stamp",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0]["tool"], "tool_stamp");
}

#[test]
fn the_built_in_tools_pass_out_of_the_box() {
    let output = lcp(&["test"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}\n{}", String::from_utf8_lossy(&output.stderr));
    let (_, outcomes) = outcomes(&[]);
    let tools: std::collections::BTreeSet<&str> = outcomes.iter().map(|o| o["tool"].as_str().unwrap()).collect();
    assert_eq!(tools.len(), 18, "every built-in tool is called: {tools:?}");
    // The lane has no user and no model: tools that need them report so and pass.
    let note = |tool: &str| of(&outcomes, tool)[0]["note"].as_str().unwrap_or_default().to_string();
    assert!(note("tool_store_secret").starts_with("the user was asked and declined"), "{outcomes:?}");
    assert!(note("tool_summarize_file").starts_with("the tool asked for the host's model"), "{outcomes:?}");
    assert!(text.contains("tool_summarize_file     example    ok (no model)"), "{text}");
}
