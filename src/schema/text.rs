//! [`SchemaText`]: a schema kept as its JSON text, parsed on demand; what a tool
//! record holds. Never builds a schema itself.

use super::*;

/// A tool's parameters schema, kept as compact JSON text: a fraction of the memory
/// of a `serde_json::Value` tree, which holds a map per schema object.
///
/// [`SchemaText::parse`] makes a new `Value` each time, for code that reads a schema
/// once (exports); [`SchemaText::value`] parses it on first use and keeps the result,
/// for code that reads it again and again (the runtime checks every call's arguments).
#[derive(Clone)]
pub struct SchemaText {
    text: Box<RawValue>,
    parsed: OnceLock<serde_json::Value>,
}

impl SchemaText {
    /// `schema` as compact text.
    pub fn new(schema: &impl Serialize) -> SchemaText {
        let text = serde_json::value::to_raw_value(schema).expect("a Value always serializes");
        SchemaText { text, parsed: OnceLock::new() }
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.text.get()
    }

    /// The schema as a new `Value`.
    pub fn parse(&self) -> serde_json::Value {
        match self.parsed.get() {
            Some(value) => value.clone(),
            None => serde_json::from_str(self.text.get()).expect("the text was serialized from a Value"),
        }
    }

    /// The schema, parsed once and kept.
    pub fn value(&self) -> &serde_json::Value {
        self.parsed.get_or_init(|| serde_json::from_str(self.text.get()).expect("the text was serialized from a Value"))
    }
}

impl PartialEq for SchemaText {
    fn eq(&self, other: &SchemaText) -> bool {
        self.as_str() == other.as_str()
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
