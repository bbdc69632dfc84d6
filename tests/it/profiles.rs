//! SPEC §11: profiles. `fixtures/profiles/`: the notes tools (`tools/`), a config file
//! with good and bad profiles (`lcp.toml`), and kits beside it (`kits/`).

use serde_json::{Value, json};

use crate::support::*;

const TOOLS: &str = "fixtures/profiles/tools";
const CONFIG: &str = "fixtures/profiles/lcp.toml";

/// `lcp ARGS TOOLS --config CONFIG`.
fn with_profile(args: &[&str]) -> std::process::Output {
    let mut all = args.to_vec();
    all.extend([TOOLS, "--config", CONFIG]);
    lcp(&all)
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The tool names of an `mcp` export.
fn exported_names(args: &[&str]) -> Vec<String> {
    let mut all = vec!["export", "--format", "mcp", "--static"];
    all.extend(args);
    let output = with_profile(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout_json(&output)["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn only_the_profiles_tools_are_listed_under_their_aliases() {
    let output = with_profile(&["list", "--static", "--profile", "short"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8(output.stdout).unwrap();
    let names: Vec<&str> = table.lines().skip(1).filter_map(|line| line.split_whitespace().next()).collect();
    assert_eq!(names, ["read", "write", "2"], "{table}");
    assert!(table.trim_end().ends_with("2 tools in 1 library"), "{table}");
}

#[test]
fn every_export_format_uses_the_aliases() {
    for format in ["openai", "openai-responses", "anthropic", "gemini", "mcp", "manifest"] {
        let output = with_profile(&["export", "--format", format, "--static", "--profile", "short"]);
        assert!(output.status.success(), "{format}: {}", stderr(&output));
        let document = stdout_json(&output);
        let list = document.get("tools").or_else(|| document.get("functionDeclarations")).unwrap_or(&document);
        let names: Vec<&str> =
            list.as_array().unwrap().iter().map(|t| t.get("function").unwrap_or(t)["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["read", "write"], "{format}");
    }
}

#[test]
fn an_alias_keeps_the_tools_schema_and_description() {
    let plain = stdout_json(&lcp(&["export", "--format", "anthropic", "--static", TOOLS]));
    let aliased = stdout_json(&with_profile(&["export", "--format", "anthropic", "--static", "--profile", "short"]));
    let tool = |document: &Value, name: &str| {
        document.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap_or_else(|| panic!("{name}"))
    };
    let (original, renamed) = (tool(&plain, "tool_write_note"), tool(&aliased, "write"));
    assert_eq!(renamed["description"], original["description"]);
    assert_eq!(renamed["input_schema"], original["input_schema"]);
}

#[test]
fn the_list_form_keeps_names_and_extra_tools_are_merged_without_duplicates() {
    assert_eq!(exported_names(&["--profile", "writer"]), ["tool_read_note", "tool_write_note", "tool_stamp"]);
    assert_eq!(
        exported_names(&["--profile", "short", "--extra-tools", "tool_stamp,tool_stamp"]),
        ["read", "write", "tool_stamp"]
    );
}

#[test]
fn an_inline_list_and_none_with_extra_tools() {
    assert_eq!(exported_names(&["--profile", "tool_stamp,tool_read_note"]), ["tool_read_note", "tool_stamp"]);
    assert_eq!(exported_names(&["--profile", "none", "--extra-tools", "tool_stamp"]), ["tool_stamp"]);
    assert!(exported_names(&["--profile", "none"]).is_empty());
}

#[test]
fn a_kit_file_beside_the_config_file_is_a_profile() {
    assert_eq!(exported_names(&["--profile", "reader"]), ["tool_read_note"]);
}

#[test]
fn a_tool_is_called_by_its_alias_and_only_the_profiles_tools_are_callable() {
    let workspace = temp_dir("profile-call");
    write(&workspace.join("todo.txt"), "buy milk");
    let ws = workspace.to_str().unwrap();
    let read =
        with_profile(&["call", "read", "--profile", "short", "--workspace", ws, "--args", r#"{"name": "todo.txt"}"#]);
    assert!(read.status.success(), "{}", stderr(&read));
    assert_eq!(stdout_json(&read)["output"], "buy milk");

    let outside = with_profile(&["call", "tool_stamp", "--profile", "short"]);
    assert_eq!(outside.status.code(), Some(2));
    assert!(
        stderr(&outside).contains("`tool_stamp` is not a tool of profile `short` (its tools: read, write)"),
        "{}",
        stderr(&outside)
    );
    // Its real name is not callable under the profile either.
    let real = with_profile(&["call", "tool_read_note", "--profile", "short", "--args", r#"{"name": "x"}"#]);
    assert_eq!(real.status.code(), Some(2));
}

#[test]
fn a_profile_naming_a_missing_tool_is_an_error_with_file_and_line_and_others_still_work() {
    let output = with_profile(&["list", "--static", "--profile", "missing"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "fixtures/profiles/lcp.toml:19: profile `missing`: `tool_erase_note` is not a tool (did you mean `tool_write_note`, `tool_read_note`?)"
        ),
        "{}",
        stderr(&output)
    );
    assert_eq!(exported_names(&["--profile", "short"]), ["read", "write"]);
}

#[test]
fn an_alias_colliding_with_a_tool_name_is_an_error_with_file_and_line() {
    let output = with_profile(&["list", "--static", "--profile", "clash"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "lcp.toml:24: profile `clash`: alias `tool_stamp` (for `tool_write_note`) is the name of another tool"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_alias_that_is_not_a_valid_tool_name_is_an_error_with_file_and_line() {
    let output = with_profile(&["export", "--format", "mcp", "--profile", "badalias"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("lcp.toml:27:1: profile `badalias`: alias `read note` is not a valid tool name"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_kit_with_broken_front_matter_is_an_error_with_file_and_line() {
    let output = with_profile(&["list", "--profile", "broken"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "fixtures/profiles/kits/broken.kit:1: kit `broken`: the front matter opened here is never closed by `---`"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unknown_profile_is_a_usage_error_naming_the_known_ones() {
    let output = with_profile(&["list", "--profile", "editor"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "--profile: no profile `editor` (known: badalias, clash, missing, short, writer, broken, reader)"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn check_reports_every_profiles_problems_as_located_errors() {
    let output = with_profile(&["check"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    for needle in [
        "fixtures/profiles/lcp.toml:19:1: error: profile `missing`",
        "fixtures/profiles/lcp.toml:24:1: error: profile `clash`",
        "fixtures/profiles/lcp.toml:27:1: error: profile `badalias`",
        "fixtures/profiles/kits/broken.kit:1:1: error: kit `broken`",
    ] {
        assert!(text.contains(needle), "`{needle}` is missing from:\n{text}");
    }
    assert_eq!(with_profile(&["check", "--profile", "short"]).status.code(), Some(0));
}

#[test]
fn profile_list_shows_name_tools_grade_and_description() {
    let output = with_profile(&["profile", "list", "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed = stdout_json(&output);
    let short = listed.as_array().unwrap().iter().find(|p| p["name"] == "short").unwrap();
    assert_eq!(short["tools"], json!(["read", "write"]));
    assert_eq!(short["description"], "Notes under short names");
    // Element-wise maximum of w1 d0 and w1 d2.
    assert_eq!(short["grade"], json!({"w": 1, "d": 2}));
    let writer = listed.as_array().unwrap().iter().find(|p| p["name"] == "writer").unwrap();
    // tool_stamp declares no grade: it counts as w3 d3.
    assert_eq!(writer["grade"], json!({"w": 3, "d": 3}));
    let text = String::from_utf8(with_profile(&["profile", "list"]).stdout).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("short ") && l.contains("read, write") && l.contains("w1 d2")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("broken (has problems)")), "{text}");
}

#[test]
fn profile_info_shows_each_alias_and_tool_the_grade_and_the_docs() {
    let output = with_profile(&["profile", "info", "writer", "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let info = stdout_json(&output);
    assert_eq!(info["grade"], json!({"w": 3, "d": 3}));
    assert_eq!(info["docs"], "fixtures/profiles/docs/writer.md");
    let tools = info["tools"].as_array().unwrap();
    assert_eq!(tools[0]["alias"], "tool_read_note");
    assert_eq!(tools[0]["docs"], "fixtures/profiles/tools/docs/read_note.md");
    assert_eq!(tools[0]["grade"], json!({"w": 1, "d": 0}));

    let short = stdout_json(&with_profile(&["profile", "info", "short", "--format", "json"]));
    let pairs: Vec<(&str, &str)> = short["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["alias"].as_str().unwrap(), t["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(pairs, [("read", "tool_read_note"), ("write", "tool_write_note")]);

    let text = String::from_utf8(with_profile(&["profile", "info", "short"]).stdout).unwrap();
    assert!(text.contains("grade: w1 d2"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("write ") && l.contains("tool_write_note") && l.contains("w1 d2")),
        "{text}"
    );
}

#[test]
fn profile_info_of_an_inline_list() {
    let info = stdout_json(&with_profile(&["profile", "info", "tool_read_note,tool_write_note", "--format", "json"]));
    assert_eq!(info["grade"], json!({"w": 1, "d": 2}));
    assert_eq!(info["tools"].as_array().unwrap().len(), 2);
}

#[test]
fn profile_create_writes_a_kit_beside_the_config_file_that_reads_back() {
    let dir = temp_dir("profile-create");
    let config = dir.join("lcp.toml");
    write(&config, "");
    let config = config.to_str().unwrap();
    let create = |name: &str| {
        lcp(&[
            "profile",
            "create",
            name,
            "--tools",
            "tool_read_note",
            "tool_stamp",
            "--description",
            "Quick",
            TOOLS,
            "--config",
            config,
        ])
    };
    let output = create("quick");
    assert!(output.status.success(), "{}", stderr(&output));
    let kit = std::fs::read_to_string(dir.join("kits/quick.kit")).unwrap();
    assert_eq!(kit, "---\nname: quick\ndescription: Quick\n---\ntool_read_note\ntool_stamp\n");
    let info = stdout_json(&lcp(&["profile", "info", "quick", "--format", "json", TOOLS, "--config", config]));
    assert_eq!(info["description"], "Quick");
    assert_eq!(info["tools"].as_array().unwrap().len(), 2);
    // An existing kit is never overwritten; a missing tool is refused.
    assert_eq!(create("quick").status.code(), Some(2));
    let missing = lcp(&["profile", "create", "other", "--tools", "tool_nope", TOOLS, "--config", config]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(!dir.join("kits/other.kit").exists());
}

#[test]
fn a_bad_config_file_is_a_usage_error_naming_file_and_line() {
    let dir = temp_dir("profile-bad-config");
    let cases = [
        ("unknown.toml", "\n[profile.writer]\ntools = []\n", "unknown.toml:2:2: unknown key `profile`"),
        ("syntax.toml", "[profiles.a]\ntools = [\n", "syntax.toml:2:10: invalid TOML"),
        ("form.toml", "[profiles.a]\ntools = 3\n", "form.toml:2:1: profile `a`: `tools` must be a list"),
    ];
    for (name, text, message) in cases {
        let path = dir.join(name);
        write(&path, text);
        let profile = if name == "form.toml" { vec!["--profile", "a"] } else { vec![] };
        let mut args = vec!["list", TOOLS, "--config", path.to_str().unwrap()];
        args.extend(profile);
        let output = lcp(&args);
        assert_eq!(output.status.code(), Some(2), "{name}");
        assert!(stderr(&output).contains(message), "{name}: {}", stderr(&output));
    }
}
