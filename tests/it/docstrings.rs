//! SPEC §3: descriptions and parameter descriptions from docstrings of every style.

use std::sync::LazyLock;

use lcp::discovery::registry::Registry;
use serde_json::Value;

use crate::support::*;

static STYLES: LazyLock<Registry> = LazyLock::new(|| load(&["docstrings"]));

fn description(tool: &str) -> &'static str {
    &STYLES.tool(tool).unwrap().1.description
}

#[track_caller]
fn check_params(tool: &str, expected: &[(&str, Option<&str>)]) {
    for (name, text) in expected {
        let actual = property(&STYLES, tool, name).get("description").and_then(Value::as_str);
        assert_eq!(actual, *text, "{tool}({name})");
    }
}

#[test]
fn description_is_the_first_paragraph() {
    assert_eq!(description("tool_google"), "Google style docstring.");
}

#[test]
fn description_lines_are_joined_and_end_at_a_section_header() {
    assert_eq!(description("tool_summary_lines"), "A summary spread over two lines.");
}

#[test]
fn no_docstring_means_no_description_provided() {
    assert_eq!(description("tool_no_docstring"), "No description provided.");
}

#[test]
fn full_docstring_is_kept_in_the_manifest() {
    let docstring = STYLES.tool("tool_google").unwrap().1.docstring.as_deref().unwrap();
    assert!(docstring.starts_with("Google style docstring.\n\nMore detail"), "{docstring}");
    assert!(docstring.contains("Returns:"));
}

#[test]
fn google_style_with_types_stripped_and_continuations_joined() {
    check_params(
        "tool_google",
        &[
            ("path", Some("Where to look. Continues on the next line.")),
            ("count", Some("How many.")),
            ("verbose", Some("Print more.")),
        ],
    );
    assert_eq!(STYLES.tool("tool_google").unwrap().1.returns.description.as_deref(), Some("dict: The result."));
}

#[test]
fn numpy_style() {
    check_params("tool_numpy", &[("path", Some("Where to look.")), ("count", Some("How many, continued."))]);
}

#[test]
fn rest_style() {
    check_params("tool_rest", &[("path", Some("Where to look.")), ("count", Some("How many."))]);
}

#[test]
fn epydoc_style() {
    check_params("tool_epydoc", &[("path", Some("Where to look.")), ("count", Some("How many."))]);
}

#[test]
fn undocumented_parameters_get_no_invented_description() {
    check_params("tool_undocumented", &[("a", Some("Documented.")), ("b", None)]);
}

#[test]
fn documented_name_that_is_not_a_parameter_is_warned() {
    assert_eq!(
        diagnostics_with(&STYLES, &["styles.py:71:1", "warning", "`ghost`", "not a parameter"]).len(),
        1,
        "{:?}",
        STYLES.diagnostics()
    );
}

#[test]
fn annotated_description_is_used_when_the_docstring_has_none() {
    check_params("tool_annotated_description", &[("a", Some("From Annotated.")), ("b", Some("From the docstring."))]);
}

#[test]
fn return_annotation_and_returns_text_are_in_the_manifest() {
    let registry = load(&["rich"]);
    let returns = &registry.tool("tool_add_item").unwrap().1.returns;
    assert_eq!(returns.annotation.as_deref(), Some("dict"));
    assert_eq!(returns.description.as_deref(), Some("The item with its stock level."));
}
