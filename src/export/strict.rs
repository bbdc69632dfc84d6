//! OpenAI's strict mode: a parameters schema lowered to the subset it accepts (every
//! property required, optional ones nullable, closed objects, no `default`), with what
//! the subset cannot say moved into descriptions and what it cannot express reported.

use super::*;

/// Keywords OpenAI's strict mode accepts; everything else is moved into the
/// description so the model still reads it.
pub(super) const STRICT_KEYWORDS: &[&str] = &[
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

/// String formats OpenAI's strict mode accepts.
pub(super) const STRICT_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Lowers a parameters schema to OpenAI's strict subset: every property required,
/// optional ones nullable, closed objects, no `default`. The schema is taken apart,
/// not copied.
pub fn openai_strict(schema: Value) -> Result<Value, Vec<String>> {
    let mut problems = Vec::new();
    let lowered = strict_node(schema, At::Parameters, &mut problems);
    if problems.is_empty() { Ok(lowered) } else { Err(problems) }
}

/// Where a node of the schema being lowered is, spelled out only in a problem.
#[derive(Clone, Copy)]
pub(super) enum At<'a> {
    Parameters,
    Property(&'a At<'a>, &'a str),
    Items(&'a At<'a>),
    Branch(&'a At<'a>, usize),
    Position(&'a At<'a>, usize),
    Definition(&'a str),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Parameters => f.write_str("parameters"),
            At::Property(at, name) => write!(f, "{at}.{name}"),
            At::Items(at) => write!(f, "{at}[]"),
            At::Branch(at, i) => write!(f, "{at}|{i}"),
            At::Position(at, i) => write!(f, "{at}[{i}]"),
            At::Definition(name) => write!(f, "$defs.{name}"),
        }
    }
}

pub(super) fn strict_node(schema: Value, at: At<'_>, problems: &mut Vec<String>) -> Value {
    let mut object = match schema {
        Value::Object(object) if !object.is_empty() => object,
        Value::Object(_) => {
            problems.push(format!("{at} accepts any JSON value, which strict mode cannot express"));
            return schema;
        }
        _ => {
            problems.push(format!("{at} is `{schema}`, which strict mode cannot express"));
            return schema;
        }
    };
    let has_properties = object.contains_key("properties");
    let closed = object.contains_key("additionalProperties");
    // Taken out, leaving `null` in place (the loop passes both keywords by).
    let required = object.get_mut("required").map(Value::take);
    let description = object.get_mut("description").map(Value::take);
    let is_required = |name: &str| {
        required.as_ref().and_then(Value::as_array).is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
    };
    let mut out = Map::with_capacity(object.len() + 2);
    let mut notes = Vec::new();
    for (key, value) in object {
        match key.as_str() {
            "properties" => {
                let mut names = Vec::new();
                let mut properties = Map::new();
                for (name, property) in into_object(value) {
                    let mut lowered = strict_node(property, At::Property(&at, &name), problems);
                    if !is_required(&name) {
                        lowered = strict_nullable(lowered);
                    }
                    names.push(Value::String(name.clone()));
                    properties.insert(name, lowered);
                }
                out.insert("required".into(), Value::Array(names));
                out.insert(key, Value::Object(properties));
            }
            "required" | "description" => {}
            "additionalProperties" => {
                if value != Value::Bool(false) {
                    problems
                        .push(format!("{at} is an open mapping (free-form keys), which strict mode cannot express"));
                }
            }
            "items" => {
                if value != Value::Bool(false) {
                    out.insert(key, strict_node(value, At::Items(&at), problems));
                }
            }
            "anyOf" => {
                let branches = into_array(value).into_iter().enumerate();
                let lowered = branches.map(|(i, b)| strict_node(b, At::Branch(&at, i), problems)).collect();
                out.insert(key, Value::Array(lowered));
            }
            "$defs" => {
                let mut defs = Map::new();
                for (name, def) in into_object(value) {
                    let lowered = strict_node(def, At::Definition(&name), problems);
                    defs.insert(name, lowered);
                }
                out.insert(key, Value::Object(defs));
            }
            "prefixItems" => {
                // A fixed-length tuple: strict mode has no positions; keep the item
                // types as a union and say the order in the description.
                let items = into_array(value).into_iter().enumerate();
                let items = items.map(|(i, b)| strict_node(b, At::Position(&at, i), problems)).collect();
                let (union, note) = positions_as_union(items);
                out.insert("items".into(), union);
                notes.push(note);
            }
            "default" => notes.push(format!("Default: {value}.")),
            // Strict mode refuses a format it does not know (`uri`): the model reads it.
            "format" if !value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                notes.push(format!("format: {value}."))
            }
            other if STRICT_KEYWORDS.contains(&other) => {
                out.insert(key, value);
            }
            other => notes.push(format!("{other}: {value}.")),
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("object") {
        if !has_properties {
            if !closed {
                problems.push(format!("{at} is an open mapping (free-form keys), which strict mode cannot express"));
            }
            out.insert("properties".into(), Value::Object(Map::new()));
            out.insert("required".into(), Value::Array(Vec::new()));
        }
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    describe_with_notes(&mut out, description, notes);
    Value::Object(out)
}

/// Strict mode's way to make a property optional: it may be `null`.
pub(super) fn strict_nullable(mut schema: Value) -> Value {
    let null_schema = json!({ "type": "null" });
    let Some(object) = schema.as_object_mut() else { return schema };
    if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
        if !branches.contains(&null_schema) {
            branches.push(null_schema);
        }
        return schema;
    }
    match object.get("type").cloned() {
        Some(Value::String(t)) if t == "null" => {}
        Some(Value::String(t)) => {
            object.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = object.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        Some(Value::Array(mut types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
            object.insert("type".into(), Value::Array(types));
        }
        _ => {
            let description = object.remove("description");
            let mut wrapped = json!({ "anyOf": [schema, null_schema] });
            if let Some(description) = description {
                wrapped["description"] = description;
            }
            return wrapped;
        }
    }
    schema
}
