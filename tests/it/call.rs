//! SPEC §5 and §7 end to end: `lcp call`, and `lcp list` / `lcp export` with prompt
//! providers, on `fixtures/runtime/` and on the built-in tools. Each command is its own
//! process, so these tests may change the working directory and leave tools blocked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::*;

fn fixture_folder(name: &str) -> String {
    root().join("fixtures/runtime").join(name).to_string_lossy().into_owned()
}

/// Runs `lcp` in `cwd` with no standard input (so no terminal) and no virtual env.
fn lcp_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lcp"));
    command.args(args).current_dir(cwd).stdin(Stdio::null()).env_remove("VIRTUAL_ENV").env_remove("COLUMNS");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("lcp runs")
}

fn lcp_call(args: &[&str]) -> Output {
    let mut full = vec!["call"];
    full.extend_from_slice(args);
    lcp_in(root(), &full, &[])
}

/// The result printed by `lcp call`, checking the exit code.
fn result(output: &Output, code: i32) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "stderr: {stderr}\nstdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("stdout is not one JSON document ({err}); stderr: {stderr}"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

// ------------------------------------------------------------ exit codes ---

#[test]
fn call_prints_the_result_as_json_and_exits_0() {
    let output = lcp_call(&["tool_async_add", &fixture_folder("async"), "--args", r#"{"a": 2, "b": 3}"#]);
    assert_eq!(result(&output, 0), json!({"ok": true, "output": 5, "stdout": "", "stderr": ""}));
}

#[test]
fn call_exits_1_when_the_tool_raises_and_prints_the_traceback() {
    let output = lcp_call(&["tool_raise", &fixture_folder("failures")]);
    let result = result(&output, 1);
    assert_eq!(result["error"], "ValueError: bad value");
    assert!(result["traceback"].as_str().unwrap().contains("in tool_raise"), "{result}");
}

#[test]
fn call_exits_1_for_a_tool_reported_failure() {
    let result = result(&lcp_call(&["tool_report_failure", &fixture_folder("failures")]), 1);
    assert_eq!(result["error"], "the file is locked");
    assert_eq!(result["output"]["output"], json!({"path": "a.txt"}));
}

#[test]
fn call_exits_2_for_an_unknown_tool_and_suggests_the_closest_names() {
    let output = lcp_call(&["tool_rase", &fixture_folder("failures")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("unknown tool `tool_rase`; did you mean `tool_raise`?"), "{}", stderr(&output));
}

#[test]
fn call_exits_2_when_args_are_not_a_json_object() {
    for args in ["{", "[1, 2]"] {
        let output = lcp_call(&["tool_raise", &fixture_folder("failures"), "--args", args]);
        assert_eq!(output.status.code(), Some(2), "{args}: {}", stderr(&output));
        assert!(stderr(&output).contains("--args"), "{}", stderr(&output));
    }
}

#[test]
fn call_exits_1_for_arguments_that_break_the_schema_and_lists_every_problem() {
    let output = lcp_call(&["tool_async_add", &fixture_folder("async"), "--args", r#"{"a": "two", "c": 1}"#]);
    let result = result(&output, 1);
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("`a`: expected integer, got string \"two\""), "{error}");
    assert!(error.contains("missing required parameter `b`") && error.contains("unknown parameter `c`"), "{error}");
    assert!(error.ends_with("valid parameters: a (integer, required), b (integer, required)"), "{error}");
}

// ---------------------------------------------------------- containment ---

#[test]
fn nothing_a_tool_prints_reaches_stdout_not_even_fd_1_or_a_child_process() {
    let output = lcp_call(&["tool_print_everywhere", &fixture_folder("output")]);
    let result = result(&output, 0);
    let captured = result["stdout"].as_str().unwrap();
    for line in ["printed line", "raw fd one", "child process line", "dunder stdout line"] {
        assert!(captured.contains(line), "{line:?} missing: {result}");
    }
    assert_eq!(result["stderr"], "error line\n");
}

#[test]
fn system_exit_does_not_end_lcp() {
    let result = result(&lcp_call(&["tool_exit", &fixture_folder("failures")]), 1);
    assert!(result["error"].as_str().unwrap().contains("SystemExit: 3"), "{result}");
}

#[test]
fn a_timeout_stops_a_spinning_tool() {
    let result = result(&lcp_call(&["tool_spin", &fixture_folder("timeouts"), "--timeout", "0.5"]), 1);
    assert_eq!(result["error"], "`tool_spin` timed out after 0.5 s and was stopped");
}

#[test]
fn a_timeout_returns_even_when_the_tool_is_blocked_outside_python() {
    let args = ["tool_block", &fixture_folder("timeouts"), "--args", r#"{"seconds": 60}"#, "--timeout", "0.2"];
    let isolated = result(&lcp_call(&args), 1);
    let error = isolated["error"].as_str().unwrap();
    assert!(
        error.contains("timed out after 0.2 s; it did not stop") && error.contains("ended its worker"),
        "{isolated}"
    );
    // In-process, such a tool cannot be stopped: the call returns, the tool goes on.
    let in_process = [&args[..], &["--in-process"]].concat();
    let in_process = result(&lcp_call(&in_process), 1);
    assert!(
        in_process["error"].as_str().unwrap().contains("timed out after 0.2 s; it could not be stopped"),
        "{in_process}"
    );
}

#[test]
fn a_timeout_that_is_not_a_positive_number_is_a_usage_error() {
    let output = lcp_call(&["tool_quick", &fixture_folder("timeouts"), "--timeout", "0"]);
    assert_eq!(output.status.code(), Some(2));
}

// -------------------------------------------------------------- workspace ---

#[test]
fn the_workspace_is_the_working_directory_of_the_tool() {
    let workspace = temp_dir("call-workspace");
    let folder = fixture_folder("workspace");
    let cwd = result(&lcp_call(&["tool_cwd", &folder, "--workspace", workspace.to_str().unwrap()]), 0);
    assert_eq!(cwd["output"], workspace.canonicalize().unwrap().to_str().unwrap());
    let args = json!({"name": "note.txt", "text": "hi"}).to_string();
    result(&lcp_call(&["tool_write_note", &folder, "--workspace", workspace.to_str().unwrap(), "--args", &args]), 0);
    assert_eq!(std::fs::read_to_string(workspace.join("note.txt")).unwrap(), "hi");
}

#[test]
fn a_workspace_that_is_not_a_folder_is_a_usage_error() {
    let output = lcp_call(&["tool_cwd", &fixture_folder("workspace"), "--workspace", "/no/such/folder"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("not a folder"), "{}", stderr(&output));
}

// ------------------------------------------------------- hooks and confirm ---

#[test]
fn config_and_autonomy_reach_init_tools_library() {
    let args =
        ["tool_positional_state", &fixture_folder("hooks"), "--config", r#"{"api_key": "k"}"#, "--autonomy", "strict"];
    let result = result(&lcp_call(&args), 0);
    assert_eq!(
        result["output"],
        json!({"received": [{"api_key": "k", "autonomy_level": "strict", "has_confirm_handler": true}]})
    );
}

#[test]
fn autonomy_defaults_to_safe_and_rejects_unknown_levels() {
    let result = result(&lcp_call(&["tool_positional_state", &fixture_folder("hooks")]), 0);
    assert_eq!(result["output"]["received"][0]["autonomy_level"], "safe");
    assert_eq!(
        lcp_call(&["tool_positional_state", &fixture_folder("hooks"), "--autonomy", "yolo"]).status.code(),
        Some(2)
    );
}

#[test]
fn yes_allows_and_no_refuses_what_a_tool_asks_to_confirm() {
    let folder = fixture_folder("confirm");
    let args = r#"{"content": "rm notes.txt"}"#;
    let allowed = result(&lcp_call(&["tool_ask_pair", &folder, "--args", args, "--yes"]), 0);
    assert_eq!(allowed["output"], json!({"decision": "allow", "reason": "allowed with --yes"}));
    let refused = result(&lcp_call(&["tool_ask_dict", &folder, "--args", args, "--no"]), 0);
    assert_eq!(refused["output"], json!({"decision": "reject", "reason": "refused with --no"}));
    assert_eq!(lcp_call(&["tool_ask_pair", &folder, "--yes", "--no"]).status.code(), Some(2));
}

#[test]
fn without_a_terminal_confirmations_are_refused_with_a_reason() {
    let result = result(&lcp_call(&["tool_ask_extra", &fixture_folder("confirm"), "--args", r#"{"content": "x"}"#]), 0);
    assert_eq!(result["output"]["decision"], "reject");
    assert!(result["output"]["reason"].as_str().unwrap().contains("no terminal"), "{result}");
}

// ------------------------------------------------------ built-in libraries ---

fn sqlite(workspace: &Path, script: &str) {
    let status = Command::new(base_python())
        .args([
            "-c",
            &format!("import sqlite3; c = sqlite3.connect('shop.db'); c.executescript({script:?}); c.commit()"),
        ])
        .current_dir(workspace)
        .status()
        .expect("python runs");
    assert!(status.success());
}

#[test]
fn sqlite_library_queries_and_changes_a_real_database_file() {
    let workspace = temp_dir("call-sqlite");
    sqlite(
        &workspace,
        "CREATE TABLE items(name TEXT, qty INTEGER); INSERT INTO items VALUES ('apple', 3), ('pear', 5);",
    );
    let dir = workspace.to_str().unwrap();
    let query = |sql: &str| {
        let args = json!({"database_name": "shop.db", "query": sql}).to_string();
        result(&lcp_call(&["tool_execute_query", "--workspace", dir, "--args", &args]), 0)
    };
    let rows = query("SELECT name, qty FROM items ORDER BY name");
    assert_eq!(rows["output"]["output"]["rows"], json!([["apple", 3], ["pear", 5]]), "{rows}");

    let insert = json!({"database_name": "shop.db", "statement": "INSERT INTO items VALUES ('plum', 7)"}).to_string();
    let refused = result(&lcp_call(&["tool_execute_statement", "--workspace", dir, "--args", &insert, "--no"]), 1);
    assert!(refused["error"].as_str().unwrap().contains("refused with --no"), "{refused}");
    let done = result(&lcp_call(&["tool_execute_statement", "--workspace", dir, "--args", &insert, "--yes"]), 0);
    assert_eq!(done["output"]["output"]["rows_changed"], 1, "{done}");
    assert_eq!(query("SELECT count(*) FROM items")["output"]["output"]["rows"], json!([[3]]));
}

#[test]
fn shell_runner_runs_a_command_with_yes_and_refuses_it_with_no() {
    let workspace = temp_dir("call-shell");
    let dir = workspace.to_str().unwrap();
    let args = json!({"command": "echo hello from the shell"}).to_string();
    let ran = result(&lcp_call(&["tool_run_command", "--workspace", dir, "--args", &args, "--yes"]), 0);
    assert_eq!(ran["output"]["output"]["stdout"], "hello from the shell\n", "{ran}");
    assert_eq!(ran["output"]["output"]["exit_code"], 0);
    let refused = result(&lcp_call(&["tool_run_command", "--workspace", dir, "--args", &args, "--no"]), 1);
    assert!(refused["error"].as_str().unwrap().contains("rejected by user: refused with --no"), "{refused}");
}

// ------------------------------------------------------ prompt providers ---

#[test]
fn export_and_list_show_prompt_provider_descriptions_unless_static() {
    let folder = fixture_folder("providers");
    let output = lcp_in(root(), &["export", &folder, "--format", "anthropic"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let description = |tools: &Value, name: &str| {
        tools.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(description(&tools, "tool_greet"), "Greets someone (dynamic description, provider call 1).");
    assert_eq!(description(&tools, "tool_broken"), "Static description of the broken one.");
    assert!(stderr(&output).contains("prompt provider `tool_broken_prompt` failed"), "{}", stderr(&output));

    let output = lcp_in(root(), &["export", &folder, "--format", "anthropic", "--static"], &[]);
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(description(&tools, "tool_greet"), "Greets someone (static description).");
    assert!(!stderr(&output).contains("prompt provider"));

    let listed = String::from_utf8(lcp_in(root(), &["list", &folder], &[]).stdout).unwrap();
    assert!(listed.lines().any(|l| l.starts_with("tool_greet") && l.contains("(dynamic description")), "{listed}");
    let listed = String::from_utf8(lcp_in(root(), &["list", &folder, "--static"], &[]).stdout).unwrap();
    assert!(listed.lines().any(|l| l.starts_with("tool_greet") && l.contains("(static description)")), "{listed}");
}

// ------------------------------------------------------------ interpreter ---

/// A virtual environment without pip, holding one module of its own.
fn probe_venv(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    let venv = dir.join("venv");
    let status =
        Command::new(base_python()).args(["-m", "venv", "--without-pip"]).arg(&venv).status().expect("python runs");
    assert!(status.success());
    let (_, version) = lcp::runtime::python_build();
    write(&venv.join(format!("lib/python{version}/site-packages/lcp_venv_probe.py")), "WHERE = 'venv'\n");
    venv
}

#[test]
fn a_virtual_environment_makes_its_packages_importable() {
    let venv = probe_venv("call-venv");
    let folder = fixture_folder("interpreter");
    let args = r#"{"module": "lcp_venv_probe"}"#;
    let with_flag = result(&lcp_call(&["tool_import", &folder, "--args", args, "--venv", venv.to_str().unwrap()]), 0);
    assert!(with_flag["output"].as_str().unwrap().starts_with(venv.to_str().unwrap()), "{with_flag}");
    let active =
        lcp_in(root(), &["call", "tool_import", &folder, "--args", args], &[("VIRTUAL_ENV", venv.to_str().unwrap())]);
    assert!(result(&active, 0)["output"].as_str().unwrap().starts_with(venv.to_str().unwrap()));
    let without = result(&lcp_call(&["tool_import", &folder, "--args", args]), 1);
    assert!(without["error"].as_str().unwrap().contains("No module named 'lcp_venv_probe'"), "{without}");
}

#[cfg(feature = "external")]
#[test]
fn pydantic_models_from_the_virtual_environment_arrive_as_instances() {
    let venv = test_python().parent().and_then(Path::parent).unwrap().to_str().unwrap().to_string();
    let args = r#"{"address": {"city": "Lyon"}}"#;
    let result = result(&lcp_call(&["tool_address", &fixture_folder("models"), "--args", args, "--venv", &venv]), 0);
    assert_eq!(result["output"], json!({"type": "Address", "city": "Lyon", "zip_code": "00000"}));
}

#[cfg(feature = "external")]
#[test]
fn pydantic_types_and_a_sibling_module_model_arrive_as_pydantic_makes_them() {
    let venv = test_python().parent().and_then(Path::parent).unwrap().to_str().unwrap().to_string();
    let args = json!({
        "customer": {"name": "Ada"},
        "email": "Ada@Example.com",
        "contact": "Ada Lovelace <ada@example.com>",
        "site": "https://example.com",
        "token": "s3cret",
        "counts": "[1, 2]",
        "host": "::1",
        "port": 8080,
        "amount": "12.50",
        "code": "  ABC "
    })
    .to_string();
    let folder = fixture_folder("pydantic_types");
    let shown = result(&lcp_call(&["tool_web", &folder, "--args", &args, "--venv", &venv]), 0)["output"].clone();
    let repr = |name: &str| shown[name]["repr"].as_str().unwrap().to_string();
    assert_eq!(repr("customer"), "Customer(name='Ada', age=0)");
    assert_eq!(repr("email"), "'Ada@example.com'");
    assert_eq!(repr("contact"), "NameEmail(name='Ada Lovelace', email='ada@example.com')");
    assert_eq!(repr("site"), "HttpUrl('https://example.com/')");
    assert_eq!(repr("token"), "SecretStr('**********')");
    assert_eq!(repr("counts"), "[1, 2]");
    assert_eq!(repr("host"), "IPv6Address('::1')");
    assert_eq!(repr("port"), "8080");
    assert_eq!(repr("amount"), "Decimal('12.50')");
    assert_eq!(repr("code"), "'abc'");
    // The schema refuses before any Python runs what pydantic would refuse.
    let bad = json!({"customer": {"name": ""}, "email": "ada@localhost", "contact": "x", "site": "ftp://example.com",
        "token": "t", "counts": "[1.5]", "host": "x", "port": 0, "amount": "1.234", "code": "c"})
    .to_string();
    let refused = result(&lcp_call(&["tool_web", &folder, "--args", &bad, "--venv", &venv]), 1);
    let error = refused["error"].as_str().unwrap();
    for place in ["customer.name", "email", "contact", "site", "counts[0]", "host", "port", "amount"] {
        assert!(error.contains(&format!("`{place}`")), "{place} missing from: {error}");
    }
}

#[test]
fn the_pinned_interpreter_is_used_from_any_working_directory() {
    let elsewhere = temp_dir("call-elsewhere");
    let file = root().join("fixtures/runtime/interpreter/interpreter.py");
    let output =
        lcp_in(&elsewhere, &["call", "tool_interpreter", "--file", file.to_str().unwrap()], &[("LD_LIBRARY_PATH", "")]);
    let info = result(&output, 0)["output"].clone();
    let (executable, version) = lcp::runtime::python_build();
    let prefix = Path::new(executable).parent().and_then(Path::parent).unwrap().to_str().unwrap();
    assert_eq!(info["executable"], executable);
    assert_eq!(info["prefix"], prefix);
    assert_eq!(info["cwd"], elsewhere.canonicalize().unwrap().to_str().unwrap());
    let site = format!("{prefix}/lib/python{version}/site-packages");
    assert!(info["site_packages"].as_array().unwrap().contains(&json!(site)), "{info}");
}

#[test]
fn big_integers_cross_the_worker_channel_exactly_both_ways() {
    let args = ["tool_echo_int", &fixture_folder("bigints"), "--args", r#"{"n": 18446744073709551617}"#];
    let result = result(&lcp_call(&args), 0);
    assert_eq!(result["output"], json!({"type": "int", "text": "18446744073709551617"}));
    let output = lcp_call(&["tool_power", &fixture_folder("bigints")]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("\"output\": 1180591620717411303425"), "{text}");
}

#[test]
fn a_tool_in_a_file_whose_path_is_not_utf8_is_called_from_its_real_path() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir("call-non-utf8");
    let folder = dir.join(std::ffi::OsStr::from_bytes(b"lib\xfe"));
    std::fs::create_dir_all(&folder).unwrap();
    let code = "import os\n\ndef tool_where() -> bool:\n    \"\"\"Whether it runs from its own file.\"\"\"\n    return os.path.exists(__file__)\n";
    std::fs::write(folder.join(std::ffi::OsStr::from_bytes(b"t\xff.py")), code).unwrap();
    let dir = dir.to_str().unwrap();
    for mode in [&[][..], &["--in-process"][..]] {
        let args = [&["tool_where", dir][..], mode].concat();
        let result = result(&lcp_call(&args), 0);
        assert_eq!(result["output"], json!(true), "{mode:?}: {result}");
    }
}

#[test]
fn a_tool_in_a_folder_whose_name_has_a_percent_sign_runs_there_with_its_workspace() {
    let dir = temp_dir("call-percent");
    let folder = dir.join("50%25 done%");
    let workspace = dir.join("work %41");
    std::fs::create_dir_all(&workspace).unwrap();
    let code = "import os\n\ndef tool_where() -> list:\n    \"\"\"Its own file and its working directory.\"\"\"\n    return [__file__, os.getcwd()]\n";
    write(&folder.join("where.py"), code);
    let (folder_text, workspace_text) = (folder.to_str().unwrap(), workspace.to_str().unwrap());
    for mode in [&[][..], &["--in-process"][..]] {
        let args = [&["tool_where", folder_text, "--workspace", workspace_text][..], mode].concat();
        let result = result(&lcp_call(&args), 0);
        let file = folder.join("where.py").canonicalize().unwrap();
        let expected = json!([file.to_str().unwrap(), workspace.canonicalize().unwrap().to_str().unwrap()]);
        assert_eq!(result["output"], expected, "{mode:?}: {result}");
    }
}

// ------------------------------------------------- virtual environments (SPEC §19) ---

/// A venv for the embedded Python holding one module, `lcp_venv_probe`.
fn venv_with_probe(at: &Path) {
    let (_, version) = lcp::runtime::python_build();
    let site = at.join(format!("lib/python{version}/site-packages"));
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(at.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(site.join("lcp_venv_probe.py"), "ANSWER = 42\n").unwrap();
}

#[test]
fn a_venv_beside_the_tools_folder_or_in_the_config_is_found_without_virtual_env() {
    let project = temp_dir("venv-beside");
    let tools = project.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("probe.py"),
        "import lcp_venv_probe\n\ndef tool_probe() -> int:\n    \"\"\"The probe's answer.\"\"\"\n    return lcp_venv_probe.ANSWER\n",
    )
    .unwrap();
    let tools_arg = tools.to_string_lossy().into_owned();
    // No venv anywhere: the import error names the interpreter and the ways to choose one.
    let failed = result(&lcp_in(&project, &["call", "tool_probe", &tools_arg], &[]), 1);
    let error = failed["error"].as_str().unwrap();
    let (interpreter, _) = lcp::runtime::python_build();
    assert!(error.contains("No module named 'lcp_venv_probe'") && error.contains(interpreter), "{error}");
    assert!(error.contains("--venv") && error.contains("[python] venv") && error.contains(".venv"), "{error}");
    // `.venv` beside the tools folder.
    venv_with_probe(&project.join(".venv"));
    assert_eq!(result(&lcp_in(&project, &["call", "tool_probe", &tools_arg], &[]), 0)["output"], 42);
    // `[python] venv` in the config, relative to it.
    std::fs::rename(project.join(".venv"), project.join("envs")).unwrap();
    let config = project.join("lcp.toml");
    std::fs::write(&config, "[python]\nvenv = \"envs\"\n").unwrap();
    let config_arg = config.to_string_lossy().into_owned();
    let output = lcp_in(&project, &["call", "tool_probe", &tools_arg, "--config", &config_arg], &[]);
    assert_eq!(result(&output, 0)["output"], 42);
    let _ = std::fs::remove_dir_all(&project);
}
