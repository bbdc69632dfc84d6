//! OpenAI's strict mode: a parameters schema lowered to the subset it accepts (every
//! property required, optional ones nullable, closed objects, no `default`), with what
//! the subset cannot say moved into descriptions and what it cannot express reported.
//!
//! [`openai_strict`] lowers a schema's `Value`; [`openai_strict_text`] lowers its
//! compact text (`export::text`), the same way, and leaves what it does not handle to
//! [`openai_strict`].

use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::text::{Fields, Lowered, Piece, described, handled, note, unhandled, within};
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

/// [`openai_strict`] of the schema whose compact text (as `serde_json` writes it) is
/// `text`, done on the text (`export::text`): the lowered schema, or the same problems.
/// `None` when the schema has a tuple, a name written with an escape, or objects
/// nested so deep that making their properties nullable could pass the depth an
/// entry may have (`MAX_ENTRY_DEPTH`): [`openai_strict`] handles those.
pub(super) fn openai_strict_text(text: &str) -> Option<Lowered<'_>> {
    let mut problems = Vec::new();
    let fields = handled(text, StrictNode { at: At::Parameters, nesting: 0, problems: &mut problems })?;
    Some(if problems.is_empty() { Lowered::Schema(fields) } else { Lowered::Refused(problems) })
}

/// Most schemas [`StrictNode`] goes into, one inside another. Each adds at most four
/// levels to the text (a property in `properties`, wrapped in an `anyOf` list), so
/// what it makes stays well below `MAX_ENTRY_DEPTH`.
const MAX_TEXT_NESTING: usize = 24;

/// Reads a schema node at `at` and lowers it as [`strict_node`] does, saying the same
/// problems in the same order; what it makes once there is one is thrown away.
struct StrictNode<'s, 'p> {
    at: At<'s>,
    nesting: usize,
    problems: &'p mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for StrictNode<'_, '_> {
    type Value = Fields<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Fields<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictNode<'_, '_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a schema")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Fields<'de>, E> {
        let at = self.at;
        self.problems.push(format!("{at} is `{value}`, which strict mode cannot express"));
        Ok(Fields::with_capacity(0))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let StrictNode { at, nesting, problems } = self;
        if nesting > MAX_TEXT_NESTING {
            return Err(unhandled("nesting this deep"));
        }
        let mut fields = Fields::with_capacity(4);
        let (mut is_empty, mut has_properties, mut closed) = (true, false, false);
        let (mut required, mut description, mut notes) = (Vec::new(), None, String::new());
        while let Some(key) = map.next_key::<&'de str>()? {
            is_empty = false;
            match key {
                "properties" | "$defs" => {
                    let named = map.next_value_seed(StrictNamed {
                        at: &at,
                        nesting,
                        problems: &mut *problems,
                        definitions: key == "$defs",
                    })?;
                    if key == "properties" {
                        has_properties = true;
                        // `required` comes first, listing every property (set below).
                        fields.set("required", Piece::Names(Vec::new()));
                    }
                    fields.set(key, Piece::Object(named));
                }
                "anyOf" => {
                    let branches =
                        map.next_value_seed(StrictBranches { at: &at, nesting, problems: &mut *problems })?;
                    fields.set(key, Piece::Objects(branches));
                }
                "prefixItems" => return Err(unhandled(key)),
                _ => {
                    let value = map.next_value::<&'de RawValue>()?.get();
                    match key {
                        "required" if value.starts_with('[') => required = within(value, PhantomData::<Vec<&str>>)?,
                        "required" => {}
                        "description" => description = Some(value),
                        "additionalProperties" => {
                            closed = true;
                            if value != "false" {
                                problems.push(format!(
                                    "{at} is an open mapping (free-form keys), which strict mode cannot express"
                                ));
                            }
                        }
                        "items" if value != "false" => {
                            let seed =
                                StrictNode { at: At::Items(&at), nesting: nesting + 1, problems: &mut *problems };
                            fields.set(key, Piece::Object(within(value, seed)?));
                        }
                        "items" => {}
                        "default" => note(&mut notes, format_args!("Default: {value}.")),
                        // Strict mode refuses a format it does not know (`uri`): the model reads it.
                        "format" if !unquoted(value).is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                            note(&mut notes, format_args!("format: {value}."))
                        }
                        other if STRICT_KEYWORDS.contains(&other) => fields.set(key, Piece::Kept(value)),
                        other => note(&mut notes, format_args!("{other}: {value}.")),
                    }
                }
            }
        }
        if is_empty {
            problems.push(format!("{at} accepts any JSON value, which strict mode cannot express"));
            return Ok(fields);
        }
        if let Some(Piece::Object(properties)) = fields.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                if let Piece::Object(schema) = property
                    && !required.contains(&name)
                {
                    strict_text_nullable(schema).ok_or_else(|| unhandled("an enum that is no list"))?;
                }
            }
            let names = properties.names();
            fields.set("required", Piece::Names(names));
        }
        if matches!(fields.get("type"), Some(Piece::Kept("\"object\""))) {
            if !has_properties {
                if !closed {
                    problems
                        .push(format!("{at} is an open mapping (free-form keys), which strict mode cannot express"));
                }
                fields.set("properties", Piece::Kept("{}"));
                fields.set("required", Piece::Kept("[]"));
            }
            fields.set("additionalProperties", Piece::Kept("false"));
        }
        if let Some(description) = described(description, &notes) {
            fields.set("description", description);
        }
        Ok(fields)
    }
}

/// Reads `properties` (or `$defs`: `definitions`) and lowers each, in order.
struct StrictNamed<'s, 'p> {
    at: &'s At<'s>,
    nesting: usize,
    problems: &'p mut Vec<String>,
    definitions: bool,
}

impl<'de> DeserializeSeed<'de> for StrictNamed<'_, '_> {
    type Value = Fields<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Fields<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StrictNamed<'_, '_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of schemas")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut named = Fields::with_capacity(4);
        while let Some(name) = map.next_key::<&'de str>()? {
            let at = if self.definitions { At::Definition(name) } else { At::Property(self.at, name) };
            let seed = StrictNode { at, nesting: self.nesting + 1, problems: &mut *self.problems };
            named.push(name, Piece::Object(map.next_value_seed(seed)?));
        }
        Ok(named)
    }
}

/// Reads `anyOf` and lowers each branch, in order.
struct StrictBranches<'s, 'p> {
    at: &'s At<'s>,
    nesting: usize,
    problems: &'p mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for StrictBranches<'_, '_> {
    type Value = Vec<Fields<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for StrictBranches<'_, '_> {
    type Value = Vec<Fields<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of schemas")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut branches = Vec::with_capacity(2);
        loop {
            let at = At::Branch(self.at, branches.len());
            let seed = StrictNode { at, nesting: self.nesting + 1, problems: &mut *self.problems };
            match seq.next_element_seed(seed)? {
                Some(branch) => branches.push(branch),
                None => return Ok(branches),
            }
        }
    }
}

/// [`strict_nullable`] of a lowered schema's fields, in place.
fn strict_text_nullable(fields: &mut Fields<'_>) -> Option<()> {
    let null = || {
        let mut null = Fields::with_capacity(1);
        null.push("type", Piece::Kept("\"null\""));
        null
    };
    if let Some(Piece::Objects(branches)) = fields.get_mut("anyOf") {
        if !branches.iter().any(|branch| branch.is_only("type", "\"null\"")) {
            branches.push(null());
        }
        return Some(());
    }
    match fields.get("type") {
        Some(Piece::Kept("\"null\"")) => {}
        Some(Piece::Kept(name)) if name.starts_with('"') => {
            let types = format!("[{name},\"null\"]");
            fields.set("type", Piece::Made(types));
            if let Some(Piece::Kept(values)) = fields.get("enum")
                && values.starts_with('[')
            {
                let values = with_null(values, "null")?;
                fields.set("enum", Piece::Made(values));
            }
        }
        Some(Piece::Kept(types)) if types.starts_with('[') => {
            let types = with_null(types, "\"null\"")?;
            fields.set("type", Piece::Made(types));
        }
        _ => {
            let description = fields.remove("description");
            let schema = std::mem::replace(fields, Fields::with_capacity(2));
            fields.push("anyOf", Piece::Objects(vec![schema, null()]));
            if let Some(description) = description {
                fields.push("description", description);
            }
        }
    }
    Some(())
}

/// The JSON list `list` with `null` (given as its text) added at its end unless it
/// holds it already; `None` if it is no list.
fn with_null(list: &str, null: &str) -> Option<String> {
    let items: Vec<&RawValue> = serde_json::from_str(list).ok()?;
    Some(match items.iter().any(|item| item.get() == null) {
        true => list.to_string(),
        false if items.is_empty() => format!("[{null}]"),
        false => format!("{},{null}]", &list[..list.len() - 1]),
    })
}

/// The text of a JSON string written without escapes.
fn unquoted(text: &str) -> Option<&str> {
    text.strip_prefix('"')?.strip_suffix('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openai_strict_text` of `schema`'s compact text, checked against `openai_strict`
    /// whenever it answers: the same text, or the same problems.
    fn both(schema: &Value) -> Option<Result<String, Vec<String>>> {
        let text = schema.to_string();
        let lowered = match openai_strict_text(&text)? {
            Lowered::Schema(fields) => Ok([fields.text(Layout::Compact), fields.text(Layout::Pretty)]),
            Lowered::Refused(problems) => Err(problems),
            Lowered::Nothing => panic!("{schema}: strict mode always carries a schema"),
        };
        let expected = openai_strict(schema.clone())
            .map(|value| [value.to_string(), serde_json::to_string_pretty(&value).unwrap()]);
        assert_eq!(lowered, expected, "{schema}");
        Some(lowered.map(|[compact, _]| compact))
    }

    #[test]
    fn schemas_are_lowered_on_their_text_as_on_their_values_with_the_same_problems() {
        let object = |properties: Value, required: Value| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
        let lowered = [
            object(json!({}), json!([])),
            object(
                json!({
                    "a": { "type": "string", "description": "A." },
                    "b": { "type": "integer", "default": 3, "minimum": 1, "description": "" },
                    "c": { "type": "array", "items": { "type": "number" }, "uniqueItems": true },
                    "d": { "enum": ["x", "y"], "type": "string", "description": "Say \"x\"." },
                    "e": { "anyOf": [{ "type": "integer" }, { "type": "null" }], "default": null, "description": "E." },
                    "f": { "anyOf": [{ "type": "integer" }, { "type": "string" }] },
                    "g": { "type": ["integer", "string"], "format": "uri" },
                    "h": { "type": "string", "format": "date-time", "title": "When" },
                    "i": { "description": "Anything typed elsewhere.", "$ref": "#/$defs/Node" },
                    "j": { "enum": ["x", null], "type": "string" },
                    "k": { "type": "string", "enum": [] },
                    "l": { "type": "array", "items": false },
                    "m": { "const": "fixed", "description": 4 },
                }),
                json!(["a"]),
            ),
            json!({
                "type": "object",
                "properties": { "node": { "$ref": "#/$defs/Node" } },
                "required": "node",
                "$defs": { "Node": object(json!({ "next": { "anyOf": [{ "$ref": "#/$defs/Node" }, { "type": "null" }] } }), json!(["next"])) },
            }),
        ];
        for schema in &lowered {
            assert!(matches!(both(schema), Some(Ok(_))), "lowered on its text: {schema}");
        }
        let refused = [
            object(json!({ "counts": { "type": "object", "additionalProperties": { "type": "integer" } } }), json!([])),
            object(json!({ "any": {}, "yes": true, "list": { "type": "array", "items": true } }), json!(["any"])),
            object(json!({ "loose": { "type": "object" } }), json!([])),
            json!({ "type": "object", "properties": {}, "additionalProperties": true }),
        ];
        for schema in &refused {
            assert!(matches!(both(schema), Some(Err(problems)) if !problems.is_empty()), "refused: {schema}");
        }
    }

    #[test]
    fn what_only_the_values_lowering_handles_is_left_to_it() {
        let mut deep = json!({ "type": "string" });
        for _ in 0..=MAX_TEXT_NESTING {
            deep = json!({ "type": "object", "properties": { "inner": deep }, "required": [] });
        }
        let left = [
            json!({ "type": "object", "properties": { "t": { "prefixItems": [{ "type": "string" }], "type": "array" } } }),
            json!({ "type": "object", "properties": { "q\"uote": { "type": "string" } } }),
            json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": [1] }),
            json!({ "type": "object", "properties": { "n": 3 } }),
            json!({ "type": "object", "properties": [] }),
            deep,
        ];
        for schema in &left {
            assert!(openai_strict_text(&schema.to_string()).is_none(), "{schema}");
        }
    }
}
