//! SPEC §3, "What pydantic and FastMCP users write": each rule through the exported
//! schema, `lcp call`, and `lcp serve` with the official Python client (both protocol
//! modes) and the MCP Inspector CLI. Fixture:
//! `fixtures/conformance/pydantic_idioms_tools.py`, which the conformance test against
//! pydantic (`python_reference.rs`) also checks, defaults and descriptions included.

#[cfg(feature = "external")]
use std::path::Path;

#[cfg(feature = "external")]
use serde_json::{Value, json};

#[cfg(feature = "external")]
use crate::mcp::{MODES, lcp_bin};
#[cfg(feature = "external")]
use crate::mcp::{assert_error, assert_ok, call};
#[cfg(feature = "external")]
use crate::mcp::{inspector_cli, session};
#[cfg(feature = "external")]
use crate::support::*;

#[cfg(feature = "external")]
const FILE: &str = "fixtures/conformance/pydantic_idioms_tools.py";

#[cfg(feature = "external")]
/// The test environment, where pydantic is installed.
fn venv() -> String {
    test_python().parent().and_then(Path::parent).expect("the venv holds bin/python").display().to_string()
}

#[cfg(feature = "external")]
/// The tool's MCP `inputSchema` as `lcp export` writes it.
fn input_schema(tool: &str) -> Value {
    let exported = stdout_json(&lcp(&["export", "--format", "mcp", "--file", FILE]));
    let tools = exported["tools"].as_array().expect("a tools list");
    let found = tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("no {tool} in {exported}"));
    found["inputSchema"].clone()
}

#[cfg(feature = "external")]
/// `lcp call TOOL --args ARGS`: the result object.
fn called(tool: &str, args: Value) -> Value {
    let venv = venv();
    let args = args.to_string();
    stdout_json(&lcp(&["call", tool, "--file", FILE, "--venv", &venv, "--args", &args]))
}

#[cfg(feature = "external")]
/// Calls each of `calls` through `lcp serve` with the official Python client, in
/// every protocol mode; the results of each mode.
fn served(calls: &[Value]) -> Vec<Vec<Value>> {
    let venv = venv();
    let serve = ["--file", FILE, "--venv", &venv];
    MODES
        .iter()
        .map(|mode| {
            let report = session(mode, "none", &serve, Value::Array(calls.to_vec()));
            report["results"].as_array().expect("one result per step").clone()
        })
        .collect()
}

#[cfg(feature = "external")]
/// The MCP Inspector CLI against `lcp serve` over stdio.
fn inspected(method: &[&str]) -> Value {
    let venv = venv();
    inspector_cli(&[lcp_bin(), "serve", "--file", FILE, "--venv", &venv], method)
}

#[cfg(feature = "external")]
/// The tool's `inputSchema` as the official Python client (every protocol mode) and
/// the Inspector CLI list it is the one `lcp export --format mcp` writes.
fn assert_every_client_lists_the_exported_schema(tool: &str) {
    let exported = input_schema(tool);
    for results in served(&[json!("list")]) {
        assert_eq!(listed_schema(&results[0], tool), exported, "the Python client's listing of {tool}");
    }
    assert_eq!(
        listed_schema(&inspected(&["--method", "tools/list"]), tool),
        exported,
        "the Inspector's listing of {tool}"
    );
}

#[cfg(feature = "external")]
/// `tools/call` of `tool` from the Inspector CLI, with its `--tool-arg key=value`s.
fn inspector_call(tool: &str, args: &[&str]) -> Value {
    let mut method = vec!["--method", "tools/call", "--tool-name", tool];
    if !args.is_empty() {
        method.push("--tool-arg");
        method.extend_from_slice(args);
    }
    inspected(&method)
}

#[cfg(feature = "external")]
fn listed_schema(tools: &Value, tool: &str) -> Value {
    let tools = tools["tools"].as_array().unwrap_or_else(|| panic!("no tools in {tools}"));
    tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("no {tool}"))["inputSchema"].clone()
}

#[cfg(feature = "external")]
#[test]
fn field_as_a_default_gives_the_parameter_its_default_description_bounds_and_requiredness() {
    let schema = input_schema("tool_field_defaults");
    let properties = &schema["properties"];
    assert_eq!(
        properties["count"],
        json!({"type": "integer", "minimum": 1, "maximum": 10, "description": "How many, from the Field.", "default": 3})
    );
    assert_eq!(properties["label"], json!({"type": "string", "minLength": 1, "title": "Label", "default": "none"}));
    assert_eq!(properties["tags"], json!({"type": "array", "items": {"type": "string"}, "maxItems": 3}));
    assert_eq!(properties["also_needed"], json!({"type": "integer", "exclusiveMinimum": 0}));
    assert_eq!(schema["required"], json!(["needed", "also_needed"]), "Field() and Field(...) keep it required");

    let defaults = json!({"count": 3, "label": "none", "needed": "n", "also_needed": 1, "tags": [], "maybe": null});
    let result = called("tool_field_defaults", json!({"needed": "n", "also_needed": 1}));
    assert_eq!(result["output"], defaults, "Python gets the Field's default, not the Field: {result}");
    let refused = called("tool_field_defaults", json!({"needed": "n", "also_needed": 1, "count": 11}));
    assert!(refused["error"].as_str().unwrap().contains("`count`"), "the bound is checked: {refused}");
    let missing = called("tool_field_defaults", json!({"also_needed": 1}));
    assert!(missing["error"].as_str().unwrap().contains("`needed`"), "{missing}");

    for results in served(&[call("tool_field_defaults", json!({"needed": "n", "also_needed": 1}))]) {
        assert_ok(&results[0], defaults.clone());
    }
    let listed = inspected(&["--method", "tools/list"]);
    assert_eq!(listed_schema(&listed, "tool_field_defaults")["properties"]["count"]["default"], 3);
}

#[cfg(feature = "external")]
#[test]
fn an_annotated_field_default_is_optional_and_an_ellipsis_default_is_required() {
    let schema = input_schema("tool_annotated_defaults");
    assert_eq!(schema["required"], json!(["must", "ellipsis"]), "{schema}");
    assert_eq!(schema["properties"]["text"], json!({"type": "string", "default": ""}));
    assert_eq!(schema["properties"]["limit"], json!({"type": "integer", "maximum": 100, "default": 5}));
    let expected = json!({"text": "", "limit": 5, "must": "ab", "ellipsis": 2});
    let result = called("tool_annotated_defaults", json!({"must": "ab", "ellipsis": 2}));
    assert_eq!(result["output"], expected, "{result}");
    let without = called("tool_annotated_defaults", json!({"must": "ab"}));
    assert!(without["error"].as_str().unwrap().contains("`ellipsis`"), "{without}");
    for results in served(&[call("tool_annotated_defaults", json!({"must": "ab", "ellipsis": 2}))]) {
        assert_ok(&results[0], expected.clone());
    }
    assert_ok(&inspector_call("tool_annotated_defaults", &["must=ab", "ellipsis=2"]), expected);
    assert_every_client_lists_the_exported_schema("tool_annotated_defaults");
}

#[cfg(feature = "external")]
#[test]
fn a_field_alias_is_the_arguments_name_at_the_top_level_and_inside_models() {
    let schema = input_schema("tool_aliases");
    let properties: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(properties, ["account", "pageSize", "sortKey"], "{schema}");
    let account = &schema["$defs"]["Account"];
    assert_eq!(account["required"], json!(["userName"]), "{account}");
    assert!(account["properties"]["itemCount"].is_object(), "validation_alias is the name: {account}");

    let arguments = json!({"account": {"userName": "ann", "itemCount": 2}, "pageSize": 5, "sortKey": "date"});
    let expected = json!({"user": "ann", "items": 2, "page_size": 5, "sort_key": "date"});
    assert_eq!(called("tool_aliases", arguments.clone())["output"], expected);
    let python_name = called("tool_aliases", json!({"account": {"userName": "ann"}, "page_size": 3}));
    assert!(python_name["error"].as_str().unwrap().contains("did you mean `pageSize`?"), "{python_name}");

    let results =
        served(&[call("tool_aliases", arguments), call("tool_aliases", json!({"account": {"userName": "b"}}))]);
    for results in results {
        assert_ok(&results[0], expected.clone());
        assert_ok(&results[1], json!({"user": "b", "items": 0, "page_size": 10, "sort_key": "name"}));
    }
    let inspected = inspected(&[
        "--method",
        "tools/call",
        "--tool-name",
        "tool_aliases",
        "--tool-arg",
        r#"account={"userName":"cy"}"#,
        "pageSize=7",
    ]);
    assert_ok(&inspected, json!({"user": "cy", "items": 0, "page_size": 7, "sort_key": "name"}));
}

#[cfg(feature = "external")]
#[test]
fn an_explicit_description_wins_over_the_docstrings_entry() {
    let descriptions = |schema: &Value| {
        ["a", "b", "c"].map(|name| schema["properties"][name]["description"].as_str().unwrap_or_default().to_string())
    };
    let expected = ["From Annotated.", "From Field.", "From the docstring (the only text)."];
    assert_eq!(descriptions(&input_schema("tool_explicit_descriptions")), expected);
    let field_defaults = input_schema("tool_field_defaults");
    assert_eq!(field_defaults["properties"]["count"]["description"], "How many, from the Field.");
    assert_eq!(field_defaults["properties"]["needed"]["description"], "Required: a Field without a default.");
    for results in served(&[json!("list")]) {
        assert_eq!(descriptions(&listed_schema(&results[0], "tool_explicit_descriptions")), expected);
    }
    assert_eq!(
        descriptions(&listed_schema(&inspected(&["--method", "tools/list"]), "tool_explicit_descriptions")),
        expected
    );
    let result = called("tool_explicit_descriptions", json!({"a": 1, "b": 2, "c": 3}));
    assert_eq!(result["output"], json!({"sum": 6}), "{result}");
}

#[cfg(feature = "external")]
#[test]
fn class_docstrings_attributes_sections_and_attribute_docstrings_describe_objects_and_fields() {
    let schema = input_schema("tool_classes");
    let reading = &schema["$defs"]["Reading"];
    assert_eq!(reading["description"], "A sensor reading.", "the prose, not the Attributes section: {reading}");
    let described = |field: &str| reading["properties"][field]["description"].clone();
    assert_eq!(described("sensor"), "Which sensor (from Attributes).");
    assert_eq!(described("value"), "The measured value, from its attribute docstring.");
    assert_eq!(described("unit"), "From the Field.");
    assert_eq!(schema["$defs"]["Outer"]["description"], "Holds a nested class.");
    let arguments = json!({"reading": {"sensor": "s1", "value": 2.5}, "outer": {"inner": {}}});
    let expected = json!({"sensor": "s1", "unit": "C", "depth": 1});
    assert_eq!(called("tool_classes", arguments.clone())["output"], expected);
    for results in served(&[call("tool_classes", arguments)]) {
        assert_ok(&results[0], expected.clone());
    }
    let reading = r#"reading={"sensor":"s1","value":2.5}"#;
    assert_ok(&inspector_call("tool_classes", &[reading, r#"outer={"inner":{}}"#]), expected);
    assert_every_client_lists_the_exported_schema("tool_classes");
}

#[cfg(feature = "external")]
#[test]
fn a_class_nested_in_another_class_body_is_resolved_by_its_name_and_its_dotted_path() {
    let schema = input_schema("tool_classes");
    let outer = &schema["$defs"]["Outer"]["properties"];
    assert_eq!(outer["inner"], json!({"$ref": "#/$defs/Inner"}), "{schema}");
    assert_eq!(outer["again"]["anyOf"][0], json!({"$ref": "#/$defs/Inner"}), "`Outer.Inner`: {schema}");
    assert_eq!(schema["$defs"]["Inner"]["properties"]["depth"], json!({"type": "integer", "default": 1}));
    let check = lcp(&["check", "--file", FILE]);
    assert!(
        !String::from_utf8_lossy(&check.stderr).contains("unknown type"),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let refused =
        called("tool_classes", json!({"reading": {"sensor": "s", "value": 1}, "outer": {"inner": {"depth": "deep"}}}));
    assert!(refused["error"].as_str().unwrap().contains("outer.inner.depth"), "{refused}");
    let nested =
        json!({"reading": {"sensor": "s", "value": 1}, "outer": {"inner": {"depth": 3}, "again": {"depth": 4}}});
    for results in served(&[call("tool_classes", nested)]) {
        assert_ok(&results[0], json!({"sensor": "s", "unit": "C", "depth": 3}));
    }
}

#[cfg(feature = "external")]
#[test]
fn pydantics_own_named_types_have_the_schema_pydantic_gives_them() {
    let schema = input_schema("tool_named_types");
    let properties = &schema["properties"];
    assert_eq!(properties["request_id"]["format"], "uuid");
    assert!(properties["request_id"]["pattern"].as_str().unwrap().contains("-4[0-9a-fA-F]{3}-"), "{schema}");
    assert_eq!(properties["when"]["format"], "date-time");
    assert_eq!(properties["exact"], json!({"type": "integer", "default": 0}));

    let good = json!({"request_id": "12345678-1234-4678-9234-567812345678", "when": "2024-01-01T00:00:00Z", "local": "2024-01-01T00:00:00"});
    let expected = json!({"id": "12345678-1234-4678-9234-567812345678", "aware": true, "naive": true, "exact": 0});
    assert_eq!(called("tool_named_types", good.clone())["output"], expected);
    // A version-1 UUID, a datetime without a zone for AwareDatetime, one with a zone for NaiveDatetime.
    for (key, bad) in [
        ("request_id", "12345678-1234-1678-9234-567812345678"),
        ("when", "2024-01-01T00:00:00"),
        ("local", "2024-01-01T00:00:00+02:00"),
    ] {
        let mut arguments = good.clone();
        arguments[key] = json!(bad);
        let refused = called("tool_named_types", arguments.clone());
        assert!(refused["error"].as_str().unwrap().contains(&format!("`{key}`")), "{key}: {refused}");
        for results in served(&[call("tool_named_types", arguments)]) {
            assert_error(&results[0], &[key]);
        }
    }
    for results in served(&[call("tool_named_types", good)]) {
        assert_ok(&results[0], expected.clone());
    }
    let args =
        ["request_id=12345678-1234-4678-9234-567812345678", "when=2024-01-01T00:00:00Z", "local=2024-01-01T00:00:00"];
    assert_ok(&inspector_call("tool_named_types", &args), expected);
    assert_every_client_lists_the_exported_schema("tool_named_types");
}

#[cfg(feature = "external")]
#[test]
fn defaults_that_call_known_types_are_exported_as_pydantic_serialises_them() {
    let schema = input_schema("tool_call_defaults");
    let default = |name: &str| schema["properties"][name]["default"].clone();
    assert_eq!(default("ids"), json!([1, 2]));
    assert_eq!(default("price"), json!("12.34"));
    assert_eq!(default("window"), json!({"width": 80, "height": 24, "Title": "term", "flags": []}));
    assert_eq!(default("wide"), json!({"width": 120, "height": 24, "Title": "term", "flags": []}));
    assert_eq!(default("start"), json!("2024-01-01T00:00:00"));
    assert_eq!(default("day"), json!("2024-02-29"));
    assert_eq!(default("at"), json!("12:30:00"));
    let expected = json!({"ids": [1, 2], "price": "12.34", "width": 80, "wide": 120, "start": "2024-01-01T00:00:00"});
    assert_eq!(called("tool_call_defaults", json!({}))["output"], expected);
    // The exported defaults, sent back, are what Python would have used.
    let sent: serde_json::Map<String, Value> =
        ["ids", "price", "window", "wide", "start", "day", "at"].iter().map(|k| (k.to_string(), default(k))).collect();
    for results in served(&[call("tool_call_defaults", json!({})), call("tool_call_defaults", Value::Object(sent))]) {
        assert_ok(&results[0], expected.clone());
        assert_ok(&results[1], expected.clone());
    }
    assert_ok(&inspector_call("tool_call_defaults", &[]), expected);
    assert_every_client_lists_the_exported_schema("tool_call_defaults");
}

#[cfg(feature = "external")]
#[test]
fn every_type_pydantic_exports_with_a_schema_of_its_own_is_known() {
    let dir = temp_dir("pydantic-types");
    let names = [
        "UUID1",
        "UUID3",
        "UUID5",
        "UUID7",
        "AwareDatetime",
        "NaiveDatetime",
        "PastDate",
        "FutureDate",
        "PastDatetime",
        "FutureDatetime",
        "StrictStr",
        "StrictBytes",
        "StrictInt",
        "StrictFloat",
        "StrictBool",
        "Base64Str",
        "Base64Bytes",
        "Base64UrlStr",
        "FilePath",
        "DirectoryPath",
        "NewPath",
        "PostgresDsn",
        "RedisDsn",
        "WebsocketUrl",
        "FtpUrl",
        "ImportString",
        "PaymentCardNumber",
        "ByteSize",
        "SecretStr",
    ];
    let parameters: Vec<String> = names.iter().map(|name| format!("p_{name}: {name}")).collect();
    let source = format!(
        "from pydantic import {}\n\ndef tool_types({}) -> None:\n    \"\"\"Types.\"\"\"\n",
        names.join(", "),
        parameters.join(", ")
    );
    write(&dir.join("types.py"), source);
    let file = dir.join("types.py").display().to_string();
    let check = lcp(&["check", "--file", &file]);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success() && said.contains("0 errors, 0 warnings"), "{said}");
    let exported = stdout_json(&lcp(&["export", "--format", "mcp", "--file", &file]));
    let properties = &exported["tools"][0]["inputSchema"]["properties"];
    for name in names {
        let schema = &properties[format!("p_{name}")];
        assert!(schema.get("type").is_some() || schema.get("anyOf").is_some(), "{name}: {schema}");
    }
    assert_eq!(properties["p_PostgresDsn"]["format"], "uri");
    assert_eq!(properties["p_PaymentCardNumber"], json!({"type": "string", "minLength": 12, "maxLength": 19}));
}

#[cfg(feature = "external")]
const EXTRA: &str = "fixtures/schema_extra/extra_tools.py";

#[cfg(feature = "external")]
/// `Field(json_schema_extra=...)`, `WithJsonSchema(...)` and a class config's
/// `json_schema_extra` give the schema pydantic gives (its own keywords compared),
/// and lcp checks a call against every keyword they add (`not` here).
#[test]
fn hand_written_json_schema_is_what_pydantic_makes_and_is_checked() {
    let exported = stdout_json(&lcp(&["export", "--static", "--format", "mcp", "--file", EXTRA]));
    let schema = |tool: &str| {
        let tools = exported["tools"].as_array().expect("a tools list");
        tools.iter().find(|t| t["name"] == tool).map(|t| t["inputSchema"].clone()).expect("the tool is exported")
    };
    let (measure, window) = (schema("tool_measure"), schema("tool_open_window"));
    let script = "import inspect, json, sys\n\
                  sys.path.insert(0, 'fixtures/schema_extra')\n\
                  import extra_tools as m\n\
                  from pydantic import TypeAdapter\n\
                  hint = lambda name: inspect.signature(m.tool_measure).parameters[name].annotation\n\
                  print(json.dumps({'length': TypeAdapter(hint('length')).json_schema(),\n\
                      'colour': TypeAdapter(hint('colour')).json_schema(),\n\
                      'Point': TypeAdapter(m.Point).json_schema(), 'Window': TypeAdapter(m.Window).json_schema()}))\n";
    let output = std::process::Command::new(test_python()).args(["-c", script]).current_dir(root()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pydantic: Value = serde_json::from_slice(&output.stdout).unwrap();
    // pydantic's keywords but the titles lcp leaves out, each as lcp has it.
    let same = |ours: &Value, theirs: &Value| {
        for (key, value) in theirs.as_object().unwrap() {
            if key != "title" && key != "properties" {
                assert_eq!(&ours[key], value, "`{key}`: lcp {ours} / pydantic {theirs}");
            }
        }
    };
    same(&measure["properties"]["length"], &pydantic["length"]);
    same(&measure["properties"]["colour"], &pydantic["colour"]);
    same(&measure["$defs"]["Point"], &pydantic["Point"]);
    same(&window, &pydantic["Window"]);
    assert_eq!(measure["properties"]["length"]["description"], "The length.");

    let venv = venv();
    let call =
        |args: &str| stdout_json(&lcp(&["call", "tool_open_window", "--file", EXTRA, "--venv", &venv, "--args", args]));
    assert_eq!(call(r#"{"width": 800, "height": 600}"#)["output"], json!({"width": 800, "height": 600}));
    let refused = call(r#"{"width": 800, "height": 600, "fullscreen": true}"#);
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("does not allow"), "{refused}");
}
