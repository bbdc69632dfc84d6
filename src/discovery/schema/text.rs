//! [`SchemaText`]: a schema kept as its JSON text, parsed on demand; what a tool
//! record holds. Never builds a schema itself.

use super::*;

/// A tool's parameters schema, kept as compact JSON text: a fraction of the memory
/// of a `serde_json::Value` tree, which holds a map per schema object.
///
/// [`SchemaText::parse`] makes a new `Value` each time, for code that reads a schema
/// once (exports); [`SchemaText::value`] parses it on first use and keeps the result,
/// for code that reads it again and again (the runtime checks every call's arguments).
///
/// A tool's parameters may also be given under other names than their properties'
/// (pydantic's `AliasChoices`): no JSON Schema keyword says so, so the text never
/// does; [`SchemaText::value`], the schema calls are checked against, holds them
/// under `OTHER_NAMES` (`x-lcp-other-names`) for `validate::as_meant`.
#[derive(Clone)]
pub struct SchemaText {
    text: Box<RawValue>,
    parsed: OnceLock<serde_json::Value>,
    /// Each other name a caller may use, with the property it stands for, in
    /// pydantic's order of preference.
    other_names: Box<[(String, String)]>,
    /// How deep it nests (as `json_depth` counts).
    depth: usize,
}

/// The keyword of [`SchemaText::value`]'s root that maps each other name of a
/// parameter to its property (`{"town": "argument"}`); never in the schema's text.
pub const OTHER_NAMES: &str = "x-lcp-other-names";

impl SchemaText {
    /// `schema` as compact text.
    pub fn new(schema: &serde_json::Value) -> SchemaText {
        SchemaText::with_other_names(schema, Vec::new())
    }

    /// `schema` as compact text, whose properties callers may also give under these
    /// other names (`(name, property)`, in order of preference).
    pub fn with_other_names(schema: &serde_json::Value, other_names: Vec<(String, String)>) -> SchemaText {
        let text = serde_json::value::to_raw_value(schema).expect("a Value always serializes");
        let depth = json_depth(schema);
        SchemaText { text, parsed: OnceLock::new(), other_names: other_names.into_boxed_slice(), depth }
    }

    /// How deep the schema nests, as `json_depth` counts (a schema from an MCP
    /// server may nest as deep as its server likes).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.text.get()
    }

    /// The schema as a new `Value`: its text's, without `OTHER_NAMES` (`x-lcp-other-names`).
    pub fn parse(&self) -> serde_json::Value {
        match self.parsed.get() {
            Some(value) if self.other_names.is_empty() => value.clone(),
            _ => serde_json::from_str(self.text.get()).expect("the text was serialized from a Value"),
        }
    }

    /// The schema, parsed once and kept, with the other names of its properties under
    /// `OTHER_NAMES` (`x-lcp-other-names`) when it has some: what calls are checked against.
    pub fn value(&self) -> &serde_json::Value {
        self.parsed.get_or_init(|| {
            let mut value: serde_json::Value =
                serde_json::from_str(self.text.get()).expect("the text was serialized from a Value");
            if let (false, Some(object)) = (self.other_names.is_empty(), value.as_object_mut()) {
                let names = self.other_names.iter().map(|(name, property)| (name.clone(), property.clone().into()));
                object.insert(OTHER_NAMES.to_string(), serde_json::Value::Object(names.collect()));
            }
            value
        })
    }
}

impl PartialEq for SchemaText {
    fn eq(&self, other: &SchemaText) -> bool {
        self.as_str() == other.as_str() && self.other_names == other.other_names
    }
}

impl fmt::Debug for SchemaText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for SchemaText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for SchemaText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(serializer)
    }
}
