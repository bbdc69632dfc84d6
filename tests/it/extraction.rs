//! SPEC §2: what a file contributes.

use crate::support::*;

#[test]
fn tools_are_module_level_defs_in_source_order_including_compound_blocks() {
    let registry = load(&["nested_tools"]);
    assert_eq!(
        tool_names(&registry),
        [
            "tool_in_if",
            "tool_in_else",
            "tool_in_try",
            "tool_in_except",
            "tool_in_finally",
            "tool_in_with",
            "tool_in_for",
            "tool_in_while",
            "tool_async"
        ]
    );
}

#[test]
fn tool_defined_inside_a_function_or_class_is_warned_and_not_exported() {
    let registry = load(&["nested_tools"]);
    assert!(registry.tool("tool_inside_function").is_none());
    assert!(registry.tool("tool_method").is_none());
    assert_eq!(
        diagnostics_with(&registry, &["nested.py:35:9", "warning", "tool_inside_function", "function `outer`"]).len(),
        1
    );
    assert_eq!(diagnostics_with(&registry, &["nested.py:40:9", "warning", "tool_method", "class `Holder`"]).len(), 1);
}

#[test]
fn only_blocks_the_module_scope_runs_define_tools_and_blocks_inside_functions_and_classes_are_warned() {
    let registry = load(&["nested_blocks"]);
    assert_eq!(tool_names(&registry), ["tool_in_match"]);
    for (place, name, owner) in [
        ("blocks.py:14:13", "tool_in_if_in_function", "function `outer`"),
        ("blocks.py:18:17", "tool_deep_in_function", "function `outer`"),
        ("blocks.py:27:17", "tool_in_except_in_method", "class `Holder`"),
    ] {
        assert!(registry.tool(name).is_none(), "{name}");
        assert_eq!(diagnostics_with(&registry, &[place, "warning", name, owner]).len(), 1, "{place}");
    }
}

#[test]
fn async_def_tools_are_tools() {
    let registry = load(&["nested_tools"]);
    let (_, tool) = registry.tool("tool_async").unwrap();
    assert!(tool.is_async);
    assert_eq!(required(&registry, "tool_async"), ["x"]);
}

#[test]
fn a_name_defined_twice_in_one_file_keeps_the_first_with_a_warning() {
    let registry = load(&["redefined"]);
    assert_eq!(tool_names(&registry), ["tool_platform"]);
    assert!(property(&registry, "tool_platform", "path").is_object());
    assert!(parameters(&registry, "tool_platform")["properties"].get("mode").is_none());
    assert_eq!(diagnostics_with(&registry, &["redefined.py:7:9", "defined again", "line 4"]).len(), 1);
}

#[test]
fn prompt_providers_are_never_tools() {
    let registry = load(&["providers"]);
    assert_eq!(tool_names(&registry), ["tool_forecast"]);
}

#[test]
fn tool_level_prompt_provider_is_attached_to_its_tool() {
    let registry = load(&["providers"]);
    let (_, tool) = registry.tool("tool_forecast").unwrap();
    assert_eq!(tool.prompt_provider.as_deref(), Some("tool_forecast_prompt"));
    assert_eq!(tool.description, "Static description, replaced by the provider when Python runs.");
}

#[test]
fn library_level_prompt_provider_is_named_after_the_file_stem() {
    let registry = load(&["providers"]);
    assert_eq!(registry.libraries()[0].prompt_provider.as_deref(), Some("tool_weather_prompt"));
}

#[test]
fn prompt_provider_matching_nothing_is_warned() {
    let registry = load(&["providers"]);
    assert_eq!(diagnostics_with(&registry, &["weather.py:25:5", "tool_orphan_prompt", "matches no tool"]).len(), 1);
}

#[test]
fn library_metadata_is_read_from_string_literals() {
    let registry = load(&["metadata"]);
    let library = registry.libraries().iter().find(|l| l.stem == "library_meta").unwrap();
    assert_eq!(library.name.as_deref(), Some("Metadata Example"));
    assert_eq!(
        library.description.as_deref(),
        Some("Shows plain and annotated assignments with implicit concatenation.")
    );
    assert_eq!(library.icon.as_deref(), Some("🧪"));
}

#[test]
fn library_metadata_that_is_not_a_literal_is_ignored_with_a_warning() {
    let registry = load(&["metadata"]);
    let library = registry.libraries().iter().find(|l| l.stem == "computed_meta").unwrap();
    assert_eq!(library.name, None);
    assert_eq!(
        diagnostics_with(&registry, &["computed_meta.py:2:21", "TOOL_LIBRARY_NAME", "not a string literal"]).len(),
        1
    );
}

#[test]
fn hooks_are_noticed_statically() {
    let registry = load(&["metadata"]);
    let with_hooks = registry.libraries().iter().find(|l| l.stem == "library_meta").unwrap();
    assert!(with_hooks.hooks.init_tools_library && with_hooks.hooks.set_confirm_handler);
    let without = registry.libraries().iter().find(|l| l.stem == "computed_meta").unwrap();
    assert!(!without.hooks.init_tools_library && !without.hooks.set_confirm_handler);
}

#[test]
fn sibling_files_of_a_folder_library_show_its_metadata() {
    let registry = load(&["rich"]);
    let reports = registry.libraries().iter().find(|l| l.stem == "reports").unwrap();
    assert_eq!(reports.name.as_deref(), Some("Inventory"));
}

#[test]
fn syntax_error_is_a_located_diagnostic_and_siblings_are_unaffected() {
    let registry = load(&["syntax_error"]);
    assert_eq!(tool_names(&registry), ["tool_still_here"]);
    assert_eq!(
        diagnostics_with(&registry, &["broken.py:1:17: error: syntax error"]).len(),
        1,
        "{:?}",
        registry.diagnostics()
    );
}

#[test]
fn non_utf8_file_is_a_located_diagnostic_and_siblings_are_unaffected() {
    let registry = load(&["non_utf8"]);
    assert_eq!(tool_names(&registry), ["tool_fine"]);
    assert_eq!(diagnostics_with(&registry, &["latin1.py:2:11: error: file is not valid UTF-8"]).len(), 1);
}

#[test]
fn crlf_lone_cr_and_bom_are_normalised_before_parsing() {
    let registry = load(&["crlf"]);
    assert_eq!(tool_names(&registry), ["tool_bom", "tool_crlf", "tool_old_mac"]);
    assert!(registry.diagnostics().is_empty(), "{:?}", registry.diagnostics());
    assert_eq!(property(&registry, "tool_crlf", "b")["description"], "Second.");
    assert_eq!(property(&registry, "tool_old_mac", "a")["description"], "The value.");
    assert_eq!(registry.tool("tool_old_mac").unwrap().1.description, "Lone CR line endings.");
}

#[test]
fn code_nested_too_deeply_is_a_diagnostic_and_siblings_are_unaffected() {
    let registry = load(&["deep_nesting"]);
    assert_eq!(tool_names(&registry), ["tool_shallow"]);
    for file in ["brackets.py:1:", "chain.py:1:", "unary.py:1:"] {
        assert_eq!(diagnostics_with(&registry, &[file, "error", "nested too deeply"]).len(), 1, "{file}");
    }
}

#[test]
fn duplicate_parameter_names_are_errors_and_the_tool_is_not_exported() {
    let registry = load(&["duplicate_parameters"]);
    assert_eq!(tool_names(&registry), ["tool_fine"]);
    for (place, name, function) in [
        ("duplicates.py:4:24:", "x", "tool_twice"),
        ("duplicates.py:8:25:", "file", "tool_nfkc"),
        ("duplicates.py:12:30:", "a", "tool_star"),
        ("duplicates.py:20:95:", "p5", "tool_long"),
        ("duplicates.py:24:28:", "p1", "tool_short"),
    ] {
        let message = format!("`{function}` has the parameter `{name}` twice, a SyntaxError in Python");
        assert_eq!(
            diagnostics_with(&registry, &[place, "error", &message, "the tool is not exported"]).len(),
            1,
            "{place}: {:#?}",
            registry.diagnostics()
        );
    }
    assert_eq!(
        diagnostics_with(&registry, &["duplicates.py:16:19:", "error", "`helper` has the parameter `value` twice"])
            .len(),
        1
    );
    let check = lcp(&["check", "fixtures/duplicate_parameters"]);
    assert_eq!(check.status.code(), Some(1));
}
