//! Gemini's OpenAPI subset: a parameters schema without `$ref`/`$defs`,
//! `additionalProperties`, `const` or type arrays, with `nullable: true` and string
//! enums; what it cannot say goes into the description.
//!
//! [`gemini`] lowers a schema's `Value`. [`gemini_text`] lowers the common schemas
//! on their compact text, without building them (a part of [`FastPath::Splice`]), and
//! leaves every other one to [`gemini`]: the exports tests compare both on every
//! fixture.

use serde::de::{self, Deserialize, Deserializer, MapAccess};
use serde_json::value::RawValue;

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

/// A parameters schema lowered by [`gemini_text`].
pub(super) struct GeminiText {
    /// The lowered schema's compact text, as `serde_json` writes [`gemini`]'s.
    pub text: String,
    /// Whether it has a property (a Gemini declaration without any has no parameters).
    pub has_properties: bool,
}

/// [`gemini`] of the schema whose compact text (as `serde_json` writes it) is `text`,
/// done on the text: each object's members are read without parsing their values, and
/// only what the lowering changes is written anew. `None` when the schema uses what
/// only [`gemini`] handles (definitions, tuples, constants, type lists, enums of
/// other values than strings, anything that becomes a note) or has a name written
/// with an escape.
pub(super) fn gemini_text(text: &str) -> Option<GeminiText> {
    let fields = text_node(members(text)?)?;
    let has_properties =
        fields.0.iter().any(|(key, piece)| *key == "properties" && !matches!(piece, Piece::Made(made) if made == "{}"));
    let mut out = String::with_capacity(text.len());
    fields.write(&mut out);
    Some(GeminiText { text: out, has_properties })
}

/// An object's members as its text has them, each value unparsed; `None` if `text`
/// is no object or a name in it is written with an escape.
fn members(text: &str) -> Option<Vec<(&str, &RawValue)>> {
    serde_json::from_str::<Members>(text).ok().map(|members| members.0)
}

struct Members<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A lowered object's members in order. A name set again keeps its place, as in
/// [`gemini_node`]'s `Map`.
struct Fields<'a>(Vec<(&'a str, Piece<'a>)>);

/// A member's value: the input's own text, or text written by the lowering.
enum Piece<'a> {
    Kept(&'a str),
    Made(String),
}

impl<'a> Fields<'a> {
    fn set(&mut self, key: &'a str, piece: Piece<'a>) {
        match self.0.iter_mut().find(|(name, _)| *name == key) {
            Some((_, slot)) => *slot = piece,
            None => self.0.push((key, piece)),
        }
    }

    fn set_if_absent(&mut self, key: &'a str, piece: Piece<'a>) {
        if !self.0.iter().any(|(name, _)| *name == key) {
            self.0.push((key, piece));
        }
    }

    /// The object as compact text. Names were read without escapes, so they are
    /// written as they were.
    fn write(&self, out: &mut String) {
        out.push('{');
        for (i, (key, piece)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            out.push_str(match piece {
                Piece::Kept(text) => text,
                Piece::Made(text) => text,
            });
        }
        out.push('}');
    }
}

/// [`gemini_node`] of an object given by its members, or `None` (see [`gemini_text`]).
fn text_node<'a>(object: Vec<(&'a str, &'a RawValue)>) -> Option<Fields<'a>> {
    let mut fields = Fields(Vec::with_capacity(object.len() + 1));
    let mut description = None;
    for (key, value) in object {
        let value = value.get();
        match key {
            "properties" => {
                let mut out = String::with_capacity(value.len());
                out.push('{');
                for (i, (name, property)) in members(value)?.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('"');
                    out.push_str(name);
                    out.push_str("\":");
                    text_node(members(property.get())?)?.write(&mut out);
                }
                out.push('}');
                fields.set(key, Piece::Made(out));
            }
            "items" if value.starts_with('{') => {
                let mut out = String::with_capacity(value.len());
                text_node(members(value)?)?.write(&mut out);
                fields.set(key, Piece::Made(out));
            }
            "items" => {}
            "anyOf" => text_any_of(&mut fields, value)?,
            "type" if value == "\"null\"" => fields.set("nullable", Piece::Kept("true")),
            "type" if value.starts_with('[') => return None,
            "enum" => {
                let values: Vec<&RawValue> = serde_json::from_str(value).ok()?;
                if !values.iter().all(|value| value.get().starts_with('"')) {
                    return None;
                }
                fields.set("type", Piece::Kept("\"string\""));
                fields.set("format", Piece::Kept("\"enum\""));
                fields.set(key, Piece::Kept(value));
            }
            "format" => {
                let name = value.strip_prefix('"').and_then(|name| name.strip_suffix('"'));
                if !name.is_some_and(|name| GEMINI_FORMATS.contains(&name)) {
                    return None;
                }
                fields.set(key, Piece::Kept(value));
            }
            "description" => description = Some(value),
            "$defs" | "additionalProperties" => {}
            "$ref" | "prefixItems" | "const" | "uniqueItems" | "exclusiveMinimum" | "exclusiveMaximum"
            | "multipleOf" | "contentMediaType" | "contentSchema" => return None,
            _ => fields.set(key, Piece::Kept(value)),
        }
    }
    // A description that is no string, or an empty one, is dropped, as without notes
    // `describe_with_notes` does.
    if let Some(description) = description.filter(|text| text.starts_with('"') && *text != "\"\"") {
        fields.set("description", Piece::Kept(description));
    }
    Some(fields)
}

/// [`gemini_node`]'s `anyOf`: a `null` branch makes the object nullable; a single other
/// branch is merged into it, several stay a union.
fn text_any_of<'a>(fields: &mut Fields<'a>, text: &'a str) -> Option<()> {
    let branches: Vec<&RawValue> = serde_json::from_str(text).ok()?;
    let mut nullable = false;
    let mut others = Vec::with_capacity(branches.len());
    for branch in branches {
        let members = members(branch.get())?;
        if members.iter().any(|(key, value)| *key == "type" && value.get() == "\"null\"") {
            nullable = true;
        } else {
            others.push(members);
        }
    }
    if nullable {
        fields.set("nullable", Piece::Kept("true"));
    }
    let mut others = others.into_iter().map(text_node).collect::<Option<Vec<_>>>()?;
    match others.len() {
        0 => {}
        1 => {
            for (key, piece) in others.pop()?.0 {
                fields.set_if_absent(key, piece);
            }
        }
        _ => {
            let mut out = String::from("[");
            for (i, other) in others.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                other.write(&mut out);
            }
            out.push(']');
            fields.set("anyOf", Piece::Made(out));
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `gemini_text` of `schema`'s compact text, checked against `gemini` whenever it
    /// answers.
    fn both(schema: &Value) -> Option<String> {
        let lowered = gemini_text(&schema.to_string())?;
        let expected = gemini(schema.clone());
        assert_eq!(lowered.text, expected.to_string(), "{schema}");
        let has_properties = expected["properties"].as_object().is_some_and(|p| !p.is_empty());
        assert_eq!(lowered.has_properties, has_properties, "{schema}");
        Some(lowered.text)
    }

    #[test]
    fn the_common_schemas_are_lowered_on_their_text_as_on_their_values() {
        let optional =
            |inner: Value| json!({ "anyOf": [inner, { "type": "null" }], "default": null, "description": "Maybe." });
        let common = [
            json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            json!({
                "type": "object",
                "properties": {
                    "a": { "type": "string", "description": "A." },
                    "b": { "type": "integer", "minimum": 1 },
                    "c": { "type": "array", "items": { "type": "number" }, "description": "" },
                    "d": { "type": "object", "additionalProperties": { "type": "integer" } },
                    "e": { "enum": ["a", "b"], "type": "string" },
                    "f": optional(json!({ "type": "array", "items": { "type": "integer" } })),
                    "g": optional(json!({ "type": "integer", "description": "Inner." })),
                    "h": { "type": "string", "format": "date-time", "title": "When" },
                    "i": { "anyOf": [{ "type": "integer" }, { "type": "string" }, { "type": "null" }] },
                    "j": { "anyOf": [{ "type": "null" }] },
                    "k": { "type": "null", "description": 5 },
                    "l": { "items": false, "type": "array" },
                },
                "required": ["a", "b"],
                "additionalProperties": false,
            }),
            json!({ "type": "object", "properties": { "x": { "anyOf": [{ "type": "object", "properties": { "y": { "type": "boolean" } }, "required": ["y"] }] } } }),
        ];
        for schema in &common {
            assert!(both(schema).is_some(), "lowered on its text: {schema}");
        }
        let lowered = both(&common[1]).unwrap();
        assert_eq!(lowered.matches("\"nullable\":true").count(), 5, "f, g, i, j and k are nullable: {lowered}");
        assert!(
            lowered.contains(r#""g":{"nullable":true,"type":"integer","description":"Maybe.","default":null}"#),
            "{lowered}"
        );
    }

    #[test]
    fn what_only_the_values_lowering_handles_is_left_to_it() {
        let uncommon = [
            json!({ "type": "object", "properties": { "n": { "$ref": "#/$defs/N" } }, "$defs": { "N": { "type": "string" } } }),
            json!({ "type": "object", "properties": { "t": { "prefixItems": [{ "type": "string" }], "type": "array" } } }),
            json!({ "type": "object", "properties": { "c": { "const": 3 } } }),
            json!({ "type": "object", "properties": { "e": { "enum": [1, 2] } } }),
            json!({ "type": "object", "properties": { "e": { "enum": ["a", null] } } }),
            json!({ "type": "object", "properties": { "u": { "type": ["string", "null"] } } }),
            json!({ "type": "object", "properties": { "f": { "type": "string", "format": "email" } } }),
            json!({ "type": "object", "properties": { "m": { "type": "number", "multipleOf": 2 } } }),
            json!({ "type": "object", "properties": { "q\"uote": { "type": "string" } } }),
            json!({ "type": "object", "properties": { "x": true } }),
            json!([1, 2]),
        ];
        for schema in &uncommon {
            assert_eq!(gemini_text(&schema.to_string()).map(|lowered| lowered.text), None, "{schema}");
        }
    }
}
