//! Gemini's OpenAPI subset: a parameters schema without `$ref`/`$defs`,
//! `additionalProperties`, `const` or type arrays, with `nullable: true` and string
//! enums; what it cannot say goes into the description.
//!
//! [`gemini`] lowers a schema's `Value`. [`gemini_text`] lowers the common schemas
//! on their compact text, without building them (a part of [`FastPath::Splice`]), and
//! leaves every other one to [`gemini`]: the exports tests compare both on every
//! fixture.

use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::text::{Fields, Lowered, Piece, described, handled, unhandled, within};
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

/// [`gemini`] of the schema whose compact text (as `serde_json` writes it) is `text`,
/// done on the text (`export::text`): [`Lowered::Nothing`] when it has no property (a
/// Gemini declaration then has no parameters). `None` when the schema uses what only
/// [`gemini`] handles (definitions, tuples, constants, type lists, enums of other
/// values than strings, anything that becomes a note) or has a name written with an
/// escape.
pub(super) fn gemini_text(text: &str) -> Option<Lowered<'_>> {
    let fields = handled(text, GeminiNode)?.fields;
    let has_properties = matches!(fields.get("properties"), Some(Piece::Object(properties)) if !properties.is_empty());
    Some(if has_properties { Lowered::Schema(fields) } else { Lowered::Nothing })
}

/// Reads a schema node (an object) and lowers it as [`gemini_node`] does.
#[derive(Clone, Copy)]
struct GeminiNode;

/// A node lowered by [`GeminiNode`], and whether its own `type` is `null` (which an
/// `anyOf` turns into `nullable`).
struct TextNode<'a> {
    fields: Fields<'a>,
    is_null: bool,
}

impl<'de> DeserializeSeed<'de> for GeminiNode {
    type Value = TextNode<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<TextNode<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for GeminiNode {
    type Value = TextNode<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a schema object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextNode<'de>, A::Error> {
        let mut fields = Fields::with_capacity(4);
        let (mut description, mut is_null) = (None, false);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "properties" => fields.set(key, Piece::Object(map.next_value_seed(GeminiProperties)?)),
                "anyOf" => {
                    let branches = map.next_value_seed(GeminiBranches)?;
                    if branches.iter().any(|branch| branch.is_null) {
                        fields.set("nullable", Piece::Kept("true"));
                    }
                    let mut others: Vec<Fields> =
                        branches.into_iter().filter(|branch| !branch.is_null).map(|branch| branch.fields).collect();
                    match others.len() {
                        0 => {}
                        1 => {
                            for (key, piece) in others.pop().into_iter().flatten() {
                                fields.set_if_absent(key, piece);
                            }
                        }
                        _ => fields.set("anyOf", Piece::Objects(others)),
                    }
                }
                "$ref" | "prefixItems" | "const" | "uniqueItems" | "exclusiveMinimum" | "exclusiveMaximum"
                | "multipleOf" | "contentMediaType" | "contentSchema" => return Err(unhandled(key)),
                _ => {
                    let value = map.next_value::<&'de RawValue>()?.get();
                    match key {
                        // `items: false` closes a tuple, which Gemini has not.
                        "items" if value.starts_with('{') => {
                            fields.set(key, Piece::Object(within::<_, A::Error>(value, GeminiNode)?.fields))
                        }
                        "items" | "$defs" | "additionalProperties" => {}
                        "type" if value == "\"null\"" => {
                            is_null = true;
                            fields.set("nullable", Piece::Kept("true"));
                        }
                        "type" if value.starts_with('[') => return Err(unhandled("a list of types")),
                        "enum" => {
                            let values: Vec<&RawValue> = within(value, PhantomData)?;
                            if !values.iter().all(|value| value.get().starts_with('"')) {
                                return Err(unhandled("an enum of other values than strings"));
                            }
                            fields.set("type", Piece::Kept("\"string\""));
                            fields.set("format", Piece::Kept("\"enum\""));
                            fields.set(key, Piece::Kept(value));
                        }
                        "format" => {
                            let name = value.strip_prefix('"').and_then(|name| name.strip_suffix('"'));
                            if !name.is_some_and(|name| GEMINI_FORMATS.contains(&name)) {
                                return Err(unhandled("a format Gemini has not"));
                            }
                            fields.set(key, Piece::Kept(value));
                        }
                        "description" => description = Some(value),
                        _ => fields.set(key, Piece::Kept(value)),
                    }
                }
            }
        }
        if let Some(description) = described(description, "") {
            fields.set("description", description);
        }
        Ok(TextNode { fields, is_null })
    }
}

/// Reads `properties` and lowers each, in order.
struct GeminiProperties;

impl<'de> DeserializeSeed<'de> for GeminiProperties {
    type Value = Fields<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Fields<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for GeminiProperties {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of schemas")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut properties = Fields::with_capacity(4);
        while let Some(name) = map.next_key::<&'de str>()? {
            properties.push(name, Piece::Object(map.next_value_seed(GeminiNode)?.fields));
        }
        Ok(properties)
    }
}

/// Reads `anyOf` and lowers each branch, in order.
struct GeminiBranches;

impl<'de> DeserializeSeed<'de> for GeminiBranches {
    type Value = Vec<TextNode<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for GeminiBranches {
    type Value = Vec<TextNode<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of schemas")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut branches = Vec::with_capacity(2);
        while let Some(branch) = seq.next_element_seed(GeminiNode)? {
            branches.push(branch);
        }
        Ok(branches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `gemini_text` of `schema`'s compact text, checked against `gemini` whenever it
    /// answers.
    fn both(schema: &Value) -> Option<String> {
        let text = schema.to_string();
        let lowered = gemini_text(&text)?;
        let expected = gemini(schema.clone());
        let has_properties = expected["properties"].as_object().is_some_and(|p| !p.is_empty());
        match lowered {
            Lowered::Schema(fields) => {
                assert!(has_properties, "{schema}");
                let pretty = serde_json::to_string_pretty(&expected).unwrap();
                assert_eq!(fields.text(Layout::Pretty), pretty, "{schema}");
                let text = fields.text(Layout::Compact);
                assert_eq!(text, expected.to_string(), "{schema}");
                Some(text)
            }
            Lowered::Nothing => {
                assert!(!has_properties, "{schema}");
                Some(String::new())
            }
            Lowered::Refused(problems) => panic!("{schema}: Gemini refuses nothing: {problems:?}"),
        }
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
            assert!(gemini_text(&schema.to_string()).is_none(), "{schema}");
        }
    }
}
