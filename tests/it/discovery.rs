//! SPEC §1: sources and discovery order.

use std::os::unix::fs::symlink;

use lcp::discovery::registry::{Options, Registry, Sources};

use crate::support::*;

fn names(folders: &[&str]) -> Vec<String> {
    tool_names(&load(folders))
}

#[test]
fn entries_are_visited_in_bytewise_sorted_order_with_primary_first_then_siblings() {
    assert_eq!(
        names(&["ordering"]),
        ["tool_b_upper", "tool_a_primary", "tool_a_sibling_zero", "tool_a_sibling_z", "tool_b_primary", "tool_z_loose"]
    );
}

#[test]
fn dot_entries_pycache_init_py_deeper_folders_and_other_files_are_skipped() {
    let found = names(&["ordering"]);
    assert!(found.iter().all(|name| !name.starts_with("tool_never")), "{found:?}");
    assert!(load(&["ordering"]).diagnostics().is_empty(), "{:?}", load(&["ordering"]).diagnostics());
}

#[test]
fn folder_without_primary_file_loads_every_file_sorted() {
    assert_eq!(names(&["fallback"]), ["tool_alpha", "tool_beta"]);
}

#[test]
fn folders_are_scanned_in_the_order_given() {
    assert_eq!(names(&["fallback", "explicit_files"]), ["tool_alpha", "tool_beta", "tool_one", "tool_two"]);
    assert_eq!(names(&["explicit_files", "fallback"]), ["tool_one", "tool_two", "tool_alpha", "tool_beta"]);
}

#[test]
fn tool_files_without_folders_scan_no_folder() {
    let sources = Sources { folders: vec![], files: vec![fixture("explicit_files/one.py")] };
    let registry = Registry::load(&sources, &Options::default());
    assert_eq!(tool_names(&registry), ["tool_one"]);
}

#[test]
fn folders_come_before_files_when_both_are_given() {
    let sources = Sources { folders: vec![fixture("fallback")], files: vec![fixture("explicit_files/one.py")] };
    let registry = Registry::load(&sources, &Options::default());
    assert_eq!(tool_names(&registry), ["tool_alpha", "tool_beta", "tool_one"]);
}

#[test]
fn neither_folders_nor_files_means_the_built_in_default_tools() {
    let output = lcp(&["export", "--format", "manifest"]);
    assert!(output.status.success());
    let manifest = stdout_json(&output);
    let paths: Vec<&str> = manifest["tools"].as_array().unwrap().iter().map(|t| t["path"].as_str().unwrap()).collect();
    assert!(paths.len() >= 10, "{paths:?}");
    assert!(paths.iter().all(|p| p.contains("default_tools")), "{paths:?}");
}

#[test]
fn built_in_default_tools_are_embedded_for_installed_binaries() {
    let cache = temp_dir("embedded-defaults");
    let folder = lcp::discovery::default_tools::materialise_in(&cache).expect("embedded copy is written");
    let embedded = Registry::load(&Sources { folders: vec![folder.clone()], files: vec![] }, &Options::default());
    let source =
        Registry::load(&Sources { folders: vec![root().join("default_tools")], files: vec![] }, &Options::default());
    assert_eq!(tool_names(&embedded), tool_names(&source));
    assert!(tool_names(&embedded).len() >= 10);
    // Every file comes along, byte for byte: the tests' `lcp_tests.toml` and fixtures too.
    let mut files = Vec::new();
    let mut folders = vec![root().join("default_tools")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            if entry.path().is_dir() {
                folders.push(entry.path());
            } else {
                files.push(entry.path().strip_prefix(root().join("default_tools")).unwrap().to_path_buf());
            }
        }
    }
    assert!(files.iter().any(|file| file.ends_with("lcp_tests.toml")), "{files:?}");
    for file in &files {
        let copied = std::fs::read(folder.join(file)).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        assert_eq!(copied, std::fs::read(root().join("default_tools").join(file)).unwrap(), "{}", file.display());
    }
    // Written once: a second call reuses the same folder.
    assert_eq!(lcp::discovery::default_tools::materialise_in(&cache).unwrap(), folder);
}

#[test]
fn default_tools_are_found_from_any_working_directory() {
    let elsewhere = temp_dir("other-cwd");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .arg("list")
        .env_remove("COLUMNS")
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("tool_execute_query"));
}

#[test]
fn symbolic_links_are_followed() {
    let dir = temp_dir("links");
    symlink(root().join("fixtures/fallback/helpers"), dir.join("linked_lib")).unwrap();
    symlink(root().join("fixtures/explicit_files/one.py"), dir.join("linked_file.py")).unwrap();
    let registry = Registry::load(&Sources { folders: vec![dir], files: vec![] }, &Options::default());
    assert_eq!(tool_names(&registry), ["tool_one", "tool_alpha", "tool_beta"]);
}

/// Link loops are made at test time: committed ones would trip every tool that walks
/// the repository.
#[test]
fn symbolic_link_loops_and_broken_links_are_diagnostics_not_failures() {
    let dir = temp_dir("symlink_loop");
    write(&dir.join("real.py"), "def tool_real():\n    \"\"\"Found once.\"\"\"\n");
    symlink(".", dir.join("self_loop")).unwrap();
    symlink(format!("../{}", dir.file_name().unwrap().to_string_lossy()), dir.join("parent_loop")).unwrap();
    symlink("dangling_target", dir.join("dangling.py")).unwrap();
    symlink("b_link", dir.join("a_link")).unwrap();
    symlink("a_link", dir.join("b_link")).unwrap();
    let registry = Registry::load(&Sources { folders: vec![dir], files: vec![] }, &Options::default());
    assert_eq!(tool_names(&registry), ["tool_real"]);
    for entry in ["a_link", "b_link", "dangling.py", "parent_loop", "self_loop"] {
        assert_eq!(diagnostics_with(&registry, &[entry, "warning"]).len(), 1, "{entry}: {:?}", registry.diagnostics());
    }
}

#[test]
fn a_file_reached_twice_is_read_once() {
    let registry = load(&["fallback", "fallback"]);
    assert_eq!(tool_names(&registry), ["tool_alpha", "tool_beta"]);
    assert_eq!(diagnostics_with(&registry, &["already listed"]).len(), 2);
}

#[test]
fn hard_links_are_distinct_files_and_a_symlink_to_a_listed_file_is_skipped() {
    let dir = temp_dir("hard_links");
    write(&dir.join("a.py"), "def tool_a():\n    pass\n");
    std::fs::hard_link(dir.join("a.py"), dir.join("b.py")).unwrap();
    symlink("a.py", dir.join("c.py")).unwrap();
    let registry = Registry::load(&Sources { folders: vec![dir], files: vec![] }, &Options::default());
    let files: Vec<String> = registry.libraries().iter().map(|l| l.stem.clone()).collect();
    assert_eq!(files, ["a", "b"]);
    assert_eq!(diagnostics_with(&registry, &["c.py", "already listed"]).len(), 1, "{:?}", registry.diagnostics());
}

#[test]
fn duplicate_tool_names_first_discovery_wins_with_a_warning_naming_both_files() {
    let registry = load(&["duplicates"]);
    assert_eq!(tool_names(&registry), ["tool_shared", "tool_only_first", "tool_only_second"]);
    assert!(parameters(&registry, "tool_shared")["properties"].as_object().unwrap().is_empty());
    let warnings = diagnostics_with(&registry, &["second.py", "first.py", "tool_shared", "warning"]);
    assert_eq!(warnings.len(), 1, "{:?}", registry.diagnostics());
}

#[test]
fn discovery_executes_no_python() {
    let dir = temp_dir("no-exec");
    let marker = dir.join("imported.marker");
    write(
        &dir.join("side_effect.py"),
        format!(
            "open({marker:?}, 'w').write('ran')\nraise SystemExit(3)\n\ndef tool_quiet():\n    \"\"\"Never imported by discovery.\"\"\"\n",
            marker = marker.display().to_string()
        ),
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["export", "--format", "mcp"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(stdout_json(&output)["tools"][0]["name"], "tool_quiet");
    assert!(!marker.exists(), "discovery ran module code");
}

#[test]
fn an_explicit_file_of_a_library_folder_belongs_to_its_package() {
    let sources = Sources { folders: vec![], files: vec![fixture("rich/inventory/reports.py")] };
    let registry = Registry::load(&sources, &Options::default());
    assert_eq!(registry.libraries()[0].package.as_deref(), Some(fixture("rich/inventory").as_path()));
    let loose = Registry::load(
        &Sources { folders: vec![], files: vec![fixture("explicit_files/one.py")] },
        &Options::default(),
    );
    assert_eq!(loose.libraries()[0].package, None);
}
