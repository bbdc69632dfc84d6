//! Gemini's OpenAPI subset: a parameters schema without `$ref`/`$defs`,
//! `additionalProperties`, `const` or type arrays, with `nullable: true` and string
//! enums; what it cannot say goes into the description.

use super::*;

/// Gemini's OpenAPI subset: no `$ref`/`$defs`/`additionalProperties`/`const`/type
/// arrays, `nullable: true`, string-only enums. What it cannot say goes into the
/// description.
pub fn gemini(mut schema: Value) -> Value {
    let defs = schema.as_object_mut().and_then(|object| object.remove("$defs")).unwrap_or(Value::Null);
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

/// `schema` lowered, taken apart rather than copied: only an inlined definition is
/// copied, as it may be inlined more than once.
pub(super) fn gemini_node(schema: Value, defs: &Value, expanding: &mut Expanding) -> Value {
    let Value::Object(object) = schema else { return json!({}) };
    expanding.nodes_left = expanding.nodes_left.saturating_sub(1);
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/").to_string();
        if expanding.names.contains(&name) || expanding.nodes_left == 0 {
            // Gemini has no recursion: the recursive part is an untyped object.
            return json!({ "type": "object", "description": format!("A nested {name}.") });
        }
        let Some(def) = defs.get(&name) else { return json!({}) };
        expanding.names.push(name);
        let mut inlined = gemini_node(def.clone(), defs, expanding);
        expanding.names.pop();
        if let Some(description) = object.get("description") {
            inlined["description"] = description.clone();
        }
        return inlined;
    }
    let mut out = Map::with_capacity(object.len() + 1);
    let mut notes = Vec::new();
    let mut description = None;
    for (key, value) in object {
        match key.as_str() {
            "properties" => {
                // Lowered in place: the same names in the same order.
                let mut properties = match value {
                    Value::Object(properties) => properties,
                    _ => Map::new(),
                };
                for property in properties.values_mut() {
                    *property = gemini_node(property.take(), defs, expanding);
                }
                out.insert(key, Value::Object(properties));
            }
            "items" => {
                // `items: false` closes a tuple; Gemini has no tuples (see prefixItems).
                if value.is_object() {
                    out.insert(key, gemini_node(value, defs, expanding));
                }
            }
            "prefixItems" => {
                let items: Vec<Value> = match value {
                    Value::Array(items) => items.into_iter().map(|v| gemini_node(v, defs, expanding)).collect(),
                    _ => Vec::new(),
                };
                let (union, note) = positions_as_union(items);
                out.insert("items".into(), union);
                notes.push(note);
            }
            "anyOf" => {
                let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
                let branches = match value {
                    Value::Array(branches) => branches,
                    _ => Vec::new(),
                };
                if branches.iter().any(is_null) {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                let others: Vec<Value> =
                    branches.into_iter().filter(|b| !is_null(b)).map(|v| gemini_node(v, defs, expanding)).collect();
                match <[Value; 1]>::try_from(others) {
                    Ok([Value::Object(single)]) => {
                        for (k, v) in single {
                            out.entry(k).or_insert(v);
                        }
                    }
                    Ok(_) => {}
                    Err(others) if !others.is_empty() => {
                        out.insert("anyOf".into(), Value::Array(others));
                    }
                    Err(_) => {}
                }
            }
            "type" => match value {
                Value::Array(types) => {
                    let before = types.len();
                    let mut non_null: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
                    if non_null.len() < before {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    if non_null.len() == 1 {
                        out.insert("type".into(), non_null.remove(0));
                    }
                }
                Value::String(t) if t == "null" => {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                other => {
                    out.insert("type".into(), other);
                }
            },
            "const" => {
                gemini_enum(&mut out, &mut notes, vec![value]);
            }
            "enum" => {
                let values = match value {
                    Value::Array(values) => values,
                    _ => Vec::new(),
                };
                gemini_enum(&mut out, &mut notes, values);
            }
            "format" => match value.as_str() {
                Some(f) if GEMINI_FORMATS.contains(&f) => {
                    out.insert(key, value);
                }
                _ => notes.push(format!("Format: {}.", value.as_str().unwrap_or_default())),
            },
            "description" => description = Some(value),
            "$defs" | "additionalProperties" => {}
            "uniqueItems" => {
                if value == Value::Bool(true) {
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
                out.insert(key, value);
            }
        }
    }
    describe_with_notes(&mut out, description, notes);
    Value::Object(out)
}

/// Gemini enums are strings only; other values are listed in the description.
pub(super) fn gemini_enum(out: &mut Map<String, Value>, notes: &mut Vec<String>, values: Vec<Value>) {
    let before = values.len();
    let non_null: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    if non_null.len() < before {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if non_null.iter().all(Value::is_string) {
        out.insert("type".into(), json!("string"));
        out.insert("format".into(), json!("enum"));
        out.insert("enum".into(), Value::Array(non_null));
    } else {
        let listed: Vec<String> = non_null.iter().map(Value::to_string).collect();
        notes.push(format!("One of: {}.", listed.join(", ")));
    }
}
