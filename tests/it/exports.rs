//! SPEC §4: export formats. Snapshots of every format for one rich library, and
//! independent checkers of each provider's rules.

use serde_json::{Value, json};

use lcp::discovery::registry::Descriptions;
use lcp::export::{self, Format, Layout};

use crate::support::*;

/// Compares with `tests/snapshots/NAME.json`; `LCP_BLESS=1` rewrites it.
#[track_caller]
fn assert_snapshot(name: &str, actual: &Value) {
    let path = root().join("tests/snapshots").join(format!("{name}.json"));
    let rendered = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("LCP_BLESS").is_some() {
        write(&path, &rendered);
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run the tests once with LCP_BLESS=1", path.display()));
    assert!(
        expected == rendered,
        "{name} differs from its snapshot; rerun with LCP_BLESS=1 after checking:\n{rendered}"
    );
}

/// The rich library as `lcp export` exports it on a machine whose workers keep every
/// declaration (the same document on every machine, whatever its kernel offers),
/// with what its code can do.
fn rich(format: Format, strict: bool) -> (Value, Vec<lcp::diag::Diagnostic>) {
    let registry = load(&["rich"]);
    let mut descriptions = Descriptions::default();
    descriptions.set_enforcement(lcp::policy::Enforcement::ALL);
    if matches!(format, Format::Manifest | Format::Mcp { .. }) {
        lcp::host::audit::lay_over(&registry, &lcp::host::config::Config::without_file(), &[], &mut descriptions);
    }
    export::export(&registry, &descriptions, format.strict(strict))
}

/// Every format (OpenAI with and without strict mode) by the name of its snapshot.
const SNAPSHOT_FORMATS: [(&str, Format, bool); 7] = [
    ("openai", Format::Openai { strict: false }, false),
    ("openai-strict", Format::Openai { strict: false }, true),
    ("openai-responses", Format::OpenaiResponses { strict: false }, false),
    ("anthropic", Format::Anthropic, false),
    ("gemini", Format::Gemini, false),
    ("mcp", Format::Mcp { inline_refs: false }, false),
    ("manifest", Format::Manifest, false),
];

#[test]
fn every_format_matches_its_snapshot() {
    for (name, format, strict) in SNAPSHOT_FORMATS {
        assert_snapshot(name, &rich(format, strict).0);
    }
}

/// The types of SPEC §3's newer rows, some from a sibling module, in every format
/// (`tests/snapshots/types-FORMAT.json`): how each lowering carries formats, patterns,
/// decimals and JSON text.
#[test]
fn the_newer_types_in_every_format_match_their_snapshots() {
    let files = ["vocabulary_tools.py", "shop/shop.py", "shop/models.py", "shop/catalog.py"]
        .map(|file| fixture("conformance").join(file))
        .to_vec();
    let registry = lcp::discovery::registry::Registry::load(
        &lcp::discovery::registry::Sources { folders: Vec::new(), files },
        &lcp::discovery::registry::Options::default(),
    );
    assert!(registry.diagnostics().is_empty(), "{:?}", registry.diagnostics());
    for (name, format, strict) in SNAPSHOT_FORMATS {
        assert_snapshot(
            &format!("types-{name}"),
            &export::export(&registry, &Descriptions::default(), format.strict(strict)).0,
        );
    }
}

fn names_in(document: &Value) -> Vec<String> {
    let list = document.get("tools").or_else(|| document.get("functionDeclarations")).unwrap_or(document);
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t.get("function").unwrap_or(t)["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_format_lists_tools_in_discovery_order() {
    let order = tool_names(&load(&["rich"]));
    assert_eq!(
        order,
        ["tool_add_item", "tool_remove_item", "tool_move", "tool_stock_report", "tool_convert", "tool_ping"]
    );
    for format in Format::ALL {
        assert_eq!(names_in(&rich(format, false).0), order, "{format}");
    }
}

#[test]
fn openai_envelope() {
    let (document, problems) = rich(Format::Openai { strict: false }, false);
    assert!(problems.is_empty());
    let first = &document[0];
    assert_eq!(first["type"], "function");
    assert_eq!(first["function"]["name"], "tool_add_item");
    assert_eq!(first["function"]["parameters"]["type"], "object");
}

#[test]
fn openai_responses_envelope_is_flat_with_strict_flag() {
    let (document, _) = rich(Format::OpenaiResponses { strict: false }, false);
    assert_eq!(document[0]["type"], "function");
    assert_eq!(document[0]["name"], "tool_add_item");
    assert_eq!(document[0]["strict"], false);
    let (strict, _) = rich(Format::OpenaiResponses { strict: false }, true);
    assert_eq!(strict[0]["strict"], true);
    assert!(check_openai_strict(&strict[0]["parameters"]).is_empty());
}

#[test]
fn anthropic_envelope_uses_input_schema() {
    let (document, _) = rich(Format::Anthropic, false);
    assert_eq!(document[0]["name"], "tool_add_item");
    assert_eq!(document[0]["input_schema"]["type"], "object");
}

#[test]
fn mcp_envelope_is_a_tools_list_result() {
    let (document, _) = rich(Format::Mcp { inline_refs: false }, false);
    assert_eq!(document["tools"][0]["inputSchema"]["type"], "object");
}

#[test]
fn mcp_input_schemas_name_json_schema_2020_12_and_keep_named_classes_in_defs() {
    let (document, _) = rich(Format::Mcp { inline_refs: false }, false);
    let tools = document["tools"].as_array().unwrap();
    assert!(tools.iter().all(|tool| tool["inputSchema"]["$schema"] == export::JSON_SCHEMA_2020_12));
    let add = &tools[0]["inputSchema"];
    assert_eq!(add["properties"]["location"]["anyOf"][0], json!({"$ref": "#/$defs/Location"}));
    assert_eq!(add["$defs"]["Location"]["properties"]["aisle"], json!({"type": "integer"}));
    // The other formats keep the class inlined.
    let (anthropic, _) = rich(Format::Anthropic, false);
    let inlined = &anthropic[0]["input_schema"];
    assert_eq!(inlined["properties"]["location"]["anyOf"][0], add["$defs"]["Location"]);
    assert!(inlined.get("$defs").is_none());
}

#[test]
fn the_mcp_inline_refs_switch_inlines_named_classes_for_clients_that_cannot_resolve_refs() {
    let mut document = rich(Format::Mcp { inline_refs: false }, false).0;
    export::inline_mcp_classes(&mut document, &load(&["rich"]));
    let (anthropic, _) = rich(Format::Anthropic, false);
    for (tool, plain) in document["tools"].as_array().unwrap().iter().zip(anthropic.as_array().unwrap()) {
        let mut expected = plain["input_schema"].clone();
        expected.as_object_mut().unwrap().insert("$schema".into(), json!(export::JSON_SCHEMA_2020_12));
        assert_eq!(tool["inputSchema"], expected);
    }
    let dir = temp_dir("inline-refs");
    let config = dir.join("lcp.toml");
    write(&config, "[mcp]\ninline_refs = true\n");
    let exported = stdout_json(&lcp(&[
        "export",
        "--format",
        "mcp",
        "--static",
        "fixtures/rich",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(exported, document);
}

#[test]
fn manifest_has_libraries_tools_and_diagnostics() {
    let (document, _) = export::export(&load(&["rich", "providers"]), &Descriptions::default(), Format::Manifest);
    let inventory = &document["libraries"][0];
    assert_eq!(inventory["name"], "Inventory");
    assert_eq!(inventory["icon"], "📦");
    assert_eq!(inventory["hooks"], json!({"init_tools_library": true, "set_confirm_handler": true}));
    assert_eq!(inventory["dynamic_prompt"], true);
    let tool = &document["tools"][0];
    assert_eq!(tool["line"], 46);
    assert!(tool["docstring"].as_str().unwrap().contains("Args:"));
    assert_eq!(tool["returns"]["annotation"], "dict");
    assert!(
        document["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains("tool_orphan_prompt"))
    );
}

/// OpenAI's strict-mode rules, checked independently of the lowering code.
fn check_openai_strict(schema: &Value) -> Vec<String> {
    const ALLOWED: &[&str] = &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    ];
    const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
    fn walk(node: &Value, at: &str, problems: &mut Vec<String>) {
        let Some(object) = node.as_object() else { return problems.push(format!("{at}: not an object")) };
        if object.is_empty() {
            problems.push(format!("{at}: empty schema"));
        }
        for key in object.keys() {
            if !ALLOWED.contains(&key.as_str()) {
                problems.push(format!("{at}: keyword `{key}` is not allowed"));
            }
        }
        if let Some(format) = object.get("format").and_then(Value::as_str)
            && !FORMATS.contains(&format)
        {
            problems.push(format!("{at}: format `{format}` is not supported"));
        }
        let is_object = match &object.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(types)) => types.contains(&json!("object")),
            _ => false,
        };
        if is_object {
            if object.get("additionalProperties") != Some(&json!(false)) {
                problems.push(format!("{at}: additionalProperties must be false"));
            }
            let properties: Vec<&String> =
                object.get("properties").and_then(Value::as_object).map(|p| p.keys().collect()).unwrap_or_default();
            let required: Vec<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if properties.len() != required.len() || properties.iter().any(|p| !required.contains(&p.as_str())) {
                problems.push(format!("{at}: every property must be required"));
            }
        }
        for (name, child) in object.get("properties").and_then(Value::as_object).into_iter().flatten() {
            walk(child, &format!("{at}.{name}"), problems);
        }
        for (name, child) in object.get("$defs").and_then(Value::as_object).into_iter().flatten() {
            walk(child, &format!("$defs.{name}"), problems);
        }
        for (i, child) in object.get("anyOf").and_then(Value::as_array).into_iter().flatten().enumerate() {
            walk(child, &format!("{at}|{i}"), problems);
        }
        if let Some(items) = object.get("items") {
            walk(items, &format!("{at}[]"), problems);
        }
    }
    let mut problems = Vec::new();
    if schema["type"] != "object" {
        problems.push("root must be an object".to_string());
    }
    walk(schema, "parameters", &mut problems);
    problems
}

#[test]
fn openai_strict_output_passes_the_strict_rules() {
    let (document, problems) = rich(Format::Openai { strict: false }, true);
    for entry in document.as_array().unwrap() {
        assert_eq!(entry["function"]["strict"], true);
        let violations = check_openai_strict(&entry["function"]["parameters"]);
        assert!(violations.is_empty(), "{}: {violations:?}", entry["function"]["name"]);
    }
    // The one tool with an open dict is refused, with an error naming the parameter.
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].message.contains("tool_stock_report") && problems[0].message.contains("parameters.labels"));
    assert!(!names_in(&document).contains(&"tool_stock_report".to_string()));
}

#[test]
fn openai_strict_makes_optional_properties_nullable_and_moves_defaults_to_the_description() {
    let (document, _) = rich(Format::Openai { strict: false }, true);
    let remove = &document[1]["function"]["parameters"];
    assert_eq!(remove["required"], json!(["name", "quantity", "force"]));
    assert_eq!(remove["properties"]["quantity"]["type"], json!(["integer", "null"]));
    assert_eq!(remove["properties"]["quantity"]["description"], "How many to remove. Default: 1.");
}

#[test]
fn openai_strict_checker_catches_violations() {
    // The checker must fail on the non-strict schema, or it proves nothing.
    let (document, _) = rich(Format::Openai { strict: false }, false);
    assert!(!check_openai_strict(&document[0]["function"]["parameters"]).is_empty());
}

/// Gemini's OpenAPI subset.
fn check_gemini(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(object) = schema.as_object() else { return };
    for key in [
        "$ref",
        "$defs",
        "additionalProperties",
        "const",
        "prefixItems",
        "uniqueItems",
        "exclusiveMinimum",
        "exclusiveMaximum",
    ] {
        if object.contains_key(key) {
            problems.push(format!("{at}: `{key}`"));
        }
    }
    if object.get("items").is_some_and(|items| !items.is_object()) {
        problems.push(format!("{at}: `items` is not a schema"));
    }
    if object.get("type").is_some_and(Value::is_array) {
        problems.push(format!("{at}: type array"));
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array)
        && !values.iter().all(Value::is_string)
    {
        problems.push(format!("{at}: non-string enum"));
    }
    for (name, child) in object.get("properties").and_then(Value::as_object).into_iter().flatten() {
        check_gemini(child, &format!("{at}.{name}"), problems);
    }
    for child in object.get("anyOf").and_then(Value::as_array).into_iter().flatten() {
        if child.get("type") == Some(&json!("null")) {
            problems.push(format!("{at}: null branch instead of nullable"));
        }
        check_gemini(child, at, problems);
    }
    if let Some(items) = object.get("items") {
        check_gemini(items, &format!("{at}[]"), problems);
    }
}

#[test]
fn gemini_output_stays_in_the_openapi_subset() {
    let registry = load(&["rich", "types"]);
    let (document, _) = export::export(&registry, &Descriptions::default(), Format::Gemini);
    let mut problems = Vec::new();
    for declaration in document["functionDeclarations"].as_array().unwrap() {
        check_gemini(&declaration["parameters"], declaration["name"].as_str().unwrap(), &mut problems);
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn gemini_uses_nullable_and_string_enums() {
    let (document, _) = rich(Format::Gemini, false);
    let add = &document["functionDeclarations"][0]["parameters"]["properties"];
    assert_eq!(add["location"]["nullable"], true);
    assert_eq!(add["location"]["type"], "object");
    assert_eq!(add["category"]["enum"], json!(["tools", "parts"]));
    let ping = &document["functionDeclarations"][5];
    assert!(ping.get("parameters").is_none(), "a tool without parameters has none: {ping}");
}

#[test]
fn name_limits_are_checked_per_format_and_reported_never_cut() {
    let registry = load(&["names"]);
    let long = format!("tool_{}", "x".repeat(70));
    for (format, accepted) in [
        (Format::Openai { strict: false }, vec!["tool_fine"]),
        (Format::Gemini, vec!["tool_fine"]),
        (Format::Anthropic, vec![long.as_str(), "tool_fine"]),
        (Format::Mcp { inline_refs: false }, vec![long.as_str(), "tool_fine"]),
        (Format::Manifest, vec![long.as_str(), "tool_café", "tool_fine"]),
    ] {
        let (document, problems) = export::export(&registry, &Descriptions::default(), format);
        assert_eq!(names_in(&document), accepted, "{format}");
        let refused = 3 - accepted.len();
        assert_eq!(problems.len(), refused, "{format}: {problems:?}");
        assert!(problems.iter().all(|p| p.is_error() && p.message.contains("its name")), "{problems:?}");
    }
}

/// Every format, plain and `--strict`.
const EVERY_FORMAT: [Format; 6] = Format::ALL;

/// Every fixture folder, each loaded on its own.
fn every_fixture() -> Vec<(String, lcp::discovery::registry::Registry)> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() > 10, "the fixtures are found: {names:?}");
    names.into_iter().map(|name| (name.clone(), load(&[&name]))).collect()
}

#[test]
fn the_streamed_export_is_the_document_as_serde_json_prints_it_in_every_format_on_every_fixture() {
    let mut tools_written = 0;
    for (fixture, registry) in every_fixture() {
        for format in EVERY_FORMAT {
            // `[mcp] inline_refs` changes MCP's schemas only.
            let inlining: &[bool] = if matches!(format, Format::Mcp { .. }) { &[false, true] } else { &[false] };
            for (&strict, &inline_refs) in [false, true].iter().flat_map(|s| inlining.iter().map(move |i| (s, i))) {
                let (mut document, problems) =
                    export::export(&registry, &Descriptions::default(), format.strict(strict));
                if inline_refs {
                    export::inline_mcp_classes(&mut document, &registry);
                }
                for (layout, expected) in [
                    (Layout::Pretty, serde_json::to_string_pretty(&document).unwrap()),
                    (Layout::Compact, serde_json::to_string(&document).unwrap()),
                ] {
                    let mut written = Vec::new();
                    let format = match format {
                        Format::Mcp { .. } => Format::Mcp { inline_refs },
                        other => other.strict(strict),
                    };
                    let streamed =
                        export::write(&registry, &Descriptions::default(), format, layout, &mut written).unwrap();
                    let written = String::from_utf8(written).unwrap();
                    let case = format!("{fixture}, {format}, strict: {strict}, inline_refs: {inline_refs}, {layout:?}");
                    assert!(
                        written == expected,
                        "{case}: the streamed text differs:\n{written}\nexpected:\n{expected}"
                    );
                    assert_eq!(streamed, problems, "{case}: the problems differ");
                }
                tools_written += registry.tools().count();
            }
        }
    }
    assert!(tools_written > 100, "the fixtures have tools to write: {tools_written}");
}

#[test]
fn a_streamed_export_of_many_tools_written_in_parallel_chunks_is_the_document_in_order() {
    // Enough tools for many chunks, some left out in every format (a name over 64
    // characters), some whole chunks left out, and schemas that lowering changes.
    let dir = temp_dir("exports-many");
    for file in 0..12 {
        let mut text = String::new();
        for tool in 0..40 {
            let name = match (file, tool % 7) {
                (5..=7, _) | (_, 0) => format!("tool_{file}_{tool}_{}", "x".repeat(70)),
                _ => format!("tool_{file}_{tool}"),
            };
            text.push_str(&format!(
                "def {name}(a: int, b: str | None = None, c: list[float] = []) -> int:\n    \"\"\"Tool {file} {tool}.\n\n    Args:\n        a: A.\n        b: B.\n        c: C.\n    \"\"\"\n    return a\n\n"
            ));
        }
        std::fs::write(dir.join(format!("lib_{file:02}.py")), text).unwrap();
    }
    let sources = lcp::discovery::registry::Sources { folders: vec![dir], files: Vec::new() };
    let registry = lcp::discovery::registry::Registry::load(&sources, &lcp::discovery::registry::Options::default());
    assert_eq!(registry.tools().count(), 480);
    for format in EVERY_FORMAT {
        for strict in [false, true] {
            let (document, problems) = export::export(&registry, &Descriptions::default(), format.strict(strict));
            for (layout, expected) in [
                (Layout::Pretty, serde_json::to_string_pretty(&document).unwrap()),
                (Layout::Compact, serde_json::to_string(&document).unwrap()),
            ] {
                let mut written = Vec::new();
                let streamed =
                    export::write(&registry, &Descriptions::default(), format.strict(strict), layout, &mut written)
                        .unwrap();
                let case = format!("{format}, strict: {strict}, {layout:?}");
                assert!(String::from_utf8(written).unwrap() == expected, "{case}: the streamed text differs");
                assert_eq!(streamed, problems, "{case}: the problems differ");
            }
        }
    }
}

#[test]
fn the_mcp_entries_written_alone_are_the_documents_tools() {
    for (fixture, registry) in every_fixture() {
        let (document, _) = export::export(&registry, &Descriptions::default(), Format::Mcp { inline_refs: false });
        let mut written = Vec::new();
        export::write_entries(
            &registry,
            &Descriptions::default(),
            Format::Mcp { inline_refs: false },
            Layout::Compact,
            &mut written,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            serde_json::to_string(&document["tools"]).unwrap(),
            "{fixture}"
        );
    }
}

#[test]
fn descriptions_laid_over_the_tools_are_what_every_format_shows_streamed_or_built() {
    let registry = load(&["rich"]);
    let name = registry.tools().next().unwrap().1.name.clone();
    let mut descriptions = Descriptions::default();
    descriptions.insert(name.clone(), "Laid over the static description.".to_string());
    for format in EVERY_FORMAT {
        let (document, _) = export::export(&registry, &descriptions, format);
        let list = document.get("tools").or_else(|| document.get("functionDeclarations")).unwrap_or(&document);
        let entry =
            list.as_array().unwrap().iter().map(|t| t.get("function").unwrap_or(t)).find(|t| t["name"] == *name);
        assert_eq!(entry.unwrap()["description"], "Laid over the static description.", "{format}");
        let mut written = Vec::new();
        export::write(&registry, &descriptions, format, Layout::Compact, &mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), serde_json::to_string(&document).unwrap(), "{format}");
    }
    assert_ne!(registry.tool(&name).unwrap().1.description, "Laid over the static description.");
}

#[test]
fn lcp_export_prints_the_snapshot_in_every_format() {
    for (name, format, strict) in [
        ("openai", "openai", false),
        ("openai-strict", "openai", true),
        ("openai-responses", "openai-responses", false),
        ("anthropic", "anthropic", false),
        ("gemini", "gemini", false),
        ("mcp", "mcp", false),
        ("manifest", "manifest", false),
    ] {
        let mut args = vec!["export", "--static", "--format", format, "fixtures/rich"];
        if strict {
            args.push("--strict");
        }
        let output = lcp(&args);
        let expected = std::fs::read_to_string(root().join("tests/snapshots").join(format!("{name}.json"))).unwrap();
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stdout) == expected, "{name}: lcp export differs from its snapshot");
    }
}

#[test]
fn two_named_classes_of_one_name_keep_apart_in_defs() {
    let registry = load(&["named_classes"]);
    let (document, _) = export::export(&registry, &Descriptions::default(), Format::Mcp { inline_refs: false });
    let schema = &document["tools"][0]["inputSchema"];
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false});
    let stock = json!({"type": "object", "properties": {"sku": {"type": "integer"}}, "required": ["sku"], "additionalProperties": false});
    assert_eq!(schema["$defs"], json!({"stock.Item": stock, "Item": item}));
    assert_eq!(schema["properties"]["take"], json!({"$ref": "#/$defs/stock.Item"}));
    assert_eq!(schema["properties"]["again"], json!({"$ref": "#/$defs/stock.Item"}));
    assert_eq!(schema["properties"]["give"], json!({"$ref": "#/$defs/Item"}));
    assert_eq!(schema["properties"]["also"]["items"], json!({"$ref": "#/$defs/Item"}));
}
