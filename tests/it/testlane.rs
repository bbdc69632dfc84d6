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
    assert!(text.contains("tool_summarize_file     example   ok (no model)"), "{text}");
    // Their test files: fixtures, a setup making a database, recorded calls that say
    // what the tools give, expected failures among them.
    let recorded =
        |tool: &str| -> Vec<&Value> { of(&outcomes, tool).into_iter().filter(|o| o["source"] == "recorded").collect() };
    let read = recorded("tool_read_file");
    assert_eq!(read.len(), 3, "{read:?}");
    assert_eq!(read[0]["output"]["output"]["content"], "buy milk\ncall the bank", "{read:?}");
    assert!(read[1]["note"].as_str().unwrap().starts_with("failed as expected"), "{read:?}");
    assert_eq!(recorded("tool_list_tables")[0]["output"]["output"]["tables"][0]["rows"], 2);
    assert_eq!(recorded("tool_run_command")[0]["output"]["output"]["stdout"], "hello\n");
    assert!(recorded("tool_edit_file").iter().all(|o| o["ok"] == true && o.get("error").is_none()));
    assert!(outcomes.iter().all(|o| o["source"] != "generated"), "every built-in tool has examples or recorded calls");
}

// Test files (`lcp_tests.toml`): `fixtures/testlane_recorded/notes/` has a fixture
// folder, a setup command and recorded calls (passing and failing ones, each named);
// `slow/` a setup over its time limit; `fixtures/testlane_bad/` test files with
// mistakes.

fn recorded(tools: &[&str]) -> Vec<Value> {
    let mut args = vec!["fixtures/testlane_recorded"];
    for tool in tools {
        args.extend(["--tool", tool]);
    }
    outcomes(&args).1
}

fn named<'o>(outcomes: &'o [Value], name: &str) -> &'o Value {
    outcomes.iter().find(|o| o["name"] == name).unwrap_or_else(|| panic!("no call named {name:?}: {outcomes:?}"))
}

fn error_of(outcome: &Value) -> &str {
    assert_eq!(outcome["ok"], false, "{outcome}");
    outcome["error"].as_str().unwrap()
}

#[test]
fn the_fixture_folder_is_copied_into_each_calls_workspace() {
    let outcomes = recorded(&["tool_list_workspace", "tool_append", "tool_read_note"]);
    // The fixtures, the call's own files and what the setup made, nothing else.
    let listed = named(&outcomes, "fixtures, files and what the setup made");
    assert_eq!(listed["ok"], true, "{listed}");
    assert_eq!(listed["output"], json!(["extra.txt", "notes.txt", "setup.txt", "sub/deep.txt"]));
    // A call that changes a fixture changes its own copy: the next call reads the original.
    let appended = of(&outcomes, "tool_append")[0];
    assert_eq!((&appended["ok"], &appended["output"]), (&json!(true), &json!({"success": true})), "{appended}");
    let read = of(&outcomes, "tool_read_note")[0];
    assert_eq!((&read["ok"], &read["output"]), (&json!(true), &json!("first\nsecond\n")), "{read}");
    // Examples run in a workspace prepared alike.
    let example = of(&outcomes, "tool_read_note").into_iter().find(|o| o["source"] == "example").unwrap();
    assert_eq!((&example["ok"], &example["output"]), (&json!(true), &json!("deep\n")), "{example}");
    assert!(std::path::Path::new("fixtures/testlane_recorded/notes/fixtures/notes.txt").exists());
    let original = std::fs::read_to_string(root().join("fixtures/testlane_recorded/notes/fixtures/notes.txt")).unwrap();
    assert_eq!(original, "first\nsecond\n", "the fixture folder itself is never changed");
}

#[test]
fn the_setup_command_runs_in_the_workspace_before_the_call() {
    let outcomes = recorded(&["tool_set_up", "tool_after_slow_setup"]);
    // The file's setup, then the call's own, in the workspace, with the tool's name.
    let set_up = of(&outcomes, "tool_set_up")[0];
    assert_eq!(set_up["ok"], true, "{set_up}");
    assert_eq!(set_up["output"], "tool_set_up in notes\nthen this call's own\n");
    // A setup that fails is the call's failure, with what it said; the tool never runs.
    let failed = error_of(named(&outcomes, "a setup that fails"));
    assert!(failed.starts_with("setup failed (exit status: 3): no database\n"), "{failed}");
    assert!(failed.contains("the command: echo \"no database\" >&2; exit 3"), "{failed}");
    // A setup over `setup_timeout` is ended.
    let slow = of(&outcomes, "tool_after_slow_setup")[0];
    let error = error_of(slow);
    assert!(error.starts_with("setup did not finish within 0.5s (`setup_timeout`) and was ended: starting"), "{error}");
    assert!(slow["seconds"].as_f64().unwrap() < 5.0, "{slow}");
    // What a setup leaves running lives until the call ends, then is ended.
    let dir = temp_dir("testlane-setup");
    let record = dir.join("pid");
    let args = ["test", "fixtures/testlane_recorded", "--tool", "tool_set_up", "--format", "json"];
    let output = lcp_with_env(&args, &[("LCP_TEST_RECORD", record.to_str().unwrap())]);
    let left = named(stdout_json(&output).as_array().unwrap(), "a setup that leaves a process running").clone();
    assert_eq!(left["ok"], true, "{left}");
    let pid = std::fs::read_to_string(&record).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap_or_default();
    assert!(status.is_empty() || status.contains("State:\tZ"), "the setup's `sleep` {} still runs", pid.trim());
}

#[test]
fn recorded_calls_with_expected_outputs_pass_and_mismatches_name_the_difference() {
    let (code, outcomes) = outcomes(&["fixtures/testlane_recorded", "--tool", "tool_stats", "--tool", "tool_append"]);
    assert_eq!(code, Some(1));
    let part = named(&outcomes, "part of the output");
    assert_eq!(part["ok"], true, "{part}");
    assert_eq!(part["source"], "recorded");
    assert!(part["at"].as_str().unwrap().starts_with("fixtures/testlane_recorded/notes/lcp_tests.toml:"), "{part}");
    assert_eq!(error_of(named(&outcomes, "a count that differs")), "the output differs at `/lines`: expected 3, got 2");
    assert_eq!(
        error_of(named(&outcomes, "the whole output, which has one more key")),
        "the output differs at `/tags`: not expected (got [\"a\",\"b\"])"
    );
    assert_eq!(
        error_of(named(&outcomes, "a file that is not what was expected after the call")),
        "`notes.txt` after the call: expected \"first\\nsecond\\nthird\\n\", got \"first\\nsecond\\nfourth\\n\""
    );
    // Recorded calls replace the generated payload: none is made for these tools.
    assert!(outcomes.iter().all(|o| o["source"] == "recorded"), "{outcomes:?}");
}

#[test]
fn expected_failures_pass_when_the_tool_fails_with_the_text_and_fail_otherwise() {
    let outcomes = recorded(&["tool_read_note"]);
    let missing = named(&outcomes, "a missing file");
    assert_eq!(missing["ok"], true, "{missing}");
    assert!(missing["note"].as_str().unwrap().starts_with("failed as expected: FileNotFoundError"), "{missing}");
    assert_eq!(
        error_of(named(&outcomes, "a failure that does not come")),
        "did not fail: expected a failure saying `FileNotFoundError`, got \"first\\nsecond\\n\""
    );
    let other = error_of(named(&outcomes, "another failure"));
    assert!(
        other.starts_with("failed otherwise: expected `FileNotFoundError` in the error, got: IsADirectoryError"),
        "{other}"
    );
    let output = lcp(&["test", "fixtures/testlane_recorded", "--tool", "tool_read_note"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("recorded  ok (failed as expected)"), "{text}");
}

#[test]
fn the_text_table_never_exceeds_the_width_even_with_a_multi_line_error() {
    let args = ["test", "fixtures/testlane_recorded", "--tool", "tool_multiline_failure", "--tool", "tool_stats"];
    let output = lcp_with_env(&args, &[("COLUMNS", "80")]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 4 + 1, "a header, one line per call, a count: {text}");
    for line in &lines {
        assert!(line.chars().count() <= 80, "{} characters: {line}", line.chars().count());
    }
    let failure = lines.iter().find(|line| line.starts_with("tool_multiline_failure")).unwrap();
    assert!(failure.contains("error: ValueError: first line of a l") && failure.contains('…'), "{text}");
    assert!(failure.ends_with('s'), "the time is kept: {failure}");
    // Without a width, each cell is still one line; the whole text is in the JSON.
    let plain = String::from_utf8(lcp(&args).stdout).unwrap();
    assert_eq!(plain.lines().count(), 6, "{plain}");
    let (_, outcomes) = outcomes(&args[1..]);
    assert!(error_of(of(&outcomes, "tool_multiline_failure")[0]).lines().count() > 20);
}

#[test]
fn a_test_file_with_mistakes_is_a_usage_error_at_their_lines() {
    let output = lcp(&["test", "fixtures/testlane_bad"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "nothing runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "fixtures/testlane_bad/typo/lcp_tests.toml:4: unknown field `ouput`",
        "fixtures/testlane_bad/stranger/lcp_tests.toml:1: `fixtures` names `no-such-folder`, which is not a folder",
        "fixtures/testlane_bad/stranger/lcp_tests.toml:8: `tool_shuot` is not a tool of the files beside this test file; did you mean `tool_shout`?",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}
