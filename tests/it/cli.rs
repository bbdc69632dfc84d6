//! SPEC §7: the command line, its streams and its exit codes.

use std::process::Command;

use crate::support::*;

#[test]
fn list_prints_a_table_of_tools_libraries_parameters_and_sources() {
    let output = lcp(&["list", "fixtures/rich"]);
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    for column in ["TOOL", "LIBRARY", "PARAMETERS", "SOURCE"] {
        assert!(header.contains(column), "{header}");
    }
    let add = lines.next().unwrap();
    assert!(add.starts_with("tool_add_item"), "{add}");
    assert!(
        add.contains("Inventory") && add.contains("name, quantity?, category?") && add.contains("inventory.py:46"),
        "{add}"
    );
    assert!(table.trim_end().ends_with("6 tools in 2 libraries"), "{table}");
}

#[test]
fn list_fits_the_terminal_width_and_wide_keeps_whole_cells() {
    let whole = String::from_utf8(lcp(&["list", "fixtures/rich"]).stdout).unwrap();
    assert!(whole.lines().any(|line| line.chars().count() > 80), "{whole}");
    let fitted = String::from_utf8(lcp_with_env(&["list", "fixtures/rich"], &[("COLUMNS", "80")]).stdout).unwrap();
    assert_eq!(fitted.lines().count(), whole.lines().count(), "{fitted}");
    for line in fitted.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    assert!(fitted.lines().nth(1).unwrap().starts_with("tool_add_item  "), "{fitted}");
    assert!(fitted.contains('…'), "{fitted}");
    let wide = lcp_with_env(&["list", "--wide", "fixtures/rich"], &[("COLUMNS", "80")]);
    assert_eq!(String::from_utf8(wide.stdout).unwrap(), whole);
}

#[test]
fn export_prints_json_on_stdout_for_every_format() {
    let tools = ["tool_add_item", "tool_remove_item", "tool_move", "tool_stock_report", "tool_convert", "tool_ping"];
    let expected_properties = [
        vec!["name", "quantity", "category", "location", "tags"],
        vec!["name", "quantity", "force"],
        vec!["name", "to", "mode"],
        vec!["since", "rows", "labels"],
        vec!["value", "unit", "precision"],
        vec![],
    ];
    // Each format: where its list of tools is, and where a tool's name and parameters are.
    for (format, list, name, parameters) in [
        ("openai", "", "/function/name", "/function/parameters"),
        ("openai-responses", "", "/name", "/parameters"),
        ("anthropic", "", "/name", "/input_schema"),
        ("gemini", "/functionDeclarations", "/name", "/parameters"),
        ("mcp", "/tools", "/name", "/inputSchema"),
        ("manifest", "/tools", "/name", "/parameters"),
    ] {
        let output = lcp(&["export", "--format", format, "--static", "fixtures/rich"]);
        assert!(output.status.success(), "{format}");
        let document = stdout_json(&output);
        let listed = document.pointer(list).and_then(|list| list.as_array()).unwrap_or_else(|| panic!("{format}"));
        let names: Vec<&str> = listed.iter().map(|tool| tool.pointer(name).unwrap().as_str().unwrap()).collect();
        assert_eq!(names, tools, "{format}");
        // Gemini leaves out the parameters of a tool that has none.
        let properties: Vec<Vec<&String>> = listed
            .iter()
            .map(|tool| {
                tool.pointer(parameters).map_or(vec![], |p| p["properties"].as_object().unwrap().keys().collect())
            })
            .collect();
        assert_eq!(properties, expected_properties, "{format}");
    }
}

#[test]
fn export_reports_strict_problems_on_stderr() {
    let output = lcp(&["export", "--format", "openai", "--strict", "fixtures/rich"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reports.py:10:1: error: tool `tool_stock_report` cannot be exported to openai --strict"),
        "{stderr}"
    );
    assert_eq!(stdout_json(&output).as_array().unwrap().len(), 5);
}

#[test]
fn check_prints_located_diagnostics_on_stderr_and_exits_1_on_errors() {
    let output = lcp(&["check", "fixtures/syntax_error"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/syntax_error/broken.py:1:17: error: syntax error:"), "{stderr}");
}

#[test]
fn check_exits_0_when_only_warnings_are_found() {
    let output = lcp(&["check", "fixtures/nested_tools"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("warning"));
}

#[test]
fn check_json_is_for_programs() {
    let output = lcp(&["check", "--format", "json", "fixtures/non_utf8"]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout_json(&output);
    assert_eq!(report["errors"], 1);
    assert_eq!(report["tools"], 1);
    assert_eq!(report["diagnostics"][0]["line"], 2);
    assert_eq!(report["diagnostics"][0]["level"], "error");
}

#[test]
fn file_option_loads_only_the_named_files() {
    let output = lcp(&["export", "--format", "mcp", "--file", "fixtures/explicit_files/one.py"]);
    let names: Vec<String> = stdout_json(&output)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["tool_one"]);
}

#[test]
fn missing_folder_is_an_io_error_with_exit_2() {
    let output = lcp(&["list", "fixtures/does_not_exist"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("fixtures/does_not_exist: no such file or folder"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(lcp(&["export", "--format", "nope"]).status.code(), Some(2));
    assert_eq!(lcp(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn timeout_too_large_for_a_duration_is_a_usage_error() {
    for timeout in ["1.9e19", "1e400", "nan", "-1", "0"] {
        let option = format!("--timeout={timeout}");
        for command in [
            &["call", "tool_one", "--file", "fixtures/explicit_files/one.py", &option][..],
            &["serve", "--file", "fixtures/explicit_files/one.py", &option][..],
        ] {
            let output = lcp(command);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{command:?}: {stderr}");
            assert!(
                stderr.contains(&format!("--timeout {}", timeout.parse::<f64>().unwrap())),
                "{command:?}: {stderr}"
            );
        }
    }
}

#[test]
fn list_cuts_long_cells_instead_of_padding_every_row_to_them() {
    let dir = temp_dir("long-cells");
    let many: Vec<String> = (0..10_000).map(|i| format!("p{i}: int")).collect();
    write(&dir.join("many.py"), format!("def tool_many({}):\n    \"\"\"Many.\"\"\"\n", many.join(", ")));
    write(
        &dir.join("long_param.py"),
        format!("def tool_long_param({}: int):\n    \"\"\"Long.\"\"\"\n", "p".repeat(65_600)),
    );
    write(&dir.join("long_name.py"), format!("def tool_{}():\n    \"\"\"Long.\"\"\"\n", "n".repeat(70_000)));
    write(
        &dir.join("long_library.py"),
        format!("TOOL_LIBRARY_NAME = \"{}\\n\"\n\ndef tool_library():\n    \"\"\"Long.\"\"\"\n", "l".repeat(70_000)),
    );
    let output = lcp(&["list", "--static", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.trim_end().ends_with("4 tools in 4 libraries"), "{stdout}");
    assert_eq!(stdout.lines().count(), 6, "{stdout}");
    for line in stdout.lines() {
        assert!(line.chars().count() < 400, "a line of {} characters", line.chars().count());
    }
    let many = stdout.lines().find(|l| l.starts_with("tool_many")).unwrap();
    assert!(many.contains("p0, p1, p2") && many.contains('…'), "{many}");
}

/// `.cargo/python3` (the build's interpreter search) on a `PATH` of made-up programs:
/// `pyenv`'s interpreter first, then the `PATH`'s `python3`, each only with a shared
/// libpython, and a message saying what to install when none has one.
#[test]
fn the_build_finds_pyenvs_python_first_and_only_one_with_a_shared_libpython() {
    use std::os::unix::fs::PermissionsExt;
    let real = base_python();
    let dir = temp_dir("interpreter-search");
    let program = |path: &str, body: String| {
        let path = dir.join(path);
        write(&path, format!("#!/bin/sh\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    // Real Pythons that say who they are; the "static" one answers the finder's check with no.
    let python = |name: &str, shared: bool| {
        let check = if shared { "" } else { r#"case "$2" in *Py_ENABLE_SHARED*) exit 1;; esac"# };
        program(&format!("{name}/python3"), format!("{check}\nCHOSEN={name} exec {} \"$@\"", real.display()))
    };
    python("static", false);
    python("shared", true);
    let from_pyenv = python("from-pyenv", true);
    program("pyenv/pyenv", format!("[ \"$1 $2\" = 'which python3' ] && echo {}", from_pyenv.display()));
    let search = |path: &[&str]| {
        let path: Vec<String> = path.iter().map(|folder| dir.join(folder).display().to_string()).collect();
        Command::new(root().join(".cargo/python3"))
            .args(["-c", "import os; print(os.environ['CHOSEN'])"])
            .env("PATH", path.join(":"))
            .env("PYENV_ROOT", dir.join("no-pyenv-here"))
            .env("HOME", &dir)
            .output()
            .unwrap()
    };
    let chosen = |path: &[&str]| {
        let output = search(path);
        assert!(output.status.success(), "{path:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(chosen(&["shared", "pyenv"]), "from-pyenv");
    assert_eq!(chosen(&["static", "pyenv"]), "from-pyenv");
    assert_eq!(chosen(&["shared"]), "shared");
    let none = search(&["static"]);
    assert_eq!(none.status.code(), Some(1));
    let message = String::from_utf8_lossy(&none.stderr);
    assert!(message.contains("needs one built with a shared libpython"), "{message}");
    assert!(message.contains("PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install"), "{message}");
    assert!(message.contains("PYO3_PYTHON=/path/to/python3"), "{message}");
}

/// `cargo build --no-default-features`: discovery, checks and exports with no pyo3 and
/// no libpython (SPEC's first invariant as a fact of the build), the same exports as
/// the default build, and the commands that run tools refused, naming the feature.
#[test]
fn the_build_without_the_python_feature_exports_the_same_and_refuses_to_run_tools() {
    let target = target_dir().join("no-python");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--no-default-features", "--jobs", "1", "--bin", "lcp", "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("cargo runs");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let binary = target.join("debug/lcp");
    let linked = Command::new("ldd").arg(&binary).output().expect("ldd runs");
    let linked = String::from_utf8_lossy(&linked.stdout);
    assert!(!linked.is_empty() && !linked.contains("libpython"), "{linked}");
    let static_lcp = |args: &[&str]| Command::new(&binary).args(args).current_dir(root()).output().unwrap();

    for format in ["manifest", "openai", "gemini", "mcp"] {
        let args = ["export", "--static", "--format", format, "fixtures/conformance", "fixtures/rich"];
        let without = static_lcp(&args);
        assert!(without.status.success(), "{format}: {}", String::from_utf8_lossy(&without.stderr));
        assert_eq!(without.stdout, lcp(&args).stdout, "{format}: the same export");
    }
    let check = static_lcp(&["check", "fixtures/conformance"]);
    assert_eq!(check.status.code(), lcp(&["check", "fixtures/conformance"]).status.code());
    for command in [&["call", "tool_add", "--args", "{}"][..], &["serve"], &["test"]] {
        let refused = static_lcp(command);
        assert_eq!(refused.status.code(), Some(2), "{command:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains("built without the `python` feature"), "{command:?}: {said}");
    }
}
