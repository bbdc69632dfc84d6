//! SPEC §3: the type table, defaults, required and additionalProperties.
//! Each test is one row: `check(tool, parameter, expected schema)`.

use std::sync::LazyLock;

use lcp::discovery::registry::Registry;
use serde_json::{Value, json};

use crate::support::*;

static TYPES: LazyLock<Registry> = LazyLock::new(|| load(&["types", "defaults"]));

#[track_caller]
fn check(tool: &str, parameter: &str, expected: Value) {
    assert_eq!(property(&TYPES, tool, parameter), &expected, "{tool}({parameter})");
}

#[test]
fn scalars_map_to_json_types() {
    check("tool_scalars", "s", json!({"type": "string"}));
    check("tool_scalars", "i", json!({"type": "integer"}));
    check("tool_scalars", "f", json!({"type": "number"}));
    check("tool_scalars", "b", json!({"type": "boolean"}));
    check("tool_scalars", "n", json!({"type": "null"}));
}

#[test]
fn lists_sequences_iterables_and_open_tuples_are_arrays_with_items() {
    check("tool_arrays", "a", json!({"type": "array", "items": {"type": "integer"}}));
    check("tool_arrays", "b", json!({"type": "array", "items": {"type": "string"}}));
    check("tool_arrays", "c", json!({"type": "array", "items": {"type": "number"}}));
    check("tool_arrays", "d", json!({"type": "array", "items": {"type": "boolean"}}));
    check("tool_arrays", "e", json!({"type": "array", "items": {"type": "integer"}}));
}

#[test]
fn bare_containers_have_no_items() {
    check("tool_arrays", "bare", json!({"type": "array"}));
    check("tool_arrays", "bare_t", json!({"type": "array"}));
    check("tool_sets", "bare", json!({"type": "array", "uniqueItems": true}));
    check("tool_dicts", "bare", json!({"type": "object"}));
    check("tool_dicts", "bare_d", json!({"type": "object"}));
}

#[test]
fn sets_and_frozensets_are_arrays_of_unique_items() {
    check("tool_sets", "a", json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}));
    check("tool_sets", "b", json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true}));
}

#[test]
fn fixed_tuples_use_prefix_items_with_exact_length() {
    check(
        "tool_tuples",
        "pair",
        json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2, "items": false}),
    );
    check("tool_tuples", "empty", json!({"type": "array", "maxItems": 0}));
}

#[test]
fn dicts_and_mappings_are_objects_with_additional_properties() {
    check("tool_dicts", "a", json!({"type": "object", "additionalProperties": {"type": "integer"}}));
    check(
        "tool_dicts",
        "b",
        json!({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}),
    );
    check("tool_dicts", "c", json!({"type": "object", "additionalProperties": {"type": "number"}}));
}

#[test]
fn optional_and_none_unions_are_any_of_with_null() {
    let nullable_int = json!({"anyOf": [{"type": "integer"}, {"type": "null"}]});
    check("tool_unions", "a", nullable_int.clone());
    check("tool_unions", "b", nullable_int.clone());
    check("tool_unions", "c", nullable_int);
}

#[test]
fn unions_are_any_of_flattened() {
    check("tool_unions", "d", json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}));
    let three = json!({"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]});
    check("tool_unions", "e", three.clone());
    check("tool_unions", "f", three);
}

#[test]
fn literals_are_enums_typed_when_uniform() {
    check("tool_literals", "same", json!({"type": "string", "enum": ["a", "b"]}));
    check("tool_literals", "mixed", json!({"enum": [1, "one", true]}));
    check("tool_literals", "nested", json!({"type": "string", "enum": ["x", "y"]}));
    check("tool_literals", "none", json!({"type": "null", "enum": [null]}));
}

#[test]
fn same_file_enums_are_enums_of_member_values() {
    check("tool_enums", "color", json!({"type": "string", "enum": ["red", "green"]}));
    check("tool_enums", "level", json!({"type": "integer", "enum": [1, 2]}));
    check("tool_enums", "size", json!({"type": "string", "enum": ["small", "large"]}));
    check("tool_enums", "mixed", json!({"enum": [1, "two"]}));
    check("tool_enums", "counter", json!({"type": "integer", "enum": [1, 2]}));
}

#[test]
fn typed_dicts_are_objects_with_required_from_total_and_markers() {
    let movie = json!({"type": "object", "properties": {"title": {"type": "string"}, "year": {"type": "integer"}}, "required": ["title"], "additionalProperties": false});
    check("tool_classes", "movie", movie.clone());
    check("tool_classes", "partial", movie);
}

#[test]
fn dataclasses_are_objects_whose_defaulted_fields_are_optional() {
    check(
        "tool_classes",
        "point",
        json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["x"], "additionalProperties": false}),
    );
}

#[test]
fn pydantic_models_are_objects_with_field_descriptions_bounds_and_inheritance() {
    let user_properties = json!({
        "name": {"type": "string", "minLength": 1, "description": "Full name."},
        "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
        "email": {"type": "string", "pattern": "^\\S+@\\S+$"}
    });
    check(
        "tool_classes",
        "user",
        json!({"type": "object", "properties": user_properties, "required": ["name", "email"]}),
    );
    check(
        "tool_classes",
        "strict",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
    );
    let admin = property(&TYPES, "tool_classes", "admin");
    assert_eq!(admin["required"], json!(["name", "email", "level"]));
    assert_eq!(admin["properties"]["level"], json!({"type": "integer"}));
}

#[test]
fn named_tuples_are_objects_of_their_fields() {
    check(
        "tool_classes",
        "pair",
        json!({"type": "object", "properties": {"left": {"type": "integer"}, "right": {"type": "integer", "default": 0}}, "required": ["left"], "additionalProperties": false}),
    );
}

#[test]
fn annotated_field_and_annotated_types_bounds_become_keywords() {
    check("tool_annotated", "a", json!({"type": "integer", "minimum": 1, "maximum": 10}));
    check(
        "tool_annotated",
        "b",
        json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25}),
    );
    check("tool_annotated", "c", json!({"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"}));
    check("tool_annotated", "d", json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}));
    check("tool_annotated", "f", json!({"type": "integer", "minimum": 0, "exclusiveMaximum": 5}));
    check("tool_annotated", "g", json!({"type": "string", "minLength": 1, "maxLength": 9}));
    check("tool_annotated", "i", json!({"type": "integer", "minimum": 1, "maximum": 3}));
    check("tool_annotated", "j", json!({"type": "integer", "multipleOf": 2}));
}

#[test]
fn annotated_strings_and_field_descriptions_describe_parameters() {
    check("tool_annotated", "e", json!({"type": "integer", "description": "Described by Annotated."}));
    check("tool_annotated", "h", json!({"type": "integer", "description": "Described by Field."}));
}

#[test]
fn datetime_family_and_uuid_are_formatted_strings() {
    check("tool_special", "a", json!({"type": "string", "format": "date-time"}));
    check("tool_special", "b", json!({"type": "string", "format": "date"}));
    check("tool_special", "c", json!({"type": "string", "format": "time"}));
    check("tool_special", "d", json!({"type": "string", "format": "duration"}));
    check("tool_special", "e", json!({"type": "string", "format": "uuid"}));
    check("tool_special", "j", json!({"type": "string", "format": "date-time"}));
}

#[test]
fn paths_are_strings() {
    check("tool_special", "f", json!({"type": "string"}));
    check("tool_special", "g", json!({"type": "string"}));
}

#[test]
fn any_and_object_accept_any_json_value() {
    check("tool_special", "h", json!({}));
    check("tool_special", "i", json!({}));
    assert!(diagnostics_with(&TYPES, &["special.py"]).is_empty());
}

#[test]
fn unknown_types_accept_any_json_value_with_a_warning_naming_the_type() {
    check("tool_unknown", "a", json!({}));
    check("tool_unknown", "b", json!({}));
    check("tool_unknown", "c", json!({"type": "array"}));
    assert_eq!(diagnostics_with(&TYPES, &["unknown.py:8:21", "warning", "somewhere.Mystery"]).len(), 1);
    assert_eq!(diagnostics_with(&TYPES, &["unknown.py", "warning", "`Plain`"]).len(), 1);
}

#[test]
fn names_resolve_through_module_imports() {
    check("tool_imports", "a", json!({"type": "array", "items": {"type": "integer"}}));
    check("tool_imports", "b", json!({"anyOf": [{"type": "string"}, {"type": "null"}]}));
    check("tool_imports", "c", json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}));
    check("tool_imports", "d", json!({"type": "string", "enum": ["x"]}));
    check("tool_imports", "e", json!({"type": "object"}));
}

#[test]
fn module_level_aliases_are_followed() {
    let vector = json!({"type": "array", "items": {"type": "number"}});
    check("tool_aliases", "v", vector.clone());
    check("tool_aliases", "m", json!({"type": "array", "items": vector.clone()}));
    check("tool_aliases", "n", json!({"type": "string"}));
    check("tool_aliases", "u", json!({"type": "integer"}));
    check("tool_aliases", "mv", json!({"anyOf": [vector, {"type": "null"}]}));
}

#[test]
fn string_annotations_and_future_annotations_are_parsed() {
    check("tool_strings", "a", json!({"type": "integer"}));
    check("tool_strings", "b", json!({"anyOf": [{"type": "string"}, {"type": "null"}]}));
    check("tool_strings", "c", json!({"type": "array", "items": {"type": "integer"}}));
    check("tool_strings", "d", json!({"type": "array", "items": {"type": "number"}}));
}

#[test]
fn recursive_types_use_defs_and_refs() {
    check("tool_recursive", "tree", json!({"$ref": "#/$defs/TreeNode"}));
    check("tool_recursive", "data", json!({"$ref": "#/$defs/Json"}));
    let defs = &parameters(&TYPES, "tool_recursive")["$defs"];
    assert_eq!(
        defs["TreeNode"]["properties"]["children"],
        json!({"type": "array", "items": {"$ref": "#/$defs/TreeNode"}})
    );
    assert_eq!(defs["Json"]["anyOf"][0], json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/Json"}}));
}

#[test]
fn a_none_default_makes_a_parameter_nullable() {
    check("tool_nullable_default", "a", json!({"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}));
    check("tool_nullable_default", "b", json!({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}));
    check(
        "tool_nullable_default",
        "c",
        json!({"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}], "default": null}),
    );
}

#[test]
fn unannotated_parameters_take_the_type_of_their_literal_default_else_string() {
    check("tool_unannotated", "times", json!({"type": "integer", "default": 2}));
    check("tool_unannotated", "ratio", json!({"type": "number", "default": 0.5}));
    check("tool_unannotated", "name", json!({"type": "string", "default": "n"}));
    check("tool_unannotated", "flag", json!({"type": "boolean", "default": false}));
    check("tool_unannotated", "items", json!({"type": "array", "default": [1]}));
    check("tool_unannotated", "mapping", json!({"type": "object", "default": {}}));
    check("tool_unannotated", "nothing", json!({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}));
    check("tool_unannotated", "bare", json!({"type": "string"}));
    check("tool_unannotated_required", "x", json!({"type": "string"}));
}

#[test]
fn literal_defaults_are_json_and_other_defaults_are_omitted() {
    check("tool_defaults", "a", json!({"type": "integer", "default": -3}));
    check("tool_defaults", "b", json!({"type": "number", "default": 2.5}));
    check("tool_defaults", "c", json!({"type": "string", "default": "text"}));
    check("tool_defaults", "d", json!({"type": "string", "default": "raw"}));
    check("tool_defaults", "e", json!({"type": "boolean", "default": true}));
    check("tool_defaults", "g", json!({"type": "array", "default": [1, 2]}));
    check("tool_defaults", "h", json!({"type": "array", "default": [1, "x"]}));
    check("tool_defaults", "i", json!({"type": "object", "default": {"k": [1, 2]}}));
    check("tool_defaults", "j", json!({"type": "array", "uniqueItems": true, "default": [3]}));
    check("tool_defaults", "k", json!({"type": "string", "enum": ["fast", "slow"], "default": "slow"}));
    check("tool_defaults", "l", json!({"type": "string"}));
    check("tool_defaults", "m", json!({"type": "number", "default": 1.0}));
    assert!(required(&TYPES, "tool_defaults").is_empty());
}

#[test]
fn required_lists_parameters_without_defaults_including_positional_and_keyword_only() {
    assert_eq!(required(&TYPES, "tool_required_and_optional"), ["x", "y", "w"]);
    let properties = parameters(&TYPES, "tool_required_and_optional")["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["x", "y", "z", "w", "v"]);
}

#[test]
fn varargs_are_left_out_and_kwargs_opens_the_object() {
    let schema = parameters(&TYPES, "tool_varargs");
    assert_eq!(schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["a"]);
    assert!(schema.get("additionalProperties").is_none());
    assert_eq!(parameters(&TYPES, "tool_scalars")["additionalProperties"], json!(false));
}

#[test]
fn host_injected_parameters_are_left_out() {
    let schema = parameters(&TYPES, "tool_injected");
    assert_eq!(schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["a"]);
}

#[test]
fn injected_names_are_configurable() {
    let sources = lcp::discovery::registry::Sources { folders: vec![fixture("defaults")], files: vec![] };
    let options = lcp::discovery::registry::Options { injected: vec!["a".to_string()] };
    let registry = Registry::load(&sources, &options);
    let properties = parameters(&registry, "tool_injected")["properties"].as_object().unwrap().clone();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["discussion_instance", "lollms_client_instance", "tool_context", "user_interaction_handler"]
    );
}

#[test]
fn star_imports_from_typing_and_typing_extensions_bind_typings_names() {
    let registry = load(&["star_import"]);
    assert!(registry.diagnostics().is_empty(), "{:#?}", registry.diagnostics());
    assert_eq!(property(&registry, "tool_star_typing", "a"), &json!({"type": "array", "items": {"type": "integer"}}));
    assert_eq!(property(&registry, "tool_star_typing", "b"), &json!({"anyOf": [{"type": "string"}, {"type": "null"}]}));
    assert_eq!(property(&registry, "tool_star_typing", "c"), &json!({"type": "object"}));
    assert_eq!(property(&registry, "tool_star_typing", "d"), &json!({"type": "string", "enum": ["x", "y"]}));
    assert_eq!(
        property(&registry, "tool_star_extensions", "a"),
        &json!({"type": "array", "items": {"type": "number"}})
    );
    assert_eq!(
        property(&registry, "tool_star_extensions", "b"),
        &json!({"type": "integer", "description": "A count."})
    );
}

#[test]
fn literal_with_no_values_is_any_json_value_with_a_warning() {
    let registry = load(&["empty_literal"]);
    assert_eq!(property(&registry, "tool_empty_literal", "a"), &json!({}));
    assert_eq!(property(&registry, "tool_empty_literal", "b"), &json!({}));
    assert_eq!(property(&registry, "tool_empty_literal", "c"), &json!({"enum": [1, "x"]}));
    for place in ["empty_literal.py:4:27:", "empty_literal.py:4:43:"] {
        let found =
            diagnostics_with(&registry, &[place, "warning", "`Literal` with no values: accepted as any JSON value"]);
        assert_eq!(found.len(), 1, "{place}: {:#?}", registry.diagnostics());
    }
    assert_eq!(registry.diagnostics().len(), 2, "{:#?}", registry.diagnostics());
}

// ------------------------------------------------------ sibling modules ---

static SIBLINGS: LazyLock<Registry> = LazyLock::new(|| load(&["siblings"]));

#[track_caller]
fn check_sibling(tool: &str, parameter: &str, expected: Value) {
    assert_eq!(property(&SIBLINGS, tool, parameter), &expected, "{tool}({parameter})");
}

#[test]
fn sibling_module_types_resolve_through_every_form_of_relative_import() {
    let size = json!({"type": "string", "enum": ["s", "m"]});
    // `from .models import Item as Thing`
    check_sibling(
        "tool_reach",
        "thing",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
    );
    // `from . import models` then `models.Size`
    check_sibling("tool_reach", "size", size.clone());
    // `.reexport` → `.middle` → `.models`, renamed on the way
    check_sibling("tool_reach", "chained", size);
    // `from . import reexport as again` then a name its `import *` brings, whose base
    // class lives in a third module
    check_sibling(
        "tool_reach",
        "starred",
        json!({"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id", "name"]}),
    );
    // a sibling's alias
    check_sibling("tool_reach", "tags", json!({"type": "array", "items": {"type": "string"}}));
    // a sibling's enum member as a default
    check_sibling("tool_defaults", "size", json!({"type": "string", "enum": ["s", "m"], "default": "m"}));
}

#[test]
fn a_recursive_sibling_type_is_defined_once_under_its_module_name() {
    check_sibling("tool_reach", "node", json!({"$ref": "#/$defs/models.Node"}));
    let defs = &parameters(&SIBLINGS, "tool_reach")["$defs"];
    assert_eq!(defs["models.Node"]["properties"]["next"]["anyOf"][0], json!({"$ref": "#/$defs/models.Node"}));
}

#[test]
fn relative_names_that_lead_nowhere_are_any_value_with_a_warning_naming_them_as_written() {
    for (parameter, written) in [("far", "Far"), ("loop", "Loop"), ("gone", "Gone"), ("nope", "models.Nope")] {
        check_sibling("tool_unreachable", parameter, json!({}));
        let found = diagnostics_with(&SIBLINGS, &["lib.py", "warning", &format!("unknown type `{written}`")]);
        assert_eq!(found.len(), 1, "{written}: {:?}", SIBLINGS.diagnostics());
    }
    assert!(diagnostics_with(&SIBLINGS, &["`.", "unknown type"]).is_empty(), "{:?}", SIBLINGS.diagnostics());
    check_sibling("tool_loose", "item", json!({}));
    assert_eq!(diagnostics_with(&SIBLINGS, &["loose.py:6", "unknown type `Item`"]).len(), 1);
}

#[test]
fn a_problem_inside_a_sibling_definition_is_reported_where_the_tool_uses_it() {
    let odd = property(&SIBLINGS, "tool_unreachable", "odd");
    assert_eq!(odd["properties"]["weird"], json!({}));
    // `odd: models.Odd` is at line 20, column 80 of lib.py; models.py has no such line.
    assert_eq!(diagnostics_with(&SIBLINGS, &["lib.py:20:80", "unknown type `mystery.Weird`"]).len(), 1);
    assert!(diagnostics_with(&SIBLINGS, &["models.py"]).is_empty());
}

#[test]
fn explicit_files_of_one_library_folder_resolve_each_other_wherever_they_are_listed() {
    use lcp::discovery::registry::{Options, Sources};
    let files = ["siblings/lib/lib.py", "siblings/loose.py", "siblings/lib/models.py", "siblings/lib/base.py"];
    let sources = Sources { folders: Vec::new(), files: files.iter().map(|f| fixture(f)).collect() };
    let registry = Registry::load(&sources, &Options::default());
    assert_eq!(
        property(&registry, "tool_defaults", "size"),
        &json!({"type": "string", "enum": ["s", "m"], "default": "m"})
    );
    assert_eq!(property(&registry, "tool_loose", "item"), &json!({}));
}

// ------------------------------------------ vocabulary (SPEC §3, new rows) ---

static VOCABULARY: LazyLock<Registry> = LazyLock::new(|| load(&["conformance"]));

#[track_caller]
fn check_word(tool: &str, parameter: &str, expected: Value) {
    assert_eq!(property(&VOCABULARY, tool, parameter), &expected, "{tool}({parameter})");
}

const DECIMAL_TEXT: &str = r"^\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*$";

#[test]
fn decimal_is_a_number_or_decimal_text_and_a_bounded_decimal_a_number() {
    check_word(
        "tool_decimals",
        "price",
        json!({"anyOf": [{"type": "number"}, {"type": "string", "pattern": DECIMAL_TEXT}]}),
    );
    let amount = property(&VOCABULARY, "tool_decimals", "amount");
    assert_eq!(amount["anyOf"][0], json!({"type": "number", "exclusiveMaximum": 1000, "exclusiveMinimum": -1000}));
    assert_eq!(
        amount["anyOf"][1]["pattern"],
        r"^\s*[+-]?(?:0*[0-9]{1,3}(?:\.[0-9]{0,2}0*)?|0*[0-9]{0,3}\.[0-9]{1,2}0*|(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+)\s*$"
    );
    check_word("tool_decimals", "bounded", json!({"type": "number", "minimum": 0, "maximum": 100}));
    // Bounds from `Field` make a number of it too.
    check_word("tool_annotated_decimal", "price", json!({"type": "number", "minimum": 0, "maximum": 1000}));
    check_word(
        "tool_annotated_decimal",
        "maybe",
        json!({"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}], "default": null}),
    );
}

#[test]
fn ip_addresses_have_formats_and_networks_a_pattern() {
    let ipv4 = json!({"type": "string", "format": "ipv4"});
    let ipv6 = json!({"type": "string", "format": "ipv6"});
    check_word("tool_addresses", "v4", ipv4.clone());
    check_word("tool_addresses", "v6", ipv6.clone());
    check_word("tool_addresses", "either", json!({"anyOf": [ipv4, ipv6]}));
    for network in ["net4", "net6", "iface4", "iface6", "any_net", "any_iface"] {
        let schema = property(&VOCABULARY, "tool_addresses", network);
        assert_eq!(schema["type"], "string", "{network}");
        assert!(schema.get("format").is_none(), "{network}");
        assert!(schema["pattern"].as_str().unwrap().starts_with("^(?:"), "{network}");
    }
}

#[test]
fn pydantic_network_types_secrets_and_json_text() {
    let email = json!({"type": "string", "format": "email"});
    check_word("tool_web", "email", email.clone());
    check_word("tool_web", "contact", email);
    let http = "^[hH][tT][tT][pP][sS]?://";
    check_word(
        "tool_web",
        "site",
        json!({"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083, "pattern": http}),
    );
    check_word("tool_web", "link", json!({"type": "string", "format": "uri", "minLength": 1}));
    check_word("tool_web", "api", json!({"type": "string", "format": "uri", "minLength": 1, "pattern": http}));
    check_word(
        "tool_web",
        "document",
        json!({"type": "string", "format": "uri", "minLength": 1, "pattern": "^[fF][iI][lL][eE]:"}),
    );
    check_word("tool_web", "token", json!({"type": "string"}));
    check_word("tool_web", "payload", json!({"type": "string", "contentMediaType": "application/json"}));
    check_word(
        "tool_web",
        "counts",
        json!({"type": "string", "contentMediaType": "application/json", "contentSchema": {"type": "array", "items": {"type": "integer"}}}),
    );
}

#[test]
fn constrained_types_and_string_constraints_carry_their_bounds() {
    check_word("tool_bounds", "port", json!({"type": "integer", "minimum": 1, "maximum": 65535}));
    check_word("tool_bounds", "ratio", json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}));
    check_word("tool_bounds", "code", json!({"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"}));
    check_word(
        "tool_bounds",
        "tags",
        json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}),
    );
    check_word(
        "tool_bounds",
        "ids",
        json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "minItems": 1}),
    );
    check_word("tool_bounds", "tag", json!({"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z-]+$"}));
}

#[test]
fn signed_integer_and_float_families_are_bounded_at_zero() {
    for (parameter, kind, keyword) in [
        ("a", "integer", "exclusiveMinimum"),
        ("b", "integer", "exclusiveMaximum"),
        ("c", "integer", "minimum"),
        ("d", "integer", "maximum"),
        ("e", "number", "exclusiveMinimum"),
        ("f", "number", "exclusiveMaximum"),
        ("g", "number", "minimum"),
        ("h", "number", "maximum"),
    ] {
        check_word("tool_signs", parameter, json!({"type": kind, keyword: 0}));
    }
}

#[test]
fn unpacked_typed_dict_keywords_are_the_parameters_and_nothing_else() {
    let schema = parameters(&VOCABULARY, "tool_keywords");
    assert_eq!(
        schema["properties"],
        json!({"path": {"type": "string", "description": "Where."}, "verbose": {"type": "boolean", "description": "Say more."}, "depth": {"type": "integer"}})
    );
    assert_eq!(schema["required"], json!(["path", "verbose"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    assert!(diagnostics_with(&VOCABULARY, &["vocabulary_tools.py", "warning"]).is_empty());
}
