//! Gemini's OpenAPI subset: a parameters schema without `$ref`/`$defs`,
//! `additionalProperties`, `const` or type arrays, with `nullable: true` and string
//! enums; what it cannot say goes into the description.

use super::*;

/// Gemini's OpenAPI subset: no `$ref`/`$defs`/`additionalProperties`/`const`/type
/// arrays, `nullable: true`, string-only enums. What it cannot say goes into the
/// description.
pub fn gemini(schema: &Value) -> Value {
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    gemini_node(schema, &defs, &mut Expanding { names: Vec::new(), nodes_left: GEMINI_MAX_NODES })
}

/// Most schema nodes one Gemini lowering makes. Recursive definitions that use each
/// other several times would grow exponentially when inlined: past this, a `$ref` is
/// an untyped object, as a recursive one is.
pub(super) const GEMINI_MAX_NODES: usize = 20_000;

/// The definitions being inlined, innermost last, and how many nodes may still be made.
pub(super) struct Expanding {
    names: Vec<String>,
    nodes_left: usize,
}

/// String formats Gemini understands.
pub(super) const GEMINI_FORMATS: &[&str] = &["date-time", "enum"];

pub(super) fn gemini_node(schema: &Value, defs: &Value, expanding: &mut Expanding) -> Value {
    let Some(object) = schema.as_object() else { return json!({}) };
    expanding.nodes_left = expanding.nodes_left.saturating_sub(1);
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/").to_string();
        if expanding.names.contains(&name) || expanding.nodes_left == 0 {
            // Gemini has no recursion: the recursive part is an untyped object.
            return json!({ "type": "object", "description": format!("A nested {name}.") });
        }
        let Some(def) = defs.get(&name) else { return json!({}) };
        expanding.names.push(name);
        let mut inlined = gemini_node(def, defs, expanding);
        expanding.names.pop();
        if let Some(description) = object.get("description") {
            inlined["description"] = description.clone();
        }
        return inlined;
    }
    let mut out = Map::new();
    let mut notes = Vec::new();
    for (key, value) in object {
        match key.as_str() {
            "properties" => {
                let properties: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), gemini_node(v, defs, expanding)))
                    .collect();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" => {
                // `items: false` closes a tuple; Gemini has no tuples (see prefixItems).
                if value.is_object() {
                    out.insert(key.clone(), gemini_node(value, defs, expanding));
                }
            }
            "prefixItems" => {
                let items: Vec<Value> =
                    value.as_array().into_iter().flatten().map(|v| gemini_node(v, defs, expanding)).collect();
                let (union, note) = positions_as_union(items);
                out.insert("items".into(), union);
                notes.push(note);
            }
            "anyOf" => {
                let is_null = |b: &&Value| b.get("type") == Some(&json!("null"));
                let branches = value.as_array().map(Vec::as_slice).unwrap_or_default();
                if branches.iter().any(|b| is_null(&b)) {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                let others: Vec<Value> =
                    branches.iter().filter(|b| !is_null(b)).map(|v| gemini_node(v, defs, expanding)).collect();
                match <[Value; 1]>::try_from(others) {
                    Ok([single]) => {
                        for (k, v) in single.as_object().into_iter().flatten() {
                            out.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                    Err(others) if !others.is_empty() => {
                        out.insert("anyOf".into(), Value::Array(others));
                    }
                    Err(_) => {}
                }
            }
            "type" => match value {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    if let [single] = non_null.as_slice() {
                        out.insert("type".into(), (*single).clone());
                    }
                }
                Value::String(t) if t == "null" => {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "const" => {
                gemini_enum(&mut out, &mut notes, std::slice::from_ref(value));
            }
            "enum" => {
                let values = value.as_array().cloned().unwrap_or_default();
                gemini_enum(&mut out, &mut notes, &values);
            }
            "format" => match value.as_str() {
                Some(f) if GEMINI_FORMATS.contains(&f) => {
                    out.insert(key.clone(), value.clone());
                }
                _ => notes.push(format!("Format: {}.", value.as_str().unwrap_or_default())),
            },
            "description" | "$defs" | "additionalProperties" | "uniqueItems" => {
                if key == "uniqueItems" && value == &Value::Bool(true) {
                    notes.push("Items must be unique.".to_string());
                }
            }
            "exclusiveMinimum" => notes.push(format!("Must be greater than {value}.")),
            "exclusiveMaximum" => notes.push(format!("Must be less than {value}.")),
            "multipleOf" => notes.push(format!("Must be a multiple of {value}.")),
            // JSON text (`Json[T]`): the OpenAPI subset has no content keywords.
            "contentMediaType" => {
                notes.push(format!("Text holding a JSON document ({}).", value.as_str().unwrap_or_default()))
            }
            "contentSchema" => notes.push(format!("The document's schema: {value}.")),
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    describe_with_notes(&mut out, object.get("description"), notes);
    Value::Object(out)
}

/// Gemini enums are strings only; other values are listed in the description.
pub(super) fn gemini_enum(out: &mut Map<String, Value>, notes: &mut Vec<String>, values: &[Value]) {
    let non_null: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
    if non_null.len() < values.len() {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if non_null.iter().all(|v| v.is_string()) {
        out.insert("type".into(), json!("string"));
        out.insert("format".into(), json!("enum"));
        out.insert("enum".into(), Value::Array(non_null.into_iter().cloned().collect()));
    } else {
        let listed: Vec<String> = non_null.iter().map(|v| v.to_string()).collect();
        notes.push(format!("One of: {}.", listed.join(", ")));
    }
}
