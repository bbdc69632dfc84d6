//! What a new user met with types (SPEC §3, §5): return values pydantic dumps, a
//! sibling module's class in a return annotation, numbers and booleans sent as text,
//! `AliasChoices`. On `fixtures/new_user_types/`, through `lcp call` (a fresh process:
//! `host.py`'s path) and the runtime API in this process, whose warm calls of plain
//! tools take the direct path; both must give the same result.

#[cfg(feature = "external")]
use std::path::Path;
use std::process::{Command, Output, Stdio};

use lcp::discovery::registry::{Options, Registry, Sources};
#[cfg(feature = "external")]
use lcp::runtime::{CallOptions, Runtime, RuntimeConfig, ToolResult};
use serde_json::{Value, json};

use crate::support::*;

fn folder() -> String {
    root().join("fixtures/new_user_types").to_string_lossy().into_owned()
}

/// `lcp call TOOL fixtures/new_user_types --args ARGS [extra…]`: its printed result.
fn lcp_call(tool: &str, args: &Value, extra: &[&str]) -> Value {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_lcp"))
        .args(["call", tool, &folder(), "--args", &args.to_string()])
        .args(extra)
        .current_dir(root())
        .stdin(Stdio::null())
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("lcp runs");
    stdout_json(&output)
}

#[cfg(feature = "external")]
/// The test environment, where pydantic is installed.
fn venv() -> String {
    test_python().parent().and_then(Path::parent).unwrap().to_string_lossy().into_owned()
}

#[cfg(feature = "external")]
fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig { venv: None, ..RuntimeConfig::default() }).expect("the embedded Python starts")
}

fn registry() -> Registry {
    Registry::load(
        &Sources { folders: vec![root().join("fixtures/new_user_types")], files: vec![] },
        &Options::default(),
    )
}

#[cfg(feature = "external")]
fn call(runtime: &Runtime, registry: &Registry, tool: &str, args: &Value) -> ToolResult {
    runtime.call(registry, tool, args, &CallOptions::default())
}

#[cfg(feature = "external")]
/// The result of a call as `lcp call` prints it.
fn printed(result: &ToolResult) -> Value {
    let mut shown = serde_json::to_value(result).unwrap();
    shown["stdout"] = json!("");
    shown["stderr"] = json!("");
    shown
}

#[cfg(feature = "external")]
/// Calls `tool` through `lcp call` and twice in this process (the library loaded by
/// `tool_path` first, so both calls here are warm), checks that every path gives
/// the same result, and returns it.
fn on_every_path(runtime: &Runtime, registry: &Registry, tool: &str, args: Value) -> Value {
    let through_host = lcp_call(tool, &args, &[]);
    let first = printed(&call(runtime, registry, tool, &args));
    let second = printed(&call(runtime, registry, tool, &args));
    assert_eq!(first, second, "{tool} {args}");
    assert_eq!(through_host, first, "{tool} {args}: `lcp call` and a warm call differ");
    through_host
}

#[cfg(feature = "external")]
/// Loads the library of `path_tool` through `host.py` and checks that its warm calls
/// take the direct path.
fn warm_up(runtime: &Runtime, registry: &Registry, path_tool: &str) {
    let paths: Vec<Value> = (0..2).map(|_| call(runtime, registry, path_tool, &json!({})).output).collect();
    assert_eq!(paths, [json!("host.py"), json!("direct")]);
}

#[cfg(feature = "external")]
#[test]
fn a_tool_returns_a_pydantic_model_a_dataclass_and_a_named_tuple_as_pydantic_dumps_them() {
    let (runtime, registry) = (runtime(), registry());
    warm_up(&runtime, &registry, "tool_path");
    let output = |tool: &str| {
        let result = on_every_path(&runtime, &registry, tool, json!({}));
        assert_eq!(result["ok"], true, "{tool}: {result}");
        result["output"].clone()
    };
    assert_eq!(output("tool_dataclass"), json!({"x": 1, "y": 2, "tags": ["a"]}));
    assert_eq!(output("tool_dict_of_dataclasses"), json!({"origin": {"x": 0, "y": 0, "tags": []}}));
    // pydantic dumps a NamedTuple as an array, and its output schema is one.
    assert_eq!(output("tool_named_tuple"), json!([1, "one"]));
    let schema = registry.tool("tool_named_tuple").unwrap().1.output.as_ref().unwrap().parse();
    assert_eq!(schema["prefixItems"], json!([{"type": "integer"}, {"type": "string"}]), "{schema}");
    // Anything with `model_dump` is a model: dumped as JSON, by alias.
    assert_eq!(output("tool_ducked"), json!({"mode": "json", "by_alias": true, "when": "2024-05-06"}));
    assert_eq!(
        output("tool_standard"),
        json!({"colour": "red", "number": 2, "at": "2024-01-02T03:04:05.000006", "utc": "2024-01-02T00:00:00Z",
               "day": "2024-01-02", "time": "01:02:03", "took": "P1Y35DT1H1M1.5S", "before": "-PT5S",
               "id": "00000000-0000-0000-0000-000000000005", "price": "1.50", "set": [3], "bytes": "AP8=",
               "path": "/a/b", "address": "192.0.2.1", "keys": {"red": 1}})
    );
    // `lcp serve` gives the same structured content.
    let steps = json!([crate::mcp::call("tool_named_tuple", json!({})), crate::mcp::call("tool_standard", json!({}))]);
    let report = crate::mcp::session("legacy", "none", &["fixtures/new_user_types"], steps);
    assert_eq!(report["results"][0]["structuredContent"], json!({"result": [1, "one"]}), "{report}");
    assert_eq!(report["results"][1]["structuredContent"]["took"], "P1Y35DT1H1M1.5S", "{report}");
    let refused = on_every_path(&runtime, &registry, "tool_still_refused", json!({}));
    assert_eq!(
        refused["error"],
        "the tool's return value cannot be carried by JSON: `output[\"nan\"]` is nan, which JSON cannot \
         represent; `output[\"object\"]` is a builtins.object object"
    );

    // pydantic's own models, by alias, then checked against the return annotation.
    let venv = venv();
    let model = lcp_call("tool_model", &json!({}), &["--venv", &venv]);
    assert_eq!(model["output"], json!({"a": 1, "Label": "x", "since": "2024-01-02T00:00:00Z"}), "{model}");
    let models = lcp_call("tool_models", &json!({}), &["--venv", &venv]);
    assert_eq!(models["output"][1], json!({"a": 2, "Label": "two", "since": "2024-01-02T00:00:00Z"}), "{models}");
    // The output schema of a model names the keys of its dump by alias.
    let aliased = lcp_call("tool_aliased", &json!({}), &["--venv", &venv]);
    assert_eq!(aliased["output"], json!({"a": 1, "shown": 2, "cee": 3}), "{aliased}");
    let wrong = lcp_call("tool_wrong_model", &json!({}), &["--venv", &venv]);
    let error = wrong["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("breaks its return annotation `Local`") && error.contains("`a`: expected integer"),
        "{wrong}"
    );
}

#[cfg(feature = "external")]
#[test]
fn the_standard_librarys_values_are_dumped_as_pydantic_dumps_them() {
    // pydantic's `to_jsonable_python` of the same values, in the test environment.
    let script = r#"
import datetime, decimal, enum, json, uuid
from pydantic_core import to_jsonable_python
class Colour(enum.Enum):
    RED = "red"
    BLUE = 2
values = {
    "colour": Colour.RED, "number": Colour.BLUE, "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
    "utc": datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc), "day": datetime.date(2024, 1, 2),
    "time": datetime.time(1, 2, 3), "took": datetime.timedelta(days=400, seconds=3661.5),
    "before": datetime.timedelta(seconds=-5), "id": uuid.UUID(int=5), "price": decimal.Decimal("1.50"),
    "set": {3}, "keys": {Colour.RED: 1},
}
print(json.dumps(to_jsonable_python(values)))
"#;
    let output = Command::new(test_python()).args(["-c", script]).output().expect("python runs");
    let pydantic: Value = serde_json::from_slice(&output.stdout).expect("pydantic prints JSON");
    let ours = lcp_call("tool_standard", &json!({}), &[]);
    for (key, value) in pydantic.as_object().unwrap() {
        assert_eq!(&ours["output"][key], value, "{key}");
    }
}

#[test]
fn a_sibling_modules_class_in_a_return_annotation_is_its_output_schema() {
    let registry = registry();
    let unknown = diagnostics_with(&registry, &["columns.py", "unknown type"]);
    assert!(unknown.is_empty(), "{unknown:#?}");
    let output = |tool: &str| registry.tool(tool).unwrap().1.output.as_ref().map(|schema| schema.parse());
    let summary = json!({"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                         "required": ["name", "count"], "additionalProperties": false});
    assert_eq!(output("tool_summaries"), Some(json!({"type": "array", "items": summary})));
    assert_eq!(output("tool_group").unwrap()["properties"]["total"], json!({"type": "number"}));
    assert_eq!(output("tool_filter").unwrap()["required"], json!(["column", "value"]));
    // The schema is what results are checked against.
    for (tool, annotation, problem) in [
        ("tool_summaries", "list[ColumnSummary]", "`[0].count`: expected integer, got string \"many\""),
        ("tool_group", "models.GroupRow", "`total`: expected number, got string \"lots\""),
        ("tool_filter", "\"RowFilter\"", "`column`: expected string, got integer 7"),
    ] {
        assert_eq!(lcp_call(tool, &json!({}), &[])["ok"], true, "{tool}");
        let wrong = lcp_call(tool, &json!({"wrong": true}), &[]);
        assert_eq!(
            wrong["error"],
            format!("`{tool}` returned a value that breaks its return annotation `{annotation}`:\n- {problem}"),
        );
    }
}

#[cfg(feature = "external")]
#[test]
fn a_number_or_boolean_sent_as_a_string_is_taken_as_pydantic_lax_mode_does() {
    let (runtime, registry) = (runtime(), registry());
    warm_up(&runtime, &registry, "tool_path_lax");
    let output = |tool: &str, args: Value| {
        let result = on_every_path(&runtime, &registry, tool, args);
        if result["ok"] == true { Ok(result["output"].clone()) } else { Err(result["error"].clone()) }
    };
    assert_eq!(
        output("tool_kinds", json!({"count": "1", "ratio": " 2.5 ", "flag": "yes", "name": "7"})),
        Ok(json!({"count": ["int", 1], "ratio": ["float", 2.5], "flag": ["bool", true], "name": ["str", "7"]}))
    );
    assert_eq!(
        output("tool_kinds", json!({"count": "1_000", "ratio": "1e3", "flag": "OFF"})),
        Ok(json!({"count": ["int", 1000], "ratio": ["float", 1000.0], "flag": ["bool", false], "name": ["str", ""]}))
    );
    assert_eq!(
        output("tool_kinds", json!({"count": "-3.00", "flag": "0"}))
            .map(|kinds| (kinds["count"].clone(), kinds["flag"].clone())),
        Ok((json!(["int", -3]), json!(["bool", false])))
    );
    // What pydantic refuses stays refused: a fraction for an integer, infinity, `2` for a boolean.
    for (args, problem) in [
        (json!({"count": "1.5"}), "`count`: expected integer or null, got string \"1.5\""),
        (json!({"ratio": "inf"}), "`ratio`: expected number, got string \"inf\""),
        (json!({"flag": "2"}), "`flag`: expected boolean, got string \"2\""),
        (json!({"count": "1e3"}), "`count`: expected integer or null, got string \"1e3\""),
    ] {
        let refused = output("tool_kinds", args.clone()).expect_err(&args.to_string());
        assert!(refused.as_str().unwrap().contains(problem), "{refused}");
    }
    // A union takes the first of its types that reads the text (`Union[bool, int]`).
    assert_eq!(output("tool_either", json!({"either": "1"})), Ok(json!(["bool", true])));
    assert_eq!(
        output("tool_nested", json!({"counts": ["1", 2, "+3"], "limits": {"a": "0.5"}})),
        Ok(json!({"counts": [["int", 1], ["int", 2], ["int", 3]], "limits": {"a": ["float", 0.5]}}))
    );
    // `lcp serve`, as the MCP Inspector calls it.
    let steps = json!([
        crate::mcp::call("tool_kinds", json!({"count": "1", "flag": "true"})),
        crate::mcp::call("tool_kinds", json!({"count": "1.5"}))
    ]);
    let report = crate::mcp::session("legacy", "none", &["fixtures/new_user_types"], steps);
    let served = &report["results"][0]["structuredContent"];
    assert_eq!((&served["count"], &served["flag"]), (&json!(["int", 1]), &json!(["bool", true])), "{report}");
    crate::mcp::assert_error(&report["results"][1], &["`count`: expected integer or null, got string \"1.5\""]);
    assert_eq!(
        output("tool_nested", json!({"counts": "[\"4\"]", "limits": "{}"})),
        Ok(json!({"counts": [["int", 4]], "limits": {}}))
    );
}

#[cfg(feature = "external")]
#[test]
fn the_first_alias_choice_is_the_property_and_the_others_are_accepted() {
    let registry = registry();
    assert_eq!(
        parameters(&registry, "tool_weather")["properties"],
        json!({"argument": {"type": "string"}, "days": {"type": "integer", "default": 1}})
    );
    assert_eq!(required(&registry, "tool_weather"), ["argument"]);
    // An `AliasPath` among the choices is passed over for the first string, and named.
    assert_eq!(required(&registry, "tool_annotated"), ["place"]);
    let place = &parameters(&registry, "tool_place")["properties"]["place"];
    assert_eq!(place["required"], json!(["where"]), "{place}");
    for path in ["AliasPath(\"a\", 0)", "AliasPath(\"zone\", \"name\")"] {
        assert_eq!(diagnostics_with(&registry, &["aliases.py", path, "does not follow"]).len(), 1, "{path}");
    }
    // The other names are no part of any schema a client sees.
    for format in ["mcp", "openai", "manifest"] {
        let listed = String::from_utf8_lossy(&lcp(&["export", "--format", format, &folder()]).stdout).into_owned();
        assert!(listed.contains("\"argument\"") && !listed.contains("x-lcp-other-names"), "{listed}");
    }
    let schema = registry.tool("tool_weather").unwrap().1.parameters.value();
    assert_eq!(schema["x-lcp-other-names"], json!({"town": "argument"}));

    let venv = venv();
    let weather = |args: Value| lcp_call("tool_weather", &args, &["--venv", &venv]);
    assert_eq!(weather(json!({"argument": "Paris"}))["output"], "Paris for 1");
    assert_eq!(weather(json!({"town": "Lyon", "days": "2"}))["output"], "Lyon for 2");
    // As pydantic: the first choice given wins, and the Python name is no name callers use.
    assert_eq!(weather(json!({"town": "Lyon", "argument": "Nice"}))["output"], "Nice for 1");
    let refused = weather(json!({"city": "Paris"}));
    assert!(refused["error"].as_str().unwrap().contains("unknown parameter `city`"), "{refused}");
    let annotated = lcp_call("tool_annotated", &json!({"spot": "here"}), &["--venv", &venv]);
    assert_eq!(annotated["output"], "here", "{annotated}");
    let place = lcp_call("tool_place", &json!({"place": {"where": "Arles"}}), &["--venv", &venv]);
    assert_eq!(place["output"], "Arles", "{place}");
}
