//! SPEC §12: declarations, grades, the host's policy and output schemas.
//! `fixtures/policy/declared/`: a library with `TOOL_POLICY` and `TOOL_POLICIES` and one
//! that declares nothing; `bad/`: mistakes; `*.toml`: host configs; `outputs/`: return
//! annotations.

use serde_json::{Value, json};

use lcp::policy::{Declared, Grade};

use crate::support::*;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn declared(tool: &str) -> Declared {
    let registry = load(&["policy/declared"]);
    registry.tool(tool).map(|(_, tool)| tool.policy.clone()).unwrap_or_else(|| panic!("no {tool}"))
}

fn mcp_tools(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["export", "--format", "mcp", "--static"];
    all.extend(args);
    let output = lcp(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout_json(&output)["tools"].as_array().unwrap().clone()
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn tool_policy_gives_defaults_and_tool_policies_win_per_tool() {
    let count = declared("tool_count");
    assert_eq!(
        (count.read_only, count.destructive, count.idempotent, count.open_world, count.grade),
        (Some(true), None, Some(true), Some(false), Some(Grade { w: 1, d: 0 }))
    );
    let delete = declared("tool_delete");
    assert_eq!((delete.read_only, delete.destructive, delete.idempotent), (Some(false), Some(true), Some(true)));
    assert_eq!(delete.grade, Some(Grade { w: 1, d: 3 }));
    // `docs` is relative to the file that declares it.
    assert_eq!(delete.docs.as_deref(), Some(std::path::Path::new("fixtures/policy/declared/delete.md")));
    assert_eq!(declared("tool_plain"), Declared::default());
}

#[test]
fn mistakes_in_a_policy_are_errors_at_their_line_and_the_tools_stay() {
    let registry = load(&["policy/bad"]);
    let errors: Vec<String> = registry.diagnostics().iter().map(ToString::to_string).collect();
    for needle in [
        "fixtures/policy/bad/broken.py:3:35: error: unknown key `readonly`",
        "fixtures/policy/bad/broken.py:5:27: error: `grade.w` is 4; a grade is an integer from 0 to 3",
        "fixtures/policy/bad/broken.py:6:33: error: `destructive` must be true or false, not \"yes\"",
        "fixtures/policy/bad/broken.py:7:5: warning: `TOOL_POLICIES` names `tool_ghost`, which is not a tool of this file",
        "fixtures/policy/bad/computed.py:8:15: warning: `TOOL_POLICY` is not a literal dict: ignored",
    ] {
        assert!(errors.iter().any(|e| e.starts_with(needle)), "`{needle}` is missing from {errors:#?}");
    }
    assert_eq!(tool_names(&registry), ["tool_one", "tool_two", "tool_three"]);
    // The keys that could be read still count; the bad ones claim nothing.
    let one = &registry.tool("tool_one").unwrap().1.policy;
    assert_eq!((one.read_only, one.grade), (Some(true), None));
    assert_eq!(registry.tool("tool_three").unwrap().1.policy, Declared::default());
    assert_eq!(lcp(&["check", "fixtures/policy/bad"]).status.code(), Some(1));
}

#[test]
fn mcp_annotations_carry_only_what_is_declared() {
    let tools = mcp_tools(&["fixtures/policy/declared"]);
    let annotations: Vec<(&str, &Value)> =
        tools.iter().map(|t| (t["name"].as_str().unwrap(), &t["annotations"])).collect();
    assert_eq!(
        annotations,
        [
            ("tool_count", &json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})),
            (
                "tool_delete",
                &json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false})
            ),
            ("tool_fetch", &json!({"readOnlyHint": true, "idempotentHint": false, "openWorldHint": true})),
            ("tool_plain", &Value::Null),
        ]
    );
}

#[test]
fn the_config_files_tools_table_wins_over_the_library() {
    let tools = mcp_tools(&["fixtures/policy/declared", "--config", "fixtures/policy/strict.toml"]);
    let plain = tools.iter().find(|t| t["name"] == "tool_plain").unwrap();
    assert_eq!(plain["annotations"], json!({"readOnlyHint": true, "openWorldHint": false}));
}

#[test]
fn list_and_the_manifest_show_grades() {
    let output = lcp(&["list", "--static", "fixtures/policy/declared"]);
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.lines().next().unwrap().contains("GRADE"), "{table}");
    let grade_of = |tool: &str| {
        table
            .lines()
            .find(|l| l.starts_with(tool))
            .unwrap()
            .split_whitespace()
            .skip(3)
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(grade_of("tool_delete"), "w1 d3");
    // The declarations the kernel enforces follow the grade, in brackets (SPEC §18).
    let fetch_row = table.lines().find(|l| l.starts_with("tool_fetch")).unwrap();
    assert!(fetch_row.contains("w3 d0 [read_only]"), "{table}");
    // Undeclared counts as the highest grade, each part no declaration gives marked `?`.
    assert_eq!(grade_of("tool_plain"), "w3? d3?");

    let manifest = stdout_json(&lcp(&["export", "--format", "manifest", "--static", "fixtures/policy/declared"]));
    let fetch = manifest["tools"].as_array().unwrap().iter().find(|t| t["name"] == "tool_fetch").unwrap();
    assert_eq!(
        fetch["policy"],
        json!({"declared": {"read_only": true, "idempotent": false, "open_world": true, "grade": {"w": 3, "d": 0}},
               "grade": {"w": 3, "d": 0}, "enforced": ["read_only"]})
    );
    let plain = manifest["tools"].as_array().unwrap().iter().find(|t| t["name"] == "tool_plain").unwrap();
    assert_eq!(plain["policy"], json!({"declared": {}, "grade": {"w": 3, "d": 3}}));
}

#[test]
fn a_tool_the_policy_forbids_is_left_out_of_list_and_export() {
    assert_eq!(
        names(&mcp_tools(&["fixtures/policy/declared"])),
        ["tool_count", "tool_delete", "tool_fetch", "tool_plain"]
    );
    // allow_destructive = false, allow_open_world = false, max_grade.w = 2; tool_plain is vouched for.
    assert_eq!(
        names(&mcp_tools(&["fixtures/policy/declared", "--config", "fixtures/policy/strict.toml"])),
        ["tool_count", "tool_plain"]
    );
    // max_grade.d = 2 leaves out tool_delete (d3) and tool_plain (undeclared: d3).
    assert_eq!(
        names(&mcp_tools(&["fixtures/policy/declared", "--config", "fixtures/policy/low_grade.toml"])),
        ["tool_count", "tool_fetch"]
    );
    let table = String::from_utf8(
        lcp(&["list", "--static", "fixtures/policy/declared", "--config", "fixtures/policy/strict.toml"]).stdout,
    )
    .unwrap();
    assert!(!table.contains("tool_delete") && !table.contains("tool_fetch"), "{table}");
}

#[test]
fn a_forbidden_call_is_refused_before_any_code_runs_naming_the_rule() {
    let workspace = temp_dir("policy-refused");
    let ws = workspace.to_str().unwrap();
    let call = |tool: &str, config: &str| {
        lcp(&[
            "call",
            tool,
            "fixtures/policy/declared",
            "--config",
            config,
            "--workspace",
            ws,
            "--args",
            r#"{"path": "a.txt", "url": "x"}"#,
        ])
    };
    let refused = lcp(&[
        "call",
        "tool_delete",
        "fixtures/policy/declared",
        "--config",
        "fixtures/policy/strict.toml",
        "--workspace",
        ws,
        "--args",
        r#"{"path": "a.txt"}"#,
    ]);
    assert_eq!(refused.status.code(), Some(1));
    let result = stdout_json(&refused);
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("`allow_destructive = false` refuses `tool_delete`"),
        "{result}"
    );
    assert!(!workspace.join("delete-ran.txt").exists(), "the refused tool ran");

    let open = lcp(&[
        "call",
        "tool_fetch",
        "fixtures/policy/declared",
        "--config",
        "fixtures/policy/strict.toml",
        "--args",
        r#"{"url": "x"}"#,
    ]);
    assert!(stdout_json(&open)["error"].as_str().unwrap().contains("`allow_open_world = false` refuses `tool_fetch`"));
    let graded = call("tool_delete", "fixtures/policy/low_grade.toml");
    assert!(
        stdout_json(&graded)["error"]
            .as_str()
            .unwrap()
            .contains("`max_grade.d = 2` refuses `tool_delete`: its grade is w1 d3")
    );

    let allowed =
        lcp(&["call", "tool_delete", "fixtures/policy/declared", "--workspace", ws, "--args", r#"{"path": "a.txt"}"#]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    assert!(workspace.join("delete-ran.txt").exists());
}

#[test]
fn an_unknown_policy_key_or_a_grade_outside_0_to_3_in_the_config_is_a_usage_error_with_file_and_line() {
    let output = lcp(&["list", "fixtures/policy/declared", "--config", "fixtures/policy/bad_key.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("fixtures/policy/bad_key.toml:3:1: `policy`: unknown key `allow_everything`"),
        "{}",
        stderr(&output)
    );
    let output = lcp(&["call", "tool_count", "fixtures/policy/declared", "--config", "fixtures/policy/bad_grade.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("fixtures/policy/bad_grade.toml:3:18: `tool_policies.tool_count`: `grade.d` is 7"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_return_annotation_is_the_output_schema() {
    let registry = load(&["policy/outputs"]);
    let output = |tool: &str| registry.tool(tool).unwrap().1.output.as_ref().map(|schema| schema.parse());
    assert_eq!(output("tool_double"), Some(json!({"type": "integer"})));
    assert_eq!(output("tool_point").unwrap()["type"], "object");
    assert_eq!(
        output("tool_maybe_counts"),
        Some(json!({"anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "null"}]}))
    );
    for none in ["tool_any", "tool_dict", "tool_untyped"] {
        assert_eq!(output(none), None, "{none}");
    }
}

#[test]
fn mcp_output_schemas_keep_object_types_and_wrap_the_others_under_result() {
    let tools = mcp_tools(&["fixtures/policy/outputs"]);
    let schema = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().get("outputSchema").cloned();
    assert_eq!(schema("tool_point").unwrap()["properties"]["x"], json!({"type": "number"}));
    assert_eq!(
        schema("tool_double"),
        Some(json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}))
    );
    assert_eq!(schema("tool_any"), None);
    assert_eq!(schema("tool_dict"), None);
}

#[test]
fn a_result_that_breaks_its_return_annotation_is_a_failed_call_saying_which_part() {
    let call = |tool: &str, args: &str| lcp(&["call", tool, "fixtures/policy/outputs", "--args", args]);
    let lies = call("tool_lies", r#"{"n": 3}"#);
    assert_eq!(lies.status.code(), Some(1));
    let result = stdout_json(&lies);
    assert_eq!(result["ok"], false);
    assert_eq!(
        result["error"],
        "`tool_lies` returned a value that breaks its return annotation `int`:\n- the result: expected integer, got string \"3\""
    );
    let point = stdout_json(&call("tool_bad_point", "{}"));
    let error = point["error"].as_str().unwrap();
    // As pydantic checks it: the missing field fails the call, the extra one is dropped.
    assert!(error.contains("missing required field `y`") && !error.contains("`z`"), "{error}");
    assert!(call("tool_double", r#"{"n": 2}"#).status.success());
    assert!(call("tool_maybe_counts", "{}").status.success());
    // A failure the tool reports is not checked against the annotation.
    let reported = stdout_json(&call("tool_reported", "{}"));
    assert_eq!(reported["error"], "nothing to count");
}

#[test]
fn config_declarations_under_the_old_tools_tables_are_an_error_naming_tool_policies() {
    let dir = temp_dir("policy-old-tables");
    let config = dir.join("old.toml");
    write(&config, "[policy]\nallow_destructive = false\n\n[tools.tool_plain]\nread_only = true\n");
    let config = config.to_str().unwrap();
    for command in ["list", "check"] {
        let output = lcp(&[command, "fixtures/policy/declared", "--config", config]);
        assert_eq!(output.status.code(), Some(2), "{command}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.contains(&format!("{config}:4:2: `[tools.tool_plain]` tables are now `[tool_policies.tool_plain]`")),
            "{command}: {said}"
        );
    }
    let renamed = dir.join("new.toml");
    write(&renamed, "[policy]\nallow_destructive = false\n\n[tool_policies.tool_plain]\nread_only = true\n");
    let output = lcp(&["list", "fixtures/policy/declared", "--config", renamed.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
