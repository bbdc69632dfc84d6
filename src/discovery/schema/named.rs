//! Named classes as `$defs` (SPEC §3 for the intermediate form, `tools/list` for this
//! one): the schema a tool keeps inlines every `TypedDict`, dataclass, `NamedTuple`
//! and model; this form moves each to `$defs` under the class's own name and puts a
//! `$ref` where it is used, as pydantic does, for formats that resolve references.
//!
//! It works on the inlined schema and the classes the converter inlined (their
//! schemas as built), so it never re-reads source: a subschema is a use of a class
//! when it is the class's schema plus, at most, what the use adds beside it (a
//! description, a default, a title, examples), which stays beside the `$ref`.
//! Must never: change what a schema accepts, or touch data (`default`, `enum`,
//! `const`, `examples` values are not schemas).

use serde_json::Value;

use super::Map;

/// Keywords a use of a class adds beside it.
const USE_KEYWORDS: [&str; 4] = ["description", "default", "title", "examples"];
/// Keywords whose values are data, not schemas.
const DATA_KEYWORDS: [&str; 4] = ["default", "enum", "const", "examples"];

/// `schema` with each of `classes` (name, schema as inlined) in `$defs` and a `$ref`
/// at each use. Definitions already in `$defs` (recursive classes) stay, with the
/// classes they use moved out the same way.
pub fn hoist(schema: &Value, classes: &[(String, &Value)]) -> Value {
    let mut defs = Map::new();
    let mut hoisted = node(schema, classes, &mut defs, true);
    if !defs.is_empty()
        && let Some(object) = hoisted.as_object_mut()
    {
        let existing = object.remove("$defs");
        let mut all = match existing {
            Some(Value::Object(existing)) => existing,
            _ => Map::new(),
        };
        all.extend(defs);
        object.insert("$defs".to_string(), Value::Object(all));
    }
    hoisted
}

fn node(schema: &Value, classes: &[(String, &Value)], defs: &mut Map, root: bool) -> Value {
    match schema {
        Value::Object(fields) => {
            if !root && let Some((name, class)) = classes.iter().find(|(_, class)| is_use_of(fields, class)) {
                if !defs.contains_key(name) {
                    // Reserved first: a class that (through another) holds itself stops here.
                    defs.insert(name.clone(), Value::Null);
                    let definition = node(class, classes, defs, true);
                    defs.insert(name.clone(), definition);
                }
                let mut reference = Map::new();
                reference.insert("$ref".into(), Value::from(format!("#/$defs/{name}")));
                for key in USE_KEYWORDS {
                    if let Some(value) = fields.get(key)
                        && class.get(key) != Some(value)
                    {
                        reference.insert(key.to_string(), value.clone());
                    }
                }
                return Value::Object(reference);
            }
            let mut out = Map::new();
            for (key, value) in fields {
                let value = match key.as_ref() {
                    key if DATA_KEYWORDS.contains(&key) => value.clone(),
                    "properties" | "$defs" | "patternProperties" | "dependentSchemas" => match value {
                        Value::Object(named) => Value::Object(
                            named
                                .iter()
                                .map(|(name, schema)| (name.clone(), node(schema, classes, defs, false)))
                                .collect(),
                        ),
                        other => other.clone(),
                    },
                    _ => node(value, classes, defs, false),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| node(item, classes, defs, false)).collect()),
        other => other.clone(),
    }
}

/// Whether `fields` is `class` as a use of it: every keyword of the class is there
/// with the class's value, and every other keyword is one a use adds.
fn is_use_of(fields: &Map, class: &Value) -> bool {
    let Some(class) = class.as_object() else { return false };
    if !class.contains_key("properties") {
        return false;
    }
    let same = |key: &str| fields.get(key) == class.get(key);
    class.keys().all(|key| USE_KEYWORDS.contains(&key.as_str()) || same(key))
        && fields.keys().all(|key| USE_KEYWORDS.contains(&key.as_str()) || class.contains_key(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn address() -> (String, Value) {
        let schema =
            json!({"type": "object", "properties": {"street": {"type": "string"}}, "additionalProperties": false});
        ("Address".to_string(), schema)
    }

    #[test]
    fn a_class_moves_to_defs_and_its_uses_become_refs_keeping_what_they_add() {
        let (name, class) = address();
        let mut described = class.clone();
        described["description"] = json!("Where to deliver.");
        let schema = json!({
            "type": "object",
            "properties": {
                "home": described,
                "others": {"type": "array", "items": (class.clone())},
                "maybe": {"anyOf": [(class.clone()), {"type": "null"}], "default": null},
            },
            "required": ["home"],
        });
        let hoisted = hoist(&schema, &[(name, &class)]);
        assert_eq!(
            hoisted,
            json!({
                "type": "object",
                "properties": {
                    "home": {"$ref": "#/$defs/Address", "description": "Where to deliver."},
                    "others": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
                    "maybe": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": null},
                },
                "required": ["home"],
                "$defs": {"Address": class},
            })
        );
    }

    #[test]
    fn classes_inside_classes_and_existing_defs_move_too_and_data_is_untouched() {
        let (name, address) = address();
        let person = json!({"type": "object", "properties": {"address": (address.clone())}});
        let schema = json!({
            "type": "object",
            "properties": {"who": (person.clone()), "tree": {"$ref": "#/$defs/Node"}, "fallback": {"type": "object", "default": (address.clone())}},
            "$defs": {"Node": {"type": "object", "properties": {"at": (address.clone())}}},
        });
        let hoisted = hoist(&schema, &[("Person".to_string(), &person), (name, &address)]);
        assert_eq!(hoisted["properties"]["who"], json!({"$ref": "#/$defs/Person"}));
        assert_eq!(hoisted["$defs"]["Person"]["properties"]["address"], json!({"$ref": "#/$defs/Address"}));
        assert_eq!(hoisted["$defs"]["Node"]["properties"]["at"], json!({"$ref": "#/$defs/Address"}));
        assert_eq!(hoisted["properties"]["fallback"]["default"], address, "a default is data");
    }

    #[test]
    fn a_schema_that_differs_from_the_class_stays_inline() {
        let (name, class) = address();
        let mut narrowed = class.clone();
        narrowed["minProperties"] = json!(1);
        let schema = json!({"type": "object", "properties": {"a": (narrowed)}});
        assert_eq!(hoist(&schema, &[(name, &class)]), schema);
    }
}
